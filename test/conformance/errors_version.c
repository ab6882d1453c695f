/* Status strings, versions and the per-thread last error message. */
#include "harness.h"

static void test_status_strings_name_every_code(void) {
  static const struct {
    xdal_status_t status;
    int value;
    const char *name;
  } codes[] = {
      {XDAL_SUCCESS, 0, "XDAL_SUCCESS"},
      {XDAL_ERROR_INVALID_VALUE, 1, "XDAL_ERROR_INVALID_VALUE"},
      {XDAL_ERROR_NULL_POINTER, 2, "XDAL_ERROR_NULL_POINTER"},
      {XDAL_ERROR_INVALID_DEVICE, 3, "XDAL_ERROR_INVALID_DEVICE"},
      {XDAL_ERROR_INVALID_HANDLE, 4, "XDAL_ERROR_INVALID_HANDLE"},
      {XDAL_ERROR_INVALID_POINTER, 5, "XDAL_ERROR_INVALID_POINTER"},
      {XDAL_ERROR_OUT_OF_MEMORY, 6, "XDAL_ERROR_OUT_OF_MEMORY"},
      {XDAL_ERROR_NOT_READY, 7, "XDAL_ERROR_NOT_READY"},
      {XDAL_ERROR_NOT_SUPPORTED, 8, "XDAL_ERROR_NOT_SUPPORTED"},
      {XDAL_ERROR_NOT_FOUND, 9, "XDAL_ERROR_NOT_FOUND"},
      {XDAL_ERROR_BACKEND_UNAVAILABLE, 10, "XDAL_ERROR_BACKEND_UNAVAILABLE"},
      {XDAL_ERROR_VERSION_MISMATCH, 11, "XDAL_ERROR_VERSION_MISMATCH"},
      {XDAL_ERROR_LAUNCH_FAILED, 12, "XDAL_ERROR_LAUNCH_FAILED"},
      {XDAL_ERROR_DEVICE_LOST, 13, "XDAL_ERROR_DEVICE_LOST"},
      {XDAL_ERROR_INTERNAL, 14, "XDAL_ERROR_INTERNAL"},
      {XDAL_ERROR_CAPTURE_UNSUPPORTED, 15, "XDAL_ERROR_CAPTURE_UNSUPPORTED"},
      {XDAL_ERROR_CAPTURE_INVALIDATED, 16, "XDAL_ERROR_CAPTURE_INVALIDATED"},
  };
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    CHECK_EQ((int)codes[i].status, codes[i].value);
    CHECK_STR_EQ(xdal_status_string(codes[i].status), codes[i].name);
  }
  static const int unknown[] = {17, 18, 99, 1000, -1, -100, 0x7fffffff};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    const char *s = xdal_status_string((xdal_status_t)unknown[i]);
    CHECK_MSG(s != NULL && strcmp(s, "XDAL_UNKNOWN_STATUS") == 0,
              "xdal_status_string(%d) should be \"XDAL_UNKNOWN_STATUS\", got %s%s%s", unknown[i], s ? "\"" : "",
              s ? s : "NULL", s ? "\"" : "");
  }
}

static void test_get_version(void) {
  uint32_t major = 77, minor = 77, patch = 77;
  REQUIRE_OK(xdal_get_version(&major, &minor, &patch));
  CHECK_EQ_U(major, XDAL_ABI_VERSION_MAJOR);
  CHECK_EQ_U(major, XDAL_VERSION_MAJOR);
  /* A library may be newer than the header this was built with, never older. */
  uint64_t run_time = ((uint64_t)major << 40) | ((uint64_t)minor << 20) | patch;
  uint64_t built = ((uint64_t)XDAL_VERSION_MAJOR << 40) | ((uint64_t)XDAL_VERSION_MINOR << 20) | XDAL_VERSION_PATCH;
  uint64_t abi = ((uint64_t)XDAL_ABI_VERSION_MAJOR << 40) | ((uint64_t)XDAL_ABI_VERSION_MINOR << 20);
  CHECK_MSG(run_time >= built, "run-time version %u.%u.%u is older than the header's %u.%u.%u", major, minor, patch,
            (unsigned)XDAL_VERSION_MAJOR, (unsigned)XDAL_VERSION_MINOR, (unsigned)XDAL_VERSION_PATCH);
  CHECK_MSG(run_time >= abi, "run-time version %u.%u is below the header's ABI version %u.%u", major, minor,
            (unsigned)XDAL_ABI_VERSION_MAJOR, (unsigned)XDAL_ABI_VERSION_MINOR);
  if (XDAL_VERSION_MAJOR == 1 && XDAL_VERSION_MINOR == 2 && XDAL_VERSION_PATCH == 0)
    CHECK(major == 1 && minor == 2 && patch == 0); /* v1.2.0 reports 1.2.0 */

  /* Every output is required; none is written on failure. */
  uint32_t a = 5, b = 6, c = 7;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_get_version(NULL, &b, &c));
  CHECK_MESSAGE_NAMES("xdal_get_version");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_get_version(&a, NULL, &c));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_get_version(&a, &b, NULL));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_get_version(NULL, NULL, NULL));
  CHECK(a == 5 && b == 6 && c == 7);
}

