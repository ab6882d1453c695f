/* Kernels (ABI.md "Kernels", docs/kernels.md), part 1: what a backend
   without kernels answers, modules from files and from memory, functions,
   host kernels, and launch validation (function and stream handles, grid
   and block dimensions, shared memory, arguments). Part 2, what launches
   do, is kernels_exec.c.

   The kernels live in the test module (test_kernels.c, built as a host
   shared library) and in this program (xdal_function_from_host). A backend
   that runs no host code answers xdal_function_from_host with
   XDAL_ERROR_NOT_SUPPORTED: the tests check that status and skip what
   needs host kernels. */
#include "harness.h"

#include "kernels_common.h"

/* --- A backend without kernels ---------------------------------------------- */

static void test_not_supported_backend(void) {
  xdal_function_t f = (xdal_function_t)GARBAGE;
  xdal_status_t host = xdal_function_from_host(&f, noop_kernel);
  xdal_module_t m = (xdal_module_t)GARBAGE;
  xdal_status_t builtin = xdal_module_get_builtin(&m);
  if (builtin == XDAL_SUCCESS) CHECK_OK(xdal_module_unload(m));
  if (host != XDAL_ERROR_NOT_SUPPORTED || builtin != XDAL_ERROR_NOT_SUPPORTED) {
    CHECK_MSG(host == XDAL_SUCCESS || host == XDAL_ERROR_NOT_SUPPORTED, "xdal_function_from_host returned %s",
              xdal_status_string(host));
    CHECK_MSG(builtin == XDAL_SUCCESS || builtin == XDAL_ERROR_NOT_SUPPORTED,
              "xdal_module_get_builtin returned %s", xdal_status_string(builtin));
    SKIP("the backend implements kernels (host kernels: %s, built-ins: %s)", xdal_status_string(host),
         xdal_status_string(builtin));
  }
  /* Every kernel entry point says NOT_SUPPORTED, or INVALID_HANDLE for the
     handles that cannot exist, and writes nothing. */
  CHECK(f == (xdal_function_t)GARBAGE);
  CHECK(m == (xdal_module_t)GARBAGE);
  const char *path = module_path();
  if (path != NULL) {
    CHECK_STATUS(XDAL_ERROR_NOT_SUPPORTED, xdal_module_load(&m, path));
    CHECK_MESSAGE_NAMES("xdal_module_load");
    size_t size = 0;
    unsigned char *bytes = read_module_file(&size);
    if (bytes) {
      CHECK_STATUS(XDAL_ERROR_NOT_SUPPORTED, xdal_module_load_data(&m, bytes, size));
      CHECK_MESSAGE_NAMES("xdal_module_load_data");
      free(bytes);
    }
  }
  CHECK(m == (xdal_module_t)GARBAGE);
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_get_function(&f, (xdal_module_t)GARBAGE, "vector_add"));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_unload((xdal_module_t)GARBAGE));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_launch_kernel((xdal_function_t)GARBAGE, ONE, ONE, 0, NULL, NULL, 0));
  /* The library still works. */
  CHECK_OK(xdal_stream_synchronize(NULL));
  printf("    note: the backend implements no kernels; the other tests skip\n");
}

/* --- Modules ---------------------------------------------------------------- */

