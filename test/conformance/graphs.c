/* Graphs (since 1.2): stream capture in three modes, fork and join through
   events, memory nodes, instantiate, launch (repeatable, on any stream of
   the device, launches of one exec one after the other), node count, the
   Graphviz dump, and the calls a capture refuses (CAPTURE_UNSUPPORTED,
   invalidating it; CAPTURE_INVALIDATED after). Generic in the front, so
   every backend runs all of it. */
#include "harness.h"
#include "kernels_common.h"

static void fill_host(void *user_data) { atomic_fetch_add((atomic_int *)user_data, 1); }

static xdal_capture_status_t capture_status(xdal_stream_t s) {
  xdal_capture_status_t status = (xdal_capture_status_t)77;
  CHECK_OK(xdal_stream_get_capture_info(s, &status, NULL));
  return status;
}

static void test_capture_records_and_replays(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  void *a = NULL, *b = NULL;
  REQUIRE_OK(xdal_malloc(&a, 256));
  REQUIRE_OK(xdal_malloc(&b, 256));
  REQUIRE_OK(xdal_memset(a, 0, 256));
  REQUIRE_OK(xdal_memset(b, 0, 256));
  static atomic_int ran;
  atomic_store(&ran, 0);

  CHECK_EQ(capture_status(s), XDAL_CAPTURE_STATUS_NONE);
  REQUIRE_OK(xdal_stream_begin_capture(s, XDAL_CAPTURE_MODE_GLOBAL));
  xdal_capture_status_t status;
  uint64_t id = 0;
  CHECK_OK(xdal_stream_get_capture_info(s, &status, &id));
  CHECK_EQ(status, XDAL_CAPTURE_STATUS_ACTIVE);
  CHECK(id != 0);
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_begin_capture(s, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_memset_async(a, 7, 256, s));
  CHECK_OK(xdal_launch_host_func(s, fill_host, &ran));
  CHECK_OK(xdal_memcpy_async(b, a, 128, XDAL_MEMCPY_DEVICE_TO_DEVICE, s));
  /* The checks of the eager call happen at capture time. */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset_async(a, 1, 257, s));
  xdal_graph_t graph = NULL;
  REQUIRE_OK(xdal_stream_end_capture(s, &graph));
  CHECK_EQ(capture_status(s), XDAL_CAPTURE_STATUS_NONE);
  size_t count = 0;
  CHECK_OK(xdal_graph_get_node_count(graph, &count));
  CHECK_EQ_U(count, 3);
  /* Nothing ran while capturing. */
  CHECK_OK(xdal_stream_synchronize(s));
  unsigned char back[256];
  CHECK_OK(xdal_memcpy(back, b, 256, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, 256, 0);
  CHECK_EQ(atomic_load(&ran), 0);

  xdal_graph_exec_t exec = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&exec, graph));
  for (int i = 0; i < 3; i++) CHECK_OK(xdal_graph_launch(exec, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_EQ(atomic_load(&ran), 3);
  CHECK_OK(xdal_memcpy(back, b, 256, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, 128, 7);
  CHECK_BYTES(back + 128, 128, 0);
  /* The exec outlives its graph. */
  CHECK_OK(xdal_graph_destroy(graph));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_graph_get_node_count(graph, &count));
  CHECK_OK(xdal_graph_launch(exec, NULL)); /* the default stream, same device */
  CHECK_OK(xdal_device_synchronize());
  CHECK_EQ(atomic_load(&ran), 4);
  CHECK_OK(xdal_graph_exec_destroy(exec));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_graph_launch(exec, s));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_graph_exec_destroy(exec));
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_kernels_are_captured(void) {
  xdal_module_t m = NULL;
  xdal_status_t st = xdal_module_get_builtin(&m);
  if (st == XDAL_ERROR_NOT_SUPPORTED) SKIP("no built-in kernels");
  REQUIRE_OK(st);
  xdal_function_t fill = NULL, add = NULL;
  REQUIRE_OK(xdal_module_get_function(&fill, m, "fill_f32"));
  REQUIRE_OK(xdal_module_get_function(&add, m, "add_f32"));
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  void *x = NULL, *y = NULL;
  REQUIRE_OK(xdal_malloc(&x, 64 * 4));
  REQUIRE_OK(xdal_malloc(&y, 64 * 4));
  uint64_t n = 64;
  float one = 1.0f;
  xdal_dim3_t grid = {2, 1, 1}, block = {32, 1, 1};
  REQUIRE_OK(xdal_stream_begin_capture(s, XDAL_CAPTURE_MODE_RELAXED));
  xdal_kernel_arg_t fill_args[] = {{&x, 8}, {&n, 8}, {&one, 4}};
  CHECK_OK(xdal_launch_kernel(fill, grid, block, 0, s, fill_args, 3));
  /* y += x, captured with this value of the arguments: changing the
     caller's variables afterwards changes nothing. */
  xdal_kernel_arg_t add_args[] = {{&y, 8}, {&x, 8}, {&y, 8}, {&n, 8}};
  CHECK_OK(xdal_launch_kernel(add, grid, block, 0, s, add_args, 4));
  /* Refused at capture time, as eagerly: argument sizes, a pointer
     outside its allocation. */
  uint32_t small_n = 64;
  xdal_kernel_arg_t bad_sizes[] = {{&x, 8}, {&small_n, 4}, {&one, 4}};
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_launch_kernel(fill, grid, block, 0, s, bad_sizes, 3));
  uint64_t too_many = 65;
  xdal_kernel_arg_t past[] = {{&x, 8}, {&too_many, 8}, {&one, 4}};
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_launch_kernel(fill, grid, block, 0, s, past, 3));
  xdal_graph_t graph = NULL;
  REQUIRE_OK(xdal_stream_end_capture(s, &graph));
  n = 1;
  one = 99.0f;
  REQUIRE_OK(xdal_memset(y, 0, 64 * 4));
  xdal_graph_exec_t exec = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&exec, graph));
  for (int i = 0; i < 5; i++) CHECK_OK(xdal_graph_launch(exec, s));
  CHECK_OK(xdal_stream_synchronize(s));
  float back[64];
  CHECK_OK(xdal_memcpy(back, y, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
  int wrong = 0;
  for (int i = 0; i < 64; i++) wrong += back[i] != 5.0f;
  CHECK_MSG(wrong == 0, "%d of 64 elements are not 5 after five replays of fill 1 and y += x (e.g. %g)", wrong,
            (double)back[0]);
  CHECK_OK(xdal_graph_exec_destroy(exec));
  CHECK_OK(xdal_graph_destroy(graph));
  CHECK_OK(xdal_free(x));
  CHECK_OK(xdal_free(y));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_module_unload(m));
}

