/* Streams: creation, validation, the default stream, handles, ordering,
   cross-stream waits, destruction with pending work.

   State that host functions touch is static, so that a test that returns
   early never leaves a host function pointing at a dead stack frame. */
#include "harness.h"

#include <limits.h>
#include <string.h>

#define GARBAGE_STREAM ((xdal_stream_t)0x12345)

#include "sync_probe.h"

static int priority_range(int *least, int *greatest) {
  return CHECK_OK(xdal_device_get_stream_priority_range(least, greatest));
}

static void test_create_flags_and_priorities(void) {
  int least = 0, greatest = 0;
  REQUIRE(priority_range(&least, &greatest));
  const uint32_t flags[] = {XDAL_STREAM_DEFAULT, XDAL_STREAM_NON_BLOCKING};
  for (int f = 0; f < 2; f++) {
    for (int prio = greatest; prio <= least; prio++) {
      xdal_stream_t s = NULL;
      REQUIRE_OK(xdal_stream_create(&s, flags[f], prio));
      CHECK(s != NULL);
      int got = 99, dev = 99;
      CHECK_OK(xdal_stream_get_priority(s, &got));
      CHECK_EQ(got, prio);
      CHECK_OK(xdal_stream_get_device(s, &dev));
      CHECK_EQ(dev, 0);
      CHECK_OK(xdal_stream_query(s));
      CHECK_OK(xdal_stream_synchronize(s));
      CHECK_OK(xdal_stream_destroy(s));
    }
  }

  xdal_stream_t s = GARBAGE_STREAM;
  const uint32_t bad_flags[] = {2, 3, 0x10, 0x80000000u, 0xffffffffu};
  for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_create(&s, bad_flags[i], 0));
    CHECK_MESSAGE_NAMES("xdal_stream_create");
  }
  const int bad_prios[] = {least + 1, greatest - 1, INT_MAX, INT_MIN};
  for (size_t i = 0; i < sizeof bad_prios / sizeof bad_prios[0]; i++)
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_create(&s, XDAL_STREAM_DEFAULT, bad_prios[i]));
  CHECK(s == GARBAGE_STREAM);
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_stream_create(NULL, XDAL_STREAM_DEFAULT, 0));
  CHECK_MESSAGE_NAMES("xdal_stream_create");

  /* Still usable. */
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, greatest));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_default_stream(void) {
  int least = 0, greatest = 0;
  REQUIRE(priority_range(&least, &greatest));
  CHECK_OK(xdal_stream_query(NULL));
  CHECK_OK(xdal_stream_synchronize(NULL));
  int prio = 99, dev = 99;
  CHECK_OK(xdal_stream_get_priority(NULL, &prio));
  CHECK_MSG(prio >= greatest && prio <= least, "default stream priority %d outside [%d, %d]", prio, greatest,
            least);
  CHECK_OK(xdal_stream_get_device(NULL, &dev));
  CHECK_EQ(dev, 0);
  static atomic_int counter;
  atomic_init(&counter, 0);
  CHECK_OK(xdal_launch_host_func(NULL, increment_host_fn, &counter));
  CHECK_OK(xdal_stream_synchronize(NULL));
  CHECK_EQ(atomic_load(&counter), 1);
  /* The default stream is never destroyed. */
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_destroy(NULL));
  CHECK_MESSAGE_NAMES("xdal_stream_destroy");
  CHECK_OK(xdal_stream_query(NULL));

  int count = device_count();
  if (count < 2) SKIP("the default stream of device 1 needs 2 devices, have %d", count);
  REQUIRE_OK(xdal_device_set(1));
  dev = 99;
  CHECK_OK(xdal_stream_get_device(NULL, &dev));
  CHECK_EQ(dev, 1);
  CHECK_OK(xdal_stream_get_priority(NULL, &prio));
  CHECK_OK(xdal_launch_host_func(NULL, increment_host_fn, &counter));
  CHECK_OK(xdal_stream_synchronize(NULL));
  CHECK_EQ(atomic_load(&counter), 2);
  REQUIRE_OK(xdal_device_set(0));
  CHECK_OK(xdal_stream_get_device(NULL, &dev));
  CHECK_EQ(dev, 0);
}

