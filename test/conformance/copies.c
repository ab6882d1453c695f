/* Copies and sets: every kind, synchronous and asynchronous, exact bytes,
   bounds, kinds that contradict the pointers, peers and devices. */
#include "harness.h"

#define H2H XDAL_MEMCPY_HOST_TO_HOST
#define H2D XDAL_MEMCPY_HOST_TO_DEVICE
#define D2H XDAL_MEMCPY_DEVICE_TO_HOST
#define D2D XDAL_MEMCPY_DEVICE_TO_DEVICE
#define DEF XDAL_MEMCPY_DEFAULT

#define MAX_BYTES ((size_t)1 << 20)
#define SLACK ((size_t)512)

static const size_t round_trip_sizes[] = {1, 2, 3, 255, 256, 257, 4095, 4096, 65537, MAX_BYTES};
static const size_t offsets[][2] = {{0, 0}, {7, 3}, {1, 255}}; /* {dst, src} offsets */

/* Buffers of MAX_BYTES + SLACK: two device allocations on device 0,
   pageable and pinned host memory. */
struct buffers {
  unsigned char *d_a, *d_b, *src, *dst, *pin_src, *pin_dst;
};

static int buffers_alloc(struct buffers *b) {
  memset(b, 0, sizeof *b);
  size_t n = MAX_BYTES + SLACK;
  b->src = calloc(1, n);
  b->dst = calloc(1, n);
  if (!CHECK(b->src && b->dst)) return 0;
  if (!CHECK_OK(xdal_malloc((void **)&b->d_a, n))) return 0;
  if (!CHECK_OK(xdal_malloc((void **)&b->d_b, n))) return 0;
  if (!CHECK_OK(xdal_malloc_host((void **)&b->pin_src, n))) return 0;
  if (!CHECK_OK(xdal_malloc_host((void **)&b->pin_dst, n))) return 0;
  return 1;
}

static void buffers_free(struct buffers *b) {
  if (b->d_a) CHECK_OK(xdal_free(b->d_a));
  if (b->d_b) CHECK_OK(xdal_free(b->d_b));
  if (b->pin_src) CHECK_OK(xdal_free_host(b->pin_src));
  if (b->pin_dst) CHECK_OK(xdal_free_host(b->pin_dst));
  free(b->src);
  free(b->dst);
}

/* One round trip host -> device -> device -> host (and host -> host), with
   the given kinds, synchronously or on `stream` (async != 0). */
static void round_trip(struct buffers *b, int pinned, int use_default, int async, xdal_stream_t stream) {
  unsigned char *src = pinned ? b->pin_src : b->src;
  unsigned char *dst = pinned ? b->pin_dst : b->dst;
  uint32_t seed = 1000u + (uint32_t)(pinned * 100 + use_default * 10 + async);
  for (size_t si = 0; si < sizeof round_trip_sizes / sizeof round_trip_sizes[0]; si++) {
    for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++) {
      size_t n = round_trip_sizes[si], od = offsets[oi][0], os = offsets[oi][1];
      seed++;
      fill_pattern(src + os, n, seed);
      memset(dst, 0, n + SLACK);
      int ok = 1;
      if (async) {
        ok &= CHECK_OK(xdal_memcpy_async(b->d_a + od, src + os, n, use_default ? DEF : H2D, stream));
        ok &= CHECK_OK(xdal_memcpy_async(b->d_b + os, b->d_a + od, n, use_default ? DEF : D2D, stream));
        ok &= CHECK_OK(xdal_memcpy_async(dst + od, b->d_b + os, n, use_default ? DEF : D2H, stream));
        ok &= CHECK_OK(xdal_stream_synchronize(stream));
      } else {
        ok &= CHECK_OK(xdal_memcpy(b->d_a + od, src + os, n, use_default ? DEF : H2D));
        ok &= CHECK_OK(xdal_memcpy(b->d_b + os, b->d_a + od, n, use_default ? DEF : D2D));
        ok &= CHECK_OK(xdal_memcpy(dst + od, b->d_b + os, n, use_default ? DEF : D2H));
      }
      if (!ok) return;
      size_t at = pattern_mismatch(dst + od, n, seed);
      if (!CHECK_MSG(at == n, "%s %s %s round trip of %zu bytes (offsets %zu/%zu): first wrong byte %zu",
                     async ? "async" : "sync", pinned ? "pinned" : "pageable", use_default ? "DEFAULT" : "explicit",
                     n, od, os, at))
        return;
      CHECK_MSG(value_mismatch(dst, od, 0) == od && value_mismatch(dst + od + n, SLACK - od, 0) == SLACK - od,
                "bytes around a %zu-byte copy were written", n);

      /* Host to host. */
      memset(dst, 0, n + SLACK);
      if (async) {
        ok &= CHECK_OK(xdal_memcpy_async(dst + od, src + os, n, use_default ? DEF : H2H, stream));
        ok &= CHECK_OK(xdal_stream_synchronize(stream));
      } else {
        ok &= CHECK_OK(xdal_memcpy(dst + od, src + os, n, use_default ? DEF : H2H));
      }
      if (!ok) return;
      CHECK_PATTERN(dst + od, n, seed);
    }
  }
}