static void test_module_load_errors(void) {
  char path[512];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/xdal-conformance-missing-%ld.so", dir && *dir ? dir : "/tmp", (long)getpid());
  xdal_module_t m = (xdal_module_t)GARBAGE;
  xdal_status_t st = xdal_module_load(&m, path);
  if (st == XDAL_ERROR_NOT_SUPPORTED) {
    CHECK_STATUS(XDAL_ERROR_NOT_SUPPORTED, host_kernel_status());
    SKIP("the backend loads no modules (xdal_module_load: XDAL_ERROR_NOT_SUPPORTED)");
  }
  CHECK_STATUS(XDAL_ERROR_NOT_FOUND, st);
  check_message_says_why("xdal_module_load");
  CHECK_STATUS(XDAL_ERROR_NOT_FOUND, xdal_module_load(&m, "no-such-directory/no-such-module.so"));
  CHECK_STATUS(XDAL_ERROR_NOT_FOUND, xdal_module_load(&m, ""));
  CHECK(m == (xdal_module_t)GARBAGE);

  /* Files that exist but are no modules. */
  static const char text[] = "This is a text file, not a kernel module.\n";
  char text_path[512], empty_path[512];
  if (temp_file(text_path, sizeof text_path, text, sizeof text - 1)) {
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load(&m, text_path));
    check_message_says_why("xdal_module_load");
    unlink(text_path);
  }
  if (temp_file(empty_path, sizeof empty_path, "", 0)) {
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load(&m, empty_path));
    check_message_says_why("xdal_module_load");
    unlink(empty_path);
  }
  /* Paths that are no regular files are refused before they are opened:
     a FIFO's open would wait for a writer, /dev/zero would never end. */
  char fifo_path[512];
  if (temp_fifo(fifo_path, sizeof fifo_path)) {
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load(&m, fifo_path));
    check_message_says_why("xdal_module_load");
    unlink(fifo_path);
  }
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load(&m, "/dev/zero"));
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load(&m, dir && *dir ? dir : "/tmp"));
  check_message_says_why("xdal_module_load");
  CHECK(m == (xdal_module_t)GARBAGE);

  /* NULL arguments. */
  const char *real = module_path();
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_load(NULL, real ? real : path));
  CHECK_MESSAGE_NAMES("xdal_module_load");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_load(&m, NULL));
  CHECK_MESSAGE_NAMES("xdal_module_load");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_load(NULL, NULL));
  CHECK(m == (xdal_module_t)GARBAGE);

  /* A real module loads (twice, as two handles) and works. */
  REQUIRE_HOST_KERNELS();
  xdal_module_t m1 = load_test_module(), m2 = load_test_module();
  REQUIRE(m1 != NULL && m2 != NULL);
  CHECK(m1 != m2);
  check_vector_add(m1, "module loaded from its file");
  CHECK_OK(xdal_module_unload(m1));
  check_vector_add(m2, "second handle of the module, after the first was unloaded");
  CHECK_OK(xdal_module_unload(m2));
}

static void test_module_load_data(void) {
  size_t size = 0;
  unsigned char *bytes = read_module_file(&size);
  REQUIRE(bytes != NULL);
  xdal_module_t m = (xdal_module_t)GARBAGE;
  xdal_status_t st = xdal_module_load_data(&m, bytes, size);
  if (st == XDAL_ERROR_NOT_SUPPORTED || host_kernel_status() == XDAL_ERROR_NOT_SUPPORTED) {
    if (st == XDAL_SUCCESS) CHECK_OK(xdal_module_unload(m));
    free(bytes);
    SKIP("the backend loads no host modules (xdal_module_load_data: %s)", xdal_status_string(st));
  }
  if (!CHECK_OK(st)) {
    free(bytes);
    return;
  }
  /* The image was copied: the bytes can go at once. */
  memset(bytes, 0, size);
  check_vector_add(m, "module loaded from memory");
  xdal_module_t m2 = NULL;
  free(bytes);
  bytes = read_module_file(&size);
  REQUIRE(bytes != NULL);
  CHECK_OK(xdal_module_load_data(&m2, bytes, size));
  CHECK(m2 != m);
  CHECK_OK(xdal_module_unload(m));
  check_vector_add(m2, "second module loaded from memory, after the first was unloaded");
  CHECK_OK(xdal_module_unload(m2));

  /* Bytes that are no module. */
  static unsigned char garbage[8192];
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < sizeof garbage; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    garbage[i] = (unsigned char)x;
  }
  m = (xdal_module_t)GARBAGE;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load_data(&m, garbage, sizeof garbage));
  check_message_says_why("xdal_module_load_data");
  static const char text[] = "not a module";
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load_data(&m, text, sizeof text));
  static unsigned char zeros[4096];
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load_data(&m, zeros, sizeof zeros));
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load_data(&m, garbage, 1));
  /* bytes 0, NULL image, NULL out. */
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load_data(&m, bytes, 0));
  check_message_says_why("xdal_module_load_data");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_load_data(&m, NULL, size));
  CHECK_MESSAGE_NAMES("xdal_module_load_data");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_load_data(NULL, bytes, size));
  CHECK(m == (xdal_module_t)GARBAGE);
  free(bytes);
}

