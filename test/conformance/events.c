/* Events: creation, record/query/synchronize, elapsed time, handles, other
   devices' streams. State touched by host functions is static. */
#include "harness.h"

#define GARBAGE_EVENT ((xdal_event_t)0x12345)
#define SENTINEL_EVENT ((xdal_event_t)0x777)

#include "sync_probe.h"

static void test_create_flags(void) {
  xdal_event_t e = NULL;
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  CHECK(e != NULL);
  CHECK_OK(xdal_event_destroy(e));
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DISABLE_TIMING));
  CHECK(e != NULL);
  CHECK_OK(xdal_event_destroy(e));

  e = SENTINEL_EVENT;
  const uint32_t bad[] = {2, 3, 0x100, 0x80000000u, 0xffffffffu};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_create(&e, bad[i]));
    CHECK_MESSAGE_NAMES("xdal_event_create");
  }
  CHECK(e == SENTINEL_EVENT);
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_event_create(NULL, XDAL_EVENT_DEFAULT));
  CHECK_MESSAGE_NAMES("xdal_event_create");
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  CHECK_OK(xdal_event_destroy(e));
}

static void test_never_recorded(void) {
  xdal_event_t e = NULL, f = NULL;
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_event_create(&f, XDAL_EVENT_DEFAULT));
  CHECK_OK(xdal_event_query(e));
  CHECK_OK(xdal_event_synchronize(e));
  float ms = 123.0f;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_elapsed_time(&ms, e, f));
  CHECK_MESSAGE_NAMES("xdal_event_elapsed_time");
  CHECK_OK(xdal_event_record(f, NULL));
  CHECK_OK(xdal_event_synchronize(f));
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_elapsed_time(&ms, e, f));
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_elapsed_time(&ms, f, e));
  CHECK(ms == 123.0f);
  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_event_destroy(f));
}

static void test_record_query_synchronize(void) {
  static harness_gate gate;
  static atomic_int counter;
  atomic_init(&counter, 0);
  xdal_stream_t s = NULL;
  xdal_event_t e = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));

  CHECK_OK(xdal_event_record(e, NULL));
  CHECK_OK(xdal_event_synchronize(e));
  CHECK_OK(xdal_event_query(e));
  CHECK_OK(xdal_event_record(e, s));
  CHECK_OK(xdal_event_synchronize(e));
  CHECK_OK(xdal_event_query(e));

  /* Pending: NOT_READY, which leaves the last error message alone. */
  xdal_event_t unused = SENTINEL_EVENT;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_create(&unused, 0x40));
  CHECK(unused == SENTINEL_EVENT);
  if (backend_runs_work_synchronously()) {
    note_synchronous();
    CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &counter));
    CHECK_OK(xdal_event_record(e, s)); /* re-record: a new point, reached at once */
    CHECK_OK(xdal_event_query(e));
    CHECK_MESSAGE_NAMES("xdal_event_create");
    CHECK_EQ(atomic_load(&counter), 1);
    CHECK_OK(xdal_event_synchronize(e));
    CHECK_OK(xdal_event_destroy(e));
    CHECK_OK(xdal_stream_destroy(s));
    return;
  }
  gate_init(&gate);
  CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
  CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &counter));
  CHECK_OK(xdal_event_record(e, s)); /* re-record: a new, pending point */
  CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_event_query(e));
  CHECK_MESSAGE_NAMES("xdal_event_create");
  CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_event_query(e));
  gate_open(&gate);
  CHECK_OK(xdal_event_synchronize(e));
  CHECK_EQ(atomic_load(&counter), 1); /* the work before the event is done */
  CHECK_OK(xdal_event_query(e));
  gate_finish(&gate);
  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_stream_destroy(s));
}

static void sleep_20ms_fn(void *arg) {
  (void)arg;
  sleep_ms(20);
}

