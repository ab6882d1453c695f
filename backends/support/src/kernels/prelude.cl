// The start of every built-in program: what the kernels assume of the
// compiler, the naming macros of the per-type templates, the by-value shape
// arguments of the strided kernels, and the exact float codecs.
//
// Bit-for-bit agreement with the fake backend rules out anything the
// compiler may do freely with floats: no contraction of a*b+c into a fused
// multiply-add, and NaNs converted by integer code (LLVM treats a NaN's
// payload and quiet bit as unspecified through fpext/fptrunc, the fake's
// conversions keep them as x86 does). dialect.cl, before this, turns
// contraction off for each language.

// Per-type functions are named `<dtype>_<what>` (f16_get, i4_from_i64...).
// A template is written for a type `T` (or a pair `S`, `D`) given by a
// #define before it is pasted in, and calls `T_(get)` for `f16_get`.
#define XCAT_(a, b) a##_##b
#define XCAT(a, b) XCAT_(a, b)
#define T_(what) XCAT(T, what)
#define S_(what) XCAT(S, what)
#define D_(what) XCAT(D, what)

// The float codecs and integer rules below are called from every cast and
// most arithmetic; kept out of line, each is compiled once per kernel
// rather than once per loop that calls it. Inlined, they made a kernel's
// compile on PoCL several times slower (a cast kernel per source type went
// from 4.7 s to 1.0 s), while a call costs a few cycles per element.
// dialect.cl defines OUT_OF_LINE.

// `uint64_t sizes[16]` and `int64_t strides[16]`, passed by value.
typedef struct {
  ulong v[16];
} xdal_sizes;
typedef struct {
  long v[16];
} xdal_strides;

// ---------------------------------------------------------------------------
// Binary floating-point formats of at most 16 bits (F16, the OCP F8 and F4
// formats; BF16 follows the `half` crate instead, see types.cl), as the
// fake's `minifloat::Format`: field widths, bias, NaN spelling, overflow.
#define NAN_IEEE 0     // all-ones exponent: infinities and NaNs
#define NAN_ALL_ONES 1 // only S.1111.111 is NaN (E4M3); no infinity
#define NAN_NONE 2     // no NaN, no infinity (E2M1)

// The largest finite encoding, sign aside.
OUT_OF_LINE uint mf_max_finite(int eb, int mb, int nan) {
  uint all = (1u << (eb + mb)) - 1u;
  return nan == NAN_IEEE ? all - (1u << mb) : nan == NAN_ALL_ONES ? all - 1u : all;
}

// The NaN this codec writes, sign aside: the quiet NaN with only the top
// fraction bit (IEEE), the one NaN (E4M3), none (E2M1: NaN encodes as +0).
OUT_OF_LINE uint mf_canonical_nan(int eb, int mb, int nan) {
  uint all = (1u << (eb + mb)) - 1u;
  return nan == NAN_IEEE ? (((1u << eb) - 1u) << mb) | (1u << (mb - 1)) : nan == NAN_ALL_ONES ? all : 0u;
}

// What an overflowing magnitude becomes, sign aside: infinity (IEEE
// formats) or the largest finite value (saturating formats).
OUT_OF_LINE uint mf_overflow(int eb, int mb, int nan, int saturate) {
  return nan == NAN_IEEE && !saturate ? ((1u << eb) - 1u) << mb : mf_max_finite(eb, mb, nan);
}

// The binary32 bits of a format's encoding `bits`, exactly, in integer
// arithmetic (no denormal flushing can touch it). For formats whose values
// are all binary32 normals (F16, F8, F4). IEEE NaNs keep their payload, as
// the fake's decoder does; E4M3's NaN becomes binary32's default NaN.
OUT_OF_LINE uint mf_to_f32_bits(uint bits, int eb, int mb, int bias, int nan) {
  uint width = (uint)(eb + mb);
  uint sign = ((bits >> width) & 1u) << 31;
  uint mag = bits & ((1u << width) - 1u);
  uint exp = mag >> mb;
  uint man = mag & ((1u << mb) - 1u);
  if (nan == NAN_IEEE && exp == (1u << eb) - 1u) return sign | 0x7F800000u | (man << (23 - mb));
  if (nan == NAN_ALL_ONES && mag == (1u << width) - 1u) return sign | 0x7FC00000u;
  if (exp == 0u) {
    if (man == 0u) return sign;
    // Subnormal, man * 2^(1 - bias - mb): normalise on its top bit.
    uint top = 31u - clz(man);
    uint biased = (uint)((int)top + 1 - bias - mb + 127);
    return sign | (biased << 23) | ((man << (23u - top)) & 0x7FFFFFu);
  }
  return sign | ((uint)((int)exp - bias + 127) << 23) | (man << (23 - mb));
}