static void test_module_get_function(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t f1 = NULL, f2 = NULL, g = NULL;
  CHECK_OK(xdal_module_get_function(&f1, m, "vector_add"));
  CHECK_OK(xdal_module_get_function(&f2, m, "vector_add"));
  CHECK_OK(xdal_module_get_function(&g, m, "add_u32"));
  CHECK(f1 != NULL);
  CHECK_MSG(f1 == f2, "asking twice for \"vector_add\" gave %p and %p", (void *)f1, (void *)f2);
  CHECK(g != NULL && g != f1);

  xdal_function_t f = (xdal_function_t)GARBAGE;
  static const char *const unknown[] = {"no_such_kernel", "", "vector_add ", "VECTOR_ADD", "vector_ad"};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    xdal_status_t st = xdal_module_get_function(&f, m, unknown[i]);
    CHECK_MSG(st == XDAL_ERROR_NOT_FOUND, "xdal_module_get_function(\"%s\") returned %s, expected NOT_FOUND",
              unknown[i], xdal_status_string(st));
  }
  check_message_says_why("xdal_module_get_function");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_get_function(&f, m, NULL));
  CHECK_MESSAGE_NAMES("xdal_module_get_function");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_get_function(NULL, m, "vector_add"));
  CHECK(f == (xdal_function_t)GARBAGE);

  /* Bad module handles. */
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_get_function(&f, NULL, "vector_add"));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_get_function(&f, (xdal_module_t)GARBAGE, "vector_add"));
  CHECK_MESSAGE_NAMES("xdal_module_get_function");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_get_function(&f, (xdal_module_t)(void *)s, "vector_add"));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_get_function(&f, (xdal_module_t)(void *)f1, "vector_add"));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_unload((xdal_module_t)(void *)s));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_unload((xdal_module_t)(void *)f1));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_unload(NULL));
  CHECK_MESSAGE_NAMES("xdal_module_unload");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_unload((xdal_module_t)GARBAGE));
  CHECK(f == (xdal_function_t)GARBAGE);
  CHECK_OK(xdal_stream_query(s)); /* the stream is unharmed */
  CHECK_OK(xdal_stream_destroy(s));

  /* Unloaded: the module and its functions are gone. */
  CHECK_OK(xdal_module_unload(m));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_get_function(&f, m, "vector_add"));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_unload(m));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_launch_kernel(f1, ONE, ONE, 0, NULL, NULL, 0));
  CHECK_MESSAGE_NAMES("xdal_launch_kernel");
}

static void test_function_from_host(void) {
  xdal_function_t f = (xdal_function_t)GARBAGE, g = NULL, h = NULL;
  xdal_status_t st = xdal_function_from_host(&f, host_add_u32);
  if (st == XDAL_ERROR_NOT_SUPPORTED) {
    CHECK(f == (xdal_function_t)GARBAGE);
    CHECK_MESSAGE_NAMES("xdal_function_from_host");
    SKIP("the backend runs no host kernels (xdal_function_from_host: XDAL_ERROR_NOT_SUPPORTED)");
  }
  REQUIRE(CHECK_OK(st));
  CHECK(f != NULL && f != (xdal_function_t)GARBAGE);
  CHECK_OK(xdal_function_from_host(&g, host_add_u32));
  CHECK_MSG(f == g, "wrapping host_add_u32 twice gave %p and %p", (void *)f, (void *)g);
  CHECK_OK(xdal_function_from_host(&h, noop_kernel));
  CHECK(h != NULL && h != f);
  xdal_function_t untouched = (xdal_function_t)GARBAGE;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_function_from_host(&untouched, NULL));
  CHECK_MESSAGE_NAMES("xdal_function_from_host");
  CHECK(untouched == (xdal_function_t)GARBAGE);
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_function_from_host(NULL, host_add_u32));
  CHECK_MESSAGE_NAMES("xdal_function_from_host");
  /* It runs, on the default stream and a created one; no arguments is fine. */
  void *d = NULL;
  REQUIRE_OK(xdal_malloc(&d, 256));
  good_launch(f, d, NULL);
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  good_launch(f, d, s);
  CHECK_OK(xdal_launch_kernel(h, ONE, ONE, 0, s, NULL, 0));
  xdal_kernel_arg_t unused = {&d, 8};
  CHECK_OK(xdal_launch_kernel(h, ONE, ONE, 0, s, &unused, 0)); /* num_args 0: args ignored */
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(d));
}

