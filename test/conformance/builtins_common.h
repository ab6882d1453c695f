/*
 * Helpers shared by the built-in kernel tests (builtins.c, builtins_cast.c):
 * opening the built-in module (capability-aware), launch shapes, device
 * buffers with guard bytes, deterministic data, and comparison reports.
 *
 * Include after harness.h.
 */
#ifndef XDAL_CONFORMANCE_BUILTINS_COMMON_H
#define XDAL_CONFORMANCE_BUILTINS_COMMON_H

#include "dtype_ref.h"

/* Bytes after the data of each output buffer that no kernel may touch. */
#define BT_GUARD 64
#define BT_SENTINEL 0xA5

/* Grid and block shapes every kernel is run with: any shape must cover all
   elements (the kernels are grid-stride loops). */
typedef struct bt_shape {
  xdal_dim3_t grid, block;
  const char *text;
} bt_shape_t;

static const bt_shape_t bt_shapes[] = {
    {{1, 1, 1}, {1, 1, 1}, "grid 1 x block 1"},
    {{7, 1, 1}, {3, 1, 1}, "7 blocks of 3"},
    {{5, 3, 1}, {16, 4, 1}, "2-D grid 5x3 of 16x4"},
    {{2, 3, 2}, {32, 1, 1}, "3-D grid 2x3x2 of 32"},
};
#define BT_NSHAPES (sizeof bt_shapes / sizeof bt_shapes[0])

/* One test's state: the built-in module, a stream of its own (so that a
   failing launch never poisons the default stream), the dtype mask. */
typedef struct bt_ctx {
  xdal_module_t module;
  xdal_stream_t stream;
  uint64_t dtype_mask;
} bt_ctx;

/* 1: ready; 0: failed (reported); -1: the backend has no built-in kernels
   (XDAL_ERROR_NOT_SUPPORTED, the one status allowed for that). */
static inline int bt_open(bt_ctx *c) {
  memset(c, 0, sizeof *c);
  xdal_status_t st = xdal_module_get_builtin(&c->module);
  if (st == XDAL_ERROR_NOT_SUPPORTED) return -1;
  if (!CHECK_STATUS(XDAL_SUCCESS, st)) return 0;
  xdal_device_properties_t props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  if (!CHECK_OK(xdal_device_get_properties(0, &props))) return 0;
  c->dtype_mask = props.dtype_mask;
  if (!CHECK_OK(xdal_stream_create(&c->stream, XDAL_STREAM_NON_BLOCKING, 0))) return 0;
  return 1;
}

static inline void bt_close(bt_ctx *c) {
  if (c->stream) CHECK_OK(xdal_stream_destroy(c->stream));
  if (c->module) CHECK_OK(xdal_module_unload(c->module));
  c->stream = NULL;
  c->module = NULL;
}

#define BT_BEGIN(c)                                                                                           \
  do {                                                                                                        \
    int open_ = bt_open(&(c));                                                                                \
    if (open_ < 0) SKIP("the backend has no built-in kernels (xdal_module_get_builtin: NOT_SUPPORTED)");     \
    if (open_ == 0) {                                                                                         \
      bt_close(&(c));                                                                                         \
      return;                                                                                                 \
    }                                                                                                         \
  } while (0)

static inline int bt_has_type(const bt_ctx *c, int t) { return (c->dtype_mask >> t) & 1; }

/* The built-in called `name` (NULL, reported, if it cannot be had). */
static inline xdal_function_t bt_fn(bt_ctx *c, const char *name) {
  xdal_function_t f = NULL;
  xdal_status_t st = xdal_module_get_function(&f, c->module, name);
  if (st != XDAL_SUCCESS) {
    CHECK_MSG(0, "xdal_module_get_function(\"%s\") returned %s", name, xdal_status_string(st));
    return NULL;
  }
  return f;
}

