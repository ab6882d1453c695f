/* Kernels (ABI.md "Kernels", docs/kernels.md), part 2: what launches do.
   Every block runs once and sees its own context and shared memory;
   blocks run in parallel; arguments are copied at launch; launches are
   ordered with copies, host functions and events; a failing kernel makes
   its stream (only) fail, sticky; unloading a module with launches queued
   is safe; launches from several threads; a grid-stride vector add. Part 1
   (modules, validation) is kernels.c.

   State that kernels and host functions touch is static, so that a test
   that returns early never leaves them pointing at a dead stack frame. */
#include "harness.h"

#include "kernels_common.h"

/* host_fail(int32_t status): every block returns `status`. */
static xdal_status_t host_fail(const xdal_kernel_context_t *ctx, void *const *args) {
  (void)ctx;
  return (xdal_status_t) * (const int32_t *)args[0];
}

/* The order in which host functions and log_kernel launches ran. */
#define ORDER_N 300
static struct {
  atomic_int next;
  int seen[ORDER_N];
} order_log;
static int order_ids[ORDER_N];

static void order_append(int id) {
  int at = atomic_fetch_add(&order_log.next, 1);
  if (at < ORDER_N) order_log.seen[at] = id;
}

static void log_host_fn(void *arg) { order_append(*(int *)arg); }

/* log_kernel(int32_t id): block 0 appends id to the order log. */
static xdal_status_t log_kernel(const xdal_kernel_context_t *ctx, void *const *args) {
  if (block_linear(ctx) == 0) order_append(*(const int32_t *)args[0]);
  return XDAL_SUCCESS;
}

/* --- What blocks see ------------------------------------------------------ */

static void test_every_block_once(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t record = get_fn(m, "record_blocks");
  REQUIRE(record != NULL);
  static const xdal_dim3_t grids[] = {{1, 1, 1}, {37, 1, 1}, {5, 7, 1}, {3, 4, 5}, {1, 1, 9}, {2, 1, 3}, {300, 2, 1}};
  static const xdal_dim3_t blocks[] = {{1, 1, 1}, {32, 4, 2}, {7, 3, 1}};
  static tk_block_record records[600];
  void *drec = NULL, *derr = NULL;
  REQUIRE_OK(xdal_malloc(&drec, sizeof records));
  REQUIRE_OK(xdal_malloc(&derr, 64));
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++)
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
      xdal_dim3_t g = grids[gi], b = blocks[bi];
      size_t total = (size_t)g.x * g.y * g.z;
      size_t shared = (gi + bi) % 2 ? 16 * (gi + 1) : 0;
      CHECK_OK(xdal_memset(drec, 0, sizeof records));
      CHECK_OK(xdal_memset(derr, 0, 64));
      xdal_kernel_arg_t args[] = {{&drec, 8}, {&derr, 8}};
      if (!CHECK_OK(xdal_launch_kernel(record, g, b, shared, s, args, 2))) continue;
      CHECK_OK(xdal_stream_synchronize(s));
      CHECK_OK(xdal_memcpy(records, drec, sizeof records, XDAL_MEMCPY_DEVICE_TO_HOST));
      CHECK_EQ(read_counter(derr), 0);
      int bad = 0;
      for (size_t i = 0; i < sizeof records / sizeof records[0] && bad < 3; i++) {
        const tk_block_record *r = &records[i];
        if (i >= total) {
          bad += !CHECK_MSG(r->runs == 0, "grid {%u,%u,%u}: a block wrote record %zu, beyond the %zu blocks", g.x,
                            g.y, g.z, i, total);
          continue;
        }
        xdal_dim3_t idx = {(uint32_t)(i % g.x), (uint32_t)(i / g.x % g.y), (uint32_t)(i / ((size_t)g.x * g.y))};
        bad += !CHECK_MSG(r->runs == 1, "grid {%u,%u,%u} block {%u,%u,%u}: block (%u,%u,%u) ran %u times", g.x, g.y,
                          g.z, b.x, b.y, b.z, idx.x, idx.y, idx.z, r->runs);
        if (r->runs == 0) continue;
        bad += !CHECK_MSG(r->block_idx.x == idx.x && r->block_idx.y == idx.y && r->block_idx.z == idx.z,
                          "record %zu has block_idx (%u,%u,%u)", i, r->block_idx.x, r->block_idx.y, r->block_idx.z);
        bad += !CHECK_MSG(r->grid_dim.x == g.x && r->grid_dim.y == g.y && r->grid_dim.z == g.z,
                          "block %zu saw grid_dim {%u,%u,%u}, launched {%u,%u,%u}", i, r->grid_dim.x, r->grid_dim.y,
                          r->grid_dim.z, g.x, g.y, g.z);
        bad += !CHECK_MSG(r->block_dim.x == b.x && r->block_dim.y == b.y && r->block_dim.z == b.z,
                          "block %zu saw block_dim {%u,%u,%u}, launched {%u,%u,%u}", i, r->block_dim.x,
                          r->block_dim.y, r->block_dim.z, b.x, b.y, b.z);
        bad += !CHECK_MSG(r->struct_size >= sizeof(xdal_kernel_context_t),
                          "ctx->struct_size is %llu, below sizeof(xdal_kernel_context_t) = %zu",
                          (unsigned long long)r->struct_size, sizeof(xdal_kernel_context_t));
        bad += !CHECK_MSG(r->shared_mem_bytes == shared, "block %zu saw shared_mem_bytes %llu, launched with %zu", i,
                          (unsigned long long)r->shared_mem_bytes, shared);
        bad += !CHECK_MSG(r->shared_null == (shared == 0), "block %zu: shared_mem is %s with %zu bytes requested", i,
                          r->shared_null ? "NULL" : "not NULL", shared);
      }
    }
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(drec));
  CHECK_OK(xdal_free(derr));
  CHECK_OK(xdal_module_unload(m));
}

