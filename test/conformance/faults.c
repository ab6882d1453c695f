/* Fault injection (since 1.2): xdal_debug_set_faults and XDAL_FAKE_FAULTS
   make the Nth device allocation, kernel launch or copy fail, or lose a
   device, so that consumers can test their error paths; XDAL_FAKE_POISON=1
   fills new and freed device memory with 0xFF. A backend without fault
   injection answers XDAL_ERROR_NOT_SUPPORTED, and the tests skip there.

   Some tests need their own process and environment (CMakeLists.txt):
     test_env_spec          XDAL_FAKE_FAULTS=alloc@2
     test_env_malformed     XDAL_FAKE_FAULTS=bogus@1
     test_poison            XDAL_FAKE_POISON=1
   test_device_lost loses device 1 for good, so it runs last. */
#include "harness.h"

static int message_contains(const char *needle) {
  char message[1024];
  harness_last_message(message, sizeof message);
  return strstr(message, needle) != NULL;
}

#define CHECK_MESSAGE_CONTAINS(needle)                                                                        \
  do {                                                                                                        \
    char m_[1024];                                                                                            \
    harness_last_message(m_, sizeof m_);                                                                      \
    CHECK_MSG(message_contains(needle), "the last error message should mention \"%s\": \"%s\"", (needle), m_); \
  } while (0)

/* Installs `spec`; skips the test where the backend has no fault injection. */
#define REQUIRE_FAULTS(spec)                                                                                  \
  do {                                                                                                        \
    xdal_status_t st_ = xdal_debug_set_faults(spec);                                                          \
    if (st_ == XDAL_ERROR_NOT_SUPPORTED) {                                                                    \
      CHECK_MESSAGE_NAMES("xdal_debug_set_faults");                                                          \
      SKIP("the backend has no fault injection (xdal_debug_set_faults: NOT_SUPPORTED)");                    \
    }                                                                                                         \
    REQUIRE_OK(st_);                                                                                          \
  } while (0)

static uint64_t ooms(void) {
  xdal_mem_stats_t s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  CHECK_OK(xdal_mem_get_stats(0, &s));
  return s.num_ooms;
}

static void test_malformed_specs_are_refused_and_change_nothing(void) {
  REQUIRE_FAULTS("alloc@1");
  static const struct {
    const char *spec, *points_at;
  } bad[] = {
      {"alloc", "\"alloc\""},         {"alloc@x", "\"x\""},          {"alloc@0", "starts at 1"},
      {"oom@1", "\"oom\""},           {"lost:99@1", "device 99"},    {"launch@1,bogus@2", "\"bogus@2\""},
      {"lost:0@1+", "\"lost:0@1+\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_debug_set_faults(bad[i].spec));
    CHECK_MESSAGE_NAMES("xdal_debug_set_faults");
    CHECK_MESSAGE_CONTAINS(bad[i].points_at);
  }
  /* The spec before the refusals is still the one in place. */
  void *p = (void *)0x77;
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&p, 64));
  CHECK(p == (void *)0x77);
  /* NULL and "" clear. */
  CHECK_OK(xdal_debug_set_faults(NULL));
  REQUIRE_OK(xdal_malloc(&p, 64));
  CHECK_OK(xdal_free(p));
  CHECK_OK(xdal_debug_set_faults("alloc@1"));
  CHECK_OK(xdal_debug_set_faults(""));
  REQUIRE_OK(xdal_malloc(&p, 64));
  CHECK_OK(xdal_free(p));
}