static void test_elapsed_time(void) {
  xdal_stream_t s = NULL;
  xdal_event_t start = NULL, end = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&start, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_event_create(&end, XDAL_EVENT_DEFAULT));
  CHECK_OK(xdal_event_record(start, s));
  CHECK_OK(xdal_launch_host_func(s, sleep_20ms_fn, NULL));
  CHECK_OK(xdal_event_record(end, s));
  CHECK_OK(xdal_event_synchronize(end));
  float ms = -1.0f;
  CHECK_OK(xdal_event_elapsed_time(&ms, start, end));
  CHECK_MSG(ms >= 15.0f, "elapsed time across a 20 ms host function: %.3f ms", (double)ms);
  printf("    elapsed: %.3f ms\n", (double)ms);
  float back = 1.0f;
  CHECK_OK(xdal_event_elapsed_time(&back, end, start));
  CHECK_MSG(back < 0.0f, "elapsed time from the later to the earlier event should be negative: %.3f",
            (double)back);
  float same = -1.0f;
  CHECK_OK(xdal_event_elapsed_time(&same, start, start));
  CHECK(same == 0.0f);

  /* Also on the default stream. */
  CHECK_OK(xdal_event_record(start, NULL));
  CHECK_OK(xdal_event_record(end, NULL));
  CHECK_OK(xdal_event_synchronize(end));
  ms = -1.0f;
  CHECK_OK(xdal_event_elapsed_time(&ms, start, end));
  CHECK(ms >= 0.0f);

  CHECK_OK(xdal_event_destroy(start));
  CHECK_OK(xdal_event_destroy(end));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_elapsed_time_errors(void) {
  static harness_gate gate;
  xdal_stream_t s = NULL;
  xdal_event_t a = NULL, b = NULL, untimed = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&a, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_event_create(&b, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_event_create(&untimed, XDAL_EVENT_DISABLE_TIMING));
  CHECK_OK(xdal_event_record(a, s));
  CHECK_OK(xdal_event_record(untimed, s));
  CHECK_OK(xdal_event_record(b, s));
  CHECK_OK(xdal_stream_synchronize(s));

  float ms = 55.0f;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_event_elapsed_time(NULL, a, b));
  CHECK_MESSAGE_NAMES("xdal_event_elapsed_time");
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_elapsed_time(&ms, a, untimed));
  CHECK_MESSAGE_NAMES("xdal_event_elapsed_time");
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_elapsed_time(&ms, untimed, b));
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_elapsed_time(&ms, untimed, untimed));
  CHECK(ms == 55.0f);
  CHECK_OK(xdal_event_elapsed_time(&ms, a, b));
  CHECK(ms >= 0.0f);

  /* Not yet reached: NOT_READY. */
  ms = 55.0f;
  if (backend_runs_work_synchronously()) {
    /* Reached as soon as recorded: the times are there at once. */
    note_synchronous();
    CHECK_OK(xdal_event_record(b, s));
    CHECK_OK(xdal_event_elapsed_time(&ms, a, b));
    CHECK(ms >= 0.0f);
    CHECK_OK(xdal_event_elapsed_time(&ms, b, a));
    CHECK(ms <= 0.0f);
  } else {
    gate_init(&gate);
    CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
    CHECK_OK(xdal_event_record(b, s));
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_event_elapsed_time(&ms, a, b));
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_event_elapsed_time(&ms, b, a));
    CHECK(ms == 55.0f);
    gate_open(&gate);
    CHECK_OK(xdal_event_synchronize(b));
    CHECK_OK(xdal_event_elapsed_time(&ms, a, b));
    gate_finish(&gate);
  }

  /* Bad handles. */
  xdal_event_t dead = NULL;
  REQUIRE_OK(xdal_event_create(&dead, XDAL_EVENT_DEFAULT));
  CHECK_OK(xdal_event_record(dead, s));
  CHECK_OK(xdal_event_destroy(dead));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_elapsed_time(&ms, a, dead));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_elapsed_time(&ms, dead, b));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_elapsed_time(&ms, GARBAGE_EVENT, b));

  CHECK_OK(xdal_event_destroy(a));
  CHECK_OK(xdal_event_destroy(b));
  CHECK_OK(xdal_event_destroy(untimed));
  CHECK_OK(xdal_stream_destroy(s));
}

static void check_bad_event(xdal_event_t bad, const char *what) {
  printf("    checking %s\n", what);
  xdal_event_t good = NULL;
  if (!CHECK_OK(xdal_event_create(&good, XDAL_EVENT_DEFAULT))) return;
  CHECK_OK(xdal_event_record(good, NULL));
  CHECK_OK(xdal_event_synchronize(good));
  float ms = 9.0f;
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_query(bad));
  CHECK_MESSAGE_NAMES("xdal_event_query");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_synchronize(bad));
  CHECK_MESSAGE_NAMES("xdal_event_synchronize");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_record(bad, NULL));
  CHECK_MESSAGE_NAMES("xdal_event_record");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_elapsed_time(&ms, bad, good));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_elapsed_time(&ms, good, bad));
  CHECK(ms == 9.0f);
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_wait_event(NULL, bad));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_destroy(bad));
  CHECK_MESSAGE_NAMES("xdal_event_destroy");
  CHECK_OK(xdal_event_query(good));
  CHECK_OK(xdal_event_destroy(good));
}

static void test_invalid_handles(void) {
  xdal_event_t dead = NULL;
  REQUIRE_OK(xdal_event_create(&dead, XDAL_EVENT_DEFAULT));
  CHECK_OK(xdal_event_destroy(dead));
  check_bad_event(dead, "a destroyed event");

  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  check_bad_event((xdal_event_t)(void *)s, "a stream passed as an event");
  CHECK_OK(xdal_stream_query(s)); /* the stream itself is unharmed */
  CHECK_OK(xdal_stream_destroy(s));

  check_bad_event(GARBAGE_EVENT, "(xdal_event_t)0x12345");
  static uint64_t not_an_event[64];
  memset(not_an_event, 0, sizeof not_an_event);
  check_bad_event((xdal_event_t)(void *)not_an_event, "a pointer to ordinary memory");
}

