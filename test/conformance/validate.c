/* XDAL_VALIDATE=1 (since 1.2): at exit, a report on stderr of every object
   not destroyed (allocations, pinned host memory, streams, events,
   modules), each with its size and the call that made it; destroyed
   objects are not in it, and without the variable there is no report.

   test_leak_report runs this executable again as a child (test
   leaky_child, with XDAL_VALIDATE set) and reads its stderr. */
#include "harness.h"

#include "child.h"

/* What the child leaves behind, and what it cleans up. */
static void test_leaky_child(void) {
  if (getenv("XDAL_VALIDATE_TEST_CHILD") == NULL) SKIP("runs as the child of test_leak_report");
  void *leaked = NULL, *freed = NULL, *pinned = NULL;
  xdal_stream_t stream = NULL, destroyed = NULL;
  xdal_event_t event = NULL;
  REQUIRE_OK(xdal_malloc(&leaked, 1234));
  REQUIRE_OK(xdal_malloc(&freed, 4321));
  REQUIRE_OK(xdal_malloc_host(&pinned, 777));
  REQUIRE_OK(xdal_stream_create(&stream, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_stream_create(&destroyed, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&event, XDAL_EVENT_DEFAULT));
  void *pooled = NULL;
  REQUIRE_OK(xdal_malloc_async(&pooled, 555, stream));
  CHECK_OK(xdal_free(freed));
  CHECK_OK(xdal_stream_destroy(destroyed));
  printf("leaked %p pinned %p stream %p event %p pooled %p\n", leaked, pinned, (void *)stream, (void *)event, pooled);
}

static void test_leak_report(void) {
  static const char *const env[] = {"XDAL_VALIDATE=1", "XDAL_VALIDATE_TEST_CHILD=1"};
  char *report = run_child("test_leaky_child", "XDAL_VALIDATE", env, 2);
  REQUIRE(report != NULL);
  static const char *const expected[] = {
      "XDAL_VALIDATE: 5 object(s) never destroyed",
      "device allocation 0x",
      ", 1234 bytes on device 0: made by xdal_malloc (",
      ", 777 bytes: made by xdal_malloc_host (",
      ": made by xdal_stream_create (",
      ": made by xdal_event_create (",
      ", 555 bytes on device 0: made by xdal_malloc_async (",
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
    CHECK_MSG(strstr(report, expected[i]) != NULL, "the report lacks \"%s\":\n%s", expected[i], report);
  CHECK_MSG(strstr(report, "4321 bytes") == NULL, "a freed allocation is reported:\n%s", report);
  /* Oldest first: the 1234-byte allocation came before the stream. */
  const char *first = strstr(report, "1234 bytes"), *stream = strstr(report, "xdal_stream_create");
  CHECK(first && stream && first < stream);
  free(report);

  /* Without the variable: no report. */
  static const char *const quiet_env[] = {"XDAL_VALIDATE_TEST_CHILD=1"};
  char *quiet = run_child("test_leaky_child", "XDAL_VALIDATE", quiet_env, 1);
  REQUIRE(quiet != NULL);
  CHECK_MSG(strstr(quiet, "XDAL_VALIDATE") == NULL, "a report without XDAL_VALIDATE:\n%s", quiet);
  free(quiet);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_leak_report),
    HARNESS_TEST(test_leaky_child),
};

HARNESS_MAIN(tests)