/* Host nodes that note whether two runs of one exec ever overlap. */
static atomic_int inside, overlapped, runs;
static void enter_node(void *unused) {
  (void)unused;
  if (atomic_fetch_add(&inside, 1) != 0) atomic_store(&overlapped, 1);
  sleep_ms(5);
}
static void leave_node(void *unused) {
  (void)unused;
  atomic_fetch_sub(&inside, 1);
  atomic_fetch_add(&runs, 1);
}

static void test_launches_of_one_exec_run_one_after_the_other(void) {
  xdal_stream_t s1 = NULL, s2 = NULL, cap = NULL;
  REQUIRE_OK(xdal_stream_create(&s1, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&s2, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&cap, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_begin_capture(cap, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_launch_host_func(cap, enter_node, NULL));
  CHECK_OK(xdal_launch_host_func(cap, leave_node, NULL));
  xdal_graph_t graph = NULL;
  REQUIRE_OK(xdal_stream_end_capture(cap, &graph));
  xdal_graph_exec_t exec = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&exec, graph));
  atomic_store(&inside, 0);
  atomic_store(&overlapped, 0);
  atomic_store(&runs, 0);
  for (int i = 0; i < 4; i++) {
    CHECK_OK(xdal_graph_launch(exec, s1));
    CHECK_OK(xdal_graph_launch(exec, s2));
  }
  CHECK_OK(xdal_stream_synchronize(s1));
  CHECK_OK(xdal_stream_synchronize(s2));
  CHECK_EQ(atomic_load(&runs), 8);
  CHECK_MSG(atomic_load(&overlapped) == 0, "two launches of one exec ran at the same time");
  CHECK_OK(xdal_graph_exec_destroy(exec));
  CHECK_OK(xdal_graph_destroy(graph));
  CHECK_OK(xdal_stream_destroy(s1));
  CHECK_OK(xdal_stream_destroy(s2));
  CHECK_OK(xdal_stream_destroy(cap));
}