static void test_the_nth_allocation_fails(void) {
  REQUIRE_FAULTS("alloc@3");
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  uint64_t before = ooms();
  void *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  CHECK_OK(xdal_malloc(&a, 256));
  CHECK_OK(xdal_malloc_async(&b, 256, s));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&c, 256));
  CHECK_MESSAGE_NAMES("xdal_malloc");
  CHECK_MESSAGE_CONTAINS("injected");
  CHECK(c == NULL);
  CHECK_EQ_U(ooms(), before + 1);
  CHECK_OK(xdal_malloc(&d, 256)); /* only the third */
  /* From the second on, every one. */
  CHECK_OK(xdal_debug_set_faults("alloc@2+"));
  void *e = NULL, *f = NULL;
  CHECK_OK(xdal_malloc(&e, 256));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&f, 256));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc_async(&f, 256, s));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&f, 256));
  CHECK_OK(xdal_debug_set_faults(NULL));
  CHECK_OK(xdal_malloc(&f, 256));
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free_async(b, s));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_free(e));
  CHECK_OK(xdal_free(f));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_the_nth_launch_fails_its_stream_only(void) {
  xdal_module_t m = NULL;
  xdal_status_t st = xdal_module_get_builtin(&m);
  if (st == XDAL_ERROR_NOT_SUPPORTED) SKIP("no built-in kernels");
  REQUIRE_OK(st);
  REQUIRE_FAULTS("launch@2");
  xdal_function_t fill = NULL;
  REQUIRE_OK(xdal_module_get_function(&fill, m, "fill_u8"));
  xdal_stream_t s = NULL, other = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_stream_create(&other, XDAL_STREAM_NON_BLOCKING, 0));
  void *d = NULL;
  REQUIRE_OK(xdal_malloc(&d, 64));
  unsigned char value = 9;
  uint64_t n = 64;
  xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {&value, 1}};
  xdal_dim3_t one = {1, 1, 1};
  CHECK_OK(xdal_launch_kernel(fill, one, one, 0, s, args, 3));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_launch_kernel(fill, one, one, 0, s, args, 3)); /* the second: accepted, fails when it runs */
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(s));
  CHECK_MESSAGE_CONTAINS("injected");
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_query(s)); /* sticky */
  CHECK_OK(xdal_launch_kernel(fill, one, one, 0, other, args, 3));
  CHECK_OK(xdal_stream_synchronize(other));
  CHECK_OK(xdal_debug_set_faults(NULL));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_stream_destroy(other));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_module_unload(m));
}

static void test_the_nth_copy_fails(void) {
  REQUIRE_FAULTS("copy@2");
  void *d = NULL;
  unsigned char host[64];
  memset(host, 1, sizeof host);
  REQUIRE_OK(xdal_malloc(&d, 64));
  CHECK_OK(xdal_memcpy(d, host, 64, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_memcpy(host, d, 64, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_MESSAGE_NAMES("xdal_memcpy");
  CHECK_MESSAGE_CONTAINS("injected");
  CHECK_OK(xdal_memcpy(host, d, 64, XDAL_MEMCPY_DEVICE_TO_HOST)); /* a synchronous failure is not sticky */
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  CHECK_OK(xdal_debug_set_faults("copy@1"));
  CHECK_OK(xdal_memcpy_async(d, host, 64, XDAL_MEMCPY_HOST_TO_DEVICE, s));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(s));
  CHECK_STATUS(XDAL_ERROR_LAUNCH_FAILED, xdal_stream_synchronize(s));
  CHECK_OK(xdal_debug_set_faults(NULL));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(d));
}

static void test_env_spec(void) {
  const char *env = getenv("XDAL_FAKE_FAULTS");
  if (env == NULL || strcmp(env, "alloc@2") != 0) SKIP("needs XDAL_FAKE_FAULTS=alloc@2");
  void *a = NULL, *b = NULL;
  CHECK_OK(xdal_malloc(&a, 64));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&b, 64));
  CHECK_OK(xdal_malloc(&b, 64));
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
}

static void test_env_malformed(void) {
  const char *env = getenv("XDAL_FAKE_FAULTS");
  if (env == NULL || strcmp(env, "bogus@1") != 0) SKIP("needs XDAL_FAKE_FAULTS=bogus@1");
  CHECK_STATUS(XDAL_ERROR_BACKEND_UNAVAILABLE, xdal_init());
  CHECK_MESSAGE_CONTAINS("XDAL_FAKE_FAULTS");
  CHECK_MESSAGE_CONTAINS("bogus@1");
}