static void test_shared_memory_per_block(void) {
  REQUIRE_HOST_KERNELS();
  xdal_device_properties_t p = device_props();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t check = get_fn(m, "shared_check");
  REQUIRE(check != NULL);
  enum { BLOCKS = 24 };
  static uint32_t result[BLOCKS * TK_SHARED_WORDS];
  void *dres = NULL;
  REQUIRE_OK(xdal_malloc(&dres, sizeof result));
  size_t sizes[] = {0, 1, 100, 4096, 12345, (size_t)p.shared_mem_per_block};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    size_t bytes = sizes[si];
    if (bytes > p.shared_mem_per_block || bytes > (64u << 20)) continue;
    uint64_t pause_us = 300;
    CHECK_OK(xdal_memset(dres, 0, sizeof result));
    xdal_kernel_arg_t args[] = {{&dres, 8}, {&pause_us, 8}};
    CHECK_OK(xdal_launch_kernel(check, (xdal_dim3_t){4, 3, 2}, (xdal_dim3_t){8, 1, 1}, bytes, NULL, args, 2));
    CHECK_OK(xdal_stream_synchronize(NULL));
    CHECK_OK(xdal_memcpy(result, dres, sizeof result, XDAL_MEMCPY_DEVICE_TO_HOST));
    for (int b = 0; b < BLOCKS; b++) {
      const uint32_t *r = &result[b * TK_SHARED_WORDS];
      if (!CHECK_MSG(r[TK_SHARED_RUNS] == 1 && r[TK_SHARED_BYTES] == (uint32_t)bytes &&
                         r[TK_SHARED_NONNULL] == (bytes != 0) && r[TK_SHARED_BAD] == 0,
                     "%zu bytes of shared memory, block %d: ran %u times, saw %u bytes at a %s pointer, %u bytes "
                     "changed under it (another block's shared memory?)",
                     bytes, b, r[TK_SHARED_RUNS], r[TK_SHARED_BYTES], r[TK_SHARED_NONNULL] ? "non-NULL" : "NULL",
                     r[TK_SHARED_BAD]))
        break;
    }
  }
  CHECK_OK(xdal_free(dres));
  CHECK_OK(xdal_module_unload(m));
}

