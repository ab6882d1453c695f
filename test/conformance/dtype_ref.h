/*
 * Reference element types for the built-in kernel tests (builtins*.c):
 * exact decoding of every xdal_dtype_t to a value, and encoding back with
 * round to nearest, ties to even, written from the rules of ABI.md ("Data
 * types", "Built-in kernels") and docs/semantics.md without reference to
 * the library:
 *
 *   F16, BF16, F8 E5M2: IEEE-like (infinities, NaNs); overflow -> inf.
 *   F8 E4M3 (OCP): bias 7, no infinities, NaN only S.1111.111, max 448;
 *     conversions saturate (inf -> +-448), NaN -> NaN.
 *   F4 E2M1 (OCP): 0 .5 1 1.5 2 3 4 6, no inf or NaN; saturates to +-6,
 *     NaN -> +0.
 *   float -> int: nearest even, NaN -> 0, saturating; int -> int wraps;
 *   anything -> bool: nonzero (NaN included) -> 1; bool -> 0 / 1.
 *   cast_trunc (since 1.1): float -> int truncates toward zero (NaN -> 0,
 *   saturating), E4M3 overflow -> NaN; otherwise as above.
 *   F4 and I4 pack two a byte, the lower index in the low nibble.
 *
 * A value is kept exactly as (-1)^neg * mant * 2^exp with a 64-bit mant,
 * which holds every f64 and every i64, so no conversion goes through a
 * rounding intermediate (an i64 -> f32 via double would round twice).
 *
 * Plain C11; needs only <xdal/xdal.h> for xdal_dtype_t.
 */
#ifndef XDAL_CONFORMANCE_DTYPE_REF_H
#define XDAL_CONFORMANCE_DTYPE_REF_H

#include <xdal/xdal.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define REF_NTYPES 14

typedef enum { REF_FLOAT, REF_INT, REF_BOOL } ref_class_t;
typedef enum { REF_NAN_IEEE, REF_NAN_ALL_ONES, REF_NAN_NONE } ref_nan_t;

typedef struct ref_type {
  const char *name;   /* as in kernel names: fill_<name> */
  ref_class_t cls;
  unsigned bits;      /* storage bits of one element: 64 32 16 8 4 (bool: 8) */
  unsigned exp_bits;  /* floats: exponent field width */
  unsigned man_bits;  /* floats: fraction field width */
  int bias;           /* floats */
  ref_nan_t nan;      /* floats */
  int saturate;       /* floats: overflow gives the largest finite value */
  int is_signed;      /* integers */
} ref_type_t;

static const ref_type_t ref_types[REF_NTYPES] = {
    {"f64", REF_FLOAT, 64, 11, 52, 1023, REF_NAN_IEEE, 0, 1},
    {"f32", REF_FLOAT, 32, 8, 23, 127, REF_NAN_IEEE, 0, 1},
    {"f16", REF_FLOAT, 16, 5, 10, 15, REF_NAN_IEEE, 0, 1},
    {"bf16", REF_FLOAT, 16, 8, 7, 127, REF_NAN_IEEE, 0, 1},
    {"f8e4m3", REF_FLOAT, 8, 4, 3, 7, REF_NAN_ALL_ONES, 1, 1},
    {"f8e5m2", REF_FLOAT, 8, 5, 2, 15, REF_NAN_IEEE, 0, 1},
    {"f4e2m1", REF_FLOAT, 4, 2, 1, 1, REF_NAN_NONE, 1, 1},
    {"i64", REF_INT, 64, 0, 0, 0, REF_NAN_NONE, 0, 1},
    {"i32", REF_INT, 32, 0, 0, 0, REF_NAN_NONE, 0, 1},
    {"i16", REF_INT, 16, 0, 0, 0, REF_NAN_NONE, 0, 1},
    {"i8", REF_INT, 8, 0, 0, 0, REF_NAN_NONE, 0, 1},
    {"u8", REF_INT, 8, 0, 0, 0, REF_NAN_NONE, 0, 0},
    {"i4", REF_INT, 4, 0, 0, 0, REF_NAN_NONE, 0, 1},
    {"bool", REF_BOOL, 8, 0, 0, 0, REF_NAN_NONE, 0, 0},
};

