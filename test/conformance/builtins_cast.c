/* Built-in casts: cast_<s>_<d> and (since 1.1) cast_trunc_<s>_<d> for all
   196 pairs of the fourteen types, against the reference of dtype_ref.h,
   over several counts and grid shapes (one test per source type), and
   tables of values whose results are written out by hand here (so that the
   reference itself is checked against ABI.md and docs/kernels.md): OCP
   F8/F4 saturation and NaN rules, ties to even, float -> int saturation and
   truncation, E4M3 overflow to NaN in cast_trunc, int -> int wrapping,
   bool.

   Skips, after checking the exact status, on a backend without built-in
   kernels; leaves out the types its dtype_mask does not list. */
#include "harness.h"

#include "builtins_common.h"

#include <math.h>

#define CAST_N 10007

/* Count and shape combinations each pair is run with. */
static const struct {
  size_t n;
  size_t shape;
} cast_runs[] = {{1, 0}, {1, 2}, {7, 1}, {7, 3}, {CAST_N, 0}, {CAST_N, 1}, {CAST_N, 2}, {CAST_N, 3}};

/* --- Source data ------------------------------------------------------------ */

typedef struct source {
  int t;
  void *buf;
  size_t n, cap;
} source;

static void push(source *s, uint64_t bits) {
  if (s->n < s->cap) ref_set(s->t, s->buf, s->n++, bits);
}

static void push_double(source *s, double x) {
  push(s, bt_from_double(s->t, x));
  push(s, bt_from_double(s->t, -x));
}

/* Values at the edges of every type's range and rounding. */
static const double float_specials[] = {
    0.0,    1.0,     0.5,     1.5,     2.5,      3.5,      0.25,       0.75,     1.25,      1.75,     5.0,
    5.5,    6.0,     7.0,     7.5,     8.5,      100.0,    127.5,      128.5,    129.0,     254.5,    255.5,
    256.0,  300.0,   448.0,   449.0,   464.0,    465.0,    480.0,      500.0,    240.0,     57344.0,  61439.0,
    61440.0, 65504.0, 65519.0, 65520.0, 32767.5,  32768.5,  2147483520.0, 2147483648.0, 3e9,   9.2e18,
    9.3e18, 1e30,    3.4e38,  1e300,   0.1,      1.0 / 3,  0.0009765625, 0.001953125, 0.0029296875,
    5.9604644775390625e-08 /* 2^-24 */, 2.98023223876953125e-08 /* 2^-25 */, 1.52587890625e-05 /* 2^-16 */,
    7.62939453125e-06 /* 2^-17 */, 1e-40, 1e-45, 1e-300, 4.9e-324};

static const int64_t int_specials[] = {0,
                                       1,
                                       2,
                                       3,
                                       5,
                                       6,
                                       7,
                                       8,
                                       9,
                                       15,
                                       16,
                                       17,
                                       127,
                                       128,
                                       200,
                                       255,
                                       256,
                                       300,
                                       448,
                                       464,
                                       465,
                                       480,
                                       1000,
                                       32767,
                                       32768,
                                       57344,
                                       61439,
                                       61440,
                                       65504,
                                       65519,
                                       65520,
                                       16777217,
                                       16777219,
                                       INT32_MAX,
                                       (int64_t)1 << 31,
                                       ((int64_t)1 << 53) + 1,
                                       ((int64_t)1 << 60) + ((int64_t)1 << 36),
                                       ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1,
                                       ((int64_t)1 << 60) + 3 * ((int64_t)1 << 36),
                                       ((int64_t)1 << 60) + ((int64_t)1 << 52),
                                       ((int64_t)1 << 60) + ((int64_t)1 << 52) + 1,
                                       ((int64_t)1 << 62) + 1,
                                       INT64_MAX};