static void noop_host_fn(void *arg) { (void)arg; }

/* Every stream entry point reports `bad` as INVALID_HANDLE. */
static void check_bad_stream(xdal_stream_t bad, const char *what) {
  printf("    checking %s\n", what);
  int out = 77;
  unsigned char host[16] = {0};
  void *d = NULL;
  xdal_event_t e = NULL;
  if (!CHECK_OK(xdal_malloc(&d, 16))) return;
  if (!CHECK_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT))) return;
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_query(bad));
  CHECK_MESSAGE_NAMES("xdal_stream_query");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_synchronize(bad));
  CHECK_MESSAGE_NAMES("xdal_stream_synchronize");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_get_priority(bad, &out));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_get_device(bad, &out));
  CHECK_EQ(out, 77);
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_wait_event(bad, e));
  CHECK_MESSAGE_NAMES("xdal_stream_wait_event");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_launch_host_func(bad, noop_host_fn, NULL));
  CHECK_MESSAGE_NAMES("xdal_launch_host_func");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_memcpy_async(d, host, 16, XDAL_MEMCPY_HOST_TO_DEVICE, bad));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_memset_async(d, 0, 16, bad));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_record(e, bad));
  CHECK_MESSAGE_NAMES("xdal_event_record");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_destroy(bad));
  /* The event was never recorded, the library still works. */
  CHECK_OK(xdal_event_query(e));
  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_memcpy(d, host, 16, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK_OK(xdal_free(d));
}

static void test_invalid_handles(void) {
  xdal_stream_t dead = NULL;
  REQUIRE_OK(xdal_stream_create(&dead, XDAL_STREAM_DEFAULT, 0));
  CHECK_OK(xdal_stream_destroy(dead));
  check_bad_stream(dead, "a destroyed stream");

  xdal_event_t ev = NULL;
  REQUIRE_OK(xdal_event_create(&ev, XDAL_EVENT_DEFAULT));
  check_bad_stream((xdal_stream_t)(void *)ev, "an event passed as a stream");
  CHECK_OK(xdal_event_query(ev)); /* the event itself is unharmed */
  CHECK_OK(xdal_event_destroy(ev));

  check_bad_stream(GARBAGE_STREAM, "(xdal_stream_t)0x12345");
  static uint64_t not_a_stream[64];
  memset(not_a_stream, 0xff, sizeof not_a_stream);
  check_bad_stream((xdal_stream_t)(void *)not_a_stream, "a pointer to ordinary memory");
  check_bad_stream((xdal_stream_t)(uintptr_t)(UINTPTR_MAX - 15), "(xdal_stream_t)(UINTPTR_MAX - 15)");

  /* A live stream works after all that. */
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  CHECK_OK(xdal_stream_query(s));
  CHECK_OK(xdal_stream_destroy(s));
}

#define ORDER_N 200
static struct {
  atomic_int next;
  atomic_int slot[2];
  int seen[2][ORDER_N];
} order_log;
static struct order_item {
  int stream;
  int id;
} order_items[2][ORDER_N];

/* Appends the item's id to its stream's row, in the order the functions run. */
static void log_order_fn(void *arg) {
  struct order_item *item = (struct order_item *)arg;
  (void)atomic_fetch_add(&order_log.next, 1);
  int at = atomic_fetch_add(&order_log.slot[item->stream], 1);
  if (at < ORDER_N) order_log.seen[item->stream][at] = item->id;
}

