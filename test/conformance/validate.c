/* XDAL_VALIDATE=1 (since 1.2): at exit, a report on stderr of every object
   not destroyed (allocations, pinned host memory, streams, events,
   modules), each with its size and the call that made it; destroyed
   objects are not in it, and without the variable there is no report.

   test_leak_report runs this executable again as a child (test
   leaky_child, with XDAL_VALIDATE set) and reads its stderr. */
#include "harness.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

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

/* Runs this executable as `test` with `env` added; returns its stderr
   (malloc'ed) or NULL. */
static char *run_child(const char *test, const char *const *env, size_t nenv) {
  int pipe_fds[2];
  if (!CHECK(pipe(pipe_fds) == 0)) return NULL;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  size_t n = 0;
  while (environ[n]) n++;
  char **child_env = calloc(n + nenv + 1, sizeof *child_env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "XDAL_VALIDATE", 13) != 0) child_env[k++] = environ[i];
  for (size_t i = 0; i < nenv; i++) child_env[k++] = (char *)env[i];
  char exe[] = "/proc/self/exe";
  char *argv[] = {exe, (char *)test, NULL};
  pid_t pid;
  int spawned = posix_spawn(&pid, exe, &actions, NULL, argv, child_env);
  posix_spawn_file_actions_destroy(&actions);
  free(child_env);
  close(pipe_fds[1]);
  if (!CHECK_MSG(spawned == 0, "posix_spawn failed: %d", spawned)) {
    close(pipe_fds[0]);
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *text = malloc(cap);
  ssize_t got;
  while ((got = read(pipe_fds[0], text + len, cap - len - 1)) > 0) {
    len += (size_t)got;
    if (cap - len < 2) text = realloc(text, cap *= 2);
  }
  text[len] = '\0';
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d); its stderr:\n%s", status,
            text);
  return text;
}

static void test_leak_report(void) {
  static const char *const env[] = {"XDAL_VALIDATE=1", "XDAL_VALIDATE_TEST_CHILD=1"};
  char *report = run_child("test_leaky_child", env, 2);
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
  char *quiet = run_child("test_leaky_child", quiet_env, 1);
  REQUIRE(quiet != NULL);
  CHECK_MSG(strstr(quiet, "XDAL_VALIDATE") == NULL, "a report without XDAL_VALIDATE:\n%s", quiet);
  free(quiet);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_leak_report),
    HARNESS_TEST(test_leaky_child),
};

HARNESS_MAIN(tests)
