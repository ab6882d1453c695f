// The fourteen element types, each as a set of `<dtype>_<what>` names that
// the templates call (see prelude.cl for `T_`): the fake backend's `Elem`
// and `Arith` traits (backends/fake/src/dtype, builtin/arith.rs) in
// OpenCL C.
//
// Every type has
//   <t>_s, <t>_v, <t>_a   storage, value and accumulator types
//   <t>_PACKED            1 for the 4-bit types, two a byte (low nibble first)
//   get(p, i), put(p, i, v)  element i (an offset in nibbles for packed
//                         types: byte floor(i / 2)); `put` keeps the other
//                         nibble, so the caller must own the whole byte
//   nibble(v)             a packed value's storage nibble
//   scalar(raw)           a kernel's by-value scalar (4-bit: low nibble)
//   canonical(v)          the value as fill writes it (bool: 0 or 1)
//   nonzero(v), from_bool(b)
//   acc(v), unacc(a), add(a, b), mul(a, b), ZERO, IDENTITY: the arithmetic
//                         (IDENTITY, where float sums start, is -0.0)
// floats add to_f32 (not f64), from_f32, from_f64, from_i64; integers add
// to_i64, from_i64 (wrapping), from_f32 and from_f64 (nearest even,
// saturating, NaN 0) and trunc_f64 (toward zero, saturating, NaN 0).
//
// Integers compute in unsigned types (wrapping is defined there); the
// result's low bits are the wrapped result in the narrower type.

// ---- f64 ------------------------------------------------------------------
typedef double f64_s;
typedef double f64_v;
typedef double f64_a;
#define f64_PACKED 0
#define f64_ZERO 0.0
#define f64_IDENTITY -0.0
INLINE double f64_get(__global const double *p, long i) { return p[i]; }
INLINE void f64_put(__global double *p, long i, double v) { p[i] = v; }
INLINE double f64_scalar(double raw) { return raw; }
INLINE double f64_canonical(double v) { return v; }
INLINE int f64_nonzero(double v) { return (as_ulong(v) << 1) != 0ul; }
INLINE double f64_from_f32(float x) { return f64_of_f32(x); }
INLINE double f64_from_f64(double x) { return x; }
INLINE double f64_from_i64(long x) { return (double)x; }
INLINE double f64_from_bool(int b) { return b ? 1.0 : 0.0; }
INLINE double f64_acc(double v) { return v; }
INLINE double f64_unacc(double a) { return a; }
INLINE double f64_add(double a, double b) { return f64_nan_first(a, b, a + b); }
INLINE double f64_mul(double a, double b) { return f64_nan_first(a, b, a * b); }

// ---- f32 ------------------------------------------------------------------
typedef float f32_s;
typedef float f32_v;
typedef float f32_a;
#define f32_PACKED 0
#define f32_ZERO 0.0f
#define f32_IDENTITY -0.0f
INLINE float f32_get(__global const float *p, long i) { return p[i]; }
INLINE void f32_put(__global float *p, long i, float v) { p[i] = v; }
INLINE float f32_scalar(float raw) { return raw; }
INLINE float f32_canonical(float v) { return v; }
INLINE int f32_nonzero(float v) { return (as_uint(v) << 1) != 0u; }
INLINE float f32_to_f32(float v) { return v; }
INLINE float f32_from_f32(float x) { return x; }
INLINE float f32_from_f64(double x) { return f32_of_f64(x); }
// One rounding, to nearest even, from any 64-bit integer.
INLINE float f32_from_i64(long x) { return (float)x; }
INLINE float f32_from_bool(int b) { return b ? 1.0f : 0.0f; }
INLINE float f32_acc(float v) { return v; }
INLINE float f32_unacc(float a) { return a; }
INLINE float f32_add(float a, float b) { return f32_nan_first(a, b, a + b); }
INLINE float f32_mul(float a, float b) { return f32_nan_first(a, b, a * b); }