static void test_blocks_run_in_parallel(void) {
  REQUIRE_HOST_KERNELS();
  xdal_device_properties_t p = device_props();
  if (p.compute_units < 2) SKIP("the device has %u compute unit(s)", p.compute_units);
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t meet = get_fn(m, "rendezvous");
  REQUIRE(meet != NULL);
  void *darrived = NULL, *dmet = NULL;
  REQUIRE_OK(xdal_malloc(&darrived, 64));
  REQUIRE_OK(xdal_malloc(&dmet, 64));
  REQUIRE_OK(xdal_memset(darrived, 0, 64));
  REQUIRE_OK(xdal_memset(dmet, 0, 64));
  uint64_t timeout_ms = 5000;
  xdal_kernel_arg_t args[] = {{&darrived, 8}, {&dmet, 8}, {&timeout_ms, 8}};
  CHECK_OK(xdal_launch_kernel(meet, (xdal_dim3_t){2, 1, 1}, ONE, 0, NULL, args, 3));
  CHECK_OK(xdal_stream_synchronize(NULL));
  uint32_t met[2] = {0, 0};
  CHECK_OK(xdal_memcpy(met, dmet, sizeof met, XDAL_MEMCPY_DEVICE_TO_HOST));
  if (backend_is_fake())
    CHECK_MSG(met[0] && met[1], "the 2 blocks of a launch never ran at the same time (%u compute units)",
              p.compute_units);
  else if (!(met[0] && met[1]))
    printf("    note: the 2 blocks of a launch did not run at the same time\n");
  CHECK_OK(xdal_free(darrived));
  CHECK_OK(xdal_free(dmet));
  CHECK_OK(xdal_module_unload(m));
}

/* --- Arguments are copied at launch --------------------------------------- */

static void test_args_copied_at_launch(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t echo = get_fn(m, "args_echo");
  REQUIRE(echo != NULL);
  static harness_gate gate;
  xdal_stream_t s = NULL;
  void *dout[2] = {NULL, NULL};
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_malloc(&dout[0], sizeof(tk_echo)));
  REQUIRE_OK(xdal_malloc(&dout[1], sizeof(tk_echo)));
  /* What each launch should see. */
  tk_echo want[2];
  memset(want, 0, sizeof want);
  for (int k = 0; k < 2; k++) {
    want[k].u64 = 0x1122334455667788ull + (uint64_t)k;
    for (int i = 0; i < 3; i++) want[k].three[i] = (uint8_t)(0xA0 + i + 16 * k);
    want[k].one = (uint8_t)(0x5A + k);
    fill_pattern(want[k].blob, TK_ECHO_BLOB, 77u + (uint32_t)k);
    want[k].f64 = 3.25 + k;
  }
  gate_init(&gate);
  CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
  for (int k = 0; k < 2; k++) {
    /* Argument storage and the argument array on the heap, changed and
       freed right after the call, while the stream is held. */
    tk_echo *vals = (tk_echo *)malloc(sizeof *vals);
    void **ptr = (void **)malloc(sizeof *ptr);
    xdal_kernel_arg_t *args = (xdal_kernel_arg_t *)malloc(6 * sizeof *args);
    REQUIRE(vals && ptr && args);
    *vals = want[k];
    *ptr = dout[k];
    args[0] = (xdal_kernel_arg_t){ptr, 8};
    args[1] = (xdal_kernel_arg_t){&vals->u64, 8};
    args[2] = (xdal_kernel_arg_t){vals->three, 3};
    args[3] = (xdal_kernel_arg_t){&vals->one, 1};
    args[4] = (xdal_kernel_arg_t){vals->blob, TK_ECHO_BLOB};
    args[5] = (xdal_kernel_arg_t){&vals->f64, 8};
    CHECK_OK(xdal_launch_kernel(echo, (xdal_dim3_t){2, 1, 1}, ONE, 0, s, args, 6));
    memset(vals, 0xEE, sizeof *vals);
    *ptr = dout[1 - k];
    memset(args, 0, 6 * sizeof *args);
    free(vals);
    free(ptr);
    free(args);
  }
  CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(s));
  gate_open(&gate);
  CHECK_OK(xdal_stream_synchronize(s));
  gate_finish(&gate);
  for (int k = 0; k < 2; k++) {
    tk_echo got;
    memset(&got, 0, sizeof got);
    CHECK_OK(xdal_memcpy(&got, dout[k], sizeof got, XDAL_MEMCPY_DEVICE_TO_HOST));
    CHECK_MSG(got.u64 == want[k].u64, "launch %d: the uint64_t argument arrived as 0x%llx", k,
              (unsigned long long)got.u64);
    CHECK_MSG(memcmp(got.three, want[k].three, 3) == 0, "launch %d: the 3-byte argument changed", k);
    CHECK_MSG(got.one == want[k].one, "launch %d: the 1-byte argument arrived as 0x%02x", k, got.one);
    CHECK_MSG(memcmp(got.blob, want[k].blob, TK_ECHO_BLOB) == 0, "launch %d: the 200-byte argument changed", k);
    CHECK_MSG(got.f64 == want[k].f64, "launch %d: the double argument arrived as %g", k, got.f64);
  }
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(dout[0]));
  CHECK_OK(xdal_free(dout[1]));
  CHECK_OK(xdal_module_unload(m));
}

