/* Tracing (since 1.2): API records of every call, activity records of the
   work with the times it ran (not when it was enqueued), correlation ids
   tying the two, external ids, masks, several tracers, the common clock,
   and the XDAL_TRACE file (test_trace_file, run with XDAL_TRACE set;
   test_trace_file_at_exit, written as a child process exits).
   Generic in the front: every backend runs all of it. */
#include "harness.h"

#include "child.h"

#define MAX_RECORDS 4096

typedef struct api_seen {
  char function[64];
  uint64_t correlation, external, start, end, thread;
  xdal_status_t status;
} api_seen;

typedef struct collector {
  pthread_mutex_t lock;
  api_seen api[MAX_RECORDS];
  size_t napi;
  xdal_activity_t act[MAX_RECORDS];
  char act_name[MAX_RECORDS][64];
  size_t nact;
} collector;

static void on_api(void *user, const xdal_api_record_t *r) {
  collector *c = user;
  pthread_mutex_lock(&c->lock);
  if (c->napi < MAX_RECORDS) {
    api_seen *s = &c->api[c->napi++];
    snprintf(s->function, sizeof s->function, "%s", r->function);
    s->correlation = r->correlation_id;
    s->external = r->external_id;
    s->start = r->start_ns;
    s->end = r->end_ns;
    s->thread = r->thread_id;
    s->status = r->status;
  }
  pthread_mutex_unlock(&c->lock);
}

static void on_activity(void *user, const xdal_activity_t *records, size_t count) {
  collector *c = user;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < count && c->nact < MAX_RECORDS; i++) {
    c->act[c->nact] = records[i];
    snprintf(c->act_name[c->nact], sizeof c->act_name[0], "%s", records[i].name ? records[i].name : "(null)");
    c->act[c->nact].name = NULL; /* valid during the callback only */
    c->nact++;
  }
  pthread_mutex_unlock(&c->lock);
}

static collector *new_collector(void) {
  collector *c = calloc(1, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  return c;
}

static xdal_tracer_t start_tracer(collector *c, uint64_t mask) {
  xdal_tracer_desc_t desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.api = on_api;
  desc.activity = on_activity;
  desc.user_data = c;
  desc.activity_mask = mask;
  xdal_tracer_t t = NULL;
  CHECK_OK(xdal_tracer_create(&t, &desc));
  return t;
}

static const api_seen *find_api(collector *c, const char *function, size_t nth) {
  for (size_t i = 0; i < c->napi; i++)
    if (strcmp(c->api[i].function, function) == 0 && nth-- == 0) return &c->api[i];
  return NULL;
}

static const xdal_activity_t *find_activity(collector *c, uint64_t correlation) {
  for (size_t i = 0; i < c->nact; i++)
    if (c->act[i].correlation_id == correlation) return &c->act[i];
  return NULL;
}

static void sleep_host_fn(void *ms) { sleep_ms((long)(intptr_t)ms); }

static void test_api_records(void) {
  collector *c = new_collector();
  xdal_tracer_t t = start_tracer(c, 0);
  REQUIRE(t != NULL);
  uint64_t before = 0, after = 0;
  CHECK_OK(xdal_get_timestamp_ns(&before));
  void *p = NULL;
  CHECK_OK(xdal_malloc(&p, 64));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_malloc(NULL, 64));
  CHECK_OK(xdal_free(p));
  CHECK_OK(xdal_get_timestamp_ns(&after));
  CHECK_OK(xdal_tracer_destroy(t));
  size_t seen = c->napi;
  CHECK_OK(xdal_malloc(&p, 64)); /* not reported: the tracer is gone */
  CHECK_OK(xdal_free(p));
  CHECK_EQ_U(c->napi, seen);
  const api_seen *ok = find_api(c, "xdal_malloc", 0), *bad = find_api(c, "xdal_malloc", 1);
  REQUIRE(ok && bad);
  CHECK_EQ(ok->status, XDAL_SUCCESS);
  CHECK_EQ(bad->status, XDAL_ERROR_NULL_POINTER);
  CHECK(ok->correlation != 0 && bad->correlation > ok->correlation);
  CHECK(ok->start >= before && ok->start <= ok->end && ok->end <= bad->start && bad->end <= after);
  CHECK(ok->thread != 0 && ok->thread == bad->thread);
  CHECK_EQ_U(ok->external, 0);
  CHECK(find_api(c, "xdal_free", 0) != NULL);
  free(c);
}

