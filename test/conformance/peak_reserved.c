/* peak_reserved_bytes (since 1.1): the highest reserved_bytes since the
   device started or the last xdal_mem_reset_peak_stats, which resets it to
   the current reserved_bytes; and the struct_size rule for callers built
   against 1.0, whose xdal_mem_stats_t ends before the field. Every read is
   a consistent snapshot, whatever other threads and streams do meanwhile,
   and xdal_free_async takes the caller's bytes out of allocated_bytes at
   the call, for pool and plain blocks alike. */
#include "harness.h"

#define CANARY 0xA5

/* The size of xdal_mem_stats_t in the 1.0 headers. */
#define STATS_1_0_SIZE offsetof(xdal_mem_stats_t, peak_reserved_bytes)

static int get_stats(int device, xdal_mem_stats_t *s) {
  memset(s, 0, sizeof *s);
  s->struct_size = sizeof *s;
  if (!CHECK_OK(xdal_mem_get_stats(device, s))) return 0;
  CHECK_MSG(s->peak_reserved_bytes >= s->reserved_bytes, "device %d: peak_reserved_bytes %llu < reserved_bytes %llu",
            device, (unsigned long long)s->peak_reserved_bytes, (unsigned long long)s->reserved_bytes);
  CHECK_MSG(s->peak_reserved_bytes >= s->peak_allocated_bytes,
            "device %d: peak_reserved_bytes %llu < peak_allocated_bytes %llu", device,
            (unsigned long long)s->peak_reserved_bytes, (unsigned long long)s->peak_allocated_bytes);
  return 1;
}

/* No pending work and no cached pool blocks on `device`; the peaks restart
   from what is held now. */
static int quiesce(int device) {
  int ok = CHECK_OK(xdal_device_synchronize());
  ok &= CHECK_OK(xdal_mem_empty_cache(device));
  ok &= CHECK_OK(xdal_mem_reset_peak_stats(device));
  return ok;
}

static void test_reset_starts_from_current_reservation(void) {
  REQUIRE(quiesce(0));
  xdal_mem_stats_t s;
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.peak_reserved_bytes, s.reserved_bytes);
  CHECK_EQ_U(s.peak_allocated_bytes, s.allocated_bytes);

  /* Reset with memory held: the peak is what is held, not 0. */
  void *p = NULL;
  REQUIRE_OK(xdal_malloc(&p, 3 << 20));
  CHECK_OK(xdal_mem_reset_peak_stats(0));
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.peak_reserved_bytes, s.reserved_bytes);
  CHECK(s.peak_reserved_bytes >= (3u << 20));
  CHECK_OK(xdal_free(p));
}

static void test_peak_moves_up_with_allocation_and_stays_after_free(void) {
  REQUIRE(quiesce(0));
  xdal_mem_stats_t s0, s1, s2, s3, s4;
  REQUIRE(get_stats(0, &s0));

  const size_t big = 2 << 20, small = 4096;
  void *a = NULL, *b = NULL;
  REQUIRE_OK(xdal_malloc(&a, big));
  REQUIRE(get_stats(0, &s1));
  CHECK(s1.reserved_bytes >= s0.reserved_bytes + big);
  CHECK_EQ_U(s1.peak_reserved_bytes, s1.reserved_bytes);

  REQUIRE_OK(xdal_malloc(&b, small));
  REQUIRE(get_stats(0, &s2));
  CHECK(s2.reserved_bytes >= s1.reserved_bytes + small);
  CHECK_EQ_U(s2.peak_reserved_bytes, s2.reserved_bytes);

  /* Frees lower reserved_bytes, never the peak. */
  CHECK_OK(xdal_free(a));
  REQUIRE(get_stats(0, &s3));
  CHECK(s3.reserved_bytes < s2.reserved_bytes);
  CHECK_EQ_U(s3.peak_reserved_bytes, s2.reserved_bytes);
  CHECK_OK(xdal_free(b));
  REQUIRE(get_stats(0, &s4));
  CHECK_EQ_U(s4.reserved_bytes, s0.reserved_bytes);
  CHECK_EQ_U(s4.peak_reserved_bytes, s2.reserved_bytes);

  /* A reset brings it down to what is held now. */
  CHECK_OK(xdal_mem_reset_peak_stats(0));
  REQUIRE(get_stats(0, &s4));
  CHECK_EQ_U(s4.peak_reserved_bytes, s0.reserved_bytes);
}