/* --- Ordering ------------------------------------------------------------- */

static void test_launch_ordering(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t add = get_fn(m, "add_u32");
  REQUIRE(add != NULL);
  xdal_stream_t s = NULL, s2 = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&s2, XDAL_STREAM_NON_BLOCKING, 0));

  /* Copy in, kernel, copy out, 20 rounds through one device buffer. */
  enum { N = 4099, ROUNDS = 20 };
  uint32_t *in = NULL, *out = NULL;
  void *d = NULL;
  REQUIRE_OK(xdal_malloc_host((void **)&in, sizeof(uint32_t) * N * ROUNDS));
  REQUIRE_OK(xdal_malloc_host((void **)&out, sizeof(uint32_t) * N * ROUNDS));
  REQUIRE_OK(xdal_malloc(&d, sizeof(uint32_t) * N));
  for (size_t i = 0; i < (size_t)N * ROUNDS; i++) {
    in[i] = (uint32_t)(i * 2654435761u);
    out[i] = 0;
  }
  uint64_t n = N;
  for (int r = 0; r < ROUNDS; r++) {
    uint32_t v = (uint32_t)r * 1000u + 1u;
    xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {&v, 4}};
    CHECK_OK(xdal_memcpy_async(d, in + (size_t)r * N, sizeof(uint32_t) * N, XDAL_MEMCPY_HOST_TO_DEVICE, s));
    CHECK_OK(xdal_launch_kernel(add, (xdal_dim3_t){3, 1, 1}, (xdal_dim3_t){64, 1, 1}, 0, s, args, 3));
    CHECK_OK(xdal_launch_kernel(add, (xdal_dim3_t){2, 2, 1}, (xdal_dim3_t){7, 1, 1}, 0, s, args, 3));
    CHECK_OK(xdal_memcpy_async(out + (size_t)r * N, d, sizeof(uint32_t) * N, XDAL_MEMCPY_DEVICE_TO_HOST, s));
  }
  CHECK_OK(xdal_stream_synchronize(s));
  for (int r = 0, bad = 0; r < ROUNDS && !bad; r++)
    for (size_t i = 0; i < N && !bad; i++) {
      uint32_t want = in[(size_t)r * N + i] + 2u * ((uint32_t)r * 1000u + 1u);
      bad = !CHECK_MSG(out[(size_t)r * N + i] == want, "round %d element %zu: %u, expected %u", r, i,
                       out[(size_t)r * N + i], want);
    }

  /* Host functions and host-kernel launches interleaved run in order. */
  xdal_function_t logk = NULL;
  REQUIRE_OK(xdal_function_from_host(&logk, log_kernel));
  atomic_store(&order_log.next, 0);
  for (int i = 0; i < ORDER_N; i++) {
    order_ids[i] = i;
    order_log.seen[i] = -1;
  }
  for (int i = 0; i < ORDER_N; i++) {
    if (i % 3 == 1) {
      CHECK_OK(xdal_launch_host_func(s, log_host_fn, &order_ids[i]));
    } else {
      int32_t id = i;
      xdal_kernel_arg_t args[] = {{&id, 4}};
      CHECK_OK(xdal_launch_kernel(logk, (xdal_dim3_t){(uint32_t)(i % 5) + 1, 1, 1}, ONE, 0, s, args, 1));
    }
  }
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_EQ(atomic_load(&order_log.next), ORDER_N);
  for (int i = 0; i < ORDER_N; i++)
    if (!CHECK_MSG(order_log.seen[i] == i, "item %d ran in place %d (got %d there)", i, i, order_log.seen[i])) break;

  /* Across streams through an event: s2's launch waits for s's. */
  static harness_gate gate;
  xdal_event_t e = NULL;
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DISABLE_TIMING));
  CHECK_OK(xdal_memset(d, 0, sizeof(uint32_t) * N));
  uint32_t one = 1, ten = 10;
  xdal_kernel_arg_t add1[] = {{&d, 8}, {&n, 8}, {&one, 4}};
  xdal_kernel_arg_t add10[] = {{&d, 8}, {&n, 8}, {&ten, 4}};
  gate_init(&gate);
  CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
  CHECK_OK(xdal_launch_kernel(add, (xdal_dim3_t){4, 1, 1}, (xdal_dim3_t){32, 1, 1}, 0, s, add1, 3));
  CHECK_OK(xdal_event_record(e, s));
  CHECK_OK(xdal_stream_wait_event(s2, e));
  CHECK_OK(xdal_launch_kernel(add, (xdal_dim3_t){4, 1, 1}, (xdal_dim3_t){32, 1, 1}, 0, s2, add10, 3));
  CHECK_OK(xdal_memcpy_async(out, d, sizeof(uint32_t) * N, XDAL_MEMCPY_DEVICE_TO_HOST, s2));
  sleep_ms(10);
  CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(s2));
  gate_open(&gate);
  CHECK_OK(xdal_stream_synchronize(s2));
  gate_finish(&gate);
  for (size_t i = 0; i < N; i++)
    if (!CHECK_MSG(out[i] == 11, "element %zu is %u after +1 on stream A then +10 on stream B", i, out[i])) break;

  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_stream_destroy(s2));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_free_host(in));
  CHECK_OK(xdal_free_host(out));
  CHECK_OK(xdal_module_unload(m));
}