static void test_sync_round_trips(void) {
  struct buffers b;
  if (buffers_alloc(&b)) {
    for (int pinned = 0; pinned < 2; pinned++)
      for (int def = 0; def < 2; def++) round_trip(&b, pinned, def, 0, NULL);
  }
  buffers_free(&b);
}

static void test_async_round_trips(void) {
  struct buffers b;
  xdal_stream_t s = NULL;
  if (buffers_alloc(&b) && CHECK_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0))) {
    for (int pinned = 0; pinned < 2; pinned++)
      for (int def = 0; def < 2; def++) {
        round_trip(&b, pinned, def, 1, s);
        round_trip(&b, pinned, def, 1, NULL);
      }
    CHECK_OK(xdal_stream_destroy(s));
  }
  buffers_free(&b);
}

/* Reads `n` bytes of device memory back and checks pattern `seed`. */
static void check_device_pattern(const void *d, size_t n, uint32_t seed, const char *what) {
  unsigned char *back = calloc(1, n);
  if (!CHECK(back != NULL)) return;
  if (CHECK_OK(xdal_memcpy(back, d, n, D2H))) {
    size_t at = pattern_mismatch(back, n, seed);
    CHECK_MSG(at == n, "%s: device memory changed (first difference at byte %zu)", what, at);
  }
  free(back);
}