static void make_source(int t, void *buf, size_t cap, uint64_t seed) {
  source s = {t, buf, 0, cap};
  bt_rng rng = {seed};
  const ref_type_t *ty = &ref_types[t];
  if (ty->cls == REF_BOOL) {
    push(&s, 0);
    push(&s, 1);
    while (s.n < cap) push(&s, bt_next(&rng) & 1);
    return;
  }
  if (ty->cls == REF_INT) {
    for (size_t i = 0; i < sizeof int_specials / sizeof int_specials[0]; i++) {
      push(&s, (uint64_t)int_specials[i] & ref_mask(t));
      push(&s, ((uint64_t)0 - (uint64_t)int_specials[i]) & ref_mask(t));
    }
    push(&s, (uint64_t)INT64_MIN & ref_mask(t));
    while (s.n < cap) {
      uint64_t r = bt_next(&rng);
      push(&s, (bt_next(&rng) & 1) ? r : r >> bt_below(&rng, 64));
    }
    return;
  }
  /* Floats: specials, NaNs and infinities, every code of the 8- and 4-bit
     formats, midpoints between neighbours of every narrower float format
     (the ties), then random values. */
  for (size_t i = 0; i < sizeof float_specials / sizeof float_specials[0]; i++) push_double(&s, float_specials[i]);
  ref_value_t v = {RV_NAN, 0, 0, 0};
  push(&s, ref_encode_float(t, v));
  v.neg = 1;
  push(&s, ref_encode_float(t, v));
  v.kind = RV_INF;
  push(&s, ref_encode_float(t, v));
  v.neg = 0;
  push(&s, ref_encode_float(t, v));
  uint64_t exp_all = (((uint64_t)1 << ty->exp_bits) - 1) << ty->man_bits;
  if (ty->nan == REF_NAN_IEEE) {
    push(&s, exp_all | 1);                                   /* signalling NaN */
    push(&s, exp_all | (((uint64_t)1 << ty->man_bits) - 1)); /* all payload bits */
  }
  push(&s, ref_max_finite(t));
  push(&s, ref_max_finite(t) | ((uint64_t)1 << (ty->bits - 1)));
  push(&s, 1); /* smallest subnormal */
  push(&s, (uint64_t)1 << ty->man_bits); /* smallest normal */
  if (ty->bits <= 8)
    for (uint64_t code = 0; code <= ref_mask(t); code++) push(&s, code);
  for (int d = 0; d < REF_NTYPES; d++) {
    if (!ref_is_float(d) || d == t) continue;
    for (int k = 0; k < 24; k++) {
      uint64_t code = k == 0 ? ref_max_finite(d) : k == 1 ? 1 : bt_next(&rng) & ref_max_finite(d);
      ref_value_t c = ref_decode(d, code);
      if (c.kind != RV_FINITE) continue;
      ref_value_t mid = {RV_FINITE, (int)(bt_next(&rng) & 1), c.mant * 2 + 1, c.exp - 1};
      push(&s, ref_encode_float(t, mid));
    }
  }
  static const int widths[] = {2, 3, 4, 6, 9, 12, 25, 54};
  while (s.n < cap) {
    if (bt_below(&rng, 3) == 0) {
      push(&s, bt_next(&rng) & ref_mask(t));
      continue;
    }
    int w = widths[bt_below(&rng, sizeof widths / sizeof widths[0])];
    ref_value_t x = {RV_FINITE, (int)(bt_next(&rng) & 1), (bt_next(&rng) >> (64 - w)) | ((uint64_t)1 << (w - 1)),
                     (int)bt_below(&rng, 80) - 40 - w};
    push(&s, ref_encode_float(t, x));
  }
}

/* --- All pairs ---------------------------------------------------------- */

/* cast_<s>_<d> (trunc 0) or cast_trunc_<s>_<d> (trunc 1) of one source
   element. */
static uint64_t expected_cast(int trunc, int s, int d, uint64_t bits) {
  return trunc ? ref_convert_trunc(s, d, bits) : ref_convert(s, d, bits);
}

static void run_casts_from(int st) {
  bt_ctx c;
  BT_BEGIN(c);
  if (!bt_has_type(&c, st)) {
    bt_close(&c);
    SKIP("dtype_mask does not list %s", ref_types[st].name);
  }
  void *src = bt_host(st, CAST_N);
  make_source(st, src, CAST_N, 0xca570000u + (uint64_t)st);
  void *dsrc = bt_dev(ref_bytes(st, CAST_N));
  for (int trunc = 0; trunc < 2 && dsrc && bt_upload(dsrc, src, ref_bytes(st, CAST_N)); trunc++) {
    for (int dt = 0; dt < REF_NTYPES; dt++) {
      if (!bt_has_type(&c, dt)) continue;
      char name[48];
      snprintf(name, sizeof name, "%s_%s_%s", trunc ? "cast_trunc" : "cast", ref_types[st].name,
               ref_types[dt].name);
      xdal_function_t f = bt_fn(&c, name);
      if (!f) continue;
      void *expected = bt_host(dt, CAST_N), *got = bt_host(dt, CAST_N);
      for (size_t i = 0; i < CAST_N; i++) ref_set(dt, expected, i, expected_cast(trunc, st, dt, ref_get(st, src, i)));
      void *ddst = bt_dev(ref_bytes(dt, CAST_N));
      for (size_t r = 0; ddst && r < sizeof cast_runs / sizeof cast_runs[0]; r++) {
        uint64_t n = cast_runs[r].n;
        const bt_shape_t *shape = &bt_shapes[cast_runs[r].shape];
        if (!bt_poison(ddst, ref_bytes(dt, n))) break;
        xdal_kernel_arg_t args[] = {{&dsrc, 8}, {&ddst, 8}, {&n, 8}};
        char what[96];
        snprintf(what, sizeof what, "%s(n=%llu, %s)", name, (unsigned long long)n, shape->text);
        if (!bt_run(&c, f, shape, args, 3, what) || !bt_download(got, ddst, ref_bytes(dt, n))) break;
        if (bt_compare(dt, got, expected, n, what, src, st, 0) != 0) break;
        if (!bt_check_untouched(dt, got, n, what)) break;
      }
      free(expected);
      free(got);
      CHECK_OK(xdal_free(ddst));
    }
  }
  free(src);
  CHECK_OK(xdal_free(dsrc));
  bt_close(&c);
}