// ---- the narrow floats: stored as their bits, computing in f32 ------------
// NARROW_FLOAT(t, storage, to_f32 body, from_f32 body, from_f64 body):
// everything but the codecs is common. Integers convert through a double
// rounded to odd, so the one rounding into the narrow format is exact.
#define NARROW_FLOAT(t, st, mask, TO_F32, FROM_F32, FROM_F64)                \
  typedef st t##_s;                                                          \
  typedef st t##_v;                                                          \
  typedef float t##_a;                                                       \
  INLINE float t##_to_f32(st v) { return as_float(TO_F32); }                 \
  INLINE st t##_from_f32(float x) { return (st)(FROM_F32); }                 \
  INLINE st t##_from_f64(double x) { return (st)(FROM_F64); }                \
  INLINE st t##_from_i64(long x) { return t##_from_f64(i64_to_f64_odd(x)); } \
  INLINE st t##_from_bool(int b) { return t##_from_f32(b ? 1.0f : 0.0f); }   \
  INLINE st t##_canonical(st v) { return v; }                                \
  INLINE int t##_nonzero(st v) { return (v & (mask)) != 0; }                 \
  INLINE float t##_acc(st v) { return t##_to_f32(v); }                       \
  INLINE st t##_unacc(float a) { return t##_from_f32(a); }                   \
  INLINE float t##_add(float a, float b) { return f32_add(a, b); }           \
  INLINE float t##_mul(float a, float b) { return f32_mul(a, b); }
#define BYTEWISE(t, st)                                            \
  INLINE st t##_get(__global const st *p, long i) { return p[i]; } \
  INLINE void t##_put(__global st *p, long i, st v) { p[i] = v; }  \
  INLINE st t##_scalar(st raw) { return raw; }

// IEEE binary16. Its NaNs widen with their payload, as the fake's decoder.
NARROW_FLOAT(f16, ushort, 0x7FFF, mf_to_f32_bits(v, 5, 10, 15, NAN_IEEE),
             mf_from_f32_bits(as_uint(x), 5, 10, 15, NAN_IEEE, 0), mf_from_f64_bits(as_ulong(x), 5, 10, 15, NAN_IEEE, 0))
BYTEWISE(f16, ushort)
#define f16_PACKED 0
#define f16_ZERO 0.0f
#define f16_IDENTITY -0.0f

// bfloat16 as the `half` crate converts it from and to f32 (NaNs keep
// their payload and gain the quiet bit); from f64 correctly rounded.
INLINE uint bf16_f32_bits(ushort v) {
  uint b = (uint)v;
  return ((b & 0x7FFFu) > 0x7F80u ? b | 0x40u : b) << 16;
}
INLINE uint bf16_of_f32_bits(uint x) {
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (x >> 16) | 0x40u;
  // Ties to even: round up when the dropped half is over one half, or is
  // one half and the kept part is odd.
  return (x & 0x8000u) != 0u && (x & 0x17FFFu) != 0u ? (x >> 16) + 1u : x >> 16;
}
NARROW_FLOAT(bf16, ushort, 0x7FFF, bf16_f32_bits(v), bf16_of_f32_bits(as_uint(x)),
             mf_from_f64_bits(as_ulong(x), 8, 7, 127, NAN_IEEE, 0))
BYTEWISE(bf16, ushort)
#define bf16_PACKED 0
#define bf16_ZERO 0.0f
#define bf16_IDENTITY -0.0f

// OCP FP8 E4M3: saturating, one NaN a sign.
NARROW_FLOAT(f8e4m3, uchar, 0x7F, mf_to_f32_bits(v, 4, 3, 7, NAN_ALL_ONES),
             mf_from_f32_bits(as_uint(x), 4, 3, 7, NAN_ALL_ONES, 1),
             mf_from_f64_bits(as_ulong(x), 4, 3, 7, NAN_ALL_ONES, 1))
BYTEWISE(f8e4m3, uchar)
#define f8e4m3_PACKED 0
#define f8e4m3_ZERO 0.0f
#define f8e4m3_IDENTITY -0.0f

