/* Protect mode (fake backend, XDAL_FAKE_PROTECT=1): host code that touches
   device memory dies with SIGSEGV, while every xdal operation on that memory
   keeps working. Each faulting access happens in a forked child. */
#include "harness.h"

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

static int protect_mode_expected(void) {
  const char *backend = getenv("XDAL_BACKEND");
  if (backend != NULL && strcmp(backend, "fake") != 0) return 0;
  const char *protect = getenv("XDAL_FAKE_PROTECT");
  if (protect == NULL || strcmp(protect, "1") != 0) return 0;
  if (!CHECK_OK(xdal_init())) return 0;
  return backend_is_fake();
}

/* Forks a child that reads (or writes) one byte at `p`; returns the child's
   wait status, or -1 when fork failed. */
static int touch_in_child(void *p, int write) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* no core file for the expected crash */
    volatile unsigned char *byte = (volatile unsigned char *)p;
    if (write)
      *byte = 0x99;
    else
      (void)*byte;
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

#define CHECK_SEGFAULTS(ptr, write)                                                                           \
  do {                                                                                                        \
    int st_ = touch_in_child((ptr), (write));                                                                 \
    CHECK_MSG(st_ != -1 && WIFSIGNALED(st_) && WTERMSIG(st_) == SIGSEGV,                                      \
              "host %s of %s should die with SIGSEGV; the child %s %d", (write) ? "write" : "read", #ptr,      \
              st_ == -1 ? "could not be forked" : WIFSIGNALED(st_) ? "died of signal" : "exited with",         \
              st_ == -1 ? 0 : WIFSIGNALED(st_) ? WTERMSIG(st_) : WEXITSTATUS(st_));                            \
  } while (0)