static void test_in_order_execution(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  xdal_stream_t streams[2] = {s, NULL};
  atomic_init(&order_log.next, 0);
  atomic_init(&order_log.slot[0], 0);
  atomic_init(&order_log.slot[1], 0);
  for (int st = 0; st < 2; st++)
    for (int i = 0; i < ORDER_N; i++) {
      order_log.seen[st][i] = -1;
      order_items[st][i].stream = st;
      order_items[st][i].id = i;
    }
  /* Interleave host functions on a created stream and the default stream. */
  for (int i = 0; i < ORDER_N; i++)
    for (int st = 0; st < 2; st++) CHECK_OK(xdal_launch_host_func(streams[st], log_order_fn, &order_items[st][i]));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_synchronize(NULL));
  CHECK_EQ(atomic_load(&order_log.next), 2 * ORDER_N);
  for (int st = 0; st < 2; st++) {
    int first_bad = -1;
    for (int i = 0; i < ORDER_N && first_bad < 0; i++)
      if (order_log.seen[st][i] != i) first_bad = i;
    CHECK_MSG(first_bad < 0, "%s stream: host function %d ran out of order (got id %d)",
              st ? "default" : "created", first_bad, first_bad < 0 ? 0 : order_log.seen[st][first_bad]);
  }
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_destroy_with_pending_work(void) {
  static harness_gate gate;
  static atomic_int counter;
  atomic_init(&counter, 0);
  xdal_stream_t s = NULL;
  if (backend_runs_work_synchronously()) {
    note_synchronous();
    REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
    for (int i = 0; i < 10; i++) CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &counter));
    CHECK_EQ(atomic_load(&counter), 10);
    CHECK_OK(xdal_stream_destroy(s));
    CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_query(s));
    CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_destroy(s));
    CHECK_OK(xdal_device_synchronize());
    CHECK_EQ(atomic_load(&counter), 10);
    return;
  }
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  gate_init(&gate);
  CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
  for (int i = 0; i < 10; i++) CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &counter));
  /* Returns at once: the gate is still closed. */
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_MSG(!atomic_load(&gate.forced), "xdal_stream_destroy waited for the stream's pending work");
  CHECK_EQ(atomic_load(&counter), 0);
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_query(s));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_destroy(s));
  gate_open(&gate);
  CHECK_OK(xdal_device_synchronize());
  int after_sync = atomic_load(&counter);
  CHECK_MSG(after_sync == 10, "xdal_device_synchronize returned with %d of the destroyed stream's 10 host functions run",
            after_sync);
  if (after_sync != 10) {
    for (int i = 0; i < 2000 && atomic_load(&counter) != 10; i++) sleep_ms(1);
    printf("    note: %d of 10 ran within 2 s after xdal_device_synchronize\n", atomic_load(&counter));
  }
  gate_finish(&gate);
}

/* Flags set by stream A's host functions; stream B's host function takes a
   snapshot of them when it runs: {a_done, a2_done, ran}. */
static atomic_int wait_a_done, wait_a2_done;

static void snapshot_host_fn(void *arg) {
  int *snap = (int *)arg;
  snap[0] = atomic_load(&wait_a_done);
  snap[1] = atomic_load(&wait_a2_done);
  snap[2] = 1;
}

static void set_flag_fn(void *arg) { atomic_store((atomic_int *)arg, 1); }

