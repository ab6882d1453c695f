/* Default-stream handles (since 1.1): xdal_device_get_default_stream(device,
   &stream) names a device's default stream from any thread, whatever its
   current device. It is the stream NULL names on a thread whose current
   device is that device: same work, same order, same sticky error. It
   cannot be destroyed.

   State that host functions touch is static, so that a test that returns
   early never leaves a host function pointing at a dead stack frame. */
#include "sync_probe.h"

#define SENTINEL_STREAM ((xdal_stream_t)0x5e5e5e5e)

static xdal_stream_t default_of(int device) {
  xdal_stream_t s = NULL;
  if (!CHECK_OK(xdal_device_get_default_stream(device, &s))) return NULL;
  CHECK(s != NULL);
  return s;
}

static int current_device(void) {
  int device = -1;
  CHECK_OK(xdal_device_get(&device));
  return device;
}

static void test_one_handle_per_device(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  int least = 0, greatest = 0;
  REQUIRE_OK(xdal_device_get_stream_priority_range(&least, &greatest));
  REQUIRE_OK(xdal_device_set(0));
  for (int d = 0; d < count; d++) {
    xdal_stream_t s = default_of(d);
    REQUIRE(s != NULL);
    CHECK(s == default_of(d)); /* asking twice gives the same handle */
    for (int e = 0; e < d; e++) CHECK_MSG(s != default_of(e), "devices %d and %d share a handle", d, e);
    int dev = -1, prio = 99;
    CHECK_OK(xdal_stream_get_device(s, &dev));
    CHECK_EQ(dev, d);
    CHECK_OK(xdal_stream_get_priority(s, &prio));
    CHECK_EQ(prio, least); /* the default priority, as NULL's */
    CHECK_OK(xdal_stream_query(s));
    CHECK_OK(xdal_stream_synchronize(s));
    CHECK_EQ(current_device(), 0); /* naming a device's stream does not switch to it */
  }
}

static void test_bad_arguments(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  xdal_stream_t s = SENTINEL_STREAM;
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_get_default_stream(-1, &s));
  CHECK_MESSAGE_NAMES("xdal_device_get_default_stream");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_get_default_stream(count, &s));
  CHECK_MESSAGE_NAMES("xdal_device_get_default_stream");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_get_default_stream(1 << 30, &s));
  CHECK(s == SENTINEL_STREAM); /* not written on failure */
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_get_default_stream(0, NULL));
  CHECK_MESSAGE_NAMES("xdal_device_get_default_stream");
  /* Still usable. */
  CHECK(default_of(0) != NULL);
  CHECK_EQ(current_device(), 0);
}

static void test_destroy_is_refused_and_the_handle_keeps_working(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  static atomic_int ran;
  atomic_init(&ran, 0);
  for (int d = 0; d < count; d++) {
    xdal_stream_t s = default_of(d);
    REQUIRE(s != NULL);
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_destroy(s));
    CHECK_MESSAGE_NAMES("xdal_stream_destroy");
    char message[512];
    harness_last_message(message, sizeof message);
    CHECK_MSG(strstr(message, "default stream") != NULL && strstr(message, "cannot be destroyed") != NULL,
              "the message should say a default stream cannot be destroyed: \"%s\"", message);
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_destroy(s)); /* every time */
    CHECK_OK(xdal_stream_query(s));
    CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &ran));
    CHECK_OK(xdal_stream_synchronize(s));
    CHECK_EQ(atomic_load(&ran), d + 1);
    CHECK(s == default_of(d));
  }
  /* NULL keeps its 1.0 answer. */
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_destroy(NULL));
}

/* --- The same stream as NULL ----------------------------------------------------- */

static atomic_int order_log[8];
static atomic_int order_len;

static void log_fn(void *arg) {
  int at = atomic_fetch_add(&order_len, 1);
  if (at < 8) atomic_store(&order_log[at], (int)(intptr_t)arg);
}

/* Work enqueued on `device`'s default stream alternately through NULL (with
   `device` current) and through the handle (with another device current, if
   there is one) runs in one order, and waiting on either waits for all. */