/* --- Failing kernels ------------------------------------------------------ */

static void test_failure_is_sticky(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t fail = get_fn(m, "fail_with"), add = get_fn(m, "add_u32"), hfail = NULL;
  REQUIRE(fail && add);
  REQUIRE_OK(xdal_function_from_host(&hfail, host_fail));
  xdal_stream_t s = NULL, t = NULL;
  xdal_event_t before = NULL, after = NULL;
  void *d = NULL, *d2 = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_stream_create(&t, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&before, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_event_create(&after, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_malloc(&d, 256));
  REQUIRE_OK(xdal_malloc(&d2, 256));
  CHECK_OK(xdal_device_synchronize());

  int32_t status = XDAL_ERROR_INVALID_VALUE;
  uint32_t all = UINT32_MAX;
  xdal_kernel_arg_t fargs[] = {{&status, 4}, {&all, 4}};
  CHECK_OK(xdal_event_record(before, s));
  CHECK_OK(xdal_launch_kernel(fail, (xdal_dim3_t){4, 1, 1}, ONE, 0, s, fargs, 2)); /* enqueuing succeeds */
  CHECK_OK(xdal_event_record(after, s));
  good_launch(add, d2, t); /* another stream is unaffected */
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(s));
  check_message_says_why("xdal_stream_synchronize");
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(s));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_query(s));
  CHECK_MESSAGE_NAMES("xdal_stream_query");
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_query(s));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_event_synchronize(after));
  CHECK_MESSAGE_NAMES("xdal_event_synchronize");
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_event_query(after));
  CHECK_OK(xdal_event_synchronize(before)); /* recorded before the failure */
  CHECK_OK(xdal_event_query(before));
  CHECK_OK(xdal_stream_synchronize(t));
  CHECK_OK(xdal_stream_query(t));
  good_launch(add, d2, t);
  CHECK_OK(xdal_stream_synchronize(NULL));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_device_synchronize());
  /* Still failed after more work. */
  static atomic_int ran;
  atomic_init(&ran, 0);
  CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &ran));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(s));
  /* Destroying the stream clears it, though events recorded on it live. */
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_device_synchronize());
  CHECK_OK(xdal_event_destroy(before));
  CHECK_OK(xdal_event_destroy(after));
  CHECK_OK(xdal_device_synchronize());

  /* One failing block of many, a status outside the enum, a host kernel
     returning OUT_OF_MEMORY: each is LAUNCH_FAILED. */
  uint32_t block5 = 5;
  int32_t odd = 12345, oom = XDAL_ERROR_OUT_OF_MEMORY;
  xdal_kernel_arg_t one_block[] = {{&status, 4}, {&block5, 4}};
  xdal_kernel_arg_t odd_status[] = {{&odd, 4}, {&all, 4}};
  xdal_kernel_arg_t host_oom[] = {{&oom, 4}};
  struct {
    xdal_function_t f;
    const xdal_kernel_arg_t *args;
    size_t nargs;
    const char *what;
  } cases[] = {
      {fail, one_block, 2, "block 5 of 8 fails"},
      {fail, odd_status, 2, "the kernel returns 12345"},
      {hfail, host_oom, 1, "a host kernel returns XDAL_ERROR_OUT_OF_MEMORY"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    xdal_stream_t u = NULL;
    REQUIRE_OK(xdal_stream_create(&u, XDAL_STREAM_NON_BLOCKING, 0));
    CHECK_OK(xdal_launch_kernel(cases[i].f, (xdal_dim3_t){2, 2, 2}, ONE, 0, u, cases[i].args, cases[i].nargs));
    xdal_status_t st = xdal_stream_synchronize(u);
    CHECK_MSG(st == XDAL_ERROR_LAUNCH_FAILED, "%s: xdal_stream_synchronize returned %s, expected LAUNCH_FAILED",
              cases[i].what, xdal_status_string(st));
    st = xdal_stream_query(u);
    CHECK_MSG(st == XDAL_ERROR_LAUNCH_FAILED, "%s: then xdal_stream_query returned %s", cases[i].what,
              xdal_status_string(st));
    CHECK_OK(xdal_stream_destroy(u));
  }
  CHECK_OK(xdal_device_synchronize());
  good_launch(add, d, NULL);

  CHECK_OK(xdal_stream_destroy(t));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_free(d2));
  CHECK_OK(xdal_module_unload(m));
}