/* --- Launch validation ------------------------------------------------------ */

/* What a host kernel's waiting call returned: the stream it runs on
   cannot move on until the kernel returns. */
static _Atomic xdal_status_t waited_in_kernel = XDAL_SUCCESS;
static xdal_stream_t kernel_stream;

static xdal_status_t waiting_kernel(const xdal_kernel_context_t *ctx, void *const *args) {
  (void)ctx;
  (void)args;
  atomic_store(&waited_in_kernel, xdal_stream_synchronize(kernel_stream));
  return XDAL_SUCCESS;
}

static void test_a_host_kernel_that_waits_is_refused_not_hung(void) {
  REQUIRE_HOST_KERNELS();
  xdal_function_t waits = NULL;
  REQUIRE_OK(xdal_function_from_host(&waits, waiting_kernel));
  REQUIRE_OK(xdal_stream_create(&kernel_stream, XDAL_STREAM_DEFAULT, 0));
  atomic_store(&waited_in_kernel, XDAL_SUCCESS);
  CHECK_OK(xdal_launch_kernel(waits, ONE, ONE, 0, kernel_stream, NULL, 0));
  CHECK_OK(xdal_stream_synchronize(kernel_stream));
  CHECK_EQ(atomic_load(&waited_in_kernel), XDAL_ERROR_NOT_SUPPORTED);
  CHECK_OK(xdal_stream_destroy(kernel_stream));
}

static void test_launch_bad_function(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module(), gone = load_test_module();
  REQUIRE(m != NULL && gone != NULL);
  xdal_function_t f = get_fn(m, "add_u32"), dead = get_fn(gone, "add_u32");
  REQUIRE(f != NULL && dead != NULL);
  CHECK_OK(xdal_module_unload(gone));
  xdal_stream_t s = NULL;
  xdal_event_t e = NULL;
  void *d = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_malloc(&d, 256));
  static uint64_t ordinary[64];
  memset(ordinary, 0xff, sizeof ordinary);
  const struct {
    xdal_function_t f;
    const char *what;
  } bad[] = {
      {dead, "a function of an unloaded module"},
      {NULL, "NULL"},
      {(xdal_function_t)GARBAGE, "(xdal_function_t)0x12345"},
      {(xdal_function_t)(void *)m, "a module handle"},
      {(xdal_function_t)(void *)s, "a stream handle"},
      {(xdal_function_t)(void *)e, "an event handle"},
      {(xdal_function_t)(void *)ordinary, "a pointer to ordinary memory"},
      {(xdal_function_t)(uintptr_t)(UINTPTR_MAX - 15), "(xdal_function_t)(UINTPTR_MAX - 15)"},
  };
  uint64_t n = 64;
  uint32_t v = 1;
  xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {&v, 4}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    printf("    launching %s\n", bad[i].what);
    CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_launch_kernel(bad[i].f, ONE, ONE, 0, s, args, 3));
    CHECK_MESSAGE_NAMES("xdal_launch_kernel");
    good_launch(f, d, s);
  }
  CHECK_OK(xdal_event_query(e));
  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_module_unload(m));
}

/* When set, expect_bad_launch follows each refused launch with a good one
   (good_launch), which must still work. */
static struct {
  xdal_function_t f;
  void *d;
  xdal_stream_t stream;
} after_bad;