/* Launches f on the test's stream and waits. A failure is reported with
   `what`; a failed stream is replaced so later launches start clean. */
static inline int bt_run(bt_ctx *c, xdal_function_t f, const bt_shape_t *shape, const xdal_kernel_arg_t *args,
                         size_t nargs, const char *what) {
  xdal_status_t st = xdal_launch_kernel(f, shape->grid, shape->block, 0, c->stream, args, nargs);
  if (st != XDAL_SUCCESS) {
    char message[512];
    harness_last_message(message, sizeof message);
    CHECK_MSG(0, "%s (%s): xdal_launch_kernel returned %s: \"%s\"", what, shape->text, xdal_status_string(st),
              message);
    return 0;
  }
  st = xdal_stream_synchronize(c->stream);
  if (st != XDAL_SUCCESS) {
    char message[512];
    harness_last_message(message, sizeof message);
    CHECK_MSG(0, "%s (%s): xdal_stream_synchronize returned %s: \"%s\"", what, shape->text,
              xdal_status_string(st), message);
    CHECK_OK(xdal_stream_destroy(c->stream));
    c->stream = NULL;
    CHECK_OK(xdal_stream_create(&c->stream, XDAL_STREAM_NON_BLOCKING, 0));
    return 0;
  }
  return 1;
}

/* --- Buffers ---------------------------------------------------------------- */

/* A device buffer of `bytes` data bytes plus the guard. */
/* Launches the built-in `name` with `args` expecting INVALID_VALUE from the
   launch itself (wrong argument sizes or count), with a message naming
   xdal_launch_kernel. */
static inline void bt_expect_bad_sizes(bt_ctx *c, const char *name, const xdal_kernel_arg_t *args, size_t nargs,
                                       const char *why) {
  xdal_function_t f = bt_fn(c, name);
  if (!f) return;
  xdal_status_t st = xdal_launch_kernel(f, bt_shapes[1].grid, bt_shapes[1].block, 0, c->stream, args, nargs);
  if (CHECK_MSG(st == XDAL_ERROR_INVALID_VALUE, "%s with %s: xdal_launch_kernel returned %s, expected INVALID_VALUE",
                name, why, xdal_status_string(st)))
    CHECK_MESSAGE_NAMES("xdal_launch_kernel");
}

static inline void *bt_dev(size_t bytes) {
  void *d = NULL;
  if (!CHECK_OK(xdal_malloc(&d, bytes + BT_GUARD))) return NULL;
  return d;
}

static inline int bt_upload(void *d, const void *h, size_t bytes) {
  return bytes == 0 || CHECK_OK(xdal_memcpy(d, h, bytes, XDAL_MEMCPY_HOST_TO_DEVICE));
}

/* Sets the whole buffer, guard included, to the sentinel. */
static inline int bt_poison(void *d, size_t bytes) { return CHECK_OK(xdal_memset(d, BT_SENTINEL, bytes + BT_GUARD)); }

static inline int bt_download(void *h, const void *d, size_t bytes) {
  return CHECK_OK(xdal_memcpy(h, d, bytes + BT_GUARD, XDAL_MEMCPY_DEVICE_TO_HOST));
}

/* The bytes after n elements of t in a poisoned buffer (the unused high
   nibble of a packed odd count, and the guard) are still the sentinel. */
static inline int bt_check_untouched(int t, const void *h, size_t n, const char *what) {
  const unsigned char *b = (const unsigned char *)h;
  size_t used = ref_bytes(t, n);
  if (ref_is_packed(t) && (n & 1)) {
    unsigned high = b[used - 1] >> 4;
    if (!CHECK_MSG(high == (BT_SENTINEL >> 4),
                   "%s: wrote element %zu (the high nibble of the last byte, now 0x%x) of a %zu-element %s array", what,
                   n, high, n, ref_types[t].name))
      return 0;
  }
  for (size_t i = used; i < used + BT_GUARD; i++)
    if (!CHECK_MSG(b[i] == BT_SENTINEL, "%s: wrote byte %zu past the %zu bytes of its output (0x%02x)", what,
                   i - used, used, b[i]))
      return 0;
  return 1;
}