static void test_activities_carry_when_the_work_ran(void) {
  collector *c = new_collector();
  xdal_tracer_t t = start_tracer(c, 0);
  REQUIRE(t != NULL);
  xdal_stream_t s = NULL, other = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&other, XDAL_STREAM_NON_BLOCKING, 0));
  void *d = NULL;
  REQUIRE_OK(xdal_malloc(&d, 4096));
  unsigned char host[4096];
  memset(host, 5, sizeof host);
  /* 30 ms of host function first: the copy behind it starts after that,
     though it was enqueued at once. */
  CHECK_OK(xdal_launch_host_func(s, sleep_host_fn, (void *)(intptr_t)30));
  CHECK_OK(xdal_memcpy_async(d, host, sizeof host, XDAL_MEMCPY_HOST_TO_DEVICE, s));
  CHECK_OK(xdal_memset_async(d, 1, 128, other));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_synchronize(other));
  CHECK_OK(xdal_tracer_flush(t));
  const api_seen *host_call = find_api(c, "xdal_launch_host_func", 0);
  const api_seen *copy_call = find_api(c, "xdal_memcpy_async", 0);
  const api_seen *set_call = find_api(c, "xdal_memset_async", 0);
  REQUIRE(host_call && copy_call && set_call);
  const xdal_activity_t *host_act = find_activity(c, host_call->correlation);
  const xdal_activity_t *copy_act = find_activity(c, copy_call->correlation);
  const xdal_activity_t *set_act = find_activity(c, set_call->correlation);
  REQUIRE(host_act && copy_act && set_act);
  CHECK_EQ(host_act->kind, XDAL_ACTIVITY_HOST_FUNC);
  CHECK_EQ(copy_act->kind, XDAL_ACTIVITY_MEMCPY);
  CHECK_EQ(set_act->kind, XDAL_ACTIVITY_MEMSET);
  CHECK_EQ_U(copy_act->bytes, sizeof host);
  CHECK_EQ(copy_act->copy_kind, XDAL_MEMCPY_HOST_TO_DEVICE);
  CHECK_EQ_U(set_act->bytes, 128);
  CHECK(copy_act->struct_size >= sizeof(xdal_activity_t));
  CHECK(host_act->stream_id != 0 && host_act->stream_id == copy_act->stream_id);
  CHECK(set_act->stream_id != 0 && set_act->stream_id != copy_act->stream_id);
  CHECK_EQ(copy_act->device, 0);
  CHECK_MSG(host_act->end_ns - host_act->start_ns >= 25000000ull, "the host function took %llu ns, not ~30 ms",
            (unsigned long long)(host_act->end_ns - host_act->start_ns));
  CHECK_MSG(copy_act->start_ns >= host_act->end_ns, "the copy started before the host function ahead of it ended");
  /* Where the host function ran after its call returned (every backend
     but a synchronous one), the copy was enqueued long before it ran: its
     activity must say when it ran. */
  if (host_call->end + 20000000ull < host_act->end_ns)
    CHECK_MSG(copy_act->start_ns >= copy_call->end + 20000000ull,
              "the copy's start (%llu) is its enqueue time, not when it ran (enqueued %llu)",
              (unsigned long long)copy_act->start_ns, (unsigned long long)copy_call->end);
  CHECK(copy_act->start_ns <= copy_act->end_ns);
  CHECK_OK(xdal_tracer_destroy(t));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_stream_destroy(other));
  free(c);
}

