/* Calls at the edges of a process (since 1.2).

   At exit: from an atexit handler or a static destructor, which the C
   library runs after it has destroyed the exiting thread's thread-local
   storage. Each call works as at any other time, or fails with its status
   and message; none may abort the process, and a failure's message is
   still there to read. test_calls_at_exit runs this executable again as a
   child (test exiting_child) and reads its stderr, once plainly and once
   with the call tracer and the validation layer on.

   As a thread ends: from a pthread key destructor, which runs after the
   thread's thread-locals are destroyed, the same.

   In a fork() child of a process that used xdal: every call answers, none
   hangs. The fake backend goes on working there; a backend whose runtime
   has threads of its own refuses with XDAL_ERROR_BACKEND_UNAVAILABLE, as
   CUDA refuses a forked child. */
#include "harness.h"

#include "child.h"

#include <signal.h>

static void *exit_memory;
static xdal_stream_t exit_stream;
static int exit_failures;

/* A failed check of the atexit handler: said on stderr, for the parent. */
static void exit_check(int ok, const char *what) {
  if (ok) return;
  exit_failures++;
  fprintf(stderr, "at exit: %s failed\n", what);
}

/* The last error message names `function`. */
static void exit_check_message(const char *function) {
  char message[512] = {0};
  size_t needed = 0;
  exit_check(xdal_get_last_error_message(message, sizeof message, &needed) == XDAL_SUCCESS,
             "xdal_get_last_error_message");
  if (strstr(message, function) == NULL) {
    exit_failures++;
    fprintf(stderr, "at exit: the last error message \"%s\" does not name %s\n", message, function);
  }
}

static void calls_at_exit(void) {
  unsigned char host[256];
  memset(host, 0x5a, sizeof host);
  exit_check(xdal_memcpy_async(exit_memory, host, sizeof host, XDAL_MEMCPY_HOST_TO_DEVICE, exit_stream) ==
                 XDAL_SUCCESS,
             "xdal_memcpy_async");
  exit_check(xdal_memset_async((unsigned char *)exit_memory + 128, 0x11, 128, exit_stream) == XDAL_SUCCESS,
             "xdal_memset_async");
  xdal_event_t event = NULL;
  exit_check(xdal_event_create(&event, XDAL_EVENT_DEFAULT) == XDAL_SUCCESS, "xdal_event_create");
  exit_check(xdal_event_record(event, exit_stream) == XDAL_SUCCESS, "xdal_event_record");
  exit_check(xdal_event_synchronize(event) == XDAL_SUCCESS, "xdal_event_synchronize");
  exit_check(xdal_event_destroy(event) == XDAL_SUCCESS, "xdal_event_destroy");
  exit_check(xdal_stream_synchronize(exit_stream) == XDAL_SUCCESS, "xdal_stream_synchronize");
  memset(host, 0, sizeof host);
  exit_check(xdal_memcpy(host, exit_memory, sizeof host, XDAL_MEMCPY_DEVICE_TO_HOST) == XDAL_SUCCESS, "xdal_memcpy");
  exit_check(host[0] == 0x5a && host[127] == 0x5a && host[128] == 0x11 && host[255] == 0x11,
             "the bytes copied back");
  /* Failures: a status, and a message to read, as at any other time. */
  exit_check(xdal_free(host) == XDAL_ERROR_INVALID_POINTER, "xdal_free of host memory");
  exit_check_message("xdal_free");
  static const char garbage[] = "not a module image";
  xdal_module_t module = NULL;
  exit_check(xdal_module_load_data(&module, garbage, sizeof garbage - 1) != XDAL_SUCCESS,
             "xdal_module_load_data of garbage");
  exit_check_message("xdal_module_load_data");
  exit_check(xdal_stream_destroy(exit_stream) == XDAL_SUCCESS, "xdal_stream_destroy");
  exit_check(xdal_free(exit_memory) == XDAL_SUCCESS, "xdal_free");
  if (exit_failures != 0) _exit(3);
  fprintf(stderr, "at exit: every call answered\n");
}

/* The child: uses xdal on its main thread (so that its thread-locals
   exist, and are destroyed as it exits: a failed call, a synchronization),
   and leaves the rest to an atexit handler. */
static void test_exiting_child(void) {
  if (getenv("XDAL_EXIT_TEST_CHILD") == NULL) SKIP("runs as the child of test_calls_at_exit");
  REQUIRE_OK(xdal_malloc(&exit_memory, 256));
  REQUIRE_OK(xdal_stream_create(&exit_stream, XDAL_STREAM_NON_BLOCKING, 0));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_malloc(NULL, 16));
  CHECK_OK(xdal_memset_async(exit_memory, 0, 256, exit_stream));
  CHECK_OK(xdal_stream_synchronize(exit_stream));
  REQUIRE(atexit(calls_at_exit) == 0);
}

static void test_calls_at_exit(void) {
  static const char *const plain[] = {"XDAL_EXIT_TEST_CHILD=1"};
  char trace[512], trace_env[600];
  REQUIRE(temp_file_variable(trace, sizeof trace, "XDAL_TRACE", trace_env, sizeof trace_env));
  const char *const watched[] = {"XDAL_EXIT_TEST_CHILD=1", "XDAL_VALIDATE=1", trace_env};
  const struct {
    const char *name;
    const char *const *env;
    size_t nenv;
  } runs[] = {{"plainly", plain, 1}, {"traced and validated", watched, 3}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    char *text = run_child("test_exiting_child", NULL, runs[i].env, runs[i].nenv);
    if (text == NULL) continue;
    CHECK_MSG(strstr(text, "at exit: every call answered") != NULL, "run %s: the handler did not finish:\n%s",
              runs[i].name, text);
    CHECK_MSG(strstr(text, "panicked") == NULL, "run %s: a panic at exit:\n%s", runs[i].name, text);
    free(text);
  }
  unlink(trace);
}