static void test_wait_event_across_streams(void) {
  static harness_gate gate;
  static int snap[3];
  memset(snap, 0, sizeof snap);
  atomic_init(&wait_a_done, 0);
  atomic_init(&wait_a2_done, 0);
  xdal_stream_t a = NULL, b = NULL;
  xdal_event_t e = NULL;
  REQUIRE_OK(xdal_stream_create(&a, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_stream_create(&b, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DISABLE_TIMING));
  if (backend_runs_work_synchronously()) {
    note_synchronous();
    CHECK_OK(xdal_launch_host_func(a, set_flag_fn, &wait_a_done));
    CHECK_OK(xdal_event_record(e, a));
    CHECK_OK(xdal_event_query(e));
    CHECK_OK(xdal_stream_wait_event(b, e));
    CHECK_OK(xdal_launch_host_func(b, snapshot_host_fn, snap));
    CHECK_EQ(snap[2], 1);
    CHECK_MSG(snap[0] == 1, "stream B ran before the work it waited for on stream A");
    CHECK_OK(xdal_stream_query(b));
    CHECK_OK(xdal_stream_synchronize(b));
    CHECK_OK(xdal_stream_synchronize(a));
  } else {
    gate_init(&gate);
    CHECK_OK(xdal_launch_host_func(a, gate_host_fn, &gate));
    CHECK_OK(xdal_launch_host_func(a, set_flag_fn, &wait_a_done));
    CHECK_OK(xdal_event_record(e, a));
    CHECK_OK(xdal_stream_wait_event(b, e));
    CHECK_OK(xdal_launch_host_func(b, snapshot_host_fn, snap));
    sleep_ms(20); /* give a wrong implementation the chance to run B early */
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(b));
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_event_query(e));
    CHECK_EQ(snap[2], 0);
    gate_open(&gate);
    CHECK_OK(xdal_stream_synchronize(b));
    CHECK_EQ(snap[2], 1);
    CHECK_MSG(snap[0] == 1, "stream B ran before the work it waited for on stream A");
    CHECK_OK(xdal_stream_synchronize(a));
    gate_finish(&gate);
  }

  /* A wait on a never-recorded event is a no-op. */
  xdal_event_t fresh = NULL;
  REQUIRE_OK(xdal_event_create(&fresh, XDAL_EVENT_DEFAULT));
  CHECK_OK(xdal_stream_wait_event(b, fresh));
  CHECK_OK(xdal_stream_synchronize(b));
  /* Bad events. */
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_wait_event(b, (xdal_event_t)0x12345));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_wait_event(b, (xdal_event_t)(void *)a));
  CHECK_OK(xdal_event_destroy(fresh));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_wait_event(b, fresh));
  /* The default stream may wait too. */
  CHECK_OK(xdal_event_record(e, a));
  CHECK_OK(xdal_stream_wait_event(NULL, e));
  CHECK_OK(xdal_stream_synchronize(NULL));

  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_stream_destroy(a));
  CHECK_OK(xdal_stream_destroy(b));
}