static inline int ref_is_float(int t) { return ref_types[t].cls == REF_FLOAT; }
static inline int ref_is_int(int t) { return ref_types[t].cls == REF_INT; }
static inline int ref_is_packed(int t) { return ref_types[t].bits == 4; }

/* Bytes that n elements occupy. */
static inline size_t ref_bytes(int t, size_t n) {
  return ref_is_packed(t) ? (n + 1) / 2 : n * (ref_types[t].bits / 8);
}

/* Size of a scalar kernel argument of type t (a 4-bit value is one byte). */
static inline size_t ref_scalar_bytes(int t) { return ref_is_packed(t) ? 1 : ref_types[t].bits / 8; }

static inline uint64_t ref_mask(int t) {
  unsigned b = ref_types[t].bits;
  return b == 64 ? UINT64_MAX : (((uint64_t)1 << b) - 1);
}

/* --- Element access (native byte order; packed: low nibble first) -------- */

static inline uint64_t ref_get(int t, const void *buf, size_t i) {
  const unsigned char *p = (const unsigned char *)buf;
  switch (ref_types[t].bits) {
    case 64: {
      uint64_t v;
      memcpy(&v, p + 8 * i, 8);
      return v;
    }
    case 32: {
      uint32_t v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case 16: {
      uint16_t v;
      memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case 8:
      return p[i];
    default:
      return (p[i / 2] >> ((i & 1) * 4)) & 0xF;
  }
}

static inline void ref_set(int t, void *buf, size_t i, uint64_t bits) {
  unsigned char *p = (unsigned char *)buf;
  switch (ref_types[t].bits) {
    case 64:
      memcpy(p + 8 * i, &bits, 8);
      break;
    case 32: {
      uint32_t v = (uint32_t)bits;
      memcpy(p + 4 * i, &v, 4);
      break;
    }
    case 16: {
      uint16_t v = (uint16_t)bits;
      memcpy(p + 2 * i, &v, 2);
      break;
    }
    case 8:
      p[i] = (unsigned char)bits;
      break;
    default: {
      unsigned shift = (unsigned)(i & 1) * 4;
      p[i / 2] = (unsigned char)((p[i / 2] & ~(0xFu << shift)) | ((bits & 0xF) << shift));
      break;
    }
  }
}

/* --- Exact values ----------------------------------------------------------- */

typedef enum { RV_ZERO, RV_FINITE, RV_INF, RV_NAN } ref_kind_t;

typedef struct ref_value {
  ref_kind_t kind;
  int neg;       /* sign (zeros, infinities and NaNs have one too) */
  uint64_t mant; /* RV_FINITE: > 0 */
  int exp;       /* RV_FINITE: value = mant * 2^exp */
} ref_value_t;

static inline ref_value_t ref_from_int(int64_t v) {
  ref_value_t r = {RV_ZERO, 0, 0, 0};
  if (v == 0) return r;
  r.kind = RV_FINITE;
  r.neg = v < 0;
  r.mant = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  return r;
}

/* The integer value of integer or bool bits of type t. */
static inline int64_t ref_int_value(int t, uint64_t bits) {
  const ref_type_t *ty = &ref_types[t];
  if (ty->cls == REF_BOOL) return bits != 0;
  bits &= ref_mask(t);
  if (ty->is_signed && ty->bits < 64 && (bits >> (ty->bits - 1)) & 1) bits |= ~ref_mask(t);
  return (int64_t)bits;
}

/* The exact value of bits of type t. */
static inline ref_value_t ref_decode(int t, uint64_t bits) {
  const ref_type_t *ty = &ref_types[t];
  if (ty->cls != REF_FLOAT) return ref_from_int(ref_int_value(t, bits));
  bits &= ref_mask(t);
  ref_value_t r = {RV_ZERO, 0, 0, 0};
  unsigned m = ty->man_bits;
  uint64_t exp_max = ((uint64_t)1 << ty->exp_bits) - 1;
  uint64_t e = (bits >> m) & exp_max;
  uint64_t frac = bits & (((uint64_t)1 << m) - 1);
  r.neg = (int)((bits >> (ty->bits - 1)) & 1);
  if (ty->nan == REF_NAN_IEEE && e == exp_max) {
    r.kind = frac == 0 ? RV_INF : RV_NAN;
  } else if (ty->nan == REF_NAN_ALL_ONES && e == exp_max && frac == (((uint64_t)1 << m) - 1)) {
    r.kind = RV_NAN;
  } else if (e == 0) {
    if (frac != 0) {
      r.kind = RV_FINITE;
      r.mant = frac;
      r.exp = 1 - ty->bias - (int)m;
    }
  } else {
    r.kind = RV_FINITE;
    r.mant = frac | ((uint64_t)1 << m);
    r.exp = (int)e - ty->bias - (int)m;
  }
  return r;
}

static inline ref_value_t ref_from_double(double d) {
  uint64_t bits;
  memcpy(&bits, &d, 8);
  return ref_decode(XDAL_DTYPE_F64, bits);
}

static inline ref_value_t ref_from_float(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  return ref_decode(XDAL_DTYPE_F32, bits);
}

/* mant / 2^s rounded to nearest, ties to even. */
static inline uint64_t ref_shift_rne(uint64_t mant, unsigned s) {
  if (s == 0) return mant;
  if (s > 64) return 0;
  if (s == 64) return mant > ((uint64_t)1 << 63) ? 1 : 0;
  uint64_t q = mant >> s;
  uint64_t rem = mant & (((uint64_t)1 << s) - 1);
  uint64_t half = (uint64_t)1 << (s - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  return q;
}

static inline int ref_top_bit(uint64_t x) {
  int n = -1;
  while (x) {
    x >>= 1;
    n++;
  }
  return n;
}

/* The encoding (sign excluded) of the largest finite value of float type t. */
static inline uint64_t ref_max_finite(int t) {
  const ref_type_t *ty = &ref_types[t];
  uint64_t all = ref_mask(t) >> 1;
  switch (ty->nan) {
    case REF_NAN_IEEE:
      return all - ((uint64_t)1 << ty->man_bits);
    case REF_NAN_ALL_ONES:
      return all - 1;
    default:
      return all;
  }
}

/* The bits of float type t nearest to v (ties to even), with the overflow
   and NaN rules of the format. */
static inline uint64_t ref_encode_float(int t, ref_value_t v) {
  const ref_type_t *ty = &ref_types[t];
  uint64_t sign = v.neg ? (uint64_t)1 << (ty->bits - 1) : 0;
  unsigned m = ty->man_bits;
  uint64_t exp_max = ((uint64_t)1 << ty->exp_bits) - 1;
  uint64_t overflow = sign | (ty->saturate ? ref_max_finite(t) : exp_max << m);
  switch (v.kind) {
    case RV_NAN:
      if (ty->nan == REF_NAN_NONE) return 0;
      if (ty->nan == REF_NAN_ALL_ONES) return sign | (ref_mask(t) >> 1);
      return sign | (exp_max << m) | ((uint64_t)1 << (m - 1));
    case RV_INF:
      return overflow;
    case RV_ZERO:
      return sign;
    default:
      break;
  }
  int emin = 1 - ty->bias;
  int e = v.exp + ref_top_bit(v.mant); /* v in [2^e, 2^(e+1)) */
  int q = (e < emin ? emin : e) - (int)m; /* exponent of the last place */
  uint64_t r;
  if (v.exp >= q)
    r = v.mant << (v.exp - q); /* exact; fewer than m + 2 bits */
  else
    r = ref_shift_rne(v.mant, (unsigned)(q - v.exp > 65 ? 65 : q - v.exp));
  if (r == 0) return sign;
  if (r >> (m + 1)) { /* rounding carried into a new power of two */
    r >>= 1;
    q++;
  }
  uint64_t mag;
  if (r < ((uint64_t)1 << m)) {
    mag = r; /* subnormal */
  } else {
    int64_t biased = (int64_t)q + m + ty->bias;
    if (biased > (int64_t)exp_max) return overflow;
    mag = ((uint64_t)biased << m) | (r - ((uint64_t)1 << m));
  }
  if (mag > ref_max_finite(t)) return overflow;
  return sign | mag;
}

/* v rounded to an integer (ties to even) and saturated to [lo, hi]; NaN 0. */
static inline int64_t ref_to_int_sat(ref_value_t v, int64_t lo, int64_t hi) {
  if (v.kind == RV_NAN || v.kind == RV_ZERO) return 0;
  uint64_t mag = 0;
  int huge = v.kind == RV_INF;
  if (!huge) {
    if (v.exp >= 0) {
      if (v.exp >= 64 || (v.exp > 0 && (v.mant >> (64 - v.exp)) != 0))
        huge = 1;
      else
        mag = v.mant << v.exp;
    } else {
      mag = ref_shift_rne(v.mant, (unsigned)(-v.exp > 65 ? 65 : -v.exp));
    }
  }
  if (v.neg) {
    uint64_t limit = (uint64_t)0 - (uint64_t)lo; /* |lo| */
    if (huge || mag > limit) return lo;
    return mag == 0 ? 0 : (int64_t)((uint64_t)0 - mag);
  }
  if (huge || mag > (uint64_t)hi) return hi;
  return (int64_t)mag;
}

static inline void ref_int_range(int t, int64_t *lo, int64_t *hi) {
  const ref_type_t *ty = &ref_types[t];
  if (ty->cls == REF_BOOL) {
    *lo = 0;
    *hi = 1;
  } else if (!ty->is_signed) {
    *lo = 0;
    *hi = (int64_t)ref_mask(t);
  } else if (ty->bits == 64) {
    *lo = INT64_MIN;
    *hi = INT64_MAX;
  } else {
    *hi = (int64_t)(ref_mask(t) >> 1);
    *lo = -*hi - 1;
  }
}

/* The bits of type d that cast_<s>_<d> makes of bits of type s. */
static inline uint64_t ref_convert(int s, int d, uint64_t bits) {
  if (s == d) return bits & ref_mask(s);
  const ref_type_t *ts = &ref_types[s], *td = &ref_types[d];
  if (td->cls == REF_BOOL) {
    if (ts->cls == REF_FLOAT) return ref_decode(s, bits).kind != RV_ZERO;
    return ref_int_value(s, bits) != 0;
  }
  if (ts->cls != REF_FLOAT) { /* integer or bool source: exact value */
    int64_t v = ref_int_value(s, bits);
    if (td->cls == REF_INT) return (uint64_t)v & ref_mask(d); /* wraps */
    return ref_encode_float(d, ref_from_int(v));
  }
  ref_value_t v = ref_decode(s, bits);
  if (td->cls == REF_FLOAT) return ref_encode_float(d, v);
  int64_t lo, hi;
  ref_int_range(d, &lo, &hi);
  return (uint64_t)ref_to_int_sat(v, lo, hi) & ref_mask(d);
}

/* v truncated toward zero and saturated to [lo, hi]; NaN 0 (cast_trunc). */
static inline int64_t ref_to_int_trunc(ref_value_t v, int64_t lo, int64_t hi) {
  if (v.kind == RV_NAN || v.kind == RV_ZERO) return 0;
  uint64_t mag = 0;
  int huge = v.kind == RV_INF;
  if (!huge) {
    if (v.exp >= 0) {
      if (v.exp >= 64 || (v.exp > 0 && (v.mant >> (64 - v.exp)) != 0))
        huge = 1;
      else
        mag = v.mant << v.exp;
    } else {
      mag = -v.exp >= 64 ? 0 : v.mant >> -v.exp; /* drops the fraction */
    }
  }
  if (v.neg) {
    uint64_t limit = (uint64_t)0 - (uint64_t)lo; /* |lo| */
    if (huge || mag > limit) return lo;
    return mag == 0 ? 0 : (int64_t)((uint64_t)0 - mag);
  }
  if (huge || mag > (uint64_t)hi) return hi;
  return (int64_t)mag;
}

/* Whether v (a NaN, an infinity, or a magnitude above 464, the tie between
   E4M3's 448 and the 480 it lacks) becomes NaN in cast_trunc to E4M3. */
static inline int ref_e4m3_overflows(ref_value_t v) {
  if (v.kind != RV_FINITE) return v.kind != RV_ZERO;
  /* mant * 2^exp > 29 * 2^4 */
  if (v.exp >= 4) {
    int s = v.exp - 4;
    return s >= 6 || v.mant > 29 || (v.mant << s) > 29;
  }
  int s = 4 - v.exp;
  return s < 59 && v.mant > ((uint64_t)29 << s);
}

/* The bits of type d that cast_trunc_<s>_<d> makes of bits of type s (C's
   static_cast, PyTorch's conversion): float -> integer truncates toward
   zero (NaN 0, saturating); anything but bool -> E4M3 overflows to NaN;
   the rest as cast_<s>_<d>. */
static inline uint64_t ref_convert_trunc(int s, int d, uint64_t bits) {
  if (s == d) return bits & ref_mask(s);
  const ref_type_t *ts = &ref_types[s], *td = &ref_types[d];
  if (ts->cls == REF_FLOAT && td->cls == REF_INT) {
    int64_t lo, hi;
    ref_int_range(d, &lo, &hi);
    return (uint64_t)ref_to_int_trunc(ref_decode(s, bits), lo, hi) & ref_mask(d);
  }
  if (d == XDAL_DTYPE_F8_E4M3 && ts->cls != REF_BOOL) {
    ref_value_t v = ts->cls == REF_FLOAT ? ref_decode(s, bits) : ref_from_int(ref_int_value(s, bits));
    if (ref_e4m3_overflows(v)) return (v.neg ? 0x80u : 0u) | 0x7Fu;
  }
  return ref_convert(s, d, bits);
}

/* Whether bits of float type t are a NaN. */
static inline int ref_is_nan(int t, uint64_t bits) {
  return ref_is_float(t) && ref_decode(t, bits).kind == RV_NAN;
}

/* Whether `got` is what `expected` asks for: the same bits, except that any
   NaN of the type matches an expected NaN (payloads and signs of NaNs are
   not specified). */
static inline int ref_same(int t, uint64_t expected, uint64_t got) {
  expected &= ref_mask(t);
  got &= ref_mask(t);
  if (ref_is_nan(t, expected)) return ref_is_nan(t, got);
  return expected == got;
}

/* --- Arithmetic as the built-in kernels define it ----------------------- */

static inline float ref_bits_to_f32(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

static inline uint32_t ref_f32_to_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

static inline double ref_bits_to_f64(uint64_t b) {
  double d;
  memcpy(&d, &b, 8);
  return d;
}

static inline uint64_t ref_f64_to_bits(double d) {
  uint64_t b;
  memcpy(&b, &d, 8);
  return b;
}

/* A float of type t (no wider than f32) as an f32, exactly. */
static inline float ref_to_f32(int t, uint64_t bits) {
  return ref_bits_to_f32((uint32_t)ref_encode_float(XDAL_DTYPE_F32, ref_decode(t, bits)));
}

/* An f32 rounded to float type t. */
static inline uint64_t ref_from_f32(int t, float f) { return ref_encode_float(t, ref_from_float(f)); }

/* add_<t> (op 0) and mul_<t> (op 1) of one pair of elements: f64 in f64,
   narrower floats in f32 rounded back; integers wrap; bool or / and. */
static inline uint64_t ref_binary(int t, int op, uint64_t a, uint64_t b) {
  const ref_type_t *ty = &ref_types[t];
  if (t == XDAL_DTYPE_F64) {
    volatile double x = ref_bits_to_f64(a), y = ref_bits_to_f64(b);
    volatile double r = op ? x * y : x + y;
    return ref_f64_to_bits(r);
  }
  if (ty->cls == REF_FLOAT) {
    volatile float x = ref_to_f32(t, a), y = ref_to_f32(t, b);
    volatile float r = op ? x * y : x + y;
    return ref_from_f32(t, r);
  }
  if (ty->cls == REF_BOOL) return op ? (a != 0 && b != 0) : (a != 0 || b != 0);
  return (op ? a * b : a + b) & ref_mask(t);
}

#endif /* XDAL_CONFORMANCE_DTYPE_REF_H */