/* Whether g is e, or both are zeros of either sign (for reductions, whose
   sign of a zero result ABI.md leaves open: -0 + -0 is -0, +0 + -0 is +0,
   so it depends on where the accumulation starts). */
static inline int bt_same_any_zero(int t, uint64_t e, uint64_t g) {
  if (ref_same(t, e, g)) return 1;
  return ref_is_float(t) && ref_decode(t, e).kind == RV_ZERO && ref_decode(t, g).kind == RV_ZERO;
}

/* Compares n elements of t: `got` against `expected` (bits, NaNs matching
   any NaN; zeros of either sign matching when any_zero). `in`/`in_t`
   (optional) name the input element printed with a mismatch. Reports the
   first few; returns the number of mismatches. */
static inline size_t bt_compare(int t, const void *got, const void *expected, size_t n, const char *what,
                                const void *in, int in_t, int any_zero) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t e = ref_get(t, expected, i), g = ref_get(t, got, i);
    if (any_zero ? bt_same_any_zero(t, e, g) : ref_same(t, e, g)) continue;
    if (bad < 4) {
      if (in)
        CHECK_MSG(0, "%s: element %zu of %zu (input %s bits 0x%llx): expected 0x%llx, got 0x%llx", what, i, n,
                  ref_types[in_t].name, (unsigned long long)ref_get(in_t, in, i), (unsigned long long)e,
                  (unsigned long long)g);
      else
        CHECK_MSG(0, "%s: element %zu of %zu: expected 0x%llx, got 0x%llx", what, i, n, (unsigned long long)e,
                  (unsigned long long)g);
    }
    bad++;
  }
  if (bad > 4) CHECK_MSG(0, "%s: %zu of %zu elements wrong in all", what, bad, n);
  return bad;
}

/* --- Deterministic data ----------------------------------------------------- */

typedef struct bt_rng {
  uint64_t s;
} bt_rng;

static inline uint64_t bt_next(bt_rng *r) {
  uint64_t x = r->s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  r->s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

static inline uint64_t bt_below(bt_rng *r, uint64_t n) { return bt_next(r) % n; }

/* The bits of type t nearest to double x (x exactly representable in the
   type for the values the tests pick). Integers: rounded, saturated. */
static inline uint64_t bt_from_double(int t, double x) {
  if (ref_is_float(t)) return ref_encode_float(t, ref_from_double(x));
  return ref_convert(XDAL_DTYPE_F64, t, ref_f64_to_bits(x));
}

/* Any element of t: random bits (bool: 0 or 1). */
static inline uint64_t bt_random_bits(bt_rng *r, int t) {
  if (ref_types[t].cls == REF_BOOL) return bt_next(r) & 1;
  return bt_next(r) & ref_mask(t);
}

/* An element of t for which sums and products in any order are exact:
   floats from {0, +-0.5, +-1, +-1.5, +-2, +-3} (zero often), integers any
   bits (their arithmetic wraps, so order never matters), bool 0 or 1. */
static inline uint64_t bt_small_bits(bt_rng *r, int t) {
  static const double values[] = {0, 0, 0, 0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2, 3, -3};
  if (ref_is_float(t)) return bt_from_double(t, values[bt_below(r, sizeof values / sizeof values[0])]);
  return bt_random_bits(r, t);
}

/* A host buffer for n elements of t (with room for the guard), zeroed. */
static inline void *bt_host(int t, size_t n) {
  void *p = calloc(1, ref_bytes(t, n) + BT_GUARD + 16);
  if (!p) {
    printf("out of host memory\n");
    abort();
  }
  return p;
}

#endif /* XDAL_CONFORMANCE_BUILTINS_COMMON_H */