static void test_destroy_pending_event(void) {
  static harness_gate gate;
  static atomic_int counter;
  atomic_init(&counter, 0);
  xdal_stream_t s = NULL;
  xdal_event_t e = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  if (backend_runs_work_synchronously()) {
    /* Nothing is pending; destroying a reached event is all there is. */
    note_synchronous();
    CHECK_OK(xdal_event_record(e, s));
    CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &counter));
    CHECK_OK(xdal_event_destroy(e));
    CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_query(e));
    CHECK_EQ(atomic_load(&counter), 1);
    CHECK_OK(xdal_stream_synchronize(s));
    CHECK_OK(xdal_stream_destroy(s));
    return;
  }
  gate_init(&gate);
  CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
  CHECK_OK(xdal_event_record(e, s));
  CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &counter));
  CHECK_OK(xdal_event_destroy(e));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_event_query(e));
  gate_open(&gate);
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_EQ(atomic_load(&counter), 1);
  gate_finish(&gate);
  CHECK_OK(xdal_stream_destroy(s));
}

static int snapshot[2];
static atomic_int other_device_done;
static void set_done_fn(void *arg) {
  (void)arg;
  atomic_store(&other_device_done, 1);
}
static void snapshot_fn(void *arg) {
  (void)arg;
  snapshot[0] = atomic_load(&other_device_done);
  snapshot[1] = 1;
}

static void test_record_on_other_device_stream(void) {
  int count = device_count();
  if (count < 2) SKIP("needs 2 devices, have %d", count);
  static harness_gate gate;
  atomic_init(&other_device_done, 0);
  memset(snapshot, 0, sizeof snapshot);
  REQUIRE_OK(xdal_device_set(0));
  xdal_event_t e = NULL, start = NULL;
  REQUIRE_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_event_create(&start, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_device_set(1));
  xdal_stream_t s1 = NULL;
  REQUIRE_OK(xdal_stream_create(&s1, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_device_set(0));
  xdal_stream_t s0 = NULL;
  REQUIRE_OK(xdal_stream_create(&s0, XDAL_STREAM_DEFAULT, 0));

  /* Recorded on device 1's stream while device 0 is current. */
  CHECK_OK(xdal_event_record(start, s1));
  CHECK_OK(xdal_event_record(e, s1));
  CHECK_OK(xdal_event_synchronize(e));
  CHECK_OK(xdal_event_query(e));
  float ms = -1.0f;
  CHECK_OK(xdal_event_elapsed_time(&ms, start, e));
  CHECK(ms >= 0.0f);

  /* A stream of device 0 waits for a point on device 1. */
  if (backend_runs_work_synchronously()) {
    note_synchronous();
    CHECK_OK(xdal_launch_host_func(s1, set_done_fn, NULL));
    CHECK_OK(xdal_event_record(e, s1));
    CHECK_OK(xdal_stream_wait_event(s0, e));
    CHECK_OK(xdal_launch_host_func(s0, snapshot_fn, NULL));
    CHECK_OK(xdal_event_query(e));
    CHECK_OK(xdal_stream_query(s0));
    CHECK_EQ(snapshot[1], 1);
    CHECK_MSG(snapshot[0] == 1, "device 0's stream ran before the device 1 work it waited for");
  } else {
    gate_init(&gate);
    CHECK_OK(xdal_launch_host_func(s1, gate_host_fn, &gate));
    CHECK_OK(xdal_launch_host_func(s1, set_done_fn, NULL));
    CHECK_OK(xdal_event_record(e, s1));
    CHECK_OK(xdal_stream_wait_event(s0, e));
    CHECK_OK(xdal_launch_host_func(s0, snapshot_fn, NULL));
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_event_query(e));
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(s0));
    gate_open(&gate);
    CHECK_OK(xdal_stream_synchronize(s0));
    CHECK_EQ(snapshot[1], 1);
    CHECK_MSG(snapshot[0] == 1, "device 0's stream ran before the device 1 work it waited for");
    CHECK_OK(xdal_stream_synchronize(s1));
    gate_finish(&gate);
  }

  /* An event created on device 1, recorded on device 0's default stream. */
  REQUIRE_OK(xdal_device_set(1));
  xdal_event_t e1 = NULL;
  REQUIRE_OK(xdal_event_create(&e1, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_device_set(0));
  CHECK_OK(xdal_event_record(e1, NULL));
  CHECK_OK(xdal_event_synchronize(e1));
  CHECK_OK(xdal_event_destroy(e1));

  CHECK_OK(xdal_event_destroy(e));
  CHECK_OK(xdal_event_destroy(start));
  CHECK_OK(xdal_stream_destroy(s0));
  CHECK_OK(xdal_stream_destroy(s1));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_create_flags),
    HARNESS_TEST(test_never_recorded),
    HARNESS_TEST(test_record_query_synchronize),
    HARNESS_TEST(test_elapsed_time),
    HARNESS_TEST(test_elapsed_time_errors),
    HARNESS_TEST(test_invalid_handles),
    HARNESS_TEST(test_destroy_pending_event),
    HARNESS_TEST(test_record_on_other_device_stream),
};

HARNESS_MAIN(tests)