#define CASTS_FROM(t, dtype)                                                                                  \
  static void test_cast_from_##t(void) { run_casts_from(dtype); }
CASTS_FROM(f64, XDAL_DTYPE_F64)
CASTS_FROM(f32, XDAL_DTYPE_F32)
CASTS_FROM(f16, XDAL_DTYPE_F16)
CASTS_FROM(bf16, XDAL_DTYPE_BF16)
CASTS_FROM(f8e4m3, XDAL_DTYPE_F8_E4M3)
CASTS_FROM(f8e5m2, XDAL_DTYPE_F8_E5M2)
CASTS_FROM(f4e2m1, XDAL_DTYPE_F4_E2M1)
CASTS_FROM(i64, XDAL_DTYPE_I64)
CASTS_FROM(i32, XDAL_DTYPE_I32)
CASTS_FROM(i16, XDAL_DTYPE_I16)
CASTS_FROM(i8, XDAL_DTYPE_I8)
CASTS_FROM(u8, XDAL_DTYPE_U8)
CASTS_FROM(i4, XDAL_DTYPE_I4)
CASTS_FROM(bool, XDAL_DTYPE_BOOL)

/* --- Values written out by hand ------------------------------------------- */

enum { F64 = XDAL_DTYPE_F64, F32 = XDAL_DTYPE_F32, F16 = XDAL_DTYPE_F16, BF16 = XDAL_DTYPE_BF16,
       E4M3 = XDAL_DTYPE_F8_E4M3, E5M2 = XDAL_DTYPE_F8_E5M2, E2M1 = XDAL_DTYPE_F4_E2M1, I64 = XDAL_DTYPE_I64,
       I32 = XDAL_DTYPE_I32, I16 = XDAL_DTYPE_I16, I8 = XDAL_DTYPE_I8, U8 = XDAL_DTYPE_U8, I4 = XDAL_DTYPE_I4,
       BOOL = XDAL_DTYPE_BOOL };

#define P60 ((int64_t)1 << 60)
#define P52 ((int64_t)1 << 52)
#define P36 ((int64_t)1 << 36)
#define RAW -1.0 /* the source is `raw` bits, not `x` */

/* cast_<s>_<d> of one value: the source is the double x (exactly
   representable in s) for float sources, the integer i for integer
   sources, or raw bits when x is RAW; `expected` is d's bits (any NaN
   matches a NaN). */