static void test_backend_name_is_never_null(void) {
  REQUIRE_OK(xdal_init());
  const char *name = xdal_backend_name();
  REQUIRE(name != NULL);
  CHECK(name[0] != '\0');
  CHECK(strcmp(name, "none") != 0);
  printf("    backend: %s\n", name);
  /* xdal_init is idempotent. */
  CHECK_OK(xdal_init());
  CHECK_STR_EQ(xdal_backend_name(), name);
}

/* The message of a thread that never failed is "" (needed = 1). */
static void *fresh_thread_message(void *arg) {
  (void)arg;
  size_t needed = 12345;
  CHECK_OK(xdal_get_last_error_message(NULL, 0, &needed));
  CHECK_EQ_U(needed, 1);
  char buf[16];
  memset(buf, 'X', sizeof buf);
  needed = 12345;
  CHECK_OK(xdal_get_last_error_message(buf, sizeof buf, &needed));
  CHECK_EQ_U(needed, 1);
  CHECK_EQ(buf[0], '\0');
  /* A successful call does not create a message. */
  int count = 0;
  CHECK_OK(xdal_device_get_count(&count));
  needed = 12345;
  CHECK_OK(xdal_get_last_error_message(NULL, 0, &needed));
  CHECK_EQ_U(needed, 1);
  return NULL;
}

static void test_message_empty_before_any_error(void) {
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, fresh_thread_message, NULL) == 0);
  pthread_join(t, NULL);
}

static void test_message_length_and_truncation(void) {
  void *p = (void *)0x1;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_malloc(&p, 0));
  CHECK(p == (void *)0x1);

  /* Query the length with buf NULL and len 0. */
  size_t needed = 0;
  REQUIRE_OK(xdal_get_last_error_message(NULL, 0, &needed));
  CHECK_MSG(needed > 1, "a failed call should leave a non-empty message; needed = %zu", needed);
  REQUIRE(needed > 1 && needed < 4096);

  /* The whole message: needed bytes exactly, NUL included. */
  char full[4096];
  memset(full, 'X', sizeof full);
  size_t needed2 = 0;
  REQUIRE_OK(xdal_get_last_error_message(full, needed, &needed2));
  CHECK_EQ_U(needed2, needed);
  CHECK_EQ_U(strnlen(full, sizeof full), needed - 1);
  CHECK_MSG(strncmp(full, "xdal_malloc", 11) == 0 && full[11] != '_',
            "message should name xdal_malloc, got \"%s\"", full);
  printf("    message: \"%s\"\n", full);

  /* needed is optional. */
  char again[4096];
  CHECK_OK(xdal_get_last_error_message(again, sizeof again, NULL));
  CHECK_STR_EQ(again, full);

  /* A buffer too small: cut, NUL-terminated, nothing written past len, and
     needed still reports the whole length. */
  size_t lens[] = {1, 2, 5, needed - 1};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    size_t len = lens[i];
    char small[4096 + 16];
    memset(small, 'X', sizeof small);
    size_t n = 0;
    CHECK_OK(xdal_get_last_error_message(small, len, &n));
    CHECK_EQ_U(n, needed);
    CHECK_MSG(small[len - 1] == '\0', "len %zu: byte %zu should be the NUL", len, len - 1);
    CHECK_MSG(strncmp(small, full, len - 1) == 0, "len %zu: the cut message should be a prefix", len);
    CHECK_MSG(value_mismatch(small + len, 16, 'X') == 16, "len %zu: bytes past len were written", len);
  }

  /* buf NULL with len > 0 is NULL_POINTER; needed is not written then, and
     that failure becomes the thread's message. */
  size_t untouched = 999;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_get_last_error_message(NULL, 8, &untouched));
  CHECK_EQ_U(untouched, 999);
  CHECK_MESSAGE_NAMES("xdal_get_last_error_message");

  /* The library is still usable. */
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_malloc(&p, 0));
  CHECK_MESSAGE_NAMES("xdal_malloc");
}