static void expect_bad_launch(xdal_status_t expected, xdal_function_t f, xdal_dim3_t grid, xdal_dim3_t block,
                              size_t shared, xdal_stream_t s, const xdal_kernel_arg_t *args, size_t nargs,
                              const char *what) {
  xdal_status_t st = xdal_launch_kernel(f, grid, block, shared, s, args, nargs);
  if (CHECK_MSG(st == expected, "%s: xdal_launch_kernel returned %s, expected %s", what, xdal_status_string(st),
                xdal_status_string(expected)))
    CHECK_MESSAGE_NAMES("xdal_launch_kernel");
  if (after_bad.f) good_launch(after_bad.f, after_bad.d, after_bad.stream);
}

static void test_launch_bad_dims(void) {
  REQUIRE_HOST_KERNELS();
  xdal_device_properties_t p = device_props();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t count = get_fn(m, "count_blocks"), add = get_fn(m, "add_u32"), shared = get_fn(m, "shared_check");
  REQUIRE(count && add && shared);
  xdal_stream_t s = NULL;
  void *counter = NULL, *d = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_malloc(&counter, 64));
  REQUIRE_OK(xdal_malloc(&d, 256));
  REQUIRE_OK(xdal_memset(counter, 0, 64));
  xdal_kernel_arg_t args[] = {{&counter, 8}};
  char what[128];
  after_bad.f = add;
  after_bad.d = d;
  after_bad.stream = s;

  for (int axis = 0; axis < 3; axis++) {
    uint32_t zero[3] = {1, 1, 1};
    zero[axis] = 0;
    xdal_dim3_t z = {zero[0], zero[1], zero[2]};
    snprintf(what, sizeof what, "grid {%u, %u, %u}", z.x, z.y, z.z);
    expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, z, ONE, 0, s, args, 1, what);
    snprintf(what, sizeof what, "block {%u, %u, %u}", z.x, z.y, z.z);
    expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, ONE, z, 0, s, args, 1, what);
    if (p.max_grid_dim[axis] < UINT32_MAX) {
      uint32_t big[3] = {1, 1, 1};
      big[axis] = p.max_grid_dim[axis] + 1;
      xdal_dim3_t g = {big[0], big[1], big[2]};
      snprintf(what, sizeof what, "grid {%u, %u, %u} (max_grid_dim[%d] = %u)", g.x, g.y, g.z, axis,
               p.max_grid_dim[axis]);
      expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, g, ONE, 0, s, args, 1, what);
    }
    if (p.max_block_dim[axis] < UINT32_MAX) {
      uint32_t big[3] = {1, 1, 1};
      big[axis] = p.max_block_dim[axis] + 1;
      xdal_dim3_t b = {big[0], big[1], big[2]};
      snprintf(what, sizeof what, "block {%u, %u, %u} (max_block_dim[%d] = %u)", b.x, b.y, b.z, axis,
               p.max_block_dim[axis]);
      expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, ONE, b, 0, s, args, 1, what);
    }
  }
  expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, (xdal_dim3_t){UINT32_MAX, UINT32_MAX, UINT32_MAX}, ONE, 0, s,
                    args, 1, "a grid of UINT32_MAX^3");
  /* Each axis within its limit, the block over max_threads_per_block. */
  uint32_t bx = p.max_block_dim[0] < p.max_threads_per_block ? p.max_block_dim[0] : p.max_threads_per_block;
  if (bx > 0 && p.max_threads_per_block / bx + 1 <= p.max_block_dim[1]) {
    xdal_dim3_t b = {bx, p.max_threads_per_block / bx + 1, 1};
    snprintf(what, sizeof what, "block {%u, %u, 1}: %llu threads (max_threads_per_block = %u)", b.x, b.y,
             (unsigned long long)b.x * b.y, p.max_threads_per_block);
    expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, ONE, b, 0, s, args, 1, what);
  }
  /* Too much shared memory. */
  if (p.shared_mem_per_block < SIZE_MAX) {
    snprintf(what, sizeof what, "%llu bytes of shared memory (shared_mem_per_block = %llu)",
             (unsigned long long)p.shared_mem_per_block + 1, (unsigned long long)p.shared_mem_per_block);
    expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, ONE, ONE, (size_t)p.shared_mem_per_block + 1, s, args, 1,
                      what);
  }
  expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, ONE, ONE, SIZE_MAX, s, args, 1, "SIZE_MAX bytes of shared memory");
  /* None of them ran. */
  after_bad.f = NULL;
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_EQ(read_counter(counter), 0);

  /* The limits themselves are fine. */
  uint32_t blocks = 0;
  xdal_dim3_t max_x = {bx, 1, 1};
  blocks += CHECK_OK(xdal_launch_kernel(count, ONE, max_x, 0, s, args, 1));
  if (p.max_block_dim[2] <= p.max_threads_per_block)
    blocks += CHECK_OK(xdal_launch_kernel(count, ONE, (xdal_dim3_t){1, 1, p.max_block_dim[2]}, 0, s, args, 1));
  if (p.max_grid_dim[1] <= 65535 &&
      CHECK_OK(xdal_launch_kernel(count, (xdal_dim3_t){1, p.max_grid_dim[1], 1}, ONE, 0, s, args, 1)))
    blocks += p.max_grid_dim[1];
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_EQ(read_counter(counter), blocks);
  /* All the shared memory a block may have. */
  if (p.shared_mem_per_block <= (64u << 20)) {
    uint32_t result[TK_SHARED_WORDS] = {0};
    void *dres = NULL;
    uint64_t pause = 0;
    REQUIRE_OK(xdal_malloc(&dres, sizeof result));
    REQUIRE_OK(xdal_memset(dres, 0, sizeof result));
    xdal_kernel_arg_t sargs[] = {{&dres, 8}, {&pause, 8}};
    CHECK_OK(xdal_launch_kernel(shared, ONE, ONE, (size_t)p.shared_mem_per_block, s, sargs, 2));
    CHECK_OK(xdal_stream_synchronize(s));
    CHECK_OK(xdal_memcpy(result, dres, sizeof result, XDAL_MEMCPY_DEVICE_TO_HOST));
    CHECK_EQ_U(result[TK_SHARED_BYTES], (uint32_t)p.shared_mem_per_block);
    CHECK_EQ(result[TK_SHARED_NONNULL], 1);
    CHECK_EQ(result[TK_SHARED_BAD], 0);
    CHECK_EQ(result[TK_SHARED_RUNS], 1);
    CHECK_OK(xdal_free(dres));
  }
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(counter));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_module_unload(m));
}