// The encoding of binary32 bits `x`, rounded to nearest, ties to even,
// overflowing as the format does: the fake's `fast::encode`, equal to its
// exact `minifloat` codec applied to the widened value.
OUT_OF_LINE uint mf_from_f32_bits(uint x, int eb, int mb, int bias, int nan, int saturate) {
  uint sign = (x >> 31) << (eb + mb);
  uint u = x & 0x7FFFFFFFu;
  if (u > 0x7F800000u) return nan == NAN_NONE ? 0u : sign | mf_canonical_nan(eb, mb, nan);
  uint overflowed = sign | mf_overflow(eb, mb, nan, saturate);
  if (u == 0x7F800000u) return overflowed;
  // Binary32 subnormals (and zero) lie far below half the smallest
  // subnormal of these formats.
  if ((u >> 23) == 0u) return sign;
  int exp = (int)(u >> 23) - 127;
  uint significand = (u & 0x7FFFFFu) | 0x800000u;
  int emin = 1 - bias;
  int shift = 23 - mb + max(emin - exp, 0);
  if (shift > 25) return sign;
  uint q = significand >> shift;
  uint rem = significand & ((1u << shift) - 1u);
  uint halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1u) != 0u)) q++;
  // A normal's q carries its implicit bit into the exponent field, as does
  // a rounding carry; a subnormal's carry makes the smallest normal.
  uint mag = exp >= emin ? ((uint)(exp - emin) << mb) + q : q;
  return mag > mf_max_finite(eb, mb, nan) ? overflowed : sign | mag;
}

// The encoding of binary64 bits `x`, correctly rounded (the fake's
// `Format::encode`). Also serves BF16 from f64, with eb = 8, mb = 7.
OUT_OF_LINE uint mf_from_f64_bits(ulong x, int eb, int mb, int bias, int nan, int saturate) {
  uint sign = (uint)(x >> 63) << (eb + mb);
  ulong u = x & 0x7FFFFFFFFFFFFFFFul;
  if (u > 0x7FF0000000000000ul) return nan == NAN_NONE ? 0u : sign | mf_canonical_nan(eb, mb, nan);
  uint overflowed = sign | mf_overflow(eb, mb, nan, saturate);
  if (u == 0x7FF0000000000000ul) return overflowed;
  if ((u >> 52) == 0ul) return sign;
  int exp = (int)(u >> 52) - 1023;
  ulong significand = (u & 0xFFFFFFFFFFFFFul) | 0x10000000000000ul;
  int emin = 1 - bias;
  int shift = 52 - mb + max(emin - exp, 0);
  if (shift > 54) return sign;
  ulong q = significand >> shift;
  ulong rem = significand & ((1ul << shift) - 1ul);
  ulong halfway = 1ul << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1ul) != 0ul)) q++;
  if (exp < emin) return (uint)q > mf_max_finite(eb, mb, nan) ? overflowed : sign | (uint)q;
  // Large exponents: compare before narrowing to 32 bits.
  ulong mag = ((ulong)(exp - emin) << mb) + q;
  return mag > (ulong)mf_max_finite(eb, mb, nan) ? overflowed : sign | (uint)mag;
}

// ---------------------------------------------------------------------------
// binary32 <-> binary64 with x86's NaN rules, which the fake inherits from
// its conversions: the NaN is quieted and keeps its sign and the top of its
// payload.
OUT_OF_LINE double f64_of_f32(float x) {
  uint b = as_uint(x);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u)
    return as_double(((ulong)(b >> 31) << 63) | 0x7FF8000000000000ul | ((ulong)(b & 0x7FFFFFu) << 29));
  return (double)x;
}

OUT_OF_LINE float f32_of_f64(double x) {
  ulong b = as_ulong(x);
  if ((b & 0x7FFFFFFFFFFFFFFFul) > 0x7FF0000000000000ul)
    return as_float(((uint)(b >> 63) << 31) | 0x7FC00000u | (uint)((b >> 29) & 0x3FFFFFul));
  // Round to nearest even, the default rounding of conversions.
  return (float)x;
}

// ---------------------------------------------------------------------------
// Float arithmetic with x86's NaN rule, which the fake's arithmetic follows
// as compiled: a NaN operand makes the result that NaN, quieted, the first
// operand's when both are NaN. LLVM may swap the operands of a commutative
// operation, so the choice is made here; a NaN from an invalid operation
// (inf - inf, 0 * inf) is the hardware's own.
INLINE float f32_nan_first(float a, float b, float r) {
  uint ua = as_uint(a), ub = as_uint(b);
  if ((ua & 0x7FFFFFFFu) > 0x7F800000u) return as_float(ua | 0x400000u);
  if ((ub & 0x7FFFFFFFu) > 0x7F800000u) return as_float(ub | 0x400000u);
  return r;
}

INLINE double f64_nan_first(double a, double b, double r) {
  ulong ua = as_ulong(a), ub = as_ulong(b);
  if ((ua & 0x7FFFFFFFFFFFFFFFul) > 0x7FF0000000000000ul) return as_double(ua | 0x8000000000000ul);
  if ((ub & 0x7FFFFFFFFFFFFFFFul) > 0x7FF0000000000000ul) return as_double(ub | 0x8000000000000ul);
  return r;
}