static void test_poison(void) {
  const char *env = getenv("XDAL_FAKE_POISON");
  if (env == NULL || strcmp(env, "1") != 0 || !backend_is_fake()) SKIP("needs XDAL_FAKE_POISON=1 on the fake backend");
  unsigned char back[256];
  void *p = NULL;
  REQUIRE_OK(xdal_malloc(&p, sizeof back));
  CHECK_OK(xdal_memcpy(back, p, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, sizeof back, 0xFF);
  float f;
  memcpy(&f, back, sizeof f);
  CHECK_MSG(f != f, "new memory read as f32 should be NaN, is %g", (double)f);
  CHECK_OK(xdal_memset(p, 0x11, sizeof back));
  CHECK_OK(xdal_free(p));
  /* Outside protect mode the host sees the simulated memory: freed bytes
     are poison. */
  const volatile unsigned char *freed = (const volatile unsigned char *)p;
  size_t not_poison = 0;
  for (size_t i = 0; i < sizeof back; i++) not_poison += freed[i] != 0xFF;
  CHECK_MSG(not_poison == 0, "%zu freed bytes are not 0xFF", not_poison);
  /* Stream-ordered: a pool block is poisoned when the stream reaches its
     free, and again when it is handed out. */
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  void *q = NULL, *r = NULL;
  REQUIRE_OK(xdal_malloc_async(&q, sizeof back, s));
  CHECK_OK(xdal_memset_async(q, 0x22, sizeof back, s));
  CHECK_OK(xdal_free_async(q, s));
  CHECK_OK(xdal_stream_synchronize(s));
  freed = (const volatile unsigned char *)q;
  not_poison = 0;
  for (size_t i = 0; i < sizeof back; i++) not_poison += freed[i] != 0xFF;
  CHECK_MSG(not_poison == 0, "%zu bytes of a pool block freed in stream order are not 0xFF", not_poison);
  REQUIRE_OK(xdal_malloc_async(&r, sizeof back, s));
  CHECK_OK(xdal_memcpy_async(back, r, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_BYTES(back, sizeof back, 0xFF);
  CHECK_OK(xdal_free_async(r, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_device_lost(void) {
  if (device_count() < 2) SKIP("needs two devices");
  xdal_stream_t s1 = NULL, s0 = NULL;
  REQUIRE_OK(xdal_device_set(1));
  xdal_status_t st = xdal_stream_create(&s1, XDAL_STREAM_DEFAULT, 0);
  REQUIRE_OK(xdal_device_set(0));
  REQUIRE_OK(st);
  REQUIRE_FAULTS("lost:1@2");
  REQUIRE_OK(xdal_device_set(1));
  void *p = NULL;
  CHECK_OK(xdal_malloc(&p, 64));         /* call 1 touching device 1 */
  CHECK_OK(xdal_stream_synchronize(s1)); /* call 2 */
  void *q = NULL;
  CHECK_STATUS(XDAL_ERROR_DEVICE_LOST, xdal_malloc(&q, 64));
  CHECK_MESSAGE_CONTAINS("device 1");
  CHECK_STATUS(XDAL_ERROR_DEVICE_LOST, xdal_stream_synchronize(s1));
  CHECK_STATUS(XDAL_ERROR_DEVICE_LOST, xdal_memset(p, 0, 64));
  xdal_stream_t again = NULL;
  CHECK_STATUS(XDAL_ERROR_DEVICE_LOST, xdal_stream_create(&again, XDAL_STREAM_DEFAULT, 0));
  /* Clearing the spec does not bring it back. */
  CHECK_OK(xdal_debug_set_faults(NULL));
  CHECK_STATUS(XDAL_ERROR_DEVICE_LOST, xdal_malloc(&q, 64));
  /* Device 0 keeps working. */
  REQUIRE_OK(xdal_device_set(0));
  REQUIRE_OK(xdal_stream_create(&s0, XDAL_STREAM_DEFAULT, 0));
  void *d0 = NULL;
  CHECK_OK(xdal_malloc(&d0, 64));
  CHECK_OK(xdal_memset_async(d0, 3, 64, s0));
  CHECK_OK(xdal_stream_synchronize(s0));
  CHECK_OK(xdal_free(d0));
  CHECK_OK(xdal_stream_destroy(s0));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_malformed_specs_are_refused_and_change_nothing),
    HARNESS_TEST(test_the_nth_allocation_fails),
    HARNESS_TEST(test_the_nth_launch_fails_its_stream_only),
    HARNESS_TEST(test_the_nth_copy_fails),
    HARNESS_TEST(test_env_spec),
    HARNESS_TEST(test_env_malformed),
    HARNESS_TEST(test_poison),
    HARNESS_TEST(test_device_lost),
};

HARNESS_MAIN(tests)