/* A wait enqueued before a re-record waits for the earlier point only. */
static void test_wait_event_rerecord_keeps_old_point(void) {
  static harness_gate gate1, gate2;
  static int snap[3];
  memset(snap, 0, sizeof snap);
  atomic_init(&wait_a_done, 0);
  atomic_init(&wait_a2_done, 0);
  xdal_stream_t a = NULL, b = NULL;
  xdal_event_t e = NULL;
  REQUIRE_OK(xdal_stream_create(&a, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_stream_create(&b, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  if (backend_runs_work_synchronously()) {
    /* B's wait and snapshot run at point 1, before the work of point 2 is
       even enqueued: the snapshot must see A's first flag and not its
       second. */
    note_synchronous();
    CHECK_OK(xdal_launch_host_func(a, set_flag_fn, &wait_a_done));
    CHECK_OK(xdal_event_record(e, a)); /* point 1 */
    CHECK_OK(xdal_stream_wait_event(b, e));
    CHECK_OK(xdal_launch_host_func(b, snapshot_host_fn, snap));
    CHECK_OK(xdal_launch_host_func(a, set_flag_fn, &wait_a2_done));
    CHECK_OK(xdal_event_record(e, a)); /* point 2 */
    CHECK_OK(xdal_stream_query(b));
    CHECK_EQ(snap[2], 1);
    CHECK_MSG(snap[0] == 1, "stream B ran before point 1 on stream A");
    CHECK_MSG(snap[1] == 0, "stream B ran after point 2: it waited for the re-recorded point");
    CHECK_OK(xdal_event_query(e));
    CHECK_OK(xdal_event_synchronize(e));
    CHECK_EQ(atomic_load(&wait_a2_done), 1);
    CHECK_OK(xdal_event_destroy(e));
    CHECK_OK(xdal_stream_destroy(a));
    CHECK_OK(xdal_stream_destroy(b));
    return;
  }
  gate_init(&gate1);
  gate_init(&gate2);
  CHECK_OK(xdal_launch_host_func(a, gate_host_fn, &gate1));
  CHECK_OK(xdal_launch_host_func(a, set_flag_fn, &wait_a_done));
  CHECK_OK(xdal_event_record(e, a)); /* point 1 */
  CHECK_OK(xdal_stream_wait_event(b, e));
  CHECK_OK(xdal_launch_host_func(b, snapshot_host_fn, snap));
  CHECK_OK(xdal_launch_host_func(a, gate_host_fn, &gate2));
  CHECK_OK(xdal_launch_host_func(a, set_flag_fn, &wait_a2_done));
  CHECK_OK(xdal_event_record(e, a)); /* point 2 */

  CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(b));
  gate_open(&gate1);
  /* B needs point 1 only; gate 2 stays closed while we wait for B. */
  CHECK_OK(xdal_stream_synchronize(b));
  CHECK_MSG(!atomic_load(&gate2.forced), "the wait enqueued before the re-record waited for the new point");
  CHECK_EQ(snap[2], 1);
  CHECK_MSG(snap[0] == 1, "stream B ran before point 1 on stream A");
  CHECK_MSG(snap[1] == 0, "stream B ran after point 2: it waited for the re-recorded point");
  CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_event_query(e));
  gate_open(&gate2);
  CHECK_OK(xdal_event_synchronize(e));
  CHECK_EQ(atomic_load(&wait_a2_done), 1);
  CHECK_OK(xdal_stream_synchronize(a));
  gate_finish(&gate1);
  gate_finish(&gate2);
  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_stream_destroy(a));
  CHECK_OK(xdal_stream_destroy(b));
}

static void test_launch_host_func_null(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_launch_host_func(s, NULL, NULL));
  CHECK_MESSAGE_NAMES("xdal_launch_host_func");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_launch_host_func(NULL, NULL, &s));
  /* user_data may be NULL. */
  CHECK_OK(xdal_launch_host_func(s, noop_host_fn, NULL));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
}

/* What waiting calls return from inside a host function, and whether the
   message says why. */
typedef struct {
  xdal_stream_t own;
  xdal_event_t later;
  xdal_status_t stream_sync, event_sync, device_sync, copy, free, free_async;
  void *to_free, *to_free_async;
  int explained;
} waits_inside_t;

static void waiting_host_fn(void *arg) {
  waits_inside_t *w = arg;
  char message[512];
  w->stream_sync = xdal_stream_synchronize(w->own);
  harness_last_message(message, sizeof message);
  w->explained = strstr(message, "xdal_stream_synchronize") != NULL && strstr(message, "host function") != NULL;
  w->event_sync = xdal_event_synchronize(w->later);
  w->device_sync = xdal_device_synchronize();
  int from = 7, to = 0;
  w->copy = xdal_memcpy(&to, &from, sizeof from, XDAL_MEMCPY_HOST_TO_HOST);
  /* xdal_free waits for the device's work; xdal_free_async waits only on
     a backend without stream-ordered frees. */
  w->free = xdal_free(w->to_free);
  w->free_async = xdal_free_async(w->to_free_async, w->own);
}

/* A host function must not wait for stream work: its own stream cannot
   move on until it returns. Every backend refuses such a wait with
   XDAL_ERROR_NOT_SUPPORTED instead of hanging, and the stream is fine. */
static waits_inside_t w;

