/* Backend configuration from the environment. Each test needs its own
   process and environment, which test/conformance/CMakeLists.txt sets up:

     test_three_devices_64m       XDAL_FAKE_DEVICE_COUNT=3 XDAL_FAKE_MEMORY_BYTES=64M
     test_bad_device_count_init   XDAL_FAKE_DEVICE_COUNT=banana (xdal_init first)
     test_bad_device_count_lazy   XDAL_FAKE_DEVICE_COUNT=banana (no xdal_init)
     test_unknown_backend         XDAL_BACKEND=nonexistent-name
     test_empty_values            every XDAL_FAKE_* variable and XDAL_BACKEND set to ""

   A test whose environment is not there (or that names another backend
   where the test is about the fake one) is skipped. */
#include "harness.h"

static int env_is(const char *name, const char *value) {
  const char *v = getenv(name);
  return v != NULL && strcmp(v, value) == 0;
}

/* The fake backend is the one selected: XDAL_BACKEND unset or "fake". */
static int fake_selected(void) {
  const char *b = getenv("XDAL_BACKEND");
  return b == NULL || strcmp(b, "fake") == 0;
}

static int message_contains(const char *needle) {
  char message[2048];
  harness_last_message(message, sizeof message);
  return strstr(message, needle) != NULL;
}

#define CHECK_MESSAGE_CONTAINS(needle)                                                                        \
  do {                                                                                                        \
    char m_[2048];                                                                                            \
    harness_last_message(m_, sizeof m_);                                                                      \
    CHECK_MSG(message_contains(needle), "the last error message should mention \"%s\": \"%s\"", (needle), m_); \
  } while (0)

static void test_three_devices_64m(void) {
  if (!env_is("XDAL_FAKE_DEVICE_COUNT", "3") || !env_is("XDAL_FAKE_MEMORY_BYTES", "64M") || !fake_selected())
    SKIP("needs XDAL_FAKE_DEVICE_COUNT=3 XDAL_FAKE_MEMORY_BYTES=64M on the fake backend");
  REQUIRE_OK(xdal_init());
  if (!backend_is_fake()) SKIP("backend is \"%s\", not fake", xdal_backend_name());
  const uint64_t mib = 1 << 20;

  int count = 0;
  REQUIRE_OK(xdal_device_get_count(&count));
  CHECK_EQ(count, 3);
  CHECK_OK(xdal_device_set(2));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(3));
  for (int d = 0; d < 3; d++) {
    xdal_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    CHECK_OK(xdal_device_get_properties(d, &p));
    CHECK_EQ_U(p.total_memory, 64 * mib);
    CHECK_OK(xdal_device_set(d));
    size_t free_bytes = 0, total = 0;
    CHECK_OK(xdal_mem_get_info(&free_bytes, &total));
    CHECK_EQ_U(total, 64 * mib);
    CHECK(free_bytes <= total);

    xdal_mem_stats_t before, after;
    memset(&before, 0, sizeof before);
    before.struct_size = sizeof before;
    after = before;
    CHECK_OK(xdal_mem_get_stats(d, &before));
    void *p65 = NULL;
    CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&p65, 65 * mib));
    CHECK_MESSAGE_NAMES("xdal_malloc");
    CHECK(p65 == NULL);
    CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc_async(&p65, 65 * mib, NULL));
    CHECK_OK(xdal_mem_get_stats(d, &after));
    CHECK_EQ_U(after.num_ooms, before.num_ooms + 2);

    /* What is live counts: 60 MiB fits, 8 MiB more does not, until freed. */
    void *big = NULL, *more = NULL;
    REQUIRE_OK(xdal_malloc(&big, 60 * mib));
    CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&more, 8 * mib));
    CHECK_OK(xdal_memset(big, 1, 60 * mib));
    CHECK_OK(xdal_free(big));
    REQUIRE_OK(xdal_malloc(&more, 8 * mib));
    CHECK_OK(xdal_free(more));
  }
  CHECK_OK(xdal_device_set(0));
}

/* Every call that needs the backend fails the same way, without crashing,
   leaving its outputs alone and naming itself in the message. */
#define UNAVAILABLE(function, call)                                                                           \
  do {                                                                                                        \
    CHECK_STATUS(XDAL_ERROR_BACKEND_UNAVAILABLE, call);                                                       \
    CHECK_MESSAGE_NAMES(function);                                                                            \
  } while (0)

static void noop_fn(void *arg) { (void)arg; }