/* --- Unloading with launches queued ---------------------------------------- */

static void test_unload_with_queued_launches(void) {
  REQUIRE_HOST_KERNELS();
  enum { N = 1000, LAUNCHES = 50 };
  for (int from_memory = 0; from_memory < 2; from_memory++) {
    printf("    module loaded from %s\n", from_memory ? "memory" : "its file");
    static harness_gate gate;
    xdal_module_t m = NULL;
    if (from_memory) {
      size_t size = 0;
      unsigned char *bytes = read_module_file(&size);
      REQUIRE(bytes != NULL);
      xdal_status_t st = xdal_module_load_data(&m, bytes, size);
      free(bytes);
      REQUIRE(CHECK_OK(st));
    } else {
      m = load_test_module();
      REQUIRE(m != NULL);
    }
    xdal_function_t add = get_fn(m, "add_u32"), vadd = get_fn(m, "vector_add");
    REQUIRE(add && vadd);
    static float a[N], b[N], out[N];
    static uint32_t counts[N];
    for (int i = 0; i < N; i++) {
      a[i] = (float)i * 0.5f;
      b[i] = (float)(N - i);
    }
    void *dcount = NULL, *da = NULL, *db = NULL, *dout = NULL;
    xdal_stream_t s = NULL;
    REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
    REQUIRE_OK(xdal_malloc(&dcount, sizeof counts));
    REQUIRE_OK(xdal_malloc(&da, sizeof a));
    REQUIRE_OK(xdal_malloc(&db, sizeof b));
    REQUIRE_OK(xdal_malloc(&dout, sizeof out));
    CHECK_OK(xdal_memset(dcount, 0, sizeof counts));
    CHECK_OK(xdal_memcpy(da, a, sizeof a, XDAL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(xdal_memcpy(db, b, sizeof b, XDAL_MEMCPY_HOST_TO_DEVICE));
    gate_init(&gate);
    CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
    uint64_t n = N;
    uint32_t one = 1;
    xdal_kernel_arg_t cargs[] = {{&dcount, 8}, {&n, 8}, {&one, 4}};
    xdal_kernel_arg_t vargs[] = {{&da, 8}, {&db, 8}, {&dout, 8}, {&n, 8}};
    for (int i = 0; i < LAUNCHES; i++)
      CHECK_OK(xdal_launch_kernel(add, (xdal_dim3_t){(uint32_t)i % 4 + 1, 1, 1}, (xdal_dim3_t){16, 1, 1}, 0, s,
                                  cargs, 3));
    CHECK_OK(xdal_launch_kernel(vadd, (xdal_dim3_t){3, 2, 1}, (xdal_dim3_t){8, 4, 1}, 0, s, vargs, 4));
    CHECK_OK(xdal_module_unload(m));
    CHECK_MSG(!atomic_load(&gate.forced), "xdal_module_unload waited for the queued launches");
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(s));
    /* The handles are gone at once. */
    xdal_function_t f = NULL;
    CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_get_function(&f, m, "add_u32"));
    CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_unload(m));
    CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_launch_kernel(add, ONE, ONE, 0, s, cargs, 3));
    CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_launch_kernel(vadd, ONE, ONE, 0, s, vargs, 4));
    /* The queued launches still run, correctly. */
    gate_open(&gate);
    CHECK_OK(xdal_stream_synchronize(s));
    gate_finish(&gate);
    CHECK_OK(xdal_memcpy(counts, dcount, sizeof counts, XDAL_MEMCPY_DEVICE_TO_HOST));
    CHECK_OK(xdal_memcpy(out, dout, sizeof out, XDAL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < N; i++)
      if (!CHECK_MSG(counts[i] == LAUNCHES && out[i] == a[i] + b[i],
                     "element %d: count %u (expected %d), sum %g (expected %g)", i, counts[i], LAUNCHES,
                     (double)out[i], (double)(a[i] + b[i])))
        break;
    CHECK_OK(xdal_stream_destroy(s));
    CHECK_OK(xdal_free(dcount));
    CHECK_OK(xdal_free(da));
    CHECK_OK(xdal_free(db));
    CHECK_OK(xdal_free(dout));
  }
  /* The module loads again afterwards. */
  xdal_module_t again = load_test_module();
  REQUIRE(again != NULL);
  check_vector_add(again, "module loaded again after an unload");
  CHECK_OK(xdal_module_unload(again));
}