static void test_a_host_function_that_waits_is_refused_not_hung(void) {
  memset(&w, 0, sizeof w);
  REQUIRE_OK(xdal_stream_create(&w.own, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&w.later, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_malloc(&w.to_free, 256));
  REQUIRE_OK(xdal_malloc(&w.to_free_async, 256));
  CHECK_OK(xdal_launch_host_func(w.own, waiting_host_fn, &w));
  CHECK_OK(xdal_event_record(w.later, w.own)); /* a point behind the host function */
  CHECK_OK(xdal_stream_synchronize(w.own));
  CHECK_EQ(w.stream_sync, XDAL_ERROR_NOT_SUPPORTED);
  CHECK_MSG(w.explained, "the refusal's message names the call and the host function");
  CHECK_EQ(w.event_sync, XDAL_ERROR_NOT_SUPPORTED);
  CHECK_EQ(w.device_sync, XDAL_ERROR_NOT_SUPPORTED);
  CHECK_EQ(w.copy, XDAL_ERROR_NOT_SUPPORTED);
  CHECK_EQ(w.free, XDAL_ERROR_NOT_SUPPORTED);
  CHECK_MSG(w.free_async == XDAL_SUCCESS || w.free_async == XDAL_ERROR_NOT_SUPPORTED,
            "xdal_free_async in a host function returned %s", xdal_status_string(w.free_async));
  /* Outside a host function the same calls work, and the stream has no
     error from it. */
  CHECK_OK(xdal_free(w.to_free));
  if (w.free_async != XDAL_SUCCESS) CHECK_OK(xdal_free_async(w.to_free_async, w.own));
  CHECK_OK(xdal_event_synchronize(w.later));
  CHECK_OK(xdal_launch_host_func(w.own, noop_host_fn, NULL));
  CHECK_OK(xdal_stream_synchronize(w.own));
  CHECK_OK(xdal_event_destroy(w.later));
  CHECK_OK(xdal_stream_destroy(w.own));
}

static void test_get_priority_and_device(void) {
  int least = 0, greatest = 0;
  REQUIRE(priority_range(&least, &greatest));
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, greatest));
  int out = 0;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_stream_get_priority(s, NULL));
  CHECK_MESSAGE_NAMES("xdal_stream_get_priority");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_stream_get_device(s, NULL));
  CHECK_MESSAGE_NAMES("xdal_stream_get_device");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_stream_get_priority(NULL, NULL));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_stream_get_device(NULL, NULL));
  CHECK_OK(xdal_stream_get_priority(s, &out));
  CHECK_EQ(out, greatest);
  CHECK_OK(xdal_stream_get_device(s, &out));
  CHECK_EQ(out, 0);
  CHECK_OK(xdal_stream_destroy(s));

  int count = device_count();
  if (count < 2) SKIP("streams of device 1 need 2 devices, have %d", count);
  REQUIRE_OK(xdal_device_set(1));
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, least));
  out = -1;
  CHECK_OK(xdal_stream_get_device(s, &out));
  CHECK_EQ(out, 1);
  CHECK_OK(xdal_stream_get_device(NULL, &out));
  CHECK_EQ(out, 1);
  REQUIRE_OK(xdal_device_set(0));
  CHECK_OK(xdal_stream_get_device(s, &out));
  CHECK_EQ(out, 1); /* a stream keeps its device */
  CHECK_OK(xdal_stream_get_priority(s, &out));
  CHECK_EQ(out, least);
  CHECK_OK(xdal_stream_get_device(NULL, &out));
  CHECK_EQ(out, 0);
  CHECK_OK(xdal_stream_destroy(s));
}

static int compare_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
  return x < y ? -1 : x > y;
}