static void check_every_call_unavailable(void) {
  int a = 77, b = 78;
  size_t f = 79, t = 80;
  void *p = (void *)0x5e5e;
  xdal_stream_t s = (xdal_stream_t)0x5e5e;
  xdal_event_t e = (xdal_event_t)0x5e5e;
  unsigned char h1[16] = {1}, h2[16] = {2};
  xdal_device_properties_t props;
  memset(&props, 0xA5, sizeof props);
  props.struct_size = sizeof props;
  xdal_mem_stats_t stats;
  memset(&stats, 0xA5, sizeof stats);
  stats.struct_size = sizeof stats;
  xdal_pointer_attributes_t attrs;
  memset(&attrs, 0xA5, sizeof attrs);
  attrs.struct_size = sizeof attrs;

  UNAVAILABLE("xdal_init", xdal_init());
  UNAVAILABLE("xdal_device_get_count", xdal_device_get_count(&a));
  UNAVAILABLE("xdal_device_set", xdal_device_set(0));
  UNAVAILABLE("xdal_device_get", xdal_device_get(&a));
  UNAVAILABLE("xdal_device_get_properties", xdal_device_get_properties(0, &props));
  UNAVAILABLE("xdal_device_synchronize", xdal_device_synchronize());
  UNAVAILABLE("xdal_device_get_stream_priority_range", xdal_device_get_stream_priority_range(&a, &b));
  UNAVAILABLE("xdal_device_can_access_peer", xdal_device_can_access_peer(&a, 0, 0));
  UNAVAILABLE("xdal_mem_get_info", xdal_mem_get_info(&f, &t));
  UNAVAILABLE("xdal_malloc", xdal_malloc(&p, 64));
  UNAVAILABLE("xdal_malloc_host", xdal_malloc_host(&p, 64));
  UNAVAILABLE("xdal_malloc_async", xdal_malloc_async(&p, 64, NULL));
  UNAVAILABLE("xdal_free", xdal_free(h1));
  UNAVAILABLE("xdal_free_host", xdal_free_host(h1));
  UNAVAILABLE("xdal_free_async", xdal_free_async(h1, NULL));
  UNAVAILABLE("xdal_pointer_get_attributes", xdal_pointer_get_attributes(h1, &attrs));
  UNAVAILABLE("xdal_memcpy", xdal_memcpy(h2, h1, sizeof h1, XDAL_MEMCPY_HOST_TO_HOST));
  UNAVAILABLE("xdal_memcpy_async", xdal_memcpy_async(h2, h1, sizeof h1, XDAL_MEMCPY_HOST_TO_HOST, NULL));
  UNAVAILABLE("xdal_memcpy_peer", xdal_memcpy_peer(h2, 0, h1, 0, sizeof h1));
  UNAVAILABLE("xdal_memset", xdal_memset(h2, 0, sizeof h2));
  UNAVAILABLE("xdal_memset_async", xdal_memset_async(h2, 0, sizeof h2, NULL));
  UNAVAILABLE("xdal_mem_get_stats", xdal_mem_get_stats(0, &stats));
  UNAVAILABLE("xdal_mem_reset_peak_stats", xdal_mem_reset_peak_stats(0));
  UNAVAILABLE("xdal_mem_empty_cache", xdal_mem_empty_cache(0));
  UNAVAILABLE("xdal_stream_create", xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  UNAVAILABLE("xdal_stream_query", xdal_stream_query(NULL));
  UNAVAILABLE("xdal_stream_synchronize", xdal_stream_synchronize(NULL));
  UNAVAILABLE("xdal_stream_get_priority", xdal_stream_get_priority(NULL, &a));
  UNAVAILABLE("xdal_stream_get_device", xdal_stream_get_device(NULL, &a));
  UNAVAILABLE("xdal_launch_host_func", xdal_launch_host_func(NULL, noop_fn, NULL));
  UNAVAILABLE("xdal_event_create", xdal_event_create(&e, XDAL_EVENT_DEFAULT));

  CHECK(a == 77 && b == 78 && f == 79 && t == 80);
  CHECK(p == (void *)0x5e5e && s == (xdal_stream_t)0x5e5e && e == (xdal_event_t)0x5e5e);
  CHECK(h1[0] == 1 && h2[0] == 2);
  CHECK(value_mismatch((unsigned char *)&props + sizeof(size_t), sizeof props - sizeof(size_t), 0xA5) ==
        sizeof props - sizeof(size_t));
  CHECK(value_mismatch((unsigned char *)&stats + sizeof(size_t), sizeof stats - sizeof(size_t), 0xA5) ==
        sizeof stats - sizeof(size_t));
  CHECK(value_mismatch((unsigned char *)&attrs + sizeof(size_t), sizeof attrs - sizeof(size_t), 0xA5) ==
        sizeof attrs - sizeof(size_t));

  /* What needs no backend still works. */
  CHECK_STR_EQ(xdal_status_string(XDAL_ERROR_BACKEND_UNAVAILABLE), "XDAL_ERROR_BACKEND_UNAVAILABLE");
  CHECK_STR_EQ(xdal_backend_name(), "none");
  size_t needed = 0;
  CHECK_OK(xdal_get_last_error_message(NULL, 0, &needed));
  CHECK(needed > 1);
}

static void *unavailable_thread(void *arg) {
  (void)arg;
  check_every_call_unavailable();
  return NULL;
}

static void check_unavailable_everywhere(void) {
  check_every_call_unavailable();
  pthread_t t;
  if (CHECK(pthread_create(&t, NULL, unavailable_thread, NULL) == 0)) pthread_join(t, NULL);
  /* Asking again does not change the answer. */
  check_every_call_unavailable();
}

static void test_bad_device_count_init(void) {
  if (!env_is("XDAL_FAKE_DEVICE_COUNT", "banana") || !fake_selected())
    SKIP("needs XDAL_FAKE_DEVICE_COUNT=banana on the fake backend");
  CHECK_STATUS(XDAL_ERROR_BACKEND_UNAVAILABLE, xdal_init());
  CHECK_MESSAGE_NAMES("xdal_init");
  CHECK_MESSAGE_CONTAINS("XDAL_FAKE_DEVICE_COUNT");
  char message[2048];
  harness_last_message(message, sizeof message);
  printf("    message: \"%s\"\n", message);
  const char *name = xdal_backend_name();
  CHECK(name != NULL);
  CHECK_STR_EQ(name, "none");
  check_unavailable_everywhere();
}

static void test_bad_device_count_lazy(void) {
  if (!env_is("XDAL_FAKE_DEVICE_COUNT", "banana") || !fake_selected())
    SKIP("needs XDAL_FAKE_DEVICE_COUNT=banana on the fake backend");
  /* No xdal_init: the first call starts the backend and reports why not. */
  void *p = (void *)0x5e5e;
  CHECK_STATUS(XDAL_ERROR_BACKEND_UNAVAILABLE, xdal_malloc(&p, 64));
  CHECK_MESSAGE_NAMES("xdal_malloc");
  CHECK_MESSAGE_CONTAINS("XDAL_FAKE_DEVICE_COUNT");
  CHECK(p == (void *)0x5e5e);
  check_unavailable_everywhere();
}

static void test_unknown_backend(void) {
  if (!env_is("XDAL_BACKEND", "nonexistent-name")) SKIP("needs XDAL_BACKEND=nonexistent-name");
  CHECK_STATUS(XDAL_ERROR_BACKEND_UNAVAILABLE, xdal_init());
  CHECK_MESSAGE_NAMES("xdal_init");
  CHECK_MESSAGE_CONTAINS("nonexistent-name");
  char message[2048];
  harness_last_message(message, sizeof message);
  printf("    message: \"%s\"\n", message);
  CHECK_STR_EQ(xdal_backend_name(), "none");
  check_unavailable_everywhere();
}

/* An empty value means "not set", for every variable: the defaults apply. */
static void test_empty_values(void) {
  if (!env_is("XDAL_BACKEND", "") || !env_is("XDAL_FAKE_DEVICE_COUNT", "") || !env_is("XDAL_FAKE_MEMORY_BYTES", "") ||
      !env_is("XDAL_FAKE_PROTECT", "") || !env_is("XDAL_FAKE_WORKERS", ""))
    SKIP("needs XDAL_BACKEND, XDAL_FAKE_DEVICE_COUNT, _MEMORY_BYTES, _PROTECT and _WORKERS set to \"\"");
  REQUIRE_OK(xdal_init());
  CHECK_STR_EQ(xdal_backend_name(), "fake");
  int count = 0;
  CHECK_OK(xdal_device_get_count(&count));
  CHECK_MSG(count == 2, "the default of two devices, not %d", count);
  size_t free_bytes = 0, total = 0;
  CHECK_OK(xdal_mem_get_info(&free_bytes, &total));
  CHECK_MSG(total == (size_t)16 << 30, "the default 16 GiB per device, not %zu", total);
  /* Not protected: the host reads device memory. */
  void *p = NULL;
  REQUIRE_OK(xdal_malloc(&p, 64));
  CHECK_OK(xdal_memset(p, 7, 64));
  CHECK(((volatile unsigned char *)p)[63] == 7);
  CHECK_OK(xdal_free(p));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_three_devices_64m),
    HARNESS_TEST(test_bad_device_count_init),
    HARNESS_TEST(test_bad_device_count_lazy),
    HARNESS_TEST(test_unknown_backend),
    HARNESS_TEST(test_empty_values),
};

HARNESS_MAIN(tests)
