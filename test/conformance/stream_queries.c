/* Stream queries: NOT_READY while work is pending (leaving the last
   error message alone), SUCCESS only once everything enqueued is done,
   copies and sets included.

   State that host functions touch is static, so that a test that returns
   early never leaves a host function pointing at a dead stack frame. */
#include "harness.h"

#include <string.h>

#include "sync_probe.h"

static void test_query_not_ready_while_blocked(void) {
  static harness_gate gate;
  static atomic_int after;
  atomic_init(&after, 0);
  int synchronous = backend_runs_work_synchronously();
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));

  /* A failure first: NOT_READY must not replace its message. */
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(-1));
  if (synchronous) {
    note_synchronous();
    CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &after));
    CHECK_EQ(atomic_load(&after), 1);
    CHECK_OK(xdal_stream_query(s));
    CHECK_OK(xdal_stream_query(s));
    CHECK_MESSAGE_NAMES("xdal_device_set");
    CHECK_OK(xdal_stream_synchronize(s));
    CHECK_EQ(atomic_load(&after), 1);
    CHECK_OK(xdal_stream_destroy(s));
    return;
  }

  gate_init(&gate);
  CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
  CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &after));
  CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(s));
  CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(s));
  CHECK_MESSAGE_NAMES("xdal_device_set");
  CHECK_EQ(atomic_load(&after), 0);
  /* The default stream does not wait for s. */
  CHECK_OK(xdal_stream_synchronize(NULL));
  gate_open(&gate);
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_EQ(atomic_load(&after), 1);
  CHECK_OK(xdal_stream_query(s));
  gate_finish(&gate);
  CHECK_OK(xdal_stream_destroy(s));
}

/* A query answers for everything enqueued, copies and sets included, not
   only for the last host function or event: once it says SUCCESS, the
   bytes of every copy are there. (A backend may track completion with
   fewer runtime events than operations, as the OpenCL one does; this is
   what that must keep.) */
static void test_query_covers_copies_and_sets(void) {
  enum { BYTES = 16 << 20, ROUNDS = 16 };
  static harness_gate gate;
  int synchronous = backend_runs_work_synchronously();
  xdal_stream_t s = NULL;
  void *dev = NULL;
  unsigned char *host = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_malloc(&dev, BYTES));
  REQUIRE_OK(xdal_malloc_host((void **)&host, BYTES));
  memset(host, 0, BYTES);
  if (!synchronous) {
    gate_init(&gate);
    CHECK_OK(xdal_launch_host_func(s, gate_host_fn, &gate));
  }
  /* Sets of rising values, the last one wins; then the copy back. */
  for (int i = 1; i <= ROUNDS; i++) CHECK_OK(xdal_memset_async(dev, i, BYTES, s));
  CHECK_OK(xdal_memcpy_async(host, dev, BYTES, XDAL_MEMCPY_DEVICE_TO_HOST, s));
  if (!synchronous) {
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(s));
    CHECK_EQ(host[0], 0);
    gate_open(&gate);
  }
  /* Polled, not synchronized: SUCCESS alone must mean the copy is done. */
  xdal_status_t state = XDAL_ERROR_NOT_READY;
  for (long spins = 0; state == XDAL_ERROR_NOT_READY && spins < 200000000L; spins++) state = xdal_stream_query(s);
  CHECK_OK(state);
  int wrong = 0;
  for (int i = 0; i < BYTES; i++) wrong += host[i] != ROUNDS;
  CHECK_EQ(wrong, 0);
  if (!synchronous) gate_finish(&gate);
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(dev));
  CHECK_OK(xdal_free_host(host));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_query_not_ready_while_blocked),
    HARNESS_TEST(test_query_covers_copies_and_sets),
};

HARNESS_MAIN(tests)