static void test_ten_thousand_streams(void) {
  enum { N = 10000 };
  xdal_stream_t *streams = calloc(N, sizeof *streams);
  void **sorted = calloc(N, sizeof *sorted);
  REQUIRE(streams && sorted);
  int created = 0;
  for (; created < N; created++)
    if (!CHECK_OK(xdal_stream_create(&streams[created], XDAL_STREAM_DEFAULT, 0))) break;
  for (int i = 0; i < created; i++) sorted[i] = (void *)streams[i];
  qsort(sorted, (size_t)created, sizeof *sorted, compare_ptr);
  int duplicates = 0;
  for (int i = 1; i < created; i++) duplicates += sorted[i] == sorted[i - 1];
  CHECK_EQ(duplicates, 0);
  static atomic_int counter;
  atomic_init(&counter, 0);
  int launched = 0;
  for (int i = 0; i < created; i += 1000) launched += CHECK_OK(xdal_launch_host_func(streams[i], increment_host_fn, &counter));
  if (created > 0) launched += CHECK_OK(xdal_launch_host_func(streams[created - 1], increment_host_fn, &counter));
  for (int i = 0; i < created; i++)
    if (!CHECK_OK(xdal_stream_destroy(streams[i]))) break;
  CHECK_OK(xdal_device_synchronize());
  CHECK_EQ(atomic_load(&counter), launched);
  for (int i = 0; i < created; i += 997) CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_query(streams[i]));
  /* And once more, create/destroy pairs. */
  for (int i = 0; i < N; i++) {
    xdal_stream_t s = NULL;
    if (!CHECK_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0))) break;
    if (!CHECK_OK(xdal_stream_destroy(s))) break;
  }
  xdal_stream_t s = NULL;
  CHECK_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
  free(streams);
  free(sorted);
}

static void test_stream_of_other_device(void) {
  int count = device_count();
  if (count < 2) SKIP("needs 2 devices, have %d", count);
  REQUIRE_OK(xdal_device_set(1));
  xdal_stream_t s1 = NULL;
  REQUIRE_OK(xdal_stream_create(&s1, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_device_set(0));

  const size_t n = 8192;
  static unsigned char host[8192], back[8192];
  fill_pattern(host, n, 123);
  memset(back, 0, n);
  void *p = NULL;
  REQUIRE_OK(xdal_malloc_async(&p, n, s1));
  xdal_pointer_attributes_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  CHECK_OK(xdal_pointer_get_attributes(p, &a));
  CHECK_EQ((int)a.type, (int)XDAL_MEMORY_TYPE_DEVICE);
  CHECK_EQ(a.device, 1);
  static atomic_int counter;
  atomic_init(&counter, 0);
  xdal_event_t e = NULL;
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  CHECK_OK(xdal_memset_async(p, 0, n, s1));
  CHECK_OK(xdal_memcpy_async(p, host, n, XDAL_MEMCPY_HOST_TO_DEVICE, s1));
  CHECK_OK(xdal_memcpy_async(back, p, n, XDAL_MEMCPY_DEVICE_TO_HOST, s1));
  CHECK_OK(xdal_launch_host_func(s1, increment_host_fn, &counter));
  CHECK_OK(xdal_event_record(e, s1));
  CHECK_OK(xdal_free_async(p, s1));
  CHECK_OK(xdal_event_synchronize(e));
  CHECK_EQ(atomic_load(&counter), 1);
  CHECK_PATTERN(back, n, 123);
  CHECK_OK(xdal_stream_synchronize(s1));
  CHECK_OK(xdal_stream_query(s1));
  int dev = -1;
  CHECK_OK(xdal_device_get(&dev));
  CHECK_EQ(dev, 0); /* using the stream did not move the current device */
  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_stream_destroy(s1));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_create_flags_and_priorities),
    HARNESS_TEST(test_default_stream),
    HARNESS_TEST(test_invalid_handles),
    HARNESS_TEST(test_in_order_execution),
    HARNESS_TEST(test_destroy_with_pending_work),
    HARNESS_TEST(test_wait_event_across_streams),
    HARNESS_TEST(test_wait_event_rerecord_keeps_old_point),
    HARNESS_TEST(test_launch_host_func_null),
    HARNESS_TEST(test_a_host_function_that_waits_is_refused_not_hung),
    HARNESS_TEST(test_get_priority_and_device),
    HARNESS_TEST(test_ten_thousand_streams),
    HARNESS_TEST(test_stream_of_other_device),
};

HARNESS_MAIN(tests)