static void test_kernels_graphs_and_memory(void) {
  collector *c = new_collector();
  xdal_tracer_t t = start_tracer(c, 0);
  REQUIRE(t != NULL);
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  void *d = NULL;
  REQUIRE_OK(xdal_malloc_async(&d, 1024, s));
  xdal_module_t m = NULL;
  int kernels = xdal_module_get_builtin(&m) == XDAL_SUCCESS;
  if (kernels) {
    xdal_function_t fill = NULL;
    REQUIRE_OK(xdal_module_get_function(&fill, m, "fill_u8"));
    unsigned char v = 3;
    uint64_t n = 1024;
    xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {&v, 1}};
    xdal_dim3_t grid = {4, 1, 1}, block = {64, 1, 1};
    CHECK_OK(xdal_launch_kernel(fill, grid, block, 0, s, args, 3));
  }
  REQUIRE_OK(xdal_stream_begin_capture(s, XDAL_CAPTURE_MODE_GLOBAL));
  CHECK_OK(xdal_memset_async(d, 2, 1024, s));
  xdal_graph_t g = NULL;
  REQUIRE_OK(xdal_stream_end_capture(s, &g));
  xdal_graph_exec_t e = NULL;
  REQUIRE_OK(xdal_graph_instantiate(&e, g));
  CHECK_OK(xdal_graph_launch(e, s));
  CHECK_OK(xdal_free_async(d, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_tracer_destroy(t));
  if (kernels) {
    const xdal_activity_t *k = find_activity(c, find_api(c, "xdal_launch_kernel", 0)->correlation);
    if (CHECK(k != NULL)) {
      CHECK_EQ(k->kind, XDAL_ACTIVITY_KERNEL);
      CHECK_EQ_U(k->grid.x, 4);
      CHECK_EQ_U(k->block.x, 64);
      CHECK_STR_EQ(c->act_name[k - c->act], "fill_u8");
    }
    CHECK_OK(xdal_module_unload(m));
  }
  const xdal_activity_t *graph = find_activity(c, find_api(c, "xdal_graph_launch", 0)->correlation);
  const xdal_activity_t *alloc = find_activity(c, find_api(c, "xdal_malloc_async", 0)->correlation);
  const xdal_activity_t *freed = find_activity(c, find_api(c, "xdal_free_async", 0)->correlation);
  if (CHECK(graph && alloc && freed)) {
    CHECK_EQ(graph->kind, XDAL_ACTIVITY_GRAPH);
    CHECK_EQ(alloc->kind, XDAL_ACTIVITY_ALLOC);
    CHECK_EQ_U(alloc->bytes, 1024);
    CHECK_EQ(freed->kind, XDAL_ACTIVITY_FREE);
  }
  /* The captured memset ran only as part of the graph: no activity of its own. */
  const api_seen *captured = find_api(c, "xdal_memset_async", 0);
  CHECK(captured != NULL && find_activity(c, captured->correlation) == NULL);
  CHECK_OK(xdal_graph_exec_destroy(e));
  CHECK_OK(xdal_graph_destroy(g));
  CHECK_OK(xdal_stream_destroy(s));
  free(c);
}

static void test_masks_and_two_tracers(void) {
  collector *all = new_collector(), *sets = new_collector();
  xdal_tracer_t a = start_tracer(all, 0), b = start_tracer(sets, 1ull << XDAL_ACTIVITY_MEMSET);
  REQUIRE(a && b);
  void *d = NULL;
  REQUIRE_OK(xdal_malloc(&d, 256));
  unsigned char host[256] = {0};
  CHECK_OK(xdal_memset_async(d, 1, 256, NULL));
  CHECK_OK(xdal_memcpy_async(host, d, 256, XDAL_MEMCPY_DEVICE_TO_HOST, NULL));
  CHECK_OK(xdal_device_synchronize());
  CHECK_OK(xdal_tracer_flush(a));
  CHECK_OK(xdal_tracer_destroy(a));
  CHECK_OK(xdal_tracer_destroy(b));
  CHECK_OK(xdal_free(d));
  /* Both get every API record. */
  const api_seen *in_all = find_api(all, "xdal_memcpy_async", 0), *in_sets = find_api(sets, "xdal_memcpy_async", 0);
  CHECK(in_all && in_sets && in_all->correlation == in_sets->correlation);
  int all_copies = 0, set_copies = 0, set_sets = 0;
  for (size_t i = 0; i < all->nact; i++) all_copies += all->act[i].kind == XDAL_ACTIVITY_MEMCPY;
  for (size_t i = 0; i < sets->nact; i++) {
    set_copies += sets->act[i].kind != XDAL_ACTIVITY_MEMSET;
    set_sets += sets->act[i].kind == XDAL_ACTIVITY_MEMSET;
  }
  CHECK(all_copies >= 1);
  CHECK_EQ(set_copies, 0);
  CHECK(set_sets >= 1);
  free(all);
  free(sets);
}