static void test_fork_and_join(void) {
  xdal_stream_t origin = NULL, side = NULL;
  xdal_event_t fork = NULL, join = NULL;
  REQUIRE_OK(xdal_stream_create(&origin, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&side, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_event_create(&fork, XDAL_EVENT_DISABLE_TIMING));
  REQUIRE_OK(xdal_event_create(&join, XDAL_EVENT_DISABLE_TIMING));
  void *a = NULL, *b = NULL;
  REQUIRE_OK(xdal_malloc(&a, 64));
  REQUIRE_OK(xdal_malloc(&b, 64));

  REQUIRE_OK(xdal_stream_begin_capture(origin, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_memset_async(a, 3, 64, origin));
  CHECK_OK(xdal_event_record(fork, origin));
  CHECK_STATUS(XDAL_ERROR_CAPTURE_UNSUPPORTED, xdal_event_query(fork)); /* an event of the capture */
  xdal_graph_t graph = NULL;
  CHECK_STATUS(XDAL_ERROR_CAPTURE_INVALIDATED, xdal_stream_end_capture(origin, &graph));
  CHECK(graph == NULL);

  /* Again, legally: the side stream joins through `fork`, copies a to b,
     and is joined back through `join`. */
  REQUIRE_OK(xdal_stream_begin_capture(origin, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_memset_async(a, 3, 64, origin));
  CHECK_OK(xdal_event_record(fork, origin));
  CHECK_OK(xdal_stream_wait_event(side, fork));
  CHECK_EQ(capture_status(side), XDAL_CAPTURE_STATUS_ACTIVE);
  uint64_t origin_id = 0, side_id = 0;
  xdal_capture_status_t status;
  CHECK_OK(xdal_stream_get_capture_info(origin, &status, &origin_id));
  CHECK_OK(xdal_stream_get_capture_info(side, &status, &side_id));
  CHECK_EQ_U(origin_id, side_id);
  CHECK_OK(xdal_memcpy_async(b, a, 64, XDAL_MEMCPY_DEVICE_TO_DEVICE, side));
  CHECK_OK(xdal_event_record(join, side));
  CHECK_OK(xdal_stream_wait_event(origin, join));
  REQUIRE_OK(xdal_stream_end_capture(origin, &graph));
  CHECK_EQ(capture_status(side), XDAL_CAPTURE_STATUS_NONE);
  size_t count = 0;
  CHECK_OK(xdal_graph_get_node_count(graph, &count));
  CHECK_EQ_U(count, 2);
  char path[512];
  if (temp_file(path, sizeof path, "", 0)) {
    CHECK_OK(xdal_graph_debug_dump(graph, path));
    FILE *f = fopen(path, "r");
    char text[4096] = "";
    if (CHECK(f != NULL)) {
      size_t got = fread(text, 1, sizeof text - 1, f);
      text[got] = '\0';
      fclose(f);
    }
    CHECK_MSG(strstr(text, "digraph") && strstr(text, "n0 -> n1") && strstr(text, "memset") && strstr(text, "memcpy"),
              "the dump is not the graph in DOT:\n%s", text);
    unlink(path);
  }
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_graph_debug_dump(graph, "/nonexistent-dir/graph.dot"));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_graph_debug_dump(graph, NULL));
  /* A FIFO nobody reads: refused at once, not waited on for a reader. */
  char fifo[512];
  if (temp_fifo(fifo, sizeof fifo)) {
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_graph_debug_dump(graph, fifo));
    CHECK_MESSAGE_NAMES("xdal_graph_debug_dump");
    unlink(fifo);
  }
  xdal_graph_exec_t exec = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&exec, graph));
  CHECK_OK(xdal_graph_launch(exec, side));
  CHECK_OK(xdal_stream_synchronize(side));
  unsigned char back[64];
  CHECK_OK(xdal_memcpy(back, b, 64, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, 64, 3);
  CHECK_OK(xdal_graph_exec_destroy(exec));
  CHECK_OK(xdal_graph_destroy(graph));

  /* A side stream not joined back: the end fails, and every stream leaves
     the capture. */
  REQUIRE_OK(xdal_stream_begin_capture(origin, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_event_record(fork, origin));
  CHECK_OK(xdal_stream_wait_event(side, fork));
  CHECK_OK(xdal_memset_async(b, 1, 64, side));
  CHECK_STATUS(XDAL_ERROR_CAPTURE_INVALIDATED, xdal_stream_end_capture(side, &graph));
  CHECK_STATUS(XDAL_ERROR_CAPTURE_INVALIDATED, xdal_stream_end_capture(origin, &graph));
  CHECK_EQ(capture_status(origin), XDAL_CAPTURE_STATUS_NONE);
  CHECK_EQ(capture_status(side), XDAL_CAPTURE_STATUS_NONE);
  REQUIRE_OK(xdal_stream_begin_capture(origin, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_event_record(fork, origin));
  CHECK_OK(xdal_stream_wait_event(side, fork));
  CHECK_OK(xdal_memset_async(b, 1, 64, side));
  CHECK_STATUS(XDAL_ERROR_CAPTURE_INVALIDATED, xdal_stream_end_capture(origin, &graph));
  CHECK_EQ(capture_status(side), XDAL_CAPTURE_STATUS_NONE);
  /* Both streams work again. */
  CHECK_OK(xdal_memset_async(b, 2, 64, side));
  CHECK_OK(xdal_stream_synchronize(side));
  CHECK_OK(xdal_stream_synchronize(origin));
  CHECK_OK(xdal_memcpy(back, b, 64, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, 64, 2);

  CHECK_OK(xdal_event_destroy(fork));
  CHECK_OK(xdal_event_destroy(join));
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
  CHECK_OK(xdal_stream_destroy(origin));
  CHECK_OK(xdal_stream_destroy(side));
}

static void test_illegal_calls_invalidate_the_capture(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  void *d = NULL;
  REQUIRE_OK(xdal_malloc(&d, 64));
  static const char *const what[] = {"stream_synchronize", "stream_query", "device_synchronize", "destroy"};
  for (size_t i = 0; i < sizeof what / sizeof what[0]; i++) {
    REQUIRE_OK(xdal_stream_begin_capture(s, XDAL_CAPTURE_MODE_RELAXED));
    CHECK_OK(xdal_memset_async(d, 1, 64, s));
    xdal_status_t st = XDAL_SUCCESS;
    const char *name = "";
    switch (i) {
      case 0: st = xdal_stream_synchronize(s), name = "xdal_stream_synchronize"; break;
      case 1: st = xdal_stream_query(s), name = "xdal_stream_query"; break;
      case 2: st = xdal_device_synchronize(), name = "xdal_device_synchronize"; break;
      default: st = xdal_stream_destroy(s), name = "xdal_stream_destroy"; break;
    }
    CHECK_MSG(st == XDAL_ERROR_CAPTURE_UNSUPPORTED, "%s during capture returned %s", what[i], xdal_status_string(st));
    CHECK_MESSAGE_NAMES(name);
    CHECK_EQ(capture_status(s), XDAL_CAPTURE_STATUS_INVALIDATED);
    CHECK_STATUS(XDAL_ERROR_CAPTURE_INVALIDATED, xdal_memset_async(d, 2, 64, s));
    xdal_graph_t graph = (xdal_graph_t)0x1;
    CHECK_STATUS(XDAL_ERROR_CAPTURE_INVALIDATED, xdal_stream_end_capture(s, &graph));
    CHECK(graph == (xdal_graph_t)0x1);
    CHECK_EQ(capture_status(s), XDAL_CAPTURE_STATUS_NONE);
    CHECK_OK(xdal_stream_synchronize(s)); /* usable again, nothing of the capture ran */
  }
  unsigned char back[64];
  CHECK_OK(xdal_memcpy(back, d, 64, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_MSG(back[0] != 1 && back[0] != 2, "captured work ran (%u)", back[0]);
  /* Not capturing: end is refused, and bad modes and handles. */
  xdal_graph_t graph = NULL;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_end_capture(s, &graph));
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_begin_capture(s, (xdal_capture_mode_t)3));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_stream_get_capture_info(s, NULL, NULL));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_graph_instantiate(&(xdal_graph_exec_t){NULL}, (xdal_graph_t)0x1234));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_graph_destroy(NULL));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_stream_destroy(s));
}