static const struct known {
  int s, d;
  double x;
  int64_t i;
  uint64_t raw, expected;
  const char *why;
} known[] = {
    /* E4M3: max 448, saturating (inf too), NaN only S.1111.111. */
    {F32, E4M3, 448, 0, 0, 0x7E, "max"},
    {F32, E4M3, 464, 0, 0, 0x7E, "tie between 448 and 480 (no such value) rounds to 448"},
    {F32, E4M3, 465, 0, 0, 0x7E, "above 464 saturates"},
    {F32, E4M3, 1e6, 0, 0, 0x7E, "saturates"},
    {F32, E4M3, -1e6, 0, 0, 0xFE, "saturates negative"},
    {F32, E4M3, INFINITY, 0, 0, 0x7E, "inf saturates to 448"},
    {F32, E4M3, -INFINITY, 0, 0, 0xFE, "-inf saturates to -448"},
    {F32, E4M3, NAN, 0, 0, 0x7F, "NaN stays NaN"},
    {F32, E4M3, 1.0, 0, 0, 0x38, "1"},
    {F32, E4M3, 240, 0, 0, 0x77, "240"},
    {F32, E4M3, 0x1p-9, 0, 0, 0x01, "smallest subnormal"},
    {F32, E4M3, 0x1p-10, 0, 0, 0x00, "half the smallest subnormal: tie to 0"},
    {F32, E4M3, 0x1.8p-10, 0, 0, 0x01, "three quarters of the smallest subnormal"},
    {F32, E4M3, 0x1.8p-9, 0, 0, 0x02, "1.5 subnormal steps: tie to even"},
    {F32, E4M3, -0.0, 0, 0, 0x80, "-0"},
    {F32, E4M3, 17, 0, 0, 0x58, "17: tie between 16 and 18 to even"},
    /* E5M2: IEEE-like, max 57344, overflow -> inf. */
    {F32, E5M2, 57344, 0, 0, 0x7B, "max"},
    {F32, E5M2, 61439, 0, 0, 0x7B, "below the midpoint to 65536"},
    {F32, E5M2, 61440, 0, 0, 0x7C, "midpoint to 65536: overflows to inf"},
    {F32, E5M2, 1e9, 0, 0, 0x7C, "overflow -> inf"},
    {F32, E5M2, -INFINITY, 0, 0, 0xFC, "-inf"},
    {F32, E5M2, NAN, 0, 0, 0x7E, "NaN"},
    {F32, E5M2, 1.0, 0, 0, 0x3C, "1"},
    {F32, E5M2, 0x1p-16, 0, 0, 0x01, "smallest subnormal"},
    {F32, E5M2, 0x1p-17, 0, 0, 0x00, "half the smallest subnormal: tie to 0"},
    {F32, E5M2, 0x1.8p-17, 0, 0, 0x01, "three quarters of the smallest subnormal"},
    /* E2M1: 0 .5 1 1.5 2 3 4 6, saturating, NaN -> +0. */
    {F32, E2M1, 0.25, 0, 0, 0x0, "tie between 0 and 0.5 to 0"},
    {F32, E2M1, 0.3, 0, 0, 0x1, "0.3 -> 0.5"},
    {F32, E2M1, 0.75, 0, 0, 0x2, "tie between 0.5 and 1 to 1"},
    {F32, E2M1, 1.25, 0, 0, 0x2, "tie between 1 and 1.5 to 1"},
    {F32, E2M1, 1.75, 0, 0, 0x4, "tie between 1.5 and 2 to 2"},
    {F32, E2M1, 2.5, 0, 0, 0x4, "tie between 2 and 3 to 2"},
    {F32, E2M1, 3.5, 0, 0, 0x6, "tie between 3 and 4 to 4"},
    {F32, E2M1, 5.0, 0, 0, 0x6, "tie between 4 and 6 to 4"},
    {F32, E2M1, 5.5, 0, 0, 0x7, "5.5 -> 6"},
    {F32, E2M1, 7.0, 0, 0, 0x7, "7 saturates to 6"},
    {F32, E2M1, 100.0, 0, 0, 0x7, "saturates to 6"},
    {F32, E2M1, -100.0, 0, 0, 0xF, "saturates to -6"},
    {F32, E2M1, INFINITY, 0, 0, 0x7, "inf -> 6"},
    {F32, E2M1, -INFINITY, 0, 0, 0xF, "-inf -> -6"},
    {F32, E2M1, NAN, 0, 0, 0x0, "NaN -> +0"},
    {F32, E2M1, -NAN, 0, 0, 0x0, "-NaN -> +0"},
    {F32, E2M1, -0.25, 0, 0, 0x8, "-0.25 -> -0"},
    {F16, E2M1, RAW, 0, 0x7E00, 0x0, "f16 NaN -> +0"},
    {E4M3, E2M1, RAW, 0, 0x7F, 0x0, "E4M3 NaN -> +0"},
    /* Between the narrow formats. */
    {E4M3, F32, RAW, 0, 0x7E, 0x43E00000, "448"},
    {E4M3, F32, RAW, 0, 0x7F, 0x7FC00000, "NaN"},
    {E4M3, F32, RAW, 0, 0x01, 0x3B000000, "2^-9"},
    {E4M3, F32, RAW, 0, 0x78, 0x43800000, "S.1111.000 is 256, not inf"},
    {E4M3, E5M2, RAW, 0, 0x7E, 0x5F, "448"},
    {E5M2, E4M3, RAW, 0, 0x7B, 0x7E, "57344 saturates"},
    {E5M2, E4M3, RAW, 0, 0x7C, 0x7E, "inf saturates"},
    {E5M2, E4M3, RAW, 0, 0xFC, 0xFE, "-inf saturates"},
    {E5M2, E4M3, RAW, 0, 0x7F, 0x7F, "NaN"},
    {E5M2, F16, RAW, 0, 0x7C, 0x7C00, "inf"},
    {E5M2, F16, RAW, 0, 0x7B, 0x7B00, "57344"},
    {E2M1, E4M3, RAW, 0, 0x7, 0x4C, "6"},
    {E2M1, E4M3, RAW, 0, 0x1, 0x30, "0.5"},
    {E2M1, F32, RAW, 0, 0xF, 0xC0C00000, "-6"},
    {E2M1, F32, RAW, 0, 0x8, 0x80000000, "-0"},
    {F16, E4M3, RAW, 0, 0x0001, 0x00, "f16 smallest subnormal -> 0"},
    {F32, F16, RAW, 0, 0x00000001, 0x0000, "f32 smallest subnormal -> 0"},
    /* F16, BF16, F32: ties to even, overflow. */
    {F64, F16, 65504, 0, 0, 0x7BFF, "max"},
    {F64, F16, 65519, 0, 0, 0x7BFF, "below the midpoint"},
    {F64, F16, 65520, 0, 0, 0x7C00, "midpoint: inf"},
    {F64, F16, 0x1p-24, 0, 0, 0x0001, "smallest subnormal"},
    {F64, F16, 0x1p-25, 0, 0, 0x0000, "half of it: tie to 0"},
    {F64, F16, 0x1.002p0, 0, 0, 0x3C00, "1 + 2^-11: tie to even"},
    {F64, F16, 0x1.006p0, 0, 0, 0x3C02, "1 + 3 * 2^-11: tie to even"},
    {F64, BF16, 0x1.01p0, 0, 0, 0x3F80, "1 + 2^-8: tie to even"},
    {F64, BF16, 0x1.03p0, 0, 0, 0x3F82, "1 + 3 * 2^-8: tie to even"},
    {F64, BF16, 3.4e38, 0, 0, 0x7F80, "above the midpoint to 2^128: inf"},
    {F32, BF16, RAW, 0, 0x7F7FFFFF, 0x7F80, "f32 max rounds up to inf"},
    {F64, F32, 0x1.000001p0, 0, 0, 0x3F800000, "1 + 2^-24: tie to even"},
    {F64, F32, 0x1.000003p0, 0, 0, 0x3F800002, "1 + 3 * 2^-24: tie to even"},
    {F64, F32, 1e300, 0, 0, 0x7F800000, "overflow: inf"},
    {F64, F32, -1e-300, 0, 0, 0x80000000, "underflow: -0"},
    /* Integers to floats: one rounding, even from i64. */
    {I64, F32, 0, P60 + P36, 0, 0x5D800000, "2^60 + 2^36: tie to even"},
    {I64, F32, 0, P60 + P36 + 1, 0, 0x5D800001, "2^60 + 2^36 + 1: above the tie"},
    {I64, F32, 0, P60 + 3 * P36, 0, 0x5D800002, "2^60 + 3 * 2^36: tie to even"},
    {I64, F32, 0, 16777217, 0, 0x4B800000, "2^24 + 1: tie to even"},
    {I64, BF16, 0, P60 + P52, 0, 0x5D80, "2^60 + 2^52: tie to even"},
    {I64, BF16, 0, P60 + P52 + 1, 0, 0x5D81, "2^60 + 2^52 + 1: above the tie"},
    {I64, F16, 0, 65519, 0, 0x7BFF, "65519"},
    {I64, F16, 0, 65520, 0, 0x7C00, "65520: inf"},
    {I64, F16, 0, INT64_MIN, 0, 0xFC00, "INT64_MIN: -inf"},
    {I64, E4M3, 0, 1000, 0, 0x7E, "saturates"},
    {I64, E4M3, 0, INT64_MIN, 0, 0xFE, "saturates"},
    {I64, E4M3, 0, 17, 0, 0x58, "17: tie to even"},
    {I64, E5M2, 0, INT64_MAX, 0, 0x7C, "overflow: inf"},
    {I64, E2M1, 0, 5, 0, 0x6, "5: tie to even (4)"},
    {I64, E2M1, 0, -100, 0, 0xF, "saturates"},
    {I32, F64, 0, INT32_MIN, 0, 0xC1E0000000000000ull, "exact"},
    /* Floats to integers: nearest even, NaN -> 0, saturating. */
    {F32, I32, 2.5, 0, 0, 2, "tie to even"},
    {F32, I32, 3.5, 0, 0, 4, "tie to even"},
    {F32, I32, -2.5, 0, 0, (uint32_t)-2, "tie to even"},
    {F32, I32, 0.5, 0, 0, 0, "tie to even"},
    {F32, I32, -0.5, 0, 0, 0, "tie to even"},
    {F32, I32, 1.5, 0, 0, 2, "tie to even"},
    {F32, I32, 2.4999998, 0, 0, 2, "below the tie"},
    {F32, I32, NAN, 0, 0, 0, "NaN -> 0"},
    {F32, I32, 3e9, 0, 0, 0x7FFFFFFF, "saturates"},
    {F32, I32, -3e9, 0, 0, 0x80000000, "saturates"},
    {F32, I32, INFINITY, 0, 0, 0x7FFFFFFF, "inf saturates"},
    {F32, I32, -INFINITY, 0, 0, 0x80000000, "-inf saturates"},
    {F32, I32, 2147483520.0, 0, 0, 2147483520u, "largest f32 below 2^31"},
    {F32, I32, 2147483648.0, 0, 0, 0x7FFFFFFF, "2^31 saturates"},
    {F64, I64, 0x1p63, 0, 0, 0x7FFFFFFFFFFFFFFFull, "2^63 saturates"},
    {F64, I64, -0x1p63, 0, 0, 0x8000000000000000ull, "-2^63 is INT64_MIN"},
    {F64, I64, -1e300, 0, 0, 0x8000000000000000ull, "saturates"},
    {F64, I64, 0x1.0000000000001p51, 0, 0, 0x8000000000000ull, "2^51 + 0.5: tie to even"},
    {F64, I64, 0x1.0000000000003p51, 0, 0, 0x8000000000002ull, "2^51 + 1.5: tie to even"},
    {F64, I64, NAN, 0, 0, 0, "NaN -> 0"},
    {F32, U8, -1.0, 0, 0, 0, "negative saturates to 0"},
    {F32, U8, -0.5, 0, 0, 0, "-0.5 -> 0"},
    {F32, U8, 300.0, 0, 0, 255, "saturates"},
    {F32, U8, 255.5, 0, 0, 255, "rounds to 256, saturates"},
    {F32, U8, 254.5, 0, 0, 254, "tie to even"},
    {F32, U8, INFINITY, 0, 0, 255, "inf saturates"},
    {F32, U8, NAN, 0, 0, 0, "NaN -> 0"},
    {F32, I8, 127.5, 0, 0, 0x7F, "rounds to 128, saturates"},
    {F32, I8, -128.5, 0, 0, 0x80, "tie to even -128"},
    {F32, I8, 126.5, 0, 0, 0x7E, "tie to even"},
    {F32, I8, -1e9, 0, 0, 0x80, "saturates"},
    {F32, I16, 32767.5, 0, 0, 0x7FFF, "saturates"},
    {F16, I16, RAW, 0, 0x7BFF, 0x7FFF, "65504 saturates"},
    {F16, I16, RAW, 0, 0xFC00, 0x8000, "-inf saturates"},
    {F32, I4, 7.5, 0, 0, 0x7, "rounds to 8, saturates to 7"},
    {F32, I4, 6.5, 0, 0, 0x6, "tie to even"},
    {F32, I4, -8.5, 0, 0, 0x8, "tie to even -8"},
    {F32, I4, -7.5, 0, 0, 0x8, "tie to even -8"},
    {F32, I4, 100.0, 0, 0, 0x7, "saturates"},
    {F32, I4, -100.0, 0, 0, 0x8, "saturates"},
    {F32, I4, NAN, 0, 0, 0x0, "NaN -> 0"},
    {E4M3, I4, RAW, 0, 0x7E, 0x7, "448 saturates"},
    {E2M1, I4, RAW, 0, 0xD, 0xD, "-3"},
    {E2M1, I4, RAW, 0, 0x3, 0x2, "1.5: tie to even"},
    {E2M1, U8, RAW, 0, 0x9, 0x0, "-0.5 -> 0"},
    /* Integers to integers wrap. */
    {I32, I8, 0, 300, 0, 0x2C, "300 wraps"},
    {I32, I8, 0, -129, 0, 0x7F, "-129 wraps"},
    {I32, U8, 0, -1, 0, 0xFF, "-1 wraps"},
    {I32, U8, 0, 256, 0, 0x00, "256 wraps"},
    {I16, I4, 0, 9, 0, 0x9, "9 wraps to -7"},
    {I16, I4, 0, 16, 0, 0x0, "16 wraps"},
    {I16, I4, 0, -9, 0, 0x7, "-9 wraps to 7"},
    {U8, I8, 0, 200, 0, 0xC8, "200 wraps to -56"},
    {U8, I4, 0, 255, 0, 0xF, "255 wraps to -1"},
    {I4, U8, 0, -8, 0, 0xF8, "-8 wraps to 248"},
    {I4, I64, 0, -1, 0, 0xFFFFFFFFFFFFFFFFull, "-1 sign-extends"},
    {I8, I64, 0, -128, 0, 0xFFFFFFFFFFFFFF80ull, "-128 sign-extends"},
    {U8, I16, 0, 255, 0, 0xFF, "255 zero-extends"},
    {I64, I32, 0, INT64_MIN + 5, 0, 5, "wraps"},
    /* bool: anything nonzero (NaN too) -> 1; bool -> 0 / 1. */
    {F32, BOOL, NAN, 0, 0, 1, "NaN is nonzero"},
    {F32, BOOL, -0.0, 0, 0, 0, "-0 is zero"},
    {F32, BOOL, 1e-45, 0, 0, 1, "smallest subnormal"},
    {F64, BOOL, 4.9e-324, 0, 0, 1, "smallest subnormal"},
    {E4M3, BOOL, RAW, 0, 0x80, 0, "-0"},
    {E4M3, BOOL, RAW, 0, 0x7F, 1, "NaN"},
    {E2M1, BOOL, RAW, 0, 0x8, 0, "-0"},
    {E2M1, BOOL, RAW, 0, 0x1, 1, "0.5"},
    {I64, BOOL, 0, INT64_MIN, 0, 1, "INT64_MIN is nonzero"},
    {I64, BOOL, 0, 1LL << 40, 0, 1, "2^40 is nonzero (not truncated)"},
    {I4, BOOL, 0, -8, 0, 1, "-8"},
    {U8, BOOL, 0, 0, 0, 0, "0"},
    {I32, BOOL, 0, 256, 0, 1, "256 is nonzero (not truncated)"},
    {BOOL, F32, 0, 1, 0, 0x3F800000, "1.0"},
    {BOOL, F16, 0, 0, 0, 0x0000, "0.0"},
    {BOOL, BF16, 0, 1, 0, 0x3F80, "1.0"},
    {BOOL, E4M3, 0, 1, 0, 0x38, "1.0"},
    {BOOL, E5M2, 0, 1, 0, 0x3C, "1.0"},
    {BOOL, E2M1, 0, 1, 0, 0x2, "1.0"},
    {BOOL, I4, 0, 1, 0, 0x1, "1"},
    {BOOL, I64, 0, 1, 0, 1, "1"},
    {BOOL, U8, 0, 0, 0, 0, "0"},
};

