/*
 * A tiny test harness for the xdal C conformance suite.
 *
 * Each test executable defines a handful of `static void test_x(void)`
 * functions, lists them in an array of `harness_test_t` and ends with
 * `HARNESS_MAIN(tests)`. Running the executable runs every test, or only the
 * tests named on the command line, and ends with a line "N passed, M failed";
 * the exit status is non-zero when any test failed.
 *
 * Checks do not stop a test (so one run reports every mismatch); the REQUIRE_
 * forms return from the test function when they fail, for checks whose
 * failure would make the rest meaningless or unsafe (an allocation that did
 * not happen, say). Checks may be used from several threads at once.
 *
 * Include this header first: it selects the POSIX feature level that the
 * tests need (pthreads, nanosleep, fork, setenv) while compiling as ISO C11.
 */
#ifndef XDAL_CONFORMANCE_HARNESS_H
#define XDAL_CONFORMANCE_HARNESS_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <xdal/xdal.h>

#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Failure bookkeeping                                                       */

static atomic_int harness_failures = 0; /* checks failed in the current test */
static atomic_int harness_skipped = 0;  /* the current test called SKIP */
static const char *harness_current_test = "";

static inline void harness_record_failure(void) { atomic_fetch_add(&harness_failures, 1); }

/* The calling thread's last xdal error message, for failure reports. */
static inline void harness_last_message(char *buf, size_t len) {
  size_t needed = 0;
  if (xdal_get_last_error_message(buf, len, &needed) != XDAL_SUCCESS) {
    snprintf(buf, len, "<xdal_get_last_error_message failed>");
  }
}

static inline int harness_check_status(xdal_status_t expected, xdal_status_t actual, const char *call,
                                       const char *file, int line) {
  if (expected == actual) return 1;
  char message[1024];
  harness_last_message(message, sizeof message);
  printf("%s:%d: CHECK_STATUS failed\n"
         "    call:      %s\n"
         "    expected:  %s (%d)\n"
         "    actual:    %s (%d)\n"
         "    last error message: \"%s\"%s\n",
         file, line, call, xdal_status_string(expected), (int)expected, xdal_status_string(actual),
         (int)actual, message, actual == XDAL_SUCCESS ? " (from an earlier call: this one succeeded)" : "");
  fflush(stdout);
  harness_record_failure();
  return 0;
}