static void test_overrun_rejected(void) {
  const size_t n = 4096;
  unsigned char *d = NULL, *d2 = NULL, *pin = NULL;
  unsigned char *h = calloc(1, 2 * n), *out = calloc(1, 2 * n);
  REQUIRE(h && out);
  REQUIRE_OK(xdal_malloc((void **)&d, n));
  REQUIRE_OK(xdal_malloc((void **)&d2, 2 * n));
  REQUIRE_OK(xdal_malloc_host((void **)&pin, n));
  fill_pattern(h, 2 * n, 7);
  fill_pattern(pin, n, 8);
  REQUIRE_OK(xdal_memcpy(d, h, n, H2D));
  REQUIRE_OK(xdal_memcpy(d2, h, 2 * n, H2D));

  /* Exact fits work. */
  CHECK_OK(xdal_memcpy(out, d + 1, n - 1, D2H));
  CHECK_OK(xdal_memcpy(out, d, n, D2H));
  CHECK_OK(xdal_memcpy(d2 + n, d, n, D2D));
  CHECK_OK(xdal_memcpy(out, pin + 1, n - 1, H2H));
  CHECK_OK(xdal_memcpy(d + 1, d2 + 1, n - 1, D2D)); /* d2 and d both hold pattern 7 there */

  for (int async = 0; async < 2; async++) {
    xdal_stream_t s = NULL;
    if (async) REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
    memset(out, 0xEE, 2 * n);
#define COPY(dst, src, bytes, kind)                                                                           \
  (async ? xdal_memcpy_async((dst), (src), (bytes), (kind), s) : xdal_memcpy((dst), (src), (bytes), (kind)))
#define SET(dst, value, bytes) (async ? xdal_memset_async((dst), (value), (bytes), s) : xdal_memset((dst), (value), (bytes)))
    const xdal_memcpy_kind_t kinds[2] = {H2D, DEF};
    for (int k = 0; k < 2; k++) {
      const xdal_memcpy_kind_t to_dev = kinds[k], to_host = k ? DEF : D2H, dev_dev = k ? DEF : D2D;
      /* Destination one byte too long. */
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d + 1, h + 100, n, to_dev));
      CHECK_MESSAGE_NAMES(async ? "xdal_memcpy_async" : "xdal_memcpy");
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d, h + 100, n + 1, to_dev));
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d + n - 1, h + 100, 2, to_dev));
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d + 1, d2, n, dev_dev));
      /* Source one byte too long. */
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(out, d + 1, n, to_host));
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(out, d, n + 1, to_host));
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d2, d + 1, n, dev_dev));
      /* Pinned host memory has bounds too. */
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d, pin + 1, n, to_dev));
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(pin + 1, d, n, to_host));
      /* Sizes that wrap the address space. */
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d, h, SIZE_MAX, to_dev));
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(out, d + 8, SIZE_MAX - 4, to_host));
      /* Host ranges that wrap past the end of the address space (since
         1.2: before, they were copied, and faulted). */
      unsigned char *top = (unsigned char *)(uintptr_t)(UINTPTR_MAX - 7);
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d, top, 16, to_dev));
      CHECK_MESSAGE_NAMES(async ? "xdal_memcpy_async" : "xdal_memcpy");
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(top, d, 16, to_host));
      CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(out, top, 16, H2H));
    }
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(pin + 1, h, n, H2H));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(out, pin + 1, n, H2H));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, SET(d + 1, 0, n));
    CHECK_MESSAGE_NAMES(async ? "xdal_memset_async" : "xdal_memset");
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, SET(d, 0, n + 1));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, SET(d + n - 1, 0, 2));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, SET(d, 0, SIZE_MAX));
#undef COPY
#undef SET
    if (async) {
      /* Nothing was enqueued: the stream has nothing to do, and nothing moved. */
      CHECK_OK(xdal_stream_synchronize(s));
      CHECK_OK(xdal_stream_destroy(s));
    }
    CHECK_BYTES(out, 2 * n, 0xEE);
    CHECK_PATTERN(pin, n, 8);
    check_device_pattern(d, n, 7, async ? "after rejected async copies" : "after rejected copies");
    check_device_pattern(d2, n, 7, "the other allocation");
  }
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_free(d2));
  CHECK_OK(xdal_free_host(pin));
  free(h);
  free(out);
}

static void test_kind_contradicts_pointers(void) {
  const size_t n = 64;
  unsigned char *d = NULL, *d2 = NULL, *pin = NULL;
  unsigned char h[64], h2[64];
  REQUIRE_OK(xdal_malloc((void **)&d, n));
  REQUIRE_OK(xdal_malloc((void **)&d2, n));
  REQUIRE_OK(xdal_malloc_host((void **)&pin, n));
  fill_pattern(h, n, 5);
  REQUIRE_OK(xdal_memcpy(d, h, n, H2D));
  REQUIRE_OK(xdal_memcpy(d2, h, n, H2D));
  fill_pattern(h2, n, 6);
  fill_pattern(pin, n, 9);

  for (int async = 0; async < 2; async++) {
    xdal_stream_t s = NULL;
    if (async) REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
#define COPY(dst, src, kind) (async ? xdal_memcpy_async((dst), (src), n, (kind), s) : xdal_memcpy((dst), (src), n, (kind)))
    /* Host to device: the source must be host memory, the destination device. */
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d, d2, H2D));
    CHECK_MESSAGE_NAMES(async ? "xdal_memcpy_async" : "xdal_memcpy");
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(h2, h, H2D));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(pin, h, H2D));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(h2, d, H2D));
    /* Device to host. */
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(h2, h, D2H));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(h2, pin, D2H));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d2, d, D2H));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d2, h, D2H));
    /* Device to device. */
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d2, h, D2D));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d2, pin, D2D));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(h2, d, D2D));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(pin, d, D2D));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(h2, h, D2D));
    /* Host to host. */
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d2, h, H2H));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(h2, d, H2H));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, COPY(d2, d, H2H));
    /* An unknown kind value. */
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, COPY(d, h, (xdal_memcpy_kind_t)5));
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, COPY(d, h, (xdal_memcpy_kind_t)99));
    CHECK_MESSAGE_NAMES(async ? "xdal_memcpy_async" : "xdal_memcpy");
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, COPY(h2, h, (xdal_memcpy_kind_t)99));
    CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, COPY(d, h, (xdal_memcpy_kind_t)0x7fffffff));