static void check_one_queue(int device, int other) {
  printf("    device %d, handle used with device %d current\n", device, other);
  xdal_stream_t h = default_of(device);
  if (h == NULL) return;
  atomic_store(&order_len, 0);
  int sync_backend = backend_runs_work_synchronously();
  static harness_gate gate;
  if (!sync_backend) gate_init(&gate);

  REQUIRE_OK(xdal_device_set(device));
  if (!sync_backend) CHECK_OK(xdal_launch_host_func(NULL, gate_host_fn, &gate));
  CHECK_OK(xdal_launch_host_func(NULL, log_fn, (void *)(intptr_t)1));
  REQUIRE_OK(xdal_device_set(other));
  CHECK_OK(xdal_launch_host_func(h, log_fn, (void *)(intptr_t)2));
  REQUIRE_OK(xdal_device_set(device));
  CHECK_OK(xdal_launch_host_func(NULL, log_fn, (void *)(intptr_t)3));
  REQUIRE_OK(xdal_device_set(other));
  CHECK_OK(xdal_launch_host_func(h, log_fn, (void *)(intptr_t)4));
  if (!sync_backend) {
    /* All of it waits behind the gate enqueued through NULL. */
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(h));
    REQUIRE_OK(xdal_device_set(device));
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(NULL));
    REQUIRE_OK(xdal_device_set(other));
    CHECK_EQ(atomic_load(&order_len), 0);
    gate_open(&gate);
  } else {
    note_synchronous();
  }
  CHECK_OK(xdal_stream_synchronize(h));
  CHECK_EQ(atomic_load(&order_len), 4);
  for (int i = 0; i < 4; i++) CHECK_EQ(atomic_load(&order_log[i]), i + 1);
  REQUIRE_OK(xdal_device_set(device));
  CHECK_OK(xdal_stream_query(NULL));
  REQUIRE_OK(xdal_device_set(0));
  if (!sync_backend) gate_finish(&gate);
}

static void test_same_queue_as_null(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  for (int d = 0; d < count; d++) check_one_queue(d, (d + 1) % count);
  if (count < 2) printf("    note: with 1 device the handle was used with its own device current\n");
}

/* --- From another thread --------------------------------------------------------- */

static xdal_status_t add_one_kernel(const xdal_kernel_context_t *ctx, void *const *args) {
  (void)ctx;
  unsigned char *p = *(unsigned char *const *)args[0];
  p[0] = (unsigned char)(p[0] + 1);
  return XDAL_SUCCESS;
}

struct from_thread {
  xdal_stream_t handle; /* the default stream of device 0 */
  int current;          /* the thread's current device */
};

/* Every function that takes a stream, on device 0's default stream, from a
   thread whose current device is `current`. */
static void *use_from_thread(void *arg) {
  struct from_thread *t = (struct from_thread *)arg;
  xdal_stream_t h = t->handle;
  if (!CHECK_OK(xdal_device_set(t->current))) return NULL;
  enum { N = 4096 };
  static unsigned char in[N], out[N];
  fill_pattern(in, N, 7);
  memset(out, 0, N);
  void *p = NULL;
  if (!CHECK_OK(xdal_malloc_async(&p, N, h))) return NULL;
  xdal_pointer_attributes_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  CHECK_OK(xdal_pointer_get_attributes(p, &a));
  CHECK_EQ(a.device, 0); /* the stream's device, not the thread's */
  xdal_event_t e = NULL;
  if (!CHECK_OK(xdal_event_create(&e, XDAL_EVENT_DEFAULT))) return NULL;
  static atomic_int ran;
  atomic_init(&ran, 0);
  CHECK_OK(xdal_memset_async(p, 0, N, h));
  CHECK_OK(xdal_memcpy_async(p, in, N, XDAL_MEMCPY_HOST_TO_DEVICE, h));
  xdal_function_t f = NULL;
  xdal_status_t host = xdal_function_from_host(&f, add_one_kernel);
  CHECK_MSG(host == XDAL_SUCCESS || host == XDAL_ERROR_NOT_SUPPORTED, "xdal_function_from_host: %s",
            xdal_status_string(host));
  if (host == XDAL_SUCCESS) {
    xdal_kernel_arg_t args[] = {{&p, sizeof p}};
    xdal_dim3_t one = {1, 1, 1};
    CHECK_OK(xdal_launch_kernel(f, one, one, 0, h, args, 1));
  }
  CHECK_OK(xdal_memcpy_async(out, p, N, XDAL_MEMCPY_DEVICE_TO_HOST, h));
  CHECK_OK(xdal_launch_host_func(h, increment_host_fn, &ran));
  CHECK_OK(xdal_event_record(e, h));
  CHECK_OK(xdal_stream_wait_event(h, e));
  CHECK_OK(xdal_free_async(p, h));
  CHECK_OK(xdal_event_synchronize(e));
  CHECK_OK(xdal_stream_synchronize(h));
  CHECK_OK(xdal_stream_query(h));
  CHECK_EQ(atomic_load(&ran), 1);
  CHECK_EQ(out[0], (unsigned char)(in[0] + (host == XDAL_SUCCESS ? 1 : 0)));
  CHECK_PATTERN_AT(out + 1, N - 1, 7, 1);
  int dev = -1, prio = 99;
  CHECK_OK(xdal_stream_get_device(h, &dev));
  CHECK_EQ(dev, 0);
  CHECK_OK(xdal_stream_get_priority(h, &prio));
  CHECK_EQ(current_device(), t->current); /* untouched by any of it */
  CHECK_OK(xdal_event_destroy(e));
  return NULL;
}