/* --- Launches from several threads ------------------------------------------ */

#define THREADS 4
#define THREAD_STREAMS 3
#define THREAD_LAUNCHES 1200
#define THREAD_N 48

static xdal_function_t thread_module_add;

static void *launch_thread(void *arg) {
  int id = (int)(intptr_t)arg;
  xdal_function_t host_add = NULL;
  if (!CHECK_OK(xdal_function_from_host(&host_add, host_add_u32))) return NULL;
  xdal_stream_t streams[THREAD_STREAMS] = {NULL};
  void *bufs[THREAD_STREAMS] = {NULL};
  uint32_t expected[THREAD_STREAMS] = {0};
  for (int j = 0; j < THREAD_STREAMS; j++) {
    if (!CHECK_OK(xdal_stream_create(&streams[j], XDAL_STREAM_NON_BLOCKING, 0))) return NULL;
    if (!CHECK_OK(xdal_malloc(&bufs[j], THREAD_N * sizeof(uint32_t)))) return NULL;
    if (!CHECK_OK(xdal_memset(bufs[j], 0, THREAD_N * sizeof(uint32_t)))) return NULL;
  }
  uint64_t n = THREAD_N;
  int failures = 0;
  for (int i = 0; i < THREAD_LAUNCHES && failures < 3; i++) {
    int j = (i * 7 + id) % THREAD_STREAMS;
    uint32_t v = (uint32_t)(i % 13) + 1u + (uint32_t)id * 100u;
    xdal_kernel_arg_t args[] = {{&bufs[j], 8}, {&n, 8}, {&v, 4}};
    xdal_function_t f = (i & 1) ? host_add : thread_module_add;
    xdal_dim3_t grid = {(uint32_t)(i % 3) + 1, 1, 1}, block = {(uint32_t)(i % 16) + 1, 1, 1};
    failures += !CHECK_OK(xdal_launch_kernel(f, grid, block, 0, streams[j], args, 3));
    expected[j] += v;
  }
  for (int j = 0; j < THREAD_STREAMS; j++) {
    uint32_t back[THREAD_N];
    CHECK_OK(xdal_stream_synchronize(streams[j]));
    CHECK_OK(xdal_memcpy(back, bufs[j], sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < THREAD_N; i++)
      if (!CHECK_MSG(back[i] == expected[j], "thread %d stream %d element %d: %u, expected %u", id, j, i, back[i],
                     expected[j]))
        break;
    CHECK_OK(xdal_stream_destroy(streams[j]));
    CHECK_OK(xdal_free(bufs[j]));
  }
  return NULL;
}

static void test_launches_from_threads(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  thread_module_add = get_fn(m, "add_u32");
  REQUIRE(thread_module_add != NULL);
  pthread_t threads[THREADS];
  int started = 0;
  for (int i = 0; i < THREADS; i++)
    if (CHECK(pthread_create(&threads[i], NULL, launch_thread, (void *)(intptr_t)i) == 0)) started++;
  for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
  CHECK_OK(xdal_module_unload(m));
}

/* --- vector_add over a grid-stride loop ------------------------------------- */

static void test_vector_add_odd_n(void) {
  REQUIRE_HOST_KERNELS();
  xdal_module_t m = load_test_module();
  REQUIRE(m != NULL);
  xdal_function_t vadd = get_fn(m, "vector_add");
  REQUIRE(vadd != NULL);
  enum { N = 100003, TAIL = 16 };
  static float a[N], b[N], out[N + TAIL];
  for (int i = 0; i < N; i++) {
    a[i] = (float)i * 0.75f;
    b[i] = 1.0f / (float)(i + 1);
  }
  void *da = NULL, *db = NULL, *dout = NULL;
  REQUIRE_OK(xdal_malloc(&da, sizeof a));
  REQUIRE_OK(xdal_malloc(&db, sizeof b));
  REQUIRE_OK(xdal_malloc(&dout, sizeof out));
  CHECK_OK(xdal_memcpy(da, a, sizeof a, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK_OK(xdal_memcpy(db, b, sizeof b, XDAL_MEMCPY_HOST_TO_DEVICE));
  static const struct {
    xdal_dim3_t grid, block;
  } shapes[] = {
      {{16, 8, 1}, {32, 4, 1}}, {{1, 1, 1}, {1, 1, 1}}, {{7, 1, 1}, {3, 1, 1}},
      {{3, 5, 7}, {2, 2, 2}},   {{1, 300, 1}, {1, 1, 9}}, {{2000, 1, 1}, {128, 1, 1}},
  };
  uint64_t n = N;
  xdal_kernel_arg_t args[] = {{&da, 8}, {&db, 8}, {&dout, 8}, {&n, 8}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    CHECK_OK(xdal_memset(dout, 0xFF, sizeof out));
    CHECK_OK(xdal_launch_kernel(vadd, shapes[s].grid, shapes[s].block, 0, NULL, args, 4));
    CHECK_OK(xdal_stream_synchronize(NULL));
    CHECK_OK(xdal_memcpy(out, dout, sizeof out, XDAL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < N; i++)
      if (!CHECK_MSG(out[i] == a[i] + b[i], "grid {%u,%u,%u} block {%u,%u,%u}: out[%d] = %g, expected %g",
                     shapes[s].grid.x, shapes[s].grid.y, shapes[s].grid.z, shapes[s].block.x, shapes[s].block.y,
                     shapes[s].block.z, i, (double)out[i], (double)(a[i] + b[i])))
        break;
    CHECK_BYTES(out + N, sizeof(float) * TAIL, 0xFF);
  }
  CHECK_OK(xdal_free(da));
  CHECK_OK(xdal_free(db));
  CHECK_OK(xdal_free(dout));
  CHECK_OK(xdal_module_unload(m));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_every_block_once),
    HARNESS_TEST(test_shared_memory_per_block),
    HARNESS_TEST(test_blocks_run_in_parallel),
    HARNESS_TEST(test_args_copied_at_launch),
    HARNESS_TEST(test_launch_ordering),
    HARNESS_TEST(test_failure_is_sticky),
    HARNESS_TEST(test_unload_with_queued_launches),
    HARNESS_TEST(test_launches_from_threads),
    HARNESS_TEST(test_vector_add_odd_n),
};

HARNESS_MAIN(tests)