/* cast_trunc_<s>_<d> (since 1.1) where it differs from cast_<s>_<d>, and
   where it does not; columns as in `known`. */
static const struct known known_trunc[] = {
    /* Float -> integer truncates toward zero. */
    {F32, I32, 2.5, 0, 0, 2, "2.5 -> 2"},
    {F32, I32, 3.5, 0, 0, 3, "3.5 -> 3"},
    {F32, I32, 2.75, 0, 0, 2, "2.75 -> 2"},
    {F32, I32, -2.75, 0, 0, (uint32_t)-2, "-2.75 -> -2"},
    {F32, I32, -0.5, 0, 0, 0, "-0.5 -> 0"},
    {F32, I32, NAN, 0, 0, 0, "NaN -> 0"},
    {F32, I32, 3e9, 0, 0, 0x7FFFFFFF, "saturates"},
    {F32, I32, -INFINITY, 0, 0, 0x80000000, "-inf saturates"},
    {F64, I64, 0x1.0000000000003p51, 0, 0, 0x8000000000001ull, "2^51 + 1.5 -> 2^51 + 1"},
    {F64, I64, -0x1p63, 0, 0, 0x8000000000000000ull, "-2^63 is INT64_MIN"},
    {F64, I64, 1e300, 0, 0, 0x7FFFFFFFFFFFFFFFull, "saturates"},
    {F32, U8, -1.5, 0, 0, 0, "negative saturates to 0"},
    {F32, U8, 255.5, 0, 0, 255, "255.5 -> 255"},
    {F32, U8, 254.75, 0, 0, 254, "254.75 -> 254"},
    {F32, I8, -128.75, 0, 0, 0x80, "-128.75 -> -128"},
    {F32, I8, 127.75, 0, 0, 0x7F, "127.75 -> 127"},
    {F16, I16, RAW, 0, 0x7BFF, 0x7FFF, "65504 saturates"},
    {F32, I4, 7.5, 0, 0, 0x7, "7.5 -> 7"},
    {F32, I4, -8.75, 0, 0, 0x8, "-8.75 -> -8"},
    {F32, I4, -1.5, 0, 0, 0xF, "-1.5 -> -1"},
    {E2M1, I4, RAW, 0, 0x3, 0x1, "1.5 -> 1"},
    {E2M1, I8, RAW, 0, 0xD, 0xFD, "-3"},
    {E4M3, U8, RAW, 0, 0x7E, 0xFF, "448 saturates"},
    {BF16, I32, RAW, 0, 0xC020, 0xFFFFFFFE, "-2.5 -> -2"},
    /* E4M3 overflow is NaN, not saturation; 464 still ties to 448. */
    {F32, E4M3, 448, 0, 0, 0x7E, "max"},
    {F32, E4M3, 464, 0, 0, 0x7E, "the tie to 448"},
    {F32, E4M3, 465, 0, 0, 0x7F, "above 464: NaN"},
    {F32, E4M3, -1e6, 0, 0, 0xFF, "-NaN"},
    {F32, E4M3, INFINITY, 0, 0, 0x7F, "inf: NaN"},
    {F32, E4M3, 17, 0, 0, 0x58, "ties to even as cast"},
    {F64, E4M3, 464.25, 0, 0, 0x7F, "f64 above 464: NaN"},
    {E5M2, E4M3, RAW, 0, 0x7B, 0x7F, "57344: NaN"},
    {E5M2, E4M3, RAW, 0, 0xFC, 0xFF, "-inf: NaN"},
    {I32, E4M3, 0, 464, 0, 0x7E, "464 -> 448"},
    {I32, E4M3, 0, 465, 0, 0x7F, "465: NaN"},
    {I64, E4M3, 0, INT64_MIN, 0, 0xFF, "INT64_MIN: NaN"},
    {BOOL, E4M3, 0, 1, 0, 0x38, "bool as cast"},
    /* The rest as cast. */
    {F32, E2M1, 100.0, 0, 0, 0x7, "E2M1 still saturates"},
    {F32, E5M2, 1e9, 0, 0, 0x7C, "E5M2 overflow -> inf"},
    {F32, F16, 65520, 0, 0, 0x7C00, "f16 overflow -> inf"},
    {I32, I8, 0, 300, 0, 0x2C, "300 wraps"},
    {F32, BOOL, 0.25, 0, 0, 1, "nonzero"},
};