static void test_peak_sees_growth_between_reads(void) {
  /* Two allocations made and freed with no statistics read in between: the
     peak still holds both. */
  REQUIRE(quiesce(0));
  xdal_mem_stats_t s0, s1;
  REQUIRE(get_stats(0, &s0));
  const size_t size = 64 << 10;
  void *a = NULL, *b = NULL;
  REQUIRE_OK(xdal_malloc(&a, size));
  REQUIRE_OK(xdal_malloc(&b, size));
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
  REQUIRE(get_stats(0, &s1));
  CHECK_EQ_U(s1.reserved_bytes, s0.reserved_bytes);
  CHECK_MSG(s1.peak_reserved_bytes >= s0.reserved_bytes + 2 * size,
            "peak_reserved_bytes %llu missed two live %zu-byte allocations over %llu reserved before",
            (unsigned long long)s1.peak_reserved_bytes, size, (unsigned long long)s0.reserved_bytes);
}

static void test_peak_counts_pool_blocks(void) {
  REQUIRE(quiesce(0));
  xdal_stream_t st = NULL;
  REQUIRE_OK(xdal_stream_create(&st, XDAL_STREAM_DEFAULT, 0));
  xdal_mem_stats_t s0, s1, s2, s3;
  REQUIRE(get_stats(0, &s0));
  const size_t size = 1 << 20;
  void *p = NULL;
  REQUIRE_OK(xdal_malloc_async(&p, size, st));
  REQUIRE(get_stats(0, &s1));
  CHECK(s1.reserved_bytes >= s0.reserved_bytes + size);
  CHECK_EQ_U(s1.peak_reserved_bytes, s1.reserved_bytes);

  /* The freed block may stay cached (reserved) until empty_cache; the peak
     stays where it was either way. */
  CHECK_OK(xdal_free_async(p, st));
  CHECK_OK(xdal_stream_synchronize(st));
  REQUIRE(get_stats(0, &s2));
  CHECK_EQ_U(s2.peak_reserved_bytes, s1.peak_reserved_bytes);
  CHECK_OK(xdal_mem_empty_cache(0));
  REQUIRE(get_stats(0, &s3));
  CHECK_EQ_U(s3.reserved_bytes, s0.reserved_bytes);
  CHECK_EQ_U(s3.peak_reserved_bytes, s1.peak_reserved_bytes);
  CHECK_OK(xdal_stream_destroy(st));
}

/* The invariants every read must satisfy (semantics.md); 0 when broken,
   with the read described in `why`. */
static int consistent(const xdal_mem_stats_t *s, char *why, size_t len) {
  const char *broken = s->allocated_bytes > s->reserved_bytes                 ? "allocated > reserved"
                       : s->peak_allocated_bytes < s->allocated_bytes         ? "peak_allocated < allocated"
                       : s->peak_reserved_bytes < s->reserved_bytes           ? "peak_reserved < reserved"
                       : s->peak_reserved_bytes < s->peak_allocated_bytes     ? "peak_reserved < peak_allocated"
                                                                              : NULL;
  if (broken == NULL) return 1;
  snprintf(why, len, "%s: allocated %llu reserved %llu peak_allocated %llu peak_reserved %llu", broken,
           (unsigned long long)s->allocated_bytes, (unsigned long long)s->reserved_bytes,
           (unsigned long long)s->peak_allocated_bytes, (unsigned long long)s->peak_reserved_bytes);
  return 0;
}

static atomic_int churn_stop;

static void *churn(void *arg) {
  (void)arg;
  if (xdal_device_set(0) != XDAL_SUCCESS) return NULL;
  while (!atomic_load(&churn_stop)) {
    void *p = NULL;
    if (xdal_malloc(&p, 1 << 20) != XDAL_SUCCESS) break;
    if (xdal_free(p) != XDAL_SUCCESS) break;
  }
  return NULL;
}