/* A thread that tries xdal_malloc while another thread captures. */
static void *malloc_elsewhere(void *status) {
  void *p = NULL;
  *(xdal_status_t *)status = xdal_malloc(&p, 64);
  if (p) xdal_free(p);
  return NULL;
}

static void test_capture_modes(void) {
  static const xdal_capture_mode_t modes[] = {XDAL_CAPTURE_MODE_GLOBAL, XDAL_CAPTURE_MODE_THREAD_LOCAL,
                                               XDAL_CAPTURE_MODE_RELAXED};
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  for (int m = 0; m < 3; m++) {
    /* From another thread. */
    REQUIRE_OK(xdal_stream_begin_capture(s, modes[m]));
    xdal_status_t other = XDAL_SUCCESS;
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, malloc_elsewhere, &other) == 0);
    pthread_join(t, NULL);
    xdal_status_t want_other = modes[m] == XDAL_CAPTURE_MODE_GLOBAL ? XDAL_ERROR_CAPTURE_UNSUPPORTED : XDAL_SUCCESS;
    CHECK_MSG(other == want_other, "mode %d: xdal_malloc on another thread returned %s", m, xdal_status_string(other));
    xdal_graph_t graph = NULL;
    xdal_status_t end = xdal_stream_end_capture(s, &graph);
    CHECK_EQ(end, want_other == XDAL_SUCCESS ? XDAL_SUCCESS : XDAL_ERROR_CAPTURE_INVALIDATED);
    if (end == XDAL_SUCCESS) CHECK_OK(xdal_graph_destroy(graph));
    /* From the capturing thread: malloc, free and a synchronous copy. */
    void *kept = NULL;
    REQUIRE_OK(xdal_malloc(&kept, 64));
    REQUIRE_OK(xdal_stream_begin_capture(s, modes[m]));
    void *p = NULL;
    xdal_status_t mine = xdal_malloc(&p, 64);
    xdal_status_t want_mine = modes[m] == XDAL_CAPTURE_MODE_RELAXED ? XDAL_SUCCESS : XDAL_ERROR_CAPTURE_UNSUPPORTED;
    CHECK_MSG(mine == want_mine, "mode %d: xdal_malloc on the capturing thread returned %s", m,
              xdal_status_string(mine));
    if (mine == XDAL_SUCCESS) CHECK_OK(xdal_free(p));
    unsigned char byte = 0;
    xdal_status_t copy = xdal_memcpy(&byte, kept, 1, XDAL_MEMCPY_DEVICE_TO_HOST);
    CHECK_MSG(copy == want_mine, "mode %d: a synchronous copy returned %s", m, xdal_status_string(copy));
    end = xdal_stream_end_capture(s, &graph);
    CHECK_EQ(end, want_mine == XDAL_SUCCESS ? XDAL_SUCCESS : XDAL_ERROR_CAPTURE_INVALIDATED);
    if (end == XDAL_SUCCESS) CHECK_OK(xdal_graph_destroy(graph));
    CHECK_OK(xdal_free(kept));
  }
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_memory_nodes(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  void *out = NULL;
  REQUIRE_OK(xdal_malloc(&out, 128));
  REQUIRE_OK(xdal_stream_begin_capture(s, XDAL_CAPTURE_MODE_GLOBAL));
  void *scratch = NULL, *kept = NULL;
  REQUIRE_OK(xdal_malloc_async(&scratch, 128, s));
  REQUIRE_OK(xdal_malloc_async(&kept, 64, s));
  CHECK_OK(xdal_memset_async(scratch, 9, 128, s));
  CHECK_OK(xdal_memcpy_async(out, scratch, 128, XDAL_MEMCPY_DEVICE_TO_DEVICE, s));
  CHECK_OK(xdal_free_async(scratch, s));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset_async(scratch, 1, 1, s)); /* freed in the capture */
  void *outside = NULL;
  xdal_graph_t graph = NULL;
  REQUIRE_OK(xdal_stream_end_capture(s, &graph));
  size_t count = 0;
  CHECK_OK(xdal_graph_get_node_count(graph, &count));
  CHECK_EQ_U(count, 5);
  /* Memory a graph reserved is its own until xdal_graph_destroy. */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(kept));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_async(kept, s));
  xdal_graph_exec_t exec = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&exec, graph));
  for (int i = 0; i < 2; i++) {
    CHECK_OK(xdal_memset(out, 0, 128));
    CHECK_OK(xdal_graph_launch(exec, s));
    CHECK_OK(xdal_stream_synchronize(s));
    unsigned char back[128];
    CHECK_OK(xdal_memcpy(back, out, 128, XDAL_MEMCPY_DEVICE_TO_HOST));
    CHECK_BYTES(back, 128, 9);
  }
  /* Freeing memory in a capture that it did not allocate is refused. */
  REQUIRE_OK(xdal_malloc(&outside, 64));
  REQUIRE_OK(xdal_stream_begin_capture(s, XDAL_CAPTURE_MODE_RELAXED));
  CHECK_STATUS(XDAL_ERROR_CAPTURE_UNSUPPORTED, xdal_free_async(outside, s));
  xdal_graph_t broken = NULL;
  CHECK_STATUS(XDAL_ERROR_CAPTURE_INVALIDATED, xdal_stream_end_capture(s, &broken));
  CHECK_OK(xdal_free(outside));
  CHECK_OK(xdal_graph_exec_destroy(exec));
  CHECK_OK(xdal_graph_destroy(graph));
  CHECK_OK(xdal_free(out));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_launch_checks(void) {
  xdal_stream_t s = NULL, cap = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&cap, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_begin_capture(cap, XDAL_CAPTURE_MODE_GLOBAL));
  xdal_graph_t graph = NULL;
  REQUIRE_OK(xdal_stream_end_capture(cap, &graph));
  size_t count = 9;
  CHECK_OK(xdal_graph_get_node_count(graph, &count));
  CHECK_EQ_U(count, 0);
  xdal_graph_exec_t exec = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&exec, graph));
  CHECK_OK(xdal_graph_launch(exec, s)); /* an empty graph is fine */
  /* Into a capturing stream: refused. */
  REQUIRE_OK(xdal_stream_begin_capture(cap, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_STATUS(XDAL_ERROR_CAPTURE_UNSUPPORTED, xdal_graph_launch(exec, cap));
  CHECK_STATUS(XDAL_ERROR_CAPTURE_INVALIDATED, xdal_stream_end_capture(cap, &(xdal_graph_t){NULL}));
  if (device_count() >= 2) {
    xdal_stream_t other = NULL;
    REQUIRE_OK(xdal_device_set(1));
    xdal_status_t st = xdal_stream_create(&other, XDAL_STREAM_NON_BLOCKING, 0);
    REQUIRE_OK(xdal_device_set(0));
    REQUIRE_OK(st);
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_graph_launch(exec, other));
    CHECK_OK(xdal_stream_destroy(other));
  }
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_graph_exec_destroy(exec));
  CHECK_OK(xdal_graph_destroy(graph));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_stream_destroy(cap));
}