/* Runs one table of known values through `prefix`_<s>_<d>; returns how many
   were checked. */
static size_t run_known(bt_ctx *c, const struct known *table, size_t count, int trunc) {
  void *dsrc = bt_dev(8), *ddst = bt_dev(8);
  size_t checked = 0;
  for (size_t i = 0; dsrc && ddst && i < count; i++) {
    const struct known *k = &table[i];
    if (!bt_has_type(c, k->s) || !bt_has_type(c, k->d)) continue;
    uint64_t src;
    if (ref_is_float(k->s))
      src = k->x == RAW ? k->raw : ref_encode_float(k->s, ref_from_double(k->x));
    else
      src = k->raw != 0 ? k->raw : (uint64_t)k->i & ref_mask(k->s);
    /* The reference agrees with the table (else the table or dtype_ref.h
       is wrong, not the library). */
    uint64_t ref = expected_cast(trunc, k->s, k->d, src);
    CHECK_MSG(ref_same(k->d, k->expected, ref),
              "dtype_ref.h: %s %s -> %s of 0x%llx (%s) gives 0x%llx, the table says 0x%llx",
              trunc ? "cast_trunc" : "cast", ref_types[k->s].name, ref_types[k->d].name, (unsigned long long)src,
              k->why, (unsigned long long)ref, (unsigned long long)k->expected);
    char name[48];
    snprintf(name, sizeof name, "%s_%s_%s", trunc ? "cast_trunc" : "cast", ref_types[k->s].name,
             ref_types[k->d].name);
    xdal_function_t f = bt_fn(c, name);
    if (!f) continue;
    unsigned char hsrc[8] = {0}, hdst[8 + BT_GUARD];
    ref_set(k->s, hsrc, 0, src);
    if (!bt_upload(dsrc, hsrc, 8) || !bt_poison(ddst, 8)) break;
    uint64_t n = 1;
    xdal_kernel_arg_t args[] = {{&dsrc, 8}, {&ddst, 8}, {&n, 8}};
    if (!bt_run(c, f, &bt_shapes[1], args, 3, name) || !bt_download(hdst, ddst, 8)) continue;
    uint64_t got = ref_get(k->d, hdst, 0);
    CHECK_MSG(ref_same(k->d, k->expected, got), "%s of 0x%llx (%s): expected 0x%llx, got 0x%llx", name,
              (unsigned long long)src, k->why, (unsigned long long)k->expected, (unsigned long long)got);
    bt_check_untouched(k->d, hdst, 1, name);
    checked++;
  }
  CHECK_OK(xdal_free(dsrc));
  CHECK_OK(xdal_free(ddst));
  return checked;
}