// cast_trunc's E4M3 (PyTorch's float8_e4m3fn): a magnitude above 464, the
// tie between 448 and the missing 480, and infinities become NaN with the
// source's sign; NaN stays NaN.
INLINE uchar f8e4m3_nan_of(uint negative) { return (uchar)(0x7Fu | (negative << 7)); }
INLINE uchar f8e4m3_trunc_f32(float x) {
  return fabs(x) <= 464.0f ? f8e4m3_from_f32(x) : f8e4m3_nan_of(as_uint(x) >> 31);
}
INLINE uchar f8e4m3_trunc_f64(double x) {
  return fabs(x) <= 464.0 ? f8e4m3_from_f64(x) : f8e4m3_nan_of((uint)(as_ulong(x) >> 63));
}
INLINE uchar f8e4m3_trunc_i64(long x) {
  ulong magnitude = x < 0 ? (ulong)0 - (ulong)x : (ulong)x;
  return magnitude <= 464ul ? f8e4m3_from_i64(x) : f8e4m3_nan_of(x < 0);
}

// OCP FP8 E5M2: IEEE-like, overflow gives infinity.
NARROW_FLOAT(f8e5m2, uchar, 0x7F, mf_to_f32_bits(v, 5, 2, 15, NAN_IEEE),
             mf_from_f32_bits(as_uint(x), 5, 2, 15, NAN_IEEE, 0), mf_from_f64_bits(as_ulong(x), 5, 2, 15, NAN_IEEE, 0))
BYTEWISE(f8e5m2, uchar)
#define f8e5m2_PACKED 0
#define f8e5m2_ZERO 0.0f
#define f8e5m2_IDENTITY -0.0f

// OCP FP4 E2M1, two a byte: saturating, NaN encodes as +0.
NARROW_FLOAT(f4e2m1, uchar, 0x7, mf_to_f32_bits(v, 2, 1, 1, NAN_NONE), mf_from_f32_bits(as_uint(x), 2, 1, 1, NAN_NONE, 1),
             mf_from_f64_bits(as_ulong(x), 2, 1, 1, NAN_NONE, 1))
#define f4e2m1_PACKED 1
#define f4e2m1_ZERO 0.0f
#define f4e2m1_IDENTITY -0.0f
INLINE uchar f4e2m1_get(__global const uchar *p, long i) { return (p[i >> 1] >> ((i & 1) * 4)) & 0xFu; }
INLINE void f4e2m1_put(__global uchar *p, long i, uchar v) {
  uint shift = (uint)(i & 1) * 4u;
  p[i >> 1] = (uchar)((p[i >> 1] & ~(0xFu << shift)) | ((uint)v << shift));
}
INLINE uint f4e2m1_nibble(uchar v) { return v; }
INLINE uchar f4e2m1_scalar(uchar raw) { return raw & 0xFu; }

// ---- the integers ---------------------------------------------------------
// INTEGER(t, value type, unsigned accumulator, lowest, highest): i64, i32,
// i16, i8 and u8, one byte or more each.
#define INTEGER(t, vt, at, lo, hi)                                                                          \
  typedef vt t##_s;                                                                                         \
  typedef vt t##_v;                                                                                         \
  typedef at t##_a;                                                                                         \
  INLINE vt t##_get(__global const vt *p, long i) { return p[i]; }                                          \
  INLINE void t##_put(__global vt *p, long i, vt v) { p[i] = v; }                                           \
  INLINE vt t##_scalar(vt raw) { return raw; }                                                              \
  INLINE vt t##_canonical(vt v) { return v; }                                                               \
  INLINE int t##_nonzero(vt v) { return v != 0; }                                                           \
  INLINE vt t##_from_bool(int b) { return b ? 1 : 0; }                                                      \
  INLINE long t##_to_i64(vt v) { return (long)v; }                                                          \
  /* Two's complement truncation: the low bits, reinterpreted. */                                           \
  INLINE vt t##_from_i64(long x) { return (vt)(at)(ulong)x; }                                               \
  INLINE vt t##_from_f64(double x) { return (vt)f64_to_int_rne(x, (double)(lo), (double)(hi), lo, hi); }    \
  INLINE vt t##_from_f32(float x) { return t##_from_f64((double)x); }                                       \
  INLINE vt t##_trunc_f64(double x) { return (vt)f64_to_int_trunc(x, (double)(lo), (double)(hi), lo, hi); } \
  INLINE at t##_acc(vt v) { return (at)v; }                                                                 \
  INLINE vt t##_unacc(at a) { return (vt)a; }                                                               \
  INLINE at t##_add(at a, at b) { return a + b; }                                                           \
  INLINE at t##_mul(at a, at b) { return a * b; }