#undef COPY
    if (async) {
      CHECK_OK(xdal_stream_synchronize(s));
      CHECK_OK(xdal_stream_destroy(s));
    }
    CHECK_PATTERN(h2, n, 6);
    CHECK_PATTERN(pin, n, 9);
    check_device_pattern(d, n, 5, "a rejected copy's device memory");
    check_device_pattern(d2, n, 5, "a rejected copy's device memory");
  }
  /* Still usable, DEFAULT included. */
  CHECK_OK(xdal_memcpy(d2, pin, n, DEF));
  check_device_pattern(d2, n, 9, "DEFAULT from pinned memory");
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_free(d2));
  CHECK_OK(xdal_free_host(pin));
}

static void test_zero_bytes_is_a_no_op(void) {
  unsigned char *d = NULL;
  REQUIRE_OK(xdal_malloc((void **)&d, 256));
  CHECK_OK(xdal_free(d)); /* d is now a freed pointer: not checked for 0 bytes */
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  for (int k = 0; k <= 4; k++) {
    xdal_memcpy_kind_t kind = (xdal_memcpy_kind_t)k;
    CHECK_OK(xdal_memcpy(NULL, NULL, 0, kind));
    CHECK_OK(xdal_memcpy(d, d, 0, kind));
    CHECK_OK(xdal_memcpy_async(NULL, NULL, 0, kind, NULL));
    CHECK_OK(xdal_memcpy_async(NULL, NULL, 0, kind, s));
    CHECK_OK(xdal_memcpy_async(d + 300, d, 0, kind, s));
  }
  CHECK_OK(xdal_memset(NULL, 1, 0));
  CHECK_OK(xdal_memset(d, 1, 0));
  CHECK_OK(xdal_memset_async(NULL, 1, 0, NULL));
  CHECK_OK(xdal_memset_async(d, 1, 0, s));
  CHECK_OK(xdal_memcpy_peer(NULL, 0, NULL, 0, 0));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_null_pointers(void) {
  unsigned char *d = NULL, h[16] = {0};
  REQUIRE_OK(xdal_malloc((void **)&d, 16));
  for (int k = 0; k <= 4; k++) {
    xdal_memcpy_kind_t kind = (xdal_memcpy_kind_t)k;
    void *dst = (k == H2D || k == D2D) ? (void *)d : (void *)h;
    void *src = (k == D2H || k == D2D) ? (void *)d : (void *)h;
    CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_memcpy(NULL, src, 16, kind));
    CHECK_MESSAGE_NAMES("xdal_memcpy");
    CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_memcpy(dst, NULL, 16, kind));
    CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_memcpy_async(NULL, src, 16, kind, NULL));
    CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_memcpy_async(dst, NULL, 16, kind, NULL));
  }
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_memset(NULL, 0, 16));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_memset_async(NULL, 0, 16, NULL));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_memcpy_peer(NULL, 0, d, 0, 16));
  CHECK_MESSAGE_NAMES("xdal_memcpy_peer");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_memcpy_peer(d, 0, NULL, 0, 16));
  CHECK_OK(xdal_memcpy(d, h, 16, H2D));
  CHECK_OK(xdal_free(d));
}

/* Whether the backend tells freed device memory from host memory. The
   front knows every live allocation, so a freed pointer is refused wherever
   the kind says "device" (H2D, D2H, D2D, memset, peer copies) on any
   backend. Where the kind lets the pointer be host memory (DEFAULT, H2H),
   only a backend that fills the address_get_device entry can say that the
   address belongs to a device: without it the front sees an unknown host
   address, as for any pageable buffer, and the copy would really happen,
   into or out of freed memory. xdal has no call that reports the entry, so
   this is known by backend: the fake backend has it (docs/semantics.md). */
static int backend_detects_freed_device_memory(void) { return backend_is_fake(); }