static void test_launch_bad_args(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t add = get_fn(m, "add_u32"), blob = get_fn(m, "echo_blob"), count = get_fn(m, "count_blocks");
  REQUIRE(add && blob && count);
  xdal_stream_t s = NULL;
  void *d = NULL, *out = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_malloc(&d, 256));
  REQUIRE_OK(xdal_malloc(&out, 8192));
  REQUIRE_OK(xdal_memset(d, 0, 256));
  uint64_t n = 64;
  uint32_t v = 5;
  after_bad.f = add;
  after_bad.d = d;
  after_bad.stream = s;

  expect_bad_launch(XDAL_ERROR_NULL_POINTER, add, ONE, ONE, 0, s, NULL, 3, "3 arguments and args NULL");
  xdal_kernel_arg_t null_value[] = {{&d, 8}, {NULL, 8}, {&v, 4}};
  expect_bad_launch(XDAL_ERROR_NULL_POINTER, add, ONE, ONE, 0, s, null_value, 3, "args[1].value NULL");
  xdal_kernel_arg_t zero_size[] = {{&d, 8}, {&n, 8}, {&v, 0}};
  expect_bad_launch(XDAL_ERROR_INVALID_VALUE, add, ONE, ONE, 0, s, zero_size, 3, "args[2].size 0");
  xdal_kernel_arg_t null_zero[] = {{&d, 8}, {&n, 8}, {NULL, 0}};
  xdal_status_t st = xdal_launch_kernel(add, ONE, ONE, 0, s, null_zero, 3);
  CHECK_MSG(st == XDAL_ERROR_NULL_POINTER || st == XDAL_ERROR_INVALID_VALUE,
            "args[2] = {NULL, 0}: xdal_launch_kernel returned %s", xdal_status_string(st));
  good_launch(add, d, s);

  /* At most 4096 bytes of arguments. */
  static unsigned char big[8192];
  static unsigned char back[4096];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (unsigned char)(i * 13 + 7);
  uint64_t size = 4096 - 16;
  xdal_kernel_arg_t fits[] = {{&out, 8}, {&size, 8}, {big, (size_t)size}};
  CHECK_OK(xdal_launch_kernel(blob, ONE, ONE, 0, s, fits, 3));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_memcpy(back, out, (size_t)size, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_MSG(memcmp(back, big, (size_t)size) == 0, "a 4080-byte argument did not reach the kernel intact");
  uint64_t size2 = size + 1;
  xdal_kernel_arg_t over[] = {{&out, 8}, {&size2, 8}, {big, (size_t)size2}};
  expect_bad_launch(XDAL_ERROR_INVALID_VALUE, blob, ONE, ONE, 0, s, over, 3, "4097 bytes of arguments");
  xdal_kernel_arg_t huge[] = {{&out, 8}, {&size2, 8}, {big, sizeof big}};
  expect_bad_launch(XDAL_ERROR_INVALID_VALUE, blob, ONE, ONE, 0, s, huge, 3, "an 8192-byte argument");
  xdal_kernel_arg_t wrap[] = {{&out, 8}, {&size2, 8}, {big, SIZE_MAX - 7}};
  expect_bad_launch(XDAL_ERROR_INVALID_VALUE, blob, ONE, ONE, 0, s, wrap, 3,
                    "sizes whose sum wraps around (8 + 8 + SIZE_MAX - 7)");
  /* Many small arguments: 512 of 8 bytes fit, 513 do not. */
  static xdal_kernel_arg_t many[513];
  void *counter = NULL;
  REQUIRE_OK(xdal_malloc(&counter, 64));
  REQUIRE_OK(xdal_memset(counter, 0, 64));
  for (int i = 0; i < 513; i++) many[i] = (xdal_kernel_arg_t){&counter, 8};
  expect_bad_launch(XDAL_ERROR_INVALID_VALUE, count, ONE, ONE, 0, s, many, 513, "513 arguments of 8 bytes");
  CHECK_OK(xdal_launch_kernel(count, ONE, ONE, 0, s, many, 512));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_EQ(read_counter(counter), 1);

  /* Bad streams. */
  xdal_stream_t dead = NULL;
  xdal_event_t e = NULL;
  REQUIRE_OK(xdal_stream_create(&dead, XDAL_STREAM_DEFAULT, 0));
  CHECK_OK(xdal_stream_destroy(dead));
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  xdal_kernel_arg_t ok[] = {{&d, 8}, {&n, 8}, {&v, 4}};
  expect_bad_launch(XDAL_ERROR_INVALID_HANDLE, add, ONE, ONE, 0, dead, ok, 3, "a destroyed stream");
  expect_bad_launch(XDAL_ERROR_INVALID_HANDLE, add, ONE, ONE, 0, (xdal_stream_t)GARBAGE, ok, 3,
                    "(xdal_stream_t)0x12345");
  expect_bad_launch(XDAL_ERROR_INVALID_HANDLE, add, ONE, ONE, 0, (xdal_stream_t)(void *)e, ok, 3,
                    "an event passed as a stream");
  expect_bad_launch(XDAL_ERROR_INVALID_HANDLE, add, ONE, ONE, 0, (xdal_stream_t)(void *)m, ok, 3,
                    "a module passed as a stream");
  after_bad.f = NULL;
  good_launch(add, d, NULL);
  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_free(out));
  CHECK_OK(xdal_free(counter));
  CHECK_OK(xdal_module_unload(m));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_not_supported_backend),
    HARNESS_TEST(test_module_load_errors),
    HARNESS_TEST(test_module_load_data),
    HARNESS_TEST(test_module_get_function),
    HARNESS_TEST(test_function_from_host),
    HARNESS_TEST(test_a_host_kernel_that_waits_is_refused_not_hung),
    HARNESS_TEST(test_launch_bad_function),
    HARNESS_TEST(test_launch_bad_dims),
    HARNESS_TEST(test_launch_bad_args),
};

HARNESS_MAIN(tests)