static void test_external_ids(void) {
  collector *c = new_collector();
  xdal_tracer_t t = start_tracer(c, 0);
  REQUIRE(t != NULL);
  uint64_t id = 0;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_correlation_pop_external(&id));
  CHECK_OK(xdal_correlation_push_external(42));
  int count = 0;
  CHECK_OK(xdal_device_get_count(&count));
  CHECK_OK(xdal_correlation_push_external(43));
  CHECK_OK(xdal_device_get_count(&count));
  CHECK_OK(xdal_correlation_pop_external(&id));
  CHECK_EQ_U(id, 43);
  CHECK_OK(xdal_correlation_pop_external(NULL));
  CHECK_OK(xdal_device_get_count(&count));
  CHECK_OK(xdal_tracer_destroy(t));
  const api_seen *first = find_api(c, "xdal_device_get_count", 0), *second = find_api(c, "xdal_device_get_count", 1),
                 *third = find_api(c, "xdal_device_get_count", 2);
  REQUIRE(first && second && third);
  CHECK_EQ_U(first->external, 42);
  CHECK_EQ_U(second->external, 43);
  CHECK_EQ_U(third->external, 0);
  free(c);
}

/* After xdal_tracer_destroy returns, no callback of the tracer runs, on
   any thread: its creator may free the user data then. A second thread
   makes calls whose slow API callback checks the data is still there. */
typedef struct {
  atomic_int freed, calls, late;
} destroyed_data_t;

static atomic_int keep_calling;

static void slow_api_callback(void *user_data, const xdal_api_record_t *record) {
  (void)record;
  destroyed_data_t *data = user_data;
  atomic_fetch_add(&data->calls, 1);
  sleep_ms(1);
  if (atomic_load(&data->freed)) atomic_fetch_add(&data->late, 1);
}

static void *calling_thread(void *arg) {
  (void)arg;
  while (atomic_load(&keep_calling)) {
    int count = 0;
    xdal_device_get_count(&count);
  }
  return NULL;
}

static void test_destroy_waits_for_callbacks_on_other_threads(void) {
  static destroyed_data_t data;
  for (int round = 0; round < 20; round++) {
    atomic_store(&data.freed, 0);
    xdal_tracer_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    desc.api = slow_api_callback;
    desc.user_data = &data;
    xdal_tracer_t tracer = NULL;
    REQUIRE_OK(xdal_tracer_create(&tracer, &desc));
    atomic_store(&keep_calling, 1);
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, calling_thread, NULL) == 0);
    sleep_ms(3);
    CHECK_OK(xdal_tracer_destroy(tracer));
    atomic_store(&data.freed, 1); /* what a caller does once destroy returns */
    sleep_ms(3);
    atomic_store(&keep_calling, 0);
    pthread_join(thread, NULL);
  }
  CHECK_MSG(atomic_load(&data.calls) > 0, "the callback was never called");
  CHECK_MSG(atomic_load(&data.late) == 0, "%d callbacks ran after xdal_tracer_destroy returned",
            atomic_load(&data.late));
}

static void test_clock_and_bad_arguments(void) {
  struct timespec ts;
  uint64_t a = 0, b = 0;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t c_before = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  CHECK_OK(xdal_get_timestamp_ns(&a));
  CHECK_OK(xdal_get_timestamp_ns(&b));
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t c_after = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  CHECK_MSG(c_before <= a && a <= b && b <= c_after, "xdal_get_timestamp_ns is not CLOCK_MONOTONIC");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_get_timestamp_ns(NULL));
  xdal_tracer_t t = NULL;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_tracer_create(&t, NULL));
  xdal_tracer_desc_t desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof(size_t);
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_tracer_create(&t, &desc));
  CHECK(t == NULL);
  desc.struct_size = sizeof desc;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_tracer_create(NULL, &desc));
  REQUIRE_OK(xdal_tracer_create(&t, &desc)); /* no callbacks at all: fine */
  CHECK_OK(xdal_tracer_flush(t));
  CHECK_OK(xdal_tracer_destroy(t));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_tracer_flush(t));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_tracer_destroy(t));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_tracer_destroy(NULL));
}

/* The trace file at `path` holds the host's and device 0's tracks, the
   copy's API call and activity, and the flow between them. */