static void test_use_after_free(void) {
  unsigned char h[64];
  fill_pattern(h, sizeof h, 3);
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  unsigned char *d = NULL, *live = NULL;
  REQUIRE_OK(xdal_malloc((void **)&live, 4096));
  REQUIRE_OK(xdal_malloc((void **)&d, 4096));
  CHECK_OK(xdal_memcpy(live, h, 64, H2D));
  CHECK_OK(xdal_free(d));
  /* No allocation happens between here and the checks: d stays dead. */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(d, h, 64, H2D));
  CHECK_MESSAGE_NAMES("xdal_memcpy");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(h, d, 64, D2H));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(d, live, 64, D2D));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(live, d + 100, 64, D2D));
  int detects = backend_detects_freed_device_memory();
  if (detects) {
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(d, h, 64, DEF));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(h, d, 64, DEF));
    CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(d, h, 64, H2H));
  } else {
    printf("    note: the %s backend is not known to tell freed device memory from host memory "
           "(address_get_device): copies of freed memory with DEFAULT and HOST_TO_HOST are not made\n",
           xdal_backend_name());
  }
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_async(d, h, 64, H2D, s));
  CHECK_MESSAGE_NAMES("xdal_memcpy_async");
  if (detects) CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_async(h, d, 64, DEF, s));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_async(live, d, 64, D2D, NULL));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset(d, 0, 64));
  CHECK_MESSAGE_NAMES("xdal_memset");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset_async(d + 64, 0, 64, s));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(live, 0, d, 0, 64));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(d, 0, live, 0, 64));
  CHECK_OK(xdal_stream_synchronize(s));
  check_device_pattern(live, 64, 3, "a live allocation next to a freed one");
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(live));
}

static void test_memset(void) {
  const size_t n = 4096;
  unsigned char *d = NULL, *out = calloc(1, n);
  REQUIRE(out != NULL);
  REQUIRE_OK(xdal_malloc((void **)&d, n));
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));

  CHECK_OK(xdal_memset(d, 0x11, n));
  CHECK_OK(xdal_memset(d + 100, 0x1AB, 1000)); /* only the low byte counts */
  CHECK_OK(xdal_memset(d + 3000, -1, 1));
  CHECK_OK(xdal_memset(d + 3001, 256, 1));
  CHECK_OK(xdal_memset(d + n - 1, 0x42, 1));
  REQUIRE_OK(xdal_memcpy(out, d, n, D2H));
  CHECK_BYTES(out, 100, 0x11);
  CHECK_BYTES(out + 100, 1000, 0xAB);
  CHECK_BYTES(out + 1100, 1900, 0x11);
  CHECK_EQ(out[3000], 0xFF);
  CHECK_EQ(out[3001], 0x00);
  CHECK_BYTES(out + 3002, n - 3003, 0x11);
  CHECK_EQ(out[n - 1], 0x42);

  CHECK_OK(xdal_memset_async(d, 0x22, n, s));
  CHECK_OK(xdal_memset_async(d + 7, 0x7CD, 333, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_memset_async(d + 1000, -2, 10, NULL));
  CHECK_OK(xdal_stream_synchronize(NULL));
  REQUIRE_OK(xdal_memcpy(out, d, n, D2H));
  CHECK_BYTES(out, 7, 0x22);
  CHECK_BYTES(out + 7, 333, 0xCD);
  CHECK_BYTES(out + 340, 660, 0x22);
  CHECK_BYTES(out + 1000, 10, 0xFE);
  CHECK_BYTES(out + 1010, n - 1010, 0x22);

  /* The destination must be device memory. */
  unsigned char on_stack[16];
  memset(on_stack, 0x33, sizeof on_stack);
  unsigned char *pin = NULL;
  REQUIRE_OK(xdal_malloc_host((void **)&pin, 64));
  memset(pin, 0x44, 64);
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset(on_stack, 0, sizeof on_stack));
  CHECK_MESSAGE_NAMES("xdal_memset");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset(out, 0, 16));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset(pin, 0, 64));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset_async(on_stack, 0, sizeof on_stack, s));
  CHECK_MESSAGE_NAMES("xdal_memset_async");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset_async(pin, 0, 64, NULL));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_BYTES(on_stack, sizeof on_stack, 0x33);
  CHECK_BYTES(pin, 64, 0x44);
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_memset_async(d, 0, 16, (xdal_stream_t)0x12345));

  CHECK_OK(xdal_free_host(pin));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(d));
  free(out);
}