// For i64 the upper bound is 2^63 (LONG_MAX as a double), reached only by
// values that saturate.
INTEGER(i64, long, ulong, -9223372036854775807L - 1L, 9223372036854775807L)
INTEGER(i32, int, uint, -2147483648L, 2147483647L)
INTEGER(i16, short, uint, -32768L, 32767L)
INTEGER(i8, char, uint, -128L, 127L)
INTEGER(u8, uchar, uint, 0L, 255L)
#define i64_PACKED 0
#define i32_PACKED 0
#define i16_PACKED 0
#define i8_PACKED 0
#define u8_PACKED 0
#define i64_ZERO 0ul
#define i32_ZERO 0u
#define i16_ZERO 0u
#define i8_ZERO 0u
#define u8_ZERO 0u
#define i64_IDENTITY 0ul
#define i32_IDENTITY 0u
#define i16_IDENTITY 0u
#define i8_IDENTITY 0u
#define u8_IDENTITY 0u

// ---- i4: -8 to 7, two a byte, held sign-extended in a char ----------------
typedef uchar i4_s;
typedef char i4_v;
typedef uint i4_a;
#define i4_PACKED 1
#define i4_ZERO 0u
#define i4_IDENTITY 0u
INLINE char i4_get(__global const uchar *p, long i) { return i4_of_nibble(p[i >> 1] >> ((i & 1) * 4)); }
INLINE uint i4_nibble(char v) { return (uint)v & 0xFu; }
INLINE void i4_put(__global uchar *p, long i, char v) {
  uint shift = (uint)(i & 1) * 4u;
  p[i >> 1] = (uchar)((p[i >> 1] & ~(0xFu << shift)) | (i4_nibble(v) << shift));
}
INLINE char i4_scalar(uchar raw) { return i4_of_nibble(raw); }
INLINE char i4_canonical(char v) { return v; }
INLINE int i4_nonzero(char v) { return v != 0; }
INLINE char i4_from_bool(int b) { return b ? 1 : 0; }
INLINE long i4_to_i64(char v) { return (long)v; }
INLINE char i4_from_i64(long x) { return i4_of_nibble((uint)(ulong)x); }
INLINE char i4_from_f64(double x) { return (char)f64_to_int_rne(x, -8.0, 7.0, -8, 7); }
INLINE char i4_from_f32(float x) { return i4_from_f64((double)x); }
INLINE char i4_trunc_f64(double x) { return (char)f64_to_int_trunc(x, -8.0, 7.0, -8, 7); }
INLINE uint i4_acc(char v) { return (uint)(int)v; }
INLINE char i4_unacc(uint a) { return i4_of_nibble(a); }
INLINE uint i4_add(uint a, uint b) { return a + b; }
INLINE uint i4_mul(uint a, uint b) { return a * b; }

// ---- bool: a byte, any nonzero byte true; arithmetic writes 0 or 1 --------
typedef uchar bool_s;
typedef uchar bool_v;
typedef uint bool_a;
#define bool_PACKED 0
#define bool_ZERO 0u
#define bool_IDENTITY 0u
INLINE uchar bool_get(__global const uchar *p, long i) { return p[i]; }
INLINE void bool_put(__global uchar *p, long i, uchar v) { p[i] = v; }
INLINE uchar bool_scalar(uchar raw) { return raw; }
INLINE uchar bool_canonical(uchar v) { return v != 0; }
INLINE int bool_nonzero(uchar v) { return v != 0; }
INLINE uchar bool_from_bool(int b) { return b ? 1 : 0; }
INLINE uint bool_acc(uchar v) { return v != 0; }
INLINE uchar bool_unacc(uint a) { return (uchar)a; }
// add is or, mul is and.
INLINE uint bool_add(uint a, uint b) { return a | b; }
INLINE uint bool_mul(uint a, uint b) { return a & b; }