static void test_cast_known_values(void) {
  bt_ctx c;
  BT_BEGIN(c);
  size_t checked = run_known(&c, known, sizeof known / sizeof known[0], 0);
  if (backend_is_fake()) CHECK_EQ(checked, sizeof known / sizeof known[0]);
  bt_close(&c);
}

static void test_cast_trunc_known_values(void) {
  bt_ctx c;
  BT_BEGIN(c);
  size_t checked = run_known(&c, known_trunc, sizeof known_trunc / sizeof known_trunc[0], 1);
  if (backend_is_fake()) CHECK_EQ(checked, sizeof known_trunc / sizeof known_trunc[0]);
  bt_close(&c);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_cast_known_values), HARNESS_TEST(test_cast_trunc_known_values),
    HARNESS_TEST(test_cast_from_f64),    HARNESS_TEST(test_cast_from_f32),
    HARNESS_TEST(test_cast_from_f16),     HARNESS_TEST(test_cast_from_bf16),   HARNESS_TEST(test_cast_from_f8e4m3),
    HARNESS_TEST(test_cast_from_f8e5m2),  HARNESS_TEST(test_cast_from_f4e2m1), HARNESS_TEST(test_cast_from_i64),
    HARNESS_TEST(test_cast_from_i32),     HARNESS_TEST(test_cast_from_i16),    HARNESS_TEST(test_cast_from_i8),
    HARNESS_TEST(test_cast_from_u8),      HARNESS_TEST(test_cast_from_i4),     HARNESS_TEST(test_cast_from_bool),
};

HARNESS_MAIN(tests)