static void test_host_access_faults(void) {
  if (!protect_mode_expected()) SKIP("needs the fake backend with XDAL_FAKE_PROTECT=1");
  const size_t n = 1 << 16;
  unsigned char *d = NULL, *pooled = NULL;
  REQUIRE_OK(xdal_malloc((void **)&d, n));
  REQUIRE_OK(xdal_memset(d, 0x5A, n));
  REQUIRE_OK(xdal_malloc_async((void **)&pooled, 4096, NULL));
  REQUIRE_OK(xdal_stream_synchronize(NULL));

  CHECK_SEGFAULTS(d, 0);
  CHECK_SEGFAULTS(d, 1);
  CHECK_SEGFAULTS(d + n - 1, 0);
  CHECK_SEGFAULTS(d + 12345, 1);
  CHECK_SEGFAULTS(pooled + 100, 0);

  int count = device_count();
  if (count >= 2) {
    unsigned char *d1 = NULL;
    REQUIRE_OK(xdal_device_set(1));
    REQUIRE_OK(xdal_malloc((void **)&d1, 4096));
    REQUIRE_OK(xdal_device_set(0));
    CHECK_SEGFAULTS(d1, 0);
    CHECK_OK(xdal_free(d1));
  }

  /* The device memory is intact and the library works after the crashes. */
  unsigned char back[256];
  CHECK_OK(xdal_memcpy(back, d + n - sizeof back, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, sizeof back, 0x5A);
  CHECK_OK(xdal_free_async(pooled, NULL));
  CHECK_OK(xdal_free(d));
}

static void test_pinned_memory_stays_host_accessible(void) {
  if (!protect_mode_expected()) SKIP("needs the fake backend with XDAL_FAKE_PROTECT=1");
  unsigned char *h = NULL;
  REQUIRE_OK(xdal_malloc_host((void **)&h, 8192));
  fill_pattern(h, 8192, 5);
  CHECK_PATTERN(h, 8192, 5);
  unsigned char *d = NULL;
  REQUIRE_OK(xdal_malloc((void **)&d, 8192));
  CHECK_OK(xdal_memcpy(d, h, 8192, XDAL_MEMCPY_HOST_TO_DEVICE));
  memset(h, 0, 8192);
  CHECK_OK(xdal_memcpy(h, d, 8192, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_PATTERN(h, 8192, 5);
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_free_host(h));
}

static void test_library_operations_work(void) {
  if (!protect_mode_expected()) SKIP("needs the fake backend with XDAL_FAKE_PROTECT=1");
  const size_t n = (1 << 20) + 7;
  unsigned char *a = NULL, *b = NULL, *host = calloc(1, n), *back = calloc(1, n);
  REQUIRE(host && back);
  REQUIRE_OK(xdal_malloc((void **)&a, n));
  REQUIRE_OK(xdal_malloc((void **)&b, n));

  /* memset, synchronous copies of every direction. */
  CHECK_OK(xdal_memset(a, 0x3C, n));
  CHECK_OK(xdal_memcpy(back, a, n, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, n, 0x3C);
  fill_pattern(host, n, 17);
  CHECK_OK(xdal_memcpy(a + 3, host, n - 3, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK_OK(xdal_memcpy(b, a + 3, n - 3, XDAL_MEMCPY_DEVICE_TO_DEVICE));
  memset(back, 0, n);
  CHECK_OK(xdal_memcpy(back, b, n - 3, XDAL_MEMCPY_DEFAULT));
  CHECK_PATTERN(back, n - 3, 17);

  /* Asynchronous round trip on a created stream, with a pooled allocation. */
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  unsigned char *c = NULL;
  REQUIRE_OK(xdal_malloc_async((void **)&c, n, s));
  fill_pattern(host, n, 18);
  memset(back, 0, n);
  CHECK_OK(xdal_memset_async(c, 0, n, s));
  CHECK_OK(xdal_memcpy_async(c, host, n, XDAL_MEMCPY_HOST_TO_DEVICE, s));
  CHECK_OK(xdal_memcpy_async(a, c, n, XDAL_MEMCPY_DEVICE_TO_DEVICE, s));
  CHECK_OK(xdal_memset_async(a + 10, 0xEE, 5, s));
  CHECK_OK(xdal_memcpy_async(back, a, n, XDAL_MEMCPY_DEVICE_TO_HOST, s));
  CHECK_OK(xdal_free_async(c, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_PATTERN(back, 10, 18);
  CHECK_BYTES(back + 10, 5, 0xEE);
  CHECK_PATTERN_AT(back + 15, n - 15, 18, 15);
  CHECK_OK(xdal_stream_destroy(s));

  /* Peer copies, when there is a second device. */
  int count = device_count();
  if (count >= 2) {
    unsigned char *d1 = NULL;
    REQUIRE_OK(xdal_device_set(1));
    REQUIRE_OK(xdal_malloc((void **)&d1, 4096));
    REQUIRE_OK(xdal_device_set(0));
    CHECK_OK(xdal_memcpy_peer(d1, 1, a, 0, 4096));
    memset(back, 0, 4096);
    CHECK_OK(xdal_memcpy(back, d1, 4096, XDAL_MEMCPY_DEVICE_TO_HOST));
    CHECK_PATTERN(back, 10, 18);
    CHECK_BYTES(back + 10, 5, 0xEE);
    CHECK_OK(xdal_free(d1));
  }

  xdal_pointer_attributes_t attrs;
  memset(&attrs, 0, sizeof attrs);
  attrs.struct_size = sizeof attrs;
  CHECK_OK(xdal_pointer_get_attributes(a + 100, &attrs));
  CHECK_EQ((int)attrs.type, (int)XDAL_MEMORY_TYPE_DEVICE);
  CHECK(attrs.base == a);
  /* Misuse is still reported, not a crash. */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(back, a + 1, n, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
  free(host);
  free(back);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_host_access_faults),
    HARNESS_TEST(test_pinned_memory_stays_host_accessible),
    HARNESS_TEST(test_library_operations_work),
};

HARNESS_MAIN(tests)
