/* Concurrency: 4 threads, each with 4 streams, each stream doing 2000 small
   asynchronous copies host -> device -> device -> host of distinct patterns
   into distinct regions; afterwards every byte is checked. */
#include "harness.h"

enum {
  THREADS = 4,
  STREAMS = 4,
  OPS = 2000, /* copy chains per stream */
  CHUNK = 61, /* bytes per copy: odd, so regions start at unaligned offsets */
  REGION = STREAMS * OPS * CHUNK,
};

struct worker {
  int index;
  int device;
  pthread_barrier_t *start;
  unsigned char *src, *dst;  /* host: pageable for even threads, pinned for odd */
  unsigned char *d_a, *d_b;  /* device memory of `device` */
};

static void *worker_main(void *arg) {
  struct worker *w = (struct worker *)arg;
  int pinned = w->index % 2;
  xdal_stream_t streams[STREAMS] = {0};
  int ok = CHECK_OK(xdal_device_set(w->device));
  if (pinned) {
    ok &= CHECK_OK(xdal_malloc_host((void **)&w->src, REGION));
    ok &= CHECK_OK(xdal_malloc_host((void **)&w->dst, REGION));
  } else {
    w->src = calloc(1, REGION);
    w->dst = calloc(1, REGION);
    ok &= CHECK(w->src && w->dst);
  }
  ok &= CHECK_OK(xdal_malloc((void **)&w->d_a, REGION));
  ok &= CHECK_OK(xdal_malloc((void **)&w->d_b, REGION));
  for (int s = 0; s < STREAMS; s++) ok &= CHECK_OK(xdal_stream_create(&streams[s], XDAL_STREAM_DEFAULT, 0));
  if (ok) {
    fill_pattern(w->src, REGION, 1000u + (uint32_t)w->index);
    memset(w->dst, 0, REGION);
  }
  pthread_barrier_wait(w->start);
  if (!ok) return NULL;

  for (int i = 0; i < OPS && ok; i++) {
    for (int s = 0; s < STREAMS && ok; s++) {
      size_t off = ((size_t)s * OPS + (size_t)i) * CHUNK;
      int inferred = (i % 3) == 2;
      ok &= CHECK_OK(xdal_memcpy_async(w->d_a + off, w->src + off, CHUNK,
                                       inferred ? XDAL_MEMCPY_DEFAULT : XDAL_MEMCPY_HOST_TO_DEVICE, streams[s]));
      ok &= CHECK_OK(xdal_memcpy_async(w->d_b + off, w->d_a + off, CHUNK,
                                       inferred ? XDAL_MEMCPY_DEFAULT : XDAL_MEMCPY_DEVICE_TO_DEVICE, streams[s]));
      ok &= CHECK_OK(xdal_memcpy_async(w->dst + off, w->d_b + off, CHUNK,
                                       inferred ? XDAL_MEMCPY_DEFAULT : XDAL_MEMCPY_DEVICE_TO_HOST, streams[s]));
    }
  }
  for (int s = 0; s < STREAMS; s++) {
    CHECK_OK(xdal_stream_synchronize(streams[s]));
    CHECK_OK(xdal_stream_destroy(streams[s]));
  }
  return NULL;
}

static void test_threads_streams_copies(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  pthread_barrier_t start;
  REQUIRE(pthread_barrier_init(&start, NULL, THREADS) == 0);
  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  double t0 = now_ms();
  for (int t = 0; t < THREADS; t++) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].index = t;
    workers[t].device = t % count;
    workers[t].start = &start;
    REQUIRE(pthread_create(&threads[t], NULL, worker_main, &workers[t]) == 0);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  printf("    %d async copies in %.0f ms\n", THREADS * STREAMS * OPS * 3, now_ms() - t0);
  pthread_barrier_destroy(&start);

  unsigned char *back = calloc(1, REGION);
  REQUIRE(back != NULL);
  for (int t = 0; t < THREADS; t++) {
    struct worker *w = &workers[t];
    uint32_t seed = 1000u + (uint32_t)t;
    if (w->dst) {
      size_t at = pattern_mismatch(w->dst, REGION, seed);
      CHECK_MSG(at == REGION, "thread %d: host result wrong at byte %zu (stream %zu, copy %zu)", t, at,
                at / ((size_t)OPS * CHUNK), (at / CHUNK) % OPS);
    }
    if (w->d_a && w->d_b) {
      unsigned char *dev[2] = {w->d_a, w->d_b};
      for (int k = 0; k < 2; k++) {
        memset(back, 0, REGION);
        if (CHECK_OK(xdal_memcpy(back, dev[k], REGION, XDAL_MEMCPY_DEVICE_TO_HOST))) {
          size_t at = pattern_mismatch(back, REGION, seed);
          CHECK_MSG(at == REGION, "thread %d: device buffer %c wrong at byte %zu", t, "ab"[k], at);
        }
      }
    }
    if (w->d_a) CHECK_OK(xdal_free(w->d_a));
    if (w->d_b) CHECK_OK(xdal_free(w->d_b));
    if (t % 2) {
      if (w->src) CHECK_OK(xdal_free_host(w->src));
      if (w->dst) CHECK_OK(xdal_free_host(w->dst));
    } else {
      free(w->src);
      free(w->dst);
    }
  }
  free(back);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_threads_streams_copies),
};

HARNESS_MAIN(tests)