static void test_memcpy_peer(void) {
  int count = device_count();
  if (count < 2) SKIP("memcpy_peer needs 2 devices, have %d", count);
  const size_t n = 8192;
  unsigned char *d0 = NULL, *d1 = NULL, *h = calloc(1, n), *out = calloc(1, n);
  REQUIRE(h && out);
  REQUIRE_OK(xdal_device_set(0));
  REQUIRE_OK(xdal_malloc((void **)&d0, n));
  REQUIRE_OK(xdal_device_set(1));
  REQUIRE_OK(xdal_malloc((void **)&d1, n));
  REQUIRE_OK(xdal_device_set(0));

  fill_pattern(h, n, 81);
  REQUIRE_OK(xdal_memcpy(d0, h, n, H2D));
  REQUIRE_OK(xdal_memset(d1, 0, n));
  CHECK_OK(xdal_memcpy_peer(d1 + 5, 1, d0 + 3, 0, 5000));
  REQUIRE_OK(xdal_memcpy(out, d1, n, D2H));
  CHECK_BYTES(out, 5, 0);
  CHECK_MSG(memcmp(out + 5, h + 3, 5000) == 0, "peer copy device 0 -> device 1: wrong bytes");
  CHECK_BYTES(out + 5005, n - 5005, 0);

  /* The other direction, from device 1 as the current device. */
  fill_pattern(h, n, 82);
  REQUIRE_OK(xdal_memcpy(d1, h, n, H2D));
  REQUIRE_OK(xdal_device_set(1));
  CHECK_OK(xdal_memcpy_peer(d0, 0, d1, 1, n));
  REQUIRE_OK(xdal_device_set(0));
  check_device_pattern(d0, n, 82, "peer copy device 1 -> device 0");

  /* Pointers that do not belong to the named devices. */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(d1, 0, d0, 0, 64));
  CHECK_MESSAGE_NAMES("xdal_memcpy_peer");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(d1, 1, d0, 1, 64));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(d0, 1, d1, 0, 64));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(h, 1, d0, 0, 64));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(d1, 1, h, 0, 64));
  /* Bad device indices. */
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_memcpy_peer(d1, count, d0, 0, 64));
  CHECK_MESSAGE_NAMES("xdal_memcpy_peer");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_memcpy_peer(d1, 1, d0, -1, 64));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_memcpy_peer(d1, -1, d0, 0, 64));
  /* Overruns. */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(d1 + 1, 1, d0, 0, n));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy_peer(d1, 1, d0 + 1, 0, n));
  check_device_pattern(d0, n, 82, "device 0 after rejected peer copies");
  check_device_pattern(d1, n, 82, "device 1 after rejected peer copies");

  CHECK_OK(xdal_free(d0));
  CHECK_OK(xdal_free(d1));
  free(h);
  free(out);
}