// ---------------------------------------------------------------------------
// Integer rules (the fake's `dtype::int`).

// x rounded to nearest even and saturated to [lo, hi]; NaN gives 0. `hi`
// for i64 is 2^63, one above the largest value, which saturates.
OUT_OF_LINE long f64_to_int_rne(double x, double lo, double hi, long lo_int, long hi_int) {
  if (isnan(x)) return 0;
  double r = rint(x);
  return r <= lo ? lo_int : r >= hi ? hi_int : (long)r;
}

// x truncated toward zero and saturated to [lo, hi]; NaN gives 0.
OUT_OF_LINE long f64_to_int_trunc(double x, double lo, double hi, long lo_int, long hi_int) {
  if (isnan(x)) return 0;
  double r = trunc(x);
  return r <= lo ? lo_int : r >= hi ? hi_int : (long)r;
}

// x as a double rounded to odd: exact up to 53 significant bits, else
// truncated with the last kept bit set when anything was dropped; a second
// rounding to any narrower format then equals one rounding of x.
OUT_OF_LINE double i64_to_f64_odd(long x) {
  ulong m = x < 0 ? (ulong)0 - (ulong)x : (ulong)x;
  uint width = 64u - (uint)clz(m);
  if (width > 53u) {
    uint dropped = width - 53u;
    ulong kept = (m >> dropped) << dropped;
    m = kept == m ? kept : kept | (1ul << dropped);
  }
  double f = (double)m;
  return x < 0 ? -f : f;
}

// The signed 4-bit integer in the low nibble of `nibble`.
INLINE char i4_of_nibble(uint nibble) {
  return (char)(as_char((uchar)(nibble << 4)) >> 4);
}

// ---------------------------------------------------------------------------
// Splitting the work.

// This work item's share [*first, *end) of `count` units of work: the work
// items take equal contiguous runs in order, each a multiple of `quantum`
// long (2 for the elements of packed destinations, so no two work items
// share a byte). Contiguous runs keep each work item's accesses sequential,
// which CPU devices, running a group's work items one after another, need;
// any number of work items covers all the work. Returns whether the share
// is not empty.
INLINE int share(ulong count, ulong quantum, ulong *first, ulong *end) {
  ulong items = get_global_size(0);
  ulong per = (count + items - 1) / items;
  per = (per + quantum - 1) / quantum * quantum;
  ulong start = min(get_global_id(0) * per, count);
  *first = start;
  *end = min(start + per, count);
  return start < *end;
}

// ---------------------------------------------------------------------------
// Walking a strided view: the logical (row-major) index, its multi-index
// and the element offsets it reaches on each side.

// Elements in sizes[0..ndim) (1 for ndim 0; the host checked it fits).
INLINE ulong walk_count(uint ndim, const xdal_sizes *sizes) {
  ulong count = 1;
  for (uint k = 0; k < ndim; k++) count *= sizes->v[k];
  return count;
}

// The multi-index `idx` of logical index `at`.
INLINE void walk_index(uint ndim, const xdal_sizes *sizes, ulong at, ulong *idx) {
  for (uint k = ndim; k-- > 0;) {
    idx[k] = at % sizes->v[k];
    at /= sizes->v[k];
  }
}

// The element offset of `idx` along `strides`; wrapping arithmetic gets the
// true value, which fits, through any intermediate.
INLINE ulong walk_offset(uint ndim, const ulong *idx, const xdal_strides *strides) {
  ulong offset = 0;
  for (uint k = 0; k < ndim; k++) offset += idx[k] * (ulong)strides->v[k];
  return offset;
}

// The run from `idx` along the innermost dimension: its length, at most
// `left` (1 without dimensions: a single element), and each side's step.
INLINE ulong walk_run(uint ndim, const xdal_sizes *sizes, const ulong *idx, ulong left) {
  return ndim == 0 ? min(left, 1ul) : min(left, sizes->v[ndim - 1] - idx[ndim - 1]);
}

INLINE ulong walk_step(uint ndim, const xdal_strides *strides) {
  return ndim == 0 ? 0 : (ulong)strides->v[ndim - 1];
}

// Steps `idx` to the next logical index, moving both offsets along.
INLINE void walk_next(uint ndim, const xdal_sizes *sizes, ulong *idx, const xdal_strides *a, ulong *offset_a,
                             const xdal_strides *b, ulong *offset_b) {
  for (uint k = ndim; k-- > 0;) {
    idx[k]++;
    *offset_a += (ulong)a->v[k];
    *offset_b += (ulong)b->v[k];
    if (idx[k] < sizes->v[k]) return;
    *offset_a -= (ulong)a->v[k] * sizes->v[k];
    *offset_b -= (ulong)b->v[k] * sizes->v[k];
    idx[k] = 0;
  }
}