/* What a fork() child gets from xdal after its parent used it: results,
   or refusals that say why, never a wait that does not end. */
static void fork_child_calls(void *memory, xdal_stream_t stream) {
  int st1 = xdal_memset_async(memory, 0x77, 64, stream);
  int st2 = xdal_stream_synchronize(stream);
  unsigned char host[64] = {0};
  int st3 = xdal_memcpy(host, memory, sizeof host, XDAL_MEMCPY_DEVICE_TO_HOST);
  xdal_stream_t fresh = NULL;
  int st4 = xdal_stream_create(&fresh, XDAL_STREAM_DEFAULT, 0);
  char message[512] = {0};
  size_t needed = 0;
  xdal_get_last_error_message(message, sizeof message, &needed);
  if (st1 == XDAL_SUCCESS && st2 == XDAL_SUCCESS && st3 == XDAL_SUCCESS && st4 == XDAL_SUCCESS) {
    xdal_stream_destroy(fresh);
    _exit(host[0] == 0x77 && host[63] == 0x77 ? 0 : 3); /* working: with the right bytes */
  }
  int refused = st1 == XDAL_ERROR_BACKEND_UNAVAILABLE && st2 == XDAL_ERROR_BACKEND_UNAVAILABLE &&
                st3 == XDAL_ERROR_BACKEND_UNAVAILABLE && st4 == XDAL_ERROR_BACKEND_UNAVAILABLE &&
                strstr(message, "fork") != NULL;
  if (!refused) fprintf(stderr, "fork child: statuses %d %d %d %d, message \"%s\"\n", st1, st2, st3, st4, message);
  exit(refused ? 10 : 4); /* an ordinary exit: the atexit handlers must not hang either */
}

static void test_fork_child_is_answered(void) {
  void *memory = NULL;
  xdal_stream_t stream = NULL;
  REQUIRE_OK(xdal_malloc(&memory, 64));
  REQUIRE_OK(xdal_stream_create(&stream, XDAL_STREAM_NON_BLOCKING, 0));
  CHECK_OK(xdal_memset_async(memory, 0, 64, stream));
  CHECK_OK(xdal_stream_synchronize(stream));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) fork_child_calls(memory, stream);
  int status = 0;
  pid_t done = 0;
  /* Within the harness's own limit, so that a hung child is killed, not left behind. */
  for (int waited_ms = 0; waited_ms < (HARNESS_TEST_TIMEOUT_S / 2) * 1000 && done == 0; waited_ms += 10) {
    done = waitpid(pid, &status, WNOHANG);
    if (done == 0) sleep_ms(10);
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK_MSG(0, "the fork child's calls did not return in %d s", HARNESS_TEST_TIMEOUT_S / 2);
  } else {
    CHECK_MSG(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 10),
              "the fork child ended with status %d (3: wrong bytes, 4: neither working nor refused)", status);
    if (backend_is_fake()) CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the fake backend works on");
  }
  CHECK_OK(xdal_stream_destroy(stream));
  CHECK_OK(xdal_free(memory));
}

/* A thread's end: pthread key destructors run after the C library has
   destroyed the thread's thread-locals, as at exit. */
static pthread_key_t ending_key;
static atomic_int ending_failures = -1;

static void thread_ending(void *memory) {
  int failures = 0;
  unsigned char host[64] = {0};
  failures += xdal_memset(memory, 0x42, sizeof host) != XDAL_SUCCESS;
  failures += xdal_memcpy(host, memory, sizeof host, XDAL_MEMCPY_DEVICE_TO_HOST) != XDAL_SUCCESS;
  failures += host[0] != 0x42 || host[63] != 0x42;
  failures += xdal_free(host) != XDAL_ERROR_INVALID_POINTER;
  char message[512] = {0};
  size_t needed = 0;
  failures += xdal_get_last_error_message(message, sizeof message, &needed) != XDAL_SUCCESS;
  failures += strstr(message, "xdal_free") == NULL;
  atomic_store(&ending_failures, failures);
}

static void *ending_thread(void *memory) {
  /* Thread-locals of xdal in use: a failed call, a synchronization. */
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_malloc(NULL, 16));
  CHECK_OK(xdal_device_synchronize());
  pthread_setspecific(ending_key, memory);
  return NULL;
}

static void test_calls_as_a_thread_ends(void) {
  void *memory = NULL;
  REQUIRE_OK(xdal_malloc(&memory, 64));
  REQUIRE(pthread_key_create(&ending_key, thread_ending) == 0);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, NULL, ending_thread, memory) == 0);
  pthread_join(thread, NULL);
  CHECK_MSG(atomic_load(&ending_failures) == 0, "%d of the ending thread's calls went wrong",
            atomic_load(&ending_failures));
  pthread_key_delete(ending_key);
  CHECK_OK(xdal_free(memory));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_calls_at_exit),
    HARNESS_TEST(test_exiting_child),
    HARNESS_TEST(test_fork_child_is_answered),
    HARNESS_TEST(test_calls_as_a_thread_ends),
};

HARNESS_MAIN(tests)