static void test_reads_are_snapshots_while_another_thread_allocates(void) {
  REQUIRE(quiesce(0));
  xdal_mem_stats_t before;
  REQUIRE(get_stats(0, &before));
  atomic_store(&churn_stop, 0);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, NULL, churn, NULL) == 0);
  int reads = 0, broken = 0;
  char first[256] = "";
  double start = now_ms();
  while (reads < 200000 && now_ms() - start < 300) {
    xdal_mem_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (reads % 2 == 0 && xdal_mem_reset_peak_stats(0) != XDAL_SUCCESS) broken++;
    if (xdal_mem_get_stats(0, &s) != XDAL_SUCCESS) broken++;
    char why[256];
    if (!consistent(&s, why, sizeof why) && broken++ == 0) snprintf(first, sizeof first, "%s", why);
    reads++;
  }
  atomic_store(&churn_stop, 1);
  pthread_join(thread, NULL);
  CHECK_MSG(broken == 0, "%d of %d reads broke the invariants; the first: %s", broken, reads, first);
  /* And once every thread stopped, the peaks are sane again and stay so. */
  REQUIRE(quiesce(0));
  xdal_mem_stats_t after;
  REQUIRE(get_stats(0, &after));
  char why[256];
  CHECK_MSG(consistent(&after, why, sizeof why), "after the threads stopped: %s", why);
  CHECK_EQ_U(after.allocated_bytes, before.allocated_bytes);
}

static void test_free_async_counts_at_the_call(void) {
  REQUIRE(quiesce(0));
  xdal_stream_t st = NULL;
  REQUIRE_OK(xdal_stream_create(&st, XDAL_STREAM_DEFAULT, 0));
  xdal_mem_stats_t s0, s;
  REQUIRE(get_stats(0, &s0));
  const size_t size = 1 << 20;
  void *plain = NULL, *pooled = NULL;
  REQUIRE_OK(xdal_malloc(&plain, size));
  REQUIRE_OK(xdal_malloc_async(&pooled, size, st));
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.allocated_bytes, s0.allocated_bytes + 2 * size);
  /* Work ahead of the frees: the stream reaches them later. */
  static atomic_int ran;
  atomic_store(&ran, 0);
  CHECK_OK(xdal_launch_host_func(st, increment_host_fn, &ran));
  CHECK_OK(xdal_free_async(pooled, st));
  REQUIRE(get_stats(0, &s));
  CHECK_MSG(s.allocated_bytes == s0.allocated_bytes + size,
            "a pool block's free_async: allocated_bytes %llu, expected %llu at the call",
            (unsigned long long)s.allocated_bytes, (unsigned long long)(s0.allocated_bytes + size));
  CHECK_OK(xdal_free_async(plain, st));
  REQUIRE(get_stats(0, &s));
  CHECK_MSG(s.allocated_bytes == s0.allocated_bytes,
            "an xdal_malloc block's free_async: allocated_bytes %llu, expected %llu at the call",
            (unsigned long long)s.allocated_bytes, (unsigned long long)s0.allocated_bytes);
  CHECK_OK(xdal_stream_synchronize(st));
  CHECK_EQ(atomic_load(&ran), 1);
  /* Single-threaded reads racing the stream's own frees stay consistent. */
  int broken = 0;
  char first[256] = "";
  for (int i = 0; i < 2000; i++) {
    void *p = NULL;
    if (!CHECK_OK(xdal_malloc(&p, size))) break;
    CHECK_OK(xdal_free_async(p, st));
    xdal_mem_stats_t r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    CHECK_OK(xdal_mem_get_stats(0, &r));
    char why[256];
    if (!consistent(&r, why, sizeof why) && broken++ == 0) snprintf(first, sizeof first, "%s", why);
  }
  CHECK_MSG(broken == 0, "%d reads after free_async broke the invariants; the first: %s", broken, first);
  CHECK_OK(xdal_stream_synchronize(st));
  CHECK_OK(xdal_stream_destroy(st));
  REQUIRE(quiesce(0));
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.allocated_bytes, s0.allocated_bytes);
}

static void test_peaks_are_per_device(void) {
  int count = device_count();
  if (count < 2) SKIP("per-device peaks need 2 devices, have %d", count);
  REQUIRE(quiesce(0));
  REQUIRE(quiesce(1));
  xdal_mem_stats_t d0, d1, d0b, d1b;
  REQUIRE(get_stats(0, &d0));
  REQUIRE(get_stats(1, &d1));

  REQUIRE_OK(xdal_device_set(1));
  void *p = NULL;
  REQUIRE_OK(xdal_malloc(&p, 1 << 20));
  REQUIRE_OK(xdal_device_set(0));
  CHECK_OK(xdal_free(p));
  REQUIRE(get_stats(0, &d0b));
  REQUIRE(get_stats(1, &d1b));
  CHECK_EQ_U(d0b.peak_reserved_bytes, d0.peak_reserved_bytes);
  CHECK(d1b.peak_reserved_bytes >= d1.reserved_bytes + (1u << 20));

  /* Resetting device 0 leaves device 1's peak alone. */
  CHECK_OK(xdal_mem_reset_peak_stats(0));
  xdal_mem_stats_t d1c;
  REQUIRE(get_stats(1, &d1c));
  CHECK_EQ_U(d1c.peak_reserved_bytes, d1b.peak_reserved_bytes);
  CHECK_OK(xdal_mem_reset_peak_stats(1));
  REQUIRE(get_stats(1, &d1c));
  CHECK_EQ_U(d1c.peak_reserved_bytes, d1c.reserved_bytes);
}