static void test_device_to_device_across_devices(void) {
  int count = device_count();
  if (count < 2) SKIP("copies across devices need 2 devices, have %d", count);
  const size_t n = 100000;
  unsigned char *d0 = NULL, *d1 = NULL, *h = calloc(1, n);
  REQUIRE(h != NULL);
  REQUIRE_OK(xdal_device_set(1));
  REQUIRE_OK(xdal_malloc((void **)&d1, n));
  xdal_stream_t s1 = NULL;
  REQUIRE_OK(xdal_stream_create(&s1, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_device_set(0));
  REQUIRE_OK(xdal_malloc((void **)&d0, n));
  xdal_stream_t s0 = NULL;
  REQUIRE_OK(xdal_stream_create(&s0, XDAL_STREAM_DEFAULT, 0));

  uint32_t seed = 90;
  for (int variant = 0; variant < 8; variant++, seed++) {
    fill_pattern(h, n, seed);
    REQUIRE_OK(xdal_memcpy(d0, h, n, H2D));
    unsigned char *dst = (variant % 2) ? d0 : d1, *src = (variant % 2) ? d1 : d0;
    if (variant % 2) { /* the other way: first bring the pattern to d1 */
      REQUIRE_OK(xdal_memcpy(d1, d0, n, D2D));
      REQUIRE_OK(xdal_memset(d0, 0, n));
    }
    switch (variant / 2) {
      case 0:
        CHECK_OK(xdal_memcpy(dst, src, n, D2D));
        break;
      case 1:
        CHECK_OK(xdal_memcpy(dst, src, n, DEF));
        break;
      case 2: /* on a stream of device 0 */
        CHECK_OK(xdal_memcpy_async(dst, src, n, D2D, s0));
        CHECK_OK(xdal_stream_synchronize(s0));
        break;
      default: /* on a stream of device 1, device 0 being current */
        CHECK_OK(xdal_memcpy_async(dst, src, n, DEF, s1));
        CHECK_OK(xdal_stream_synchronize(s1));
        break;
    }
    check_device_pattern(dst, n, seed, "a copy across devices");
  }
  CHECK_OK(xdal_stream_destroy(s0));
  CHECK_OK(xdal_stream_destroy(s1));
  CHECK_OK(xdal_free(d0));
  CHECK_OK(xdal_free(d1));
  free(h);
}

static void test_large_allocation_at_offset(void) {
  const size_t size = ((size_t)96 << 20) + 17;
  const size_t offset = ((size_t)80 << 20) + 5, n = ((size_t)1 << 20) + 3;
  unsigned char *d = NULL, *h = calloc(1, n), *out = calloc(1, n);
  REQUIRE(h && out);
  REQUIRE_OK(xdal_malloc((void **)&d, size));
  fill_pattern(h, n, 99);
  CHECK_OK(xdal_memcpy(d + offset, h, n, H2D));
  unsigned char last = 0x5d, first = 0x6e;
  CHECK_OK(xdal_memcpy(d + size - 1, &last, 1, H2D));
  CHECK_OK(xdal_memcpy(d, &first, 1, DEF));
  memset(out, 0, n);
  CHECK_OK(xdal_memcpy(out, d + offset, n, D2H));
  CHECK_PATTERN(out, n, 99);
  unsigned char got = 0;
  CHECK_OK(xdal_memcpy(&got, d + size - 1, 1, D2H));
  CHECK_EQ(got, 0x5d);
  CHECK_OK(xdal_memcpy(&got, d, 1, DEF));
  CHECK_EQ(got, 0x6e);
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(d + size - 1, h, 2, H2D));
  CHECK_OK(xdal_free(d));
  free(h);
  free(out);
}

/* A synchronous copy or set waits for the default stream's earlier work. */
static void sleep_then_flag(void *arg) {
  sleep_ms(30);
  atomic_store((atomic_int *)arg, 1);
}

static void test_sync_calls_follow_default_stream(void) {
  const size_t n = 16 << 20;
  unsigned char *d = NULL, out[4096];
  REQUIRE_OK(xdal_malloc((void **)&d, n));
  CHECK_OK(xdal_memset_async(d, 0x77, n, NULL));
  CHECK_OK(xdal_memcpy(out, d + n - sizeof out, sizeof out, D2H));
  CHECK_BYTES(out, sizeof out, 0x77);

  atomic_int flag;
  atomic_init(&flag, 0);
  CHECK_OK(xdal_launch_host_func(NULL, sleep_then_flag, &flag));
  CHECK_OK(xdal_memcpy(out, d, 16, D2H));
  CHECK_MSG(atomic_load(&flag) == 1, "xdal_memcpy returned before the default stream's host function ran");
  atomic_store(&flag, 0);
  CHECK_OK(xdal_launch_host_func(NULL, sleep_then_flag, &flag));
  CHECK_OK(xdal_memset(d, 0, 16));
  CHECK_MSG(atomic_load(&flag) == 1, "xdal_memset returned before the default stream's host function ran");
  CHECK_OK(xdal_free(d));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_sync_round_trips),
    HARNESS_TEST(test_async_round_trips),
    HARNESS_TEST(test_overrun_rejected),
    HARNESS_TEST(test_kind_contradicts_pointers),
    HARNESS_TEST(test_zero_bytes_is_a_no_op),
    HARNESS_TEST(test_null_pointers),
    HARNESS_TEST(test_use_after_free),
    HARNESS_TEST(test_memset),
    HARNESS_TEST(test_memcpy_peer),
    HARNESS_TEST(test_device_to_device_across_devices),
    HARNESS_TEST(test_large_allocation_at_offset),
    HARNESS_TEST(test_sync_calls_follow_default_stream),
};

HARNESS_MAIN(tests)