static inline int harness_check(int ok, const char *text, const char *file, int line) {
  if (ok) return 1;
  printf("%s:%d: CHECK failed: %s\n", file, line, text);
  fflush(stdout);
  harness_record_failure();
  return 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static inline int harness_check_msg(int ok, const char *file, int line, const char *fmt, ...) {
  if (ok) return 1;
  char text[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  printf("%s:%d: CHECK failed: %s\n", file, line, text);
  fflush(stdout);
  harness_record_failure();
  return 0;
}

static inline int harness_check_eq_i(intmax_t a, intmax_t b, const char *ta, const char *tb, const char *file,
                                     int line) {
  if (a == b) return 1;
  printf("%s:%d: CHECK_EQ failed: %s == %s\n    left:  %jd\n    right: %jd\n", file, line, ta, tb, a, b);
  fflush(stdout);
  harness_record_failure();
  return 0;
}

static inline int harness_check_eq_u(uintmax_t a, uintmax_t b, const char *ta, const char *tb, const char *file,
                                     int line) {
  if (a == b) return 1;
  printf("%s:%d: CHECK_EQ_U failed: %s == %s\n    left:  %ju (0x%jx)\n    right: %ju (0x%jx)\n", file, line, ta,
         tb, a, a, b, b);
  fflush(stdout);
  harness_record_failure();
  return 0;
}

static inline int harness_check_str_eq(const char *a, const char *b, const char *ta, const char *tb,
                                       const char *file, int line) {
  if (a != NULL && b != NULL && strcmp(a, b) == 0) return 1;
  printf("%s:%d: CHECK_STR_EQ failed: %s == %s\n    left:  %s%s%s\n    right: %s%s%s\n", file, line, ta, tb,
         a ? "\"" : "", a ? a : "NULL", a ? "\"" : "", b ? "\"" : "", b ? b : "NULL", b ? "\"" : "");
  fflush(stdout);
  harness_record_failure();
  return 0;
}

/* CHECK_STATUS(expected, call): `call` is evaluated once; on a mismatch the
   report names the place, the call text, both statuses and the last error
   message. Yields 1 on a match, 0 otherwise. */
#define CHECK_STATUS(expected, call) harness_check_status((expected), (call), #call, __FILE__, __LINE__)
#define CHECK_OK(call) CHECK_STATUS(XDAL_SUCCESS, call)
#define CHECK(cond) harness_check(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_MSG(cond, ...) harness_check_msg(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_EQ(a, b) harness_check_eq_i((intmax_t)(a), (intmax_t)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_U(a, b) harness_check_eq_u((uintmax_t)(a), (uintmax_t)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_STR_EQ(a, b) harness_check_str_eq((a), (b), #a, #b, __FILE__, __LINE__)

/* The same checks, returning from the (void) test function on failure. */
#define REQUIRE_STATUS(expected, call)                                                                        \
  do {                                                                                                        \
    if (!CHECK_STATUS(expected, call)) return;                                                                \
  } while (0)
#define REQUIRE_OK(call) REQUIRE_STATUS(XDAL_SUCCESS, call)
#define REQUIRE(cond)                                                                                         \
  do {                                                                                                        \
    if (!CHECK(cond)) return;                                                                                 \
  } while (0)

/* SKIP("why", ...): the test counts as passed, with the note printed. */
#define SKIP(...)                                                                                             \
  do {                                                                                                        \
    printf("    note: skipped: ");                                                                            \
    printf(__VA_ARGS__);                                                                                      \
    printf("\n");                                                                                             \
    atomic_store(&harness_skipped, 1);                                                                        \
    return;                                                                                                   \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Helpers shared by the tests                                               */

static inline void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A temporary file holding `len` bytes of `data`, in $TMPDIR (else /tmp);
   its path goes to `path`. */
static inline int temp_file(char *path, size_t size, const void *data, size_t len) {
  const char *dir = getenv("TMPDIR");
  if (dir == NULL || *dir == '\0') dir = "/tmp";
  /* mkstemp's template: the name, then six 'X's it replaces. */
  const int stem = snprintf(path, size, "%s/xdal-conformance-", dir);
  if (!CHECK_MSG(stem > 0 && (size_t)stem + 7 <= size, "no room for a temporary path in %zu bytes", size)) return 0;
  memset(path + stem, 'X', 6);
  path[stem + 6] = '\0';
  int fd = mkstemp(path);
  if (!CHECK_MSG(fd >= 0, "mkstemp(%s) failed", path)) return 0;
  ssize_t written = len ? write(fd, data, len) : 0;
  close(fd);
  return CHECK_MSG(written == (ssize_t)len, "writing %s failed", path);
}

/* A FIFO nobody reads (for paths xdal must not wait on), made where
   temp_file makes files; its path goes to `path`. Remove it with unlink. */
static inline int temp_fifo(char *path, size_t size) {
  if (!temp_file(path, size, "", 0)) return 0;
  unlink(path); /* the unique name, now for a FIFO */
  return CHECK_MSG(mkfifo(path, 0600) == 0, "mkfifo(%s) failed", path);
}

/* 1 when the running backend is the fake one (fake-only expectations). */
static inline int backend_is_fake(void) {
  const char *name = xdal_backend_name();
  return name != NULL && strcmp(name, "fake") == 0;
}

/* The number of devices, or 0 when it cannot be read (reported as a failure). */
static inline int device_count(void) {
  int count = 0;
  if (!CHECK_OK(xdal_device_get_count(&count))) return 0;
  return count;
}

/* The byte at index i of pattern `seed`: distinct seeds give distinct data. */
static inline unsigned char pattern_byte(uint32_t seed, size_t i) {
  uint32_t x = seed * 2654435761u ^ (uint32_t)i * 40503u ^ (uint32_t)(i >> 11) * 97u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return (unsigned char)x;
}

static inline void fill_pattern(void *buf, size_t n, uint32_t seed) {
  unsigned char *b = (unsigned char *)buf;
  for (size_t i = 0; i < n; i++) b[i] = pattern_byte(seed, i);
}

/* Index of the first of n bytes that is not bytes first..first+n-1 of
   pattern `seed`, or n when all match. */
static inline size_t pattern_mismatch_at(const void *buf, size_t n, uint32_t seed, size_t first) {
  const unsigned char *b = (const unsigned char *)buf;
  for (size_t i = 0; i < n; i++)
    if (b[i] != pattern_byte(seed, first + i)) return i;
  return n;
}

/* Index of the first byte that is not pattern `seed`, or n when all match. */
static inline size_t pattern_mismatch(const void *buf, size_t n, uint32_t seed) {
  return pattern_mismatch_at(buf, n, seed, 0);
}

/* Index of the first byte that is not `value`, or n when all match. */
static inline size_t value_mismatch(const void *buf, size_t n, unsigned char value) {
  const unsigned char *b = (const unsigned char *)buf;
  for (size_t i = 0; i < n; i++)
    if (b[i] != value) return i;
  return n;
}

#define CHECK_PATTERN(buf, n, seed)                                                                           \
  do {                                                                                                        \
    size_t at_ = pattern_mismatch((buf), (n), (seed));                                                        \
    CHECK_MSG(at_ == (size_t)(n), "%s: %zu bytes should hold pattern %u; first difference at byte %zu", #buf, \
              (size_t)(n), (unsigned)(seed), at_);                                                            \
  } while (0)

/* buf holds bytes first..first+n-1 of pattern `seed`. */
#define CHECK_PATTERN_AT(buf, n, seed, first)                                                                 \
  do {                                                                                                        \
    size_t at_ = pattern_mismatch_at((buf), (n), (seed), (first));                                           \
    CHECK_MSG(at_ == (size_t)(n), "%s: %zu bytes should hold pattern %u from byte %zu; first difference at %zu", \
              #buf, (size_t)(n), (unsigned)(seed), (size_t)(first), at_);                                    \
  } while (0)

#define CHECK_BYTES(buf, n, value)                                                                            \
  do {                                                                                                        \
    size_t at_ = value_mismatch((buf), (n), (unsigned char)(value));                                          \
    CHECK_MSG(at_ == (size_t)(n), "%s: %zu bytes should all be 0x%02x; first difference at byte %zu", #buf,   \
              (size_t)(n), (unsigned)(unsigned char)(value), at_);                                            \
  } while (0)

/* The calling thread's last error message starts with `function` followed by
   a character that cannot continue the name ("xdal_free: ..." but not
   "xdal_free_host: ..."). */
#define CHECK_MESSAGE_NAMES(function) harness_check_message_names((function), __FILE__, __LINE__)
static inline int harness_check_message_names(const char *function, const char *file, int line) {
  char message[1024];
  harness_last_message(message, sizeof message);
  size_t n = strlen(function);
  int ok = strncmp(message, function, n) == 0 && message[n] != '_' &&
           !(message[n] >= 'a' && message[n] <= 'z') && !(message[n] >= '0' && message[n] <= '9');
  return harness_check_msg(ok, file, line, "last error message should start with \"%s\", got \"%s\"", function,
                           message);
}

/* --- Host-function helpers -------------------------------------------------
   A gate blocks the host functions that wait on it until the test opens it.
   So that a library that wrongly waits on gated work cannot hang the suite, a
   watchdog opens the gate after HARNESS_GATE_WATCHDOG_MS and marks it forced;
   gate_finish() reports a forced gate as a failure. */
#define HARNESS_GATE_WATCHDOG_MS 5000

typedef struct harness_gate {
  atomic_int open;
  atomic_int forced;
  atomic_int waiting; /* host functions currently blocked on it */
  atomic_int passed;  /* host functions that went through it */
  atomic_int stop;
  pthread_t watchdog;
} harness_gate;

static inline void *harness_gate_watchdog(void *arg) {
  harness_gate *g = (harness_gate *)arg;
  for (int waited = 0; waited < HARNESS_GATE_WATCHDOG_MS; waited += 2) {
    if (atomic_load(&g->stop) || atomic_load(&g->open)) return NULL;
    sleep_ms(2);
  }
  if (!atomic_load(&g->open)) {
    atomic_store(&g->forced, 1);
    atomic_store(&g->open, 1);
  }
  return NULL;
}

static inline void gate_init(harness_gate *g) {
  atomic_init(&g->open, 0);
  atomic_init(&g->forced, 0);
  atomic_init(&g->waiting, 0);
  atomic_init(&g->passed, 0);
  atomic_init(&g->stop, 0);
  if (pthread_create(&g->watchdog, NULL, harness_gate_watchdog, g) != 0) {
    printf("gate_init: pthread_create failed\n");
    abort();
  }
}

static inline void gate_open(harness_gate *g) { atomic_store(&g->open, 1); }

/* An xdal_host_fn_t: waits until the gate (user_data) opens. */
static inline void gate_host_fn(void *user_data) {
  harness_gate *g = (harness_gate *)user_data;
  atomic_fetch_add(&g->waiting, 1);
  while (!atomic_load(&g->open)) sleep_ms(1);
  atomic_fetch_sub(&g->waiting, 1);
  atomic_fetch_add(&g->passed, 1);
}

/* Opens the gate, stops the watchdog; fails the test if the watchdog had to
   open it (something blocked on gated work, or a host function never ran). */
#define gate_finish(g) harness_gate_finish((g), __FILE__, __LINE__)
static inline void harness_gate_finish(harness_gate *g, const char *file, int line) {
  int forced = atomic_load(&g->forced);
  atomic_store(&g->open, 1);
  atomic_store(&g->stop, 1);
  pthread_join(g->watchdog, NULL);
  harness_check_msg(!forced, file, line,
                    "a call blocked on work gated by a host function until the %d ms watchdog opened the gate",
                    HARNESS_GATE_WATCHDOG_MS);
}

/* An xdal_host_fn_t: atomically increments the atomic_int at user_data. */
static inline void increment_host_fn(void *user_data) { atomic_fetch_add((atomic_int *)user_data, 1); }

/* ------------------------------------------------------------------------ */
/* Registry and main                                                         */

typedef struct harness_test {
  const char *name;
  void (*fn)(void);
} harness_test_t;

#define HARNESS_TEST(fn) {#fn, fn}

/* A test that runs longer than this is stuck: report it by name and stop. */
#define HARNESS_TEST_TIMEOUT_S 30

static inline void harness_on_alarm(int sig) {
  (void)sig;
  static const char head[] = "\nTIMEOUT: the test did not finish: ";
  ssize_t ignored = write(STDOUT_FILENO, head, sizeof head - 1);
  ignored = write(STDOUT_FILENO, harness_current_test, strlen(harness_current_test));
  ignored = write(STDOUT_FILENO, "\n", 1);
  (void)ignored;
  _exit(3);
}

static inline int harness_main(int argc, char **argv, const harness_test_t *tests, size_t count) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--list") == 0) {
      for (size_t i = 0; i < count; i++) printf("%s\n", tests[i].name);
      return 0;
    }
    int known = 0;
    for (size_t i = 0; i < count; i++) known |= strcmp(argv[a], tests[i].name) == 0;
    if (!known) {
      printf("unknown test \"%s\"; --list shows the tests\n", argv[a]);
      return 2;
    }
  }
  signal(SIGALRM, harness_on_alarm);
  const char *backend = getenv("XDAL_BACKEND");
  printf("xdal conformance: %s (XDAL_BACKEND=%s)\n", argv[0], backend ? backend : "<unset>");
  int passed = 0, failed = 0, skipped = 0;
  for (size_t i = 0; i < count; i++) {
    if (argc > 1) {
      int selected = 0;
      for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], tests[i].name) == 0;
      if (!selected) continue;
    }
    harness_current_test = tests[i].name;
    atomic_store(&harness_failures, 0);
    atomic_store(&harness_skipped, 0);
    printf("[ RUN  ] %s\n", tests[i].name);
    alarm(HARNESS_TEST_TIMEOUT_S);
    double start = now_ms();
    tests[i].fn();
    double took = now_ms() - start;
    alarm(0);
    if (atomic_load(&harness_failures) != 0) {
      failed++;
      printf("[ FAIL ] %s (%d failed checks, %.0f ms)\n", tests[i].name, atomic_load(&harness_failures), took);
    } else if (atomic_load(&harness_skipped)) {
      passed++;
      skipped++;
      printf("[ SKIP ] %s\n", tests[i].name);
    } else {
      passed++;
      printf("[  OK  ] %s (%.0f ms)\n", tests[i].name, took);
    }
  }
  if (skipped)
    printf("%d passed, %d failed (%d of the passed were skipped)\n", passed, failed, skipped);
  else
    printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

#define HARNESS_MAIN(tests)                                                                                   \
  int main(int argc, char **argv) { return harness_main(argc, argv, (tests), sizeof(tests) / sizeof((tests)[0])); }

#endif /* XDAL_CONFORMANCE_HARNESS_H */
