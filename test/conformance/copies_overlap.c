/* Copies between overlapping ranges of one allocation give memmove's
   result, on every backend: synchronous, asynchronous and peer copies,
   towards lower and higher addresses, shifts from one byte to nearly the
   whole copy. (A runtime's own copy command may refuse overlapping ranges
   or leave them undefined; the backend must not.) */
#include "harness.h"

#define D2D XDAL_MEMCPY_DEVICE_TO_DEVICE
#define H2H XDAL_MEMCPY_HOST_TO_HOST

#define REGION ((size_t)3 << 20)

static const size_t copy_sizes[] = {1, 2, 17, 4096, 65537, (size_t)1 << 20, (size_t)2 << 20};
static const size_t shifts[] = {1, 3, 255, 4096, 65536, (size_t)300 << 10, ((size_t)1 << 20) - 1};

enum how { SYNC, ASYNC, PEER };
static const char *const how_names[] = {"xdal_memcpy", "xdal_memcpy_async", "xdal_memcpy_peer"};

/* Copies n bytes from region + src_at to region + dst_at (device memory)
   with `how`, and checks every byte of the region against memmove on a host
   copy of the same bytes. */
static int check_move(unsigned char *region, unsigned char *expected, unsigned char *actual, size_t dst_at,
                      size_t src_at, size_t n, enum how how, xdal_stream_t stream, uint32_t seed) {
  fill_pattern(expected, REGION, seed);
  if (!CHECK_OK(xdal_memcpy(region, expected, REGION, XDAL_MEMCPY_HOST_TO_DEVICE))) return 0;
  memmove(expected + dst_at, expected + src_at, n);
  int ok = 1;
  switch (how) {
    case SYNC:
      ok = CHECK_OK(xdal_memcpy(region + dst_at, region + src_at, n, D2D));
      break;
    case ASYNC:
      ok = CHECK_OK(xdal_memcpy_async(region + dst_at, region + src_at, n, D2D, stream)) &&
           CHECK_OK(xdal_stream_synchronize(stream));
      break;
    case PEER:
      ok = CHECK_OK(xdal_memcpy_peer(region + dst_at, 0, region + src_at, 0, n));
      break;
  }
  if (!ok || !CHECK_OK(xdal_memcpy(actual, region, REGION, XDAL_MEMCPY_DEVICE_TO_HOST))) return 0;
  for (size_t i = 0; i < REGION; i++) {
    if (actual[i] != expected[i]) {
      return CHECK_MSG(0, "%s of %zu bytes from offset %zu to %zu: byte %zu is 0x%02x, memmove gives 0x%02x",
                       how_names[how], n, src_at, dst_at, i, actual[i], expected[i]);
    }
  }
  return 1;
}

static void moves(enum how how) {
  unsigned char *region = NULL;
  unsigned char *expected = malloc(REGION);
  unsigned char *actual = malloc(REGION);
  xdal_stream_t stream = NULL;
  if (CHECK(expected && actual) && CHECK_OK(xdal_malloc((void **)&region, REGION)) &&
      CHECK_OK(xdal_stream_create(&stream, XDAL_STREAM_DEFAULT, 0))) {
    uint32_t seed = 7000u + (uint32_t)how * 1000u;
    for (size_t si = 0; si < sizeof copy_sizes / sizeof copy_sizes[0]; si++) {
      for (size_t hi = 0; hi < sizeof shifts / sizeof shifts[0]; hi++) {
        size_t n = copy_sizes[si], shift = shifts[hi];
        if (shift >= n || n + shift > REGION) continue; /* disjoint ranges: copies.c */
        /* Towards lower addresses, then towards higher ones. */
        if (!check_move(region, expected, actual, 0, shift, n, how, stream, ++seed)) goto done;
        if (!check_move(region, expected, actual, shift, 0, n, how, stream, ++seed)) goto done;
      }
    }
    /* Onto itself: the bytes stay. */
    check_move(region, expected, actual, 100, 100, 1000, how, stream, ++seed);
  }
done:
  if (stream) CHECK_OK(xdal_stream_destroy(stream));
  if (region) CHECK_OK(xdal_free(region));
  free(expected);
  free(actual);
}

static void test_sync_copies_move(void) { moves(SYNC); }
static void test_async_copies_move(void) { moves(ASYNC); }
static void test_peer_copies_move(void) { moves(PEER); }

/* Many small overlapping moves queued back to back on one stream, each
   reading what the one before wrote: stream order holds between them. */
static void test_queued_moves_in_order(void) {
  enum { BYTES = 1 << 16, STEPS = 64, STEP = 17 };
  unsigned char *d = NULL;
  unsigned char *expected = malloc(BYTES);
  unsigned char *actual = malloc(BYTES);
  xdal_stream_t stream = NULL;
  if (CHECK(expected && actual) && CHECK_OK(xdal_malloc((void **)&d, BYTES)) &&
      CHECK_OK(xdal_stream_create(&stream, XDAL_STREAM_DEFAULT, 0))) {
    fill_pattern(expected, BYTES, 99);
    /* Synchronous: `expected` changes below while the moves are queued. */
    CHECK_OK(xdal_memcpy(d, expected, BYTES, XDAL_MEMCPY_HOST_TO_DEVICE));
    for (size_t i = 0; i < STEPS; i++) {
      size_t n = BYTES - STEP * (i + 1);
      /* Alternate directions. */
      size_t dst = i % 2 ? STEP : 0, src = i % 2 ? 0 : STEP;
      CHECK_OK(xdal_memcpy_async(d + dst, d + src, n, D2D, stream));
      memmove(expected + dst, expected + src, n);
    }
    CHECK_OK(xdal_memcpy_async(actual, d, BYTES, XDAL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK_OK(xdal_stream_synchronize(stream));
    CHECK(memcmp(actual, expected, BYTES) == 0);
  }
  if (stream) CHECK_OK(xdal_stream_destroy(stream));
  if (d) CHECK_OK(xdal_free(d));
  free(expected);
  free(actual);
}

/* Host to host (pinned memory): memmove too. */
static void test_host_to_host_moves(void) {
  enum { BYTES = 1 << 16 };
  unsigned char *pinned = NULL;
  unsigned char *expected = malloc(BYTES);
  if (CHECK(expected) && CHECK_OK(xdal_malloc_host((void **)&pinned, BYTES))) {
    fill_pattern(pinned, BYTES, 5);
    fill_pattern(expected, BYTES, 5);
    CHECK_OK(xdal_memcpy(pinned + 3, pinned, BYTES - 3, H2H));
    memmove(expected + 3, expected, BYTES - 3);
    CHECK_OK(xdal_memcpy_async(pinned, pinned + 1000, BYTES - 1000, H2H, NULL));
    memmove(expected, expected + 1000, BYTES - 1000);
    CHECK_OK(xdal_stream_synchronize(NULL));
    CHECK(memcmp(pinned, expected, BYTES) == 0);
  }
  if (pinned) CHECK_OK(xdal_free_host(pinned));
  free(expected);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_sync_copies_move),
    HARNESS_TEST(test_async_copies_move),
    HARNESS_TEST(test_peer_copies_move),
    HARNESS_TEST(test_queued_moves_in_order),
    HARNESS_TEST(test_host_to_host_moves),
};

HARNESS_MAIN(tests)