static void test_bad_reset_changes_nothing(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  REQUIRE(quiesce(0));
  void *p = NULL;
  REQUIRE_OK(xdal_malloc(&p, 1 << 20));
  CHECK_OK(xdal_free(p));
  xdal_mem_stats_t before, after;
  REQUIRE(get_stats(0, &before));
  CHECK(before.peak_reserved_bytes > before.reserved_bytes);
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_mem_reset_peak_stats(-1));
  CHECK_MESSAGE_NAMES("xdal_mem_reset_peak_stats");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_mem_reset_peak_stats(count));
  REQUIRE(get_stats(0, &after));
  CHECK_EQ_U(after.peak_reserved_bytes, before.peak_reserved_bytes);
}

/* A caller built against 1.0 passes the 1.0 size: every 1.0 field is
   written, and not one byte past its struct. */
static void test_caller_built_against_1_0(void) {
  REQUIRE(quiesce(0));
  void *p = NULL;
  REQUIRE_OK(xdal_malloc(&p, 4096));
  xdal_mem_stats_t full;
  REQUIRE(get_stats(0, &full));

  _Alignas(xdal_mem_stats_t) unsigned char buf[sizeof(xdal_mem_stats_t) + 32];
  memset(buf, CANARY, sizeof buf);
  size_t size = STATS_1_0_SIZE;
  memcpy(buf, &size, sizeof size);
  CHECK_OK(xdal_mem_get_stats(0, (xdal_mem_stats_t *)(void *)buf));
  CHECK_MSG(value_mismatch(buf + size, sizeof buf - size, CANARY) == sizeof buf - size,
            "bytes past a 1.0 caller's %zu-byte struct were written", size);
  xdal_mem_stats_t old;
  memcpy(&old, buf, sizeof old);
  CHECK_EQ_U(old.struct_size, STATS_1_0_SIZE);
  CHECK_EQ_U(old.allocated_bytes, full.allocated_bytes);
  CHECK_EQ_U(old.reserved_bytes, full.reserved_bytes);
  CHECK_EQ_U(old.peak_allocated_bytes, full.peak_allocated_bytes);
  CHECK_EQ_U(old.num_allocs, full.num_allocs);
  CHECK_EQ_U(old.num_frees, full.num_frees);
  CHECK_EQ_U(old.num_ooms, full.num_ooms);

  /* A caller from a later minor: its larger struct_size is accepted, the
     bytes this library does not know stay as they were. */
  memset(buf, CANARY, sizeof buf);
  size = sizeof buf;
  memcpy(buf, &size, sizeof size);
  CHECK_OK(xdal_mem_get_stats(0, (xdal_mem_stats_t *)(void *)buf));
  CHECK(value_mismatch(buf + sizeof(xdal_mem_stats_t), 32, CANARY) == 32);
  memcpy(&old, buf, sizeof old);
  CHECK_EQ_U(old.peak_reserved_bytes, full.peak_reserved_bytes);
  CHECK_EQ_U(old.reserved_bytes, full.reserved_bytes);
  CHECK_OK(xdal_free(p));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_reset_starts_from_current_reservation),
    HARNESS_TEST(test_peak_moves_up_with_allocation_and_stays_after_free),
    HARNESS_TEST(test_peak_sees_growth_between_reads),
    HARNESS_TEST(test_peak_counts_pool_blocks),
    HARNESS_TEST(test_reads_are_snapshots_while_another_thread_allocates),
    HARNESS_TEST(test_free_async_counts_at_the_call),
    HARNESS_TEST(test_peaks_are_per_device),
    HARNESS_TEST(test_bad_reset_changes_nothing),
    HARNESS_TEST(test_caller_built_against_1_0),
};

HARNESS_MAIN(tests)
