/* Concurrency: 4 threads, each with 4 streams, each stream doing 2000 small
   asynchronous copies host -> device -> device -> host of distinct patterns
   into distinct regions; afterwards every byte is checked. */
#include "harness.h"
#include "sync_probe.h"

#include <sched.h>

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

/* One stream shared by several threads, as a pool of workers feeding one
   device queue does: each thread sets its own bytes, one small set at a
   time, while another thread queries the stream. The stream starts behind
   a gate, which opens once each setter has queued GATED_SETS sets: until
   then the stream is not done; once a query says it is done after all the
   setters have returned, every set has run: a backend that keeps little
   bookkeeping for commands nothing waits on (OpenCL's go without an event
   of their own) must still count them all. The gate opens while the
   setters go on, since a real runtime's queue is bounded (CUDA's holds
   about a thousand commands): all SHARED_SETS behind a closed gate would
   wait for room that never comes. */
enum { SHARED_THREADS = 4, SHARED_SETS = 3000, GATED_SETS = 50 };

struct shared_stream {
  xdal_stream_t stream;
  unsigned char *dev;
  int index;
  volatile int *stop;
  _Atomic int *queued, *finished;
};

static void *shared_setter(void *arg) {
  struct shared_stream *w = (struct shared_stream *)arg;
  int ok = 1;
  for (int i = 0; i < SHARED_SETS && ok; i++) {
    int value = 1 + (i + w->index) % 251;
    ok &= CHECK_OK(xdal_memset_async(w->dev + (size_t)w->index * SHARED_SETS + (size_t)i, value, 1, w->stream));
    atomic_fetch_add(w->queued, 1);
  }
  atomic_fetch_add(w->finished, 1);
  return NULL;
}

static void *shared_querier(void *arg) {
  struct shared_stream *w = (struct shared_stream *)arg;
  while (!*w->stop) {
    xdal_status_t status = xdal_stream_query(w->stream);
    if (!CHECK(status == XDAL_SUCCESS || status == XDAL_ERROR_NOT_READY)) break;
  }
  return NULL;
}

static void test_threads_share_a_stream(void) {
  const size_t bytes = (size_t)SHARED_THREADS * SHARED_SETS;
  xdal_stream_t stream;
  unsigned char *dev;
  REQUIRE(CHECK_OK(xdal_stream_create(&stream, XDAL_STREAM_NON_BLOCKING, 0)));
  REQUIRE(CHECK_OK(xdal_malloc((void **)&dev, bytes)));
  REQUIRE(CHECK_OK(xdal_memset(dev, 0, bytes)));
  int sync_backend = backend_runs_work_synchronously();
  static harness_gate gate;
  if (!sync_backend) {
    gate_init(&gate);
    CHECK_OK(xdal_launch_host_func(stream, gate_host_fn, &gate));
  } else {
    note_synchronous();
  }
  volatile int stop = 0;
  _Atomic int queued = 0, finished = 0;
  struct shared_stream workers[SHARED_THREADS + 1];
  pthread_t threads[SHARED_THREADS + 1];
  for (int t = 0; t <= SHARED_THREADS; t++) {
    workers[t] = (struct shared_stream){stream, dev, t, &stop, &queued, &finished};
    REQUIRE(pthread_create(&threads[t], NULL, t < SHARED_THREADS ? shared_setter : shared_querier, &workers[t]) ==
            0);
  }
  if (!sync_backend) {
    /* The setters go on (a failed set stops its thread, which counts as
       finished): wait for GATED_SETS sets from each, or for all to end. */
    while (atomic_load(&queued) < SHARED_THREADS * GATED_SETS && atomic_load(&finished) < SHARED_THREADS) {
      sched_yield();
    }
    CHECK_STATUS(XDAL_ERROR_NOT_READY, xdal_stream_query(stream));
    gate_open(&gate);
  }
  for (int t = 0; t < SHARED_THREADS; t++) pthread_join(threads[t], NULL);
  stop = 1;
  pthread_join(threads[SHARED_THREADS], NULL);
  xdal_status_t status;
  while ((status = xdal_stream_query(stream)) == XDAL_ERROR_NOT_READY) {
  }
  CHECK_OK(status);
  /* The query said done: read back without synchronizing the stream (a
     synchronous copy waits for the default stream only, and this stream
     does not block with it). */
  unsigned char *back = calloc(1, bytes);
  REQUIRE(back != NULL);
  if (CHECK_OK(xdal_memcpy(back, dev, bytes, XDAL_MEMCPY_DEVICE_TO_HOST))) {
    for (int t = 0; t < SHARED_THREADS; t++) {
      for (int i = 0; i < SHARED_SETS; i++) {
        int want = 1 + (i + t) % 251, got = back[(size_t)t * SHARED_SETS + (size_t)i];
        if (!CHECK_MSG(got == want, "thread %d, set %d: %d after the query said done, want %d", t, i, got, want)) {
          t = SHARED_THREADS;
          break;
        }
      }
    }
  }
  free(back);
  if (!sync_backend) gate_finish(&gate);
  CHECK_OK(xdal_free(dev));
  CHECK_OK(xdal_stream_destroy(stream));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_threads_streams_copies),
    HARNESS_TEST(test_threads_share_a_stream),
};

HARNESS_MAIN(tests)