static void check_trace_file(const char *path) {
  FILE *f = fopen(path, "r");
  REQUIRE(f != NULL);
  static char text[1 << 20];
  size_t len = fread(text, 1, sizeof text - 1, f);
  text[len] = '\0';
  fclose(f);
  static const char *const expected[] = {
      "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", "\"name\":\"process_name\"", "\"name\":\"xdal host\"",
      "\"name\":\"xdal device 0\"",                   "\"name\":\"xdal_memcpy_async\",\"cat\":\"api\",\"ph\":\"X\"",
      "\"name\":\"memcpy HtoD\",\"cat\":\"memcpy\",\"ph\":\"X\"", "\"ph\":\"s\"", "\"ph\":\"f\",\"bp\":\"e\"",
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
    CHECK_MSG(strstr(text, expected[i]) != NULL, "the trace file lacks %s", expected[i]);
  long depth = 0, min_depth = 0;
  for (size_t i = 0; i < len; i++) {
    depth += (text[i] == '{' || text[i] == '[') - (text[i] == '}' || text[i] == ']');
    if (depth < min_depth) min_depth = depth;
  }
  CHECK_MSG(depth == 0 && min_depth == 0, "the trace file's brackets do not balance");
}

/* A copy on a stream, waited for. */
static void traced_copy(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  void *d = NULL;
  REQUIRE_OK(xdal_malloc(&d, 4096));
  unsigned char host[4096] = {0};
  CHECK_OK(xdal_memcpy_async(d, host, sizeof host, XDAL_MEMCPY_HOST_TO_DEVICE, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_trace_file(void) {
  const char *path = getenv("XDAL_TRACE");
  if (path == NULL || *path == '\0') SKIP("needs XDAL_TRACE=<file>");
  traced_copy();
  xdal_tracer_desc_t desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  xdal_tracer_t t = NULL;
  REQUIRE_OK(xdal_tracer_create(&t, &desc));
  CHECK_OK(xdal_tracer_flush(t)); /* writes the file */
  CHECK_OK(xdal_tracer_destroy(t));
  check_trace_file(path);
}

/* The child of test_trace_file_at_exit: traced work, then an ordinary
   exit, which writes the file. */
static void test_traced_child(void) {
  if (getenv("XDAL_TRACE_TEST_CHILD") == NULL) SKIP("runs as the child of test_trace_file_at_exit");
  traced_copy();
}

/* Without a flush, the file is written as the process exits (after the
   C library has destroyed the exiting thread's thread-locals, which the
   synchronization had used). */
static void test_trace_file_at_exit(void) {
  char path[512], trace_env[600];
  REQUIRE(temp_file_variable(path, sizeof path, "XDAL_TRACE", trace_env, sizeof trace_env));
  const char *const env[] = {"XDAL_TRACE_TEST_CHILD=1", trace_env};
  char *text = run_child("test_traced_child", "XDAL_TRACE", env, 2);
  if (text != NULL) {
    CHECK_MSG(strstr(text, "panicked") == NULL && strstr(text, "cannot write") == NULL, "the child's stderr:\n%s",
              text);
    free(text);
    check_trace_file(path);
  }
  unlink(path);
}

/* XDAL_TRACE naming a FIFO nobody reads: the child still exits, saying
   on stderr that the file could not be written. */
static void test_trace_file_fifo_without_reader(void) {
  char fifo[512];
  REQUIRE(temp_fifo(fifo, sizeof fifo));
  char trace_env[600];
  snprintf(trace_env, sizeof trace_env, "XDAL_TRACE=%s", fifo);
  const char *const env[] = {"XDAL_TRACE_TEST_CHILD=1", trace_env};
  char *text = run_child("test_traced_child", "XDAL_TRACE", env, 2);
  if (text != NULL) {
    CHECK_MSG(strstr(text, "cannot write") != NULL, "the child's stderr does not say why:\n%s", text);
    free(text);
  }
  unlink(fifo);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_api_records),
    HARNESS_TEST(test_activities_carry_when_the_work_ran),
    HARNESS_TEST(test_kernels_graphs_and_memory),
    HARNESS_TEST(test_masks_and_two_tracers),
    HARNESS_TEST(test_external_ids),
    HARNESS_TEST(test_clock_and_bad_arguments),
    HARNESS_TEST(test_destroy_waits_for_callbacks_on_other_threads),
    HARNESS_TEST(test_trace_file),
    HARNESS_TEST(test_trace_file_at_exit),
    HARNESS_TEST(test_traced_child),
    HARNESS_TEST(test_trace_file_fifo_without_reader),
};

HARNESS_MAIN(tests)