static void test_success_leaves_message(void) {
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(-1));
  char before[1024], after[1024];
  harness_last_message(before, sizeof before);
  int count = 0, device = -1;
  CHECK_OK(xdal_device_get_count(&count));
  CHECK_OK(xdal_device_get(&device));
  CHECK_OK(xdal_stream_synchronize(NULL));
  harness_last_message(after, sizeof after);
  CHECK_STR_EQ(after, before);
  CHECK_MESSAGE_NAMES("xdal_device_set");
}

static void test_message_names_the_function(void) {
  int count = 0;
  REQUIRE_OK(xdal_device_get_count(&count));
  int dummy = 0;
  void *p = NULL;
  xdal_stream_t s = NULL;
  xdal_event_t e = NULL;
  xdal_device_properties_t props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;

  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_get_count(NULL));
  CHECK_MESSAGE_NAMES("xdal_device_get_count");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(count));
  CHECK_MESSAGE_NAMES("xdal_device_set");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_get(NULL));
  CHECK_MESSAGE_NAMES("xdal_device_get");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_get_properties(-1, &props));
  CHECK_MESSAGE_NAMES("xdal_device_get_properties");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(&dummy));
  CHECK_MESSAGE_NAMES("xdal_free");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_host(&dummy));
  CHECK_MESSAGE_NAMES("xdal_free_host");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_malloc_host(NULL, 64));
  CHECK_MESSAGE_NAMES("xdal_malloc_host");
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_malloc_async(&p, 0, NULL));
  CHECK_MESSAGE_NAMES("xdal_malloc_async");
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_memcpy(&dummy, &dummy, 1, (xdal_memcpy_kind_t)99));
  CHECK_MESSAGE_NAMES("xdal_memcpy");
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_memcpy_async(&dummy, &dummy, 1, (xdal_memcpy_kind_t)99, NULL));
  CHECK_MESSAGE_NAMES("xdal_memcpy_async");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset(&dummy, 0, 1));
  CHECK_MESSAGE_NAMES("xdal_memset");
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_stream_create(&s, 0x100, 0));
  CHECK_MESSAGE_NAMES("xdal_stream_create");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_stream_destroy(NULL));
  CHECK_MESSAGE_NAMES("xdal_stream_destroy");
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_event_create(&e, 0x100));
  CHECK_MESSAGE_NAMES("xdal_event_create");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_launch_host_func(NULL, NULL, NULL));
  CHECK_MESSAGE_NAMES("xdal_launch_host_func");
}

/* Messages are per thread: two threads fail differently at the same time
   and each reads back its own message. */
static pthread_barrier_t message_barrier;

static void *fail_with_malloc(void *arg) {
  (void)arg;
  void *p = NULL;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_malloc(&p, 0));
  pthread_barrier_wait(&message_barrier);
  CHECK_MESSAGE_NAMES("xdal_malloc");
  pthread_barrier_wait(&message_barrier);
  return NULL;
}

static void *fail_with_device_set(void *arg) {
  (void)arg;
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(-1));
  pthread_barrier_wait(&message_barrier);
  CHECK_MESSAGE_NAMES("xdal_device_set");
  pthread_barrier_wait(&message_barrier);
  return NULL;
}

static void test_messages_are_per_thread(void) {
  int dummy = 0;
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_host(&dummy));
  REQUIRE(pthread_barrier_init(&message_barrier, NULL, 2) == 0);
  pthread_t a, b;
  REQUIRE(pthread_create(&a, NULL, fail_with_malloc, NULL) == 0);
  REQUIRE(pthread_create(&b, NULL, fail_with_device_set, NULL) == 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  pthread_barrier_destroy(&message_barrier);
  /* This thread's message is its own. */
  CHECK_MESSAGE_NAMES("xdal_free_host");
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_status_strings_name_every_code),
    HARNESS_TEST(test_get_version),
    HARNESS_TEST(test_backend_name_is_never_null),
    HARNESS_TEST(test_message_empty_before_any_error),
    HARNESS_TEST(test_message_length_and_truncation),
    HARNESS_TEST(test_success_leaves_message),
    HARNESS_TEST(test_message_names_the_function),
    HARNESS_TEST(test_messages_are_per_thread),
};

HARNESS_MAIN(tests)