static void test_every_stream_function_from_another_thread(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  struct from_thread t = {default_of(0), count - 1};
  REQUIRE(t.handle != NULL);
  if (count < 2) printf("    note: 1 device: the other thread's current device is device 0 too\n");
  pthread_t thread;
  REQUIRE(pthread_create(&thread, NULL, use_from_thread, &t) == 0);
  pthread_join(thread, NULL);
  /* The handle a thread got is the one every thread gets. */
  CHECK(default_of(0) == t.handle);
}

/* --- Sticky errors ---------------------------------------------------------------- */

static xdal_status_t failing_kernel(const xdal_kernel_context_t *ctx, void *const *args) {
  (void)ctx;
  (void)args;
  return XDAL_ERROR_INVALID_VALUE;
}

struct sticky_probe {
  int device;
  xdal_status_t query, synchronize;
};

static void *null_on_device(void *arg) {
  struct sticky_probe *p = (struct sticky_probe *)arg;
  if (!CHECK_OK(xdal_device_set(p->device))) return NULL;
  p->synchronize = xdal_stream_synchronize(NULL);
  p->query = xdal_stream_query(NULL);
  return NULL;
}

/* A failure is one sticky error of the stream, whichever name it is asked
   through. A default stream is never destroyed, so the error stays for the
   life of the process: this test runs last. */
static void test_sticky_error_is_shared(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  xdal_function_t fail = NULL;
  xdal_status_t st = xdal_function_from_host(&fail, failing_kernel);
  if (st == XDAL_ERROR_NOT_SUPPORTED) SKIP("the backend runs no host kernels, so no work on it can fail");
  REQUIRE_STATUS(XDAL_SUCCESS, st);
  REQUIRE_OK(xdal_device_set(0));
  xdal_dim3_t one = {1, 1, 1};

  /* Failed through the handle (device count-1, with device 0 current),
     seen through NULL on a thread whose current device is count-1. */
  int d = count - 1;
  xdal_stream_t h = default_of(d);
  REQUIRE(h != NULL);
  CHECK_OK(xdal_stream_synchronize(h));
  CHECK_OK(xdal_launch_kernel(fail, one, one, 0, h, NULL, 0));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(h));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_query(h));
  struct sticky_probe probe = {d, XDAL_SUCCESS, XDAL_SUCCESS};
  pthread_t thread;
  REQUIRE(pthread_create(&thread, NULL, null_on_device, &probe) == 0);
  pthread_join(thread, NULL);
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, probe.synchronize);
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, probe.query);
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_destroy(h)); /* no way to clear it */
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_query(h));
  if (count < 2) {
    printf("    note: 1 device: the other direction and an unaffected device need 2\n");
    return;
  }

  /* Another device's default stream is unaffected... */
  xdal_stream_t h0 = default_of(0);
  REQUIRE(h0 != NULL);
  CHECK_OK(xdal_stream_synchronize(h0));
  CHECK_OK(xdal_stream_query(NULL));
  /* ... until it fails through NULL, seen through its handle. */
  CHECK_OK(xdal_launch_kernel(fail, one, one, 0, NULL, NULL, 0));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(NULL));
  REQUIRE_OK(xdal_device_set(d));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_query(h0));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(h0));
  REQUIRE_OK(xdal_device_set(0));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_one_handle_per_device),
    HARNESS_TEST(test_bad_arguments),
    HARNESS_TEST(test_destroy_is_refused_and_the_handle_keeps_working),
    HARNESS_TEST(test_same_queue_as_null),
    HARNESS_TEST(test_every_stream_function_from_another_thread),
    HARNESS_TEST(test_sticky_error_is_shared), /* last: it leaves default streams failed */
};

HARNESS_MAIN(tests)