/* Memory a graph reaches that is freed after instantiation: each launch is
   refused (nothing enqueued), also once the address is allocated again to
   someone else; instantiating over freed memory is refused too. */
static void test_launch_after_free_is_refused(void) {
  xdal_stream_t s = NULL, cap = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&cap, XDAL_STREAM_NON_BLOCKING, 0));
  unsigned char *a = NULL, *b = NULL, host[256];
  REQUIRE_OK(xdal_malloc((void **)&a, 256));
  REQUIRE_OK(xdal_malloc((void **)&b, 256));
  REQUIRE_OK(xdal_stream_begin_capture(cap, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_memset_async(a, 0x31, 256, cap));
  CHECK_OK(xdal_memcpy_async(b, a, 256, XDAL_MEMCPY_DEVICE_TO_DEVICE, cap));
  xdal_graph_t graph = NULL, again = NULL;
  REQUIRE_OK(xdal_stream_end_capture(cap, &graph));
  xdal_graph_exec_t exec = NULL, late = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&exec, graph));
  CHECK_OK(xdal_graph_launch(exec, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_memcpy(host, b, sizeof host, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(host, sizeof host, 0x31);
  /* Freeing other memory changes nothing. */
  void *other = NULL;
  REQUIRE_OK(xdal_malloc(&other, 256));
  CHECK_OK(xdal_free(other));
  CHECK_OK(xdal_graph_launch(exec, s));
  CHECK_OK(xdal_free(a));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_graph_launch(exec, s));
  CHECK_MESSAGE_NAMES("xdal_graph_launch");
  char message[512] = "";
  size_t needed = 0;
  xdal_get_last_error_message(message, sizeof message, &needed);
  CHECK_MSG(strstr(message, "freed") != NULL, "the message does not say the memory was freed: %s", message);
  /* The same size again, maybe at the same address: still not the
     graph's memory, and nothing of the refused launches ran. */
  unsigned char *a2 = NULL;
  REQUIRE_OK(xdal_memset(b, 0, 256));
  REQUIRE_OK(xdal_malloc((void **)&a2, 256));
  REQUIRE_OK(xdal_memset(a2, 0x77, 256));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_graph_launch(exec, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_memcpy(host, a2, sizeof host, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(host, sizeof host, 0x77);
  CHECK_OK(xdal_memcpy(host, b, sizeof host, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(host, sizeof host, 0);
  /* A new exec of the same graph: its memory is gone (unless the new
     allocation took the same address, which the graph then names). */
  xdal_status_t st = xdal_graph_instantiate(&late, graph);
  if (st == XDAL_SUCCESS) {
    CHECK_MSG(a2 == a, "a graph over freed memory was instantiated");
    CHECK_OK(xdal_graph_exec_destroy(late));
  } else {
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, st);
  }
  CHECK_OK(xdal_graph_exec_destroy(exec));
  CHECK_OK(xdal_graph_destroy(graph));
  /* A graph over live memory still runs. */
  REQUIRE_OK(xdal_stream_begin_capture(cap, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_memset_async(a2, 0x42, 256, cap));
  REQUIRE_OK(xdal_stream_end_capture(cap, &again));
  REQUIRE_OK(xdal_graph_instantiate(&late, again));
  CHECK_OK(xdal_graph_launch(late, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_memcpy(host, a2, sizeof host, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(host, sizeof host, 0x42);
  CHECK_OK(xdal_graph_exec_destroy(late));
  CHECK_OK(xdal_graph_destroy(again));
  CHECK_OK(xdal_free(a2));
  CHECK_OK(xdal_free(b));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_stream_destroy(cap));
}

/* A replayed host node is a host function: a wait inside it for the
   stream replaying it is refused, not hung. */
static xdal_stream_t replay_stream;
static _Atomic xdal_status_t replay_wait = XDAL_SUCCESS;

static void waiting_node(void *arg) {
  (void)arg;
  atomic_store(&replay_wait, xdal_stream_synchronize(replay_stream));
}

static void test_a_replayed_host_node_that_waits_is_refused_not_hung(void) {
  REQUIRE_OK(xdal_stream_create(&replay_stream, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_begin_capture(replay_stream, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_launch_host_func(replay_stream, waiting_node, NULL));
  xdal_graph_t graph = NULL;
  REQUIRE_OK(xdal_stream_end_capture(replay_stream, &graph));
  xdal_graph_exec_t exec = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&exec, graph));
  atomic_store(&replay_wait, XDAL_SUCCESS);
  CHECK_OK(xdal_graph_launch(exec, replay_stream));
  CHECK_OK(xdal_stream_synchronize(replay_stream));
  CHECK_EQ(atomic_load(&replay_wait), XDAL_ERROR_NOT_SUPPORTED);
  CHECK_OK(xdal_graph_exec_destroy(exec));
  CHECK_OK(xdal_graph_destroy(graph));
  CHECK_OK(xdal_stream_destroy(replay_stream));
}

/* Destroying a graph that owns memory gives the memory back, which waits
   for the device's work: refused inside a host function, not hung. */
static xdal_graph_t owning_graph;
static _Atomic xdal_status_t destroy_inside = XDAL_SUCCESS;

static void destroying_host_fn(void *arg) {
  (void)arg;
  atomic_store(&destroy_inside, xdal_graph_destroy(owning_graph));
}

static void test_destroying_a_graph_with_memory_in_a_host_function_is_refused(void) {
  xdal_stream_t s = NULL, cap = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&cap, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_begin_capture(cap, XDAL_CAPTURE_MODE_GLOBAL));
  void *scratch = NULL;
  CHECK_OK(xdal_malloc_async(&scratch, 256, cap));
  CHECK_OK(xdal_memset_async(scratch, 1, 256, cap));
  REQUIRE_OK(xdal_stream_end_capture(cap, &owning_graph));
  CHECK_OK(xdal_launch_host_func(s, destroying_host_fn, NULL));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_EQ(atomic_load(&destroy_inside), XDAL_ERROR_NOT_SUPPORTED);
  CHECK_OK(xdal_graph_destroy(owning_graph)); /* outside: fine */
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_stream_destroy(cap));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_capture_records_and_replays),
    HARNESS_TEST(test_kernels_are_captured),
    HARNESS_TEST(test_launches_of_one_exec_run_one_after_the_other),
    HARNESS_TEST(test_fork_and_join),
    HARNESS_TEST(test_illegal_calls_invalidate_the_capture),
    HARNESS_TEST(test_capture_modes),
    HARNESS_TEST(test_memory_nodes),
    HARNESS_TEST(test_launch_checks),
    HARNESS_TEST(test_launch_after_free_is_refused),
    HARNESS_TEST(test_a_replayed_host_node_that_waits_is_refused_not_hung),
    HARNESS_TEST(test_destroying_a_graph_with_memory_in_a_host_function_is_refused),
};

HARNESS_MAIN(tests)
