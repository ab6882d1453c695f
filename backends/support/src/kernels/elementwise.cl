// fill_T, add_T, mul_T and axpby_T for the type T (#defined before this is
// pasted in): each work item takes a run of elements, or of bytes for the
// packed types, so that no two work items ever write one byte. A packed array of
// odd length ends in a byte whose high nibble is not the kernel's: it is
// kept.

// fill_T(T *dst, uint64_t n, T value): dst[i] = value.
__kernel void XCAT(fill, T)(__global T_(s) *dst, ulong n, T_(s) value) {
  T_(v) v = T_(canonical)(T_(scalar)(value));
  ulong first, end;
#if T_(PACKED)
  uint nibble = T_(nibble)(v);
  share((n + 1) / 2, 1, &first, &end);
  for (ulong u = first; u < end; u++)
    dst[u] = 2 * u + 1 < n ? (uchar)(nibble * 0x11u) : (uchar)((dst[u] & 0xF0u) | nibble);
#else
  share(n, 1, &first, &end);
  for (ulong i = first; i < end; i++) T_(put)(dst, i, v);
#endif
}

// The operations of zip_T.
#define ZIP_ADD 0
#define ZIP_MUL 1
#define ZIP_AXPBY 2

// One element of add, mul or axpby, in the accumulator, rounded or
// wrapped back once: axpby is alpha * x + beta * y, with both products
// rounded (no fused multiply-add) and operands in the fake's order.
INLINE T_(v) XCAT(zip_op, T)(int op, T_(v) x, T_(v) y, T_(a) alpha, T_(a) beta) {
  T_(a) p = T_(acc)(x);
  T_(a) q = T_(acc)(y);
  if (op == ZIP_ADD) return T_(unacc)(T_(add)(p, q));
  if (op == ZIP_MUL) return T_(unacc)(T_(mul)(p, q));
  T_(a) scaled_p = T_(mul)(alpha, p);
  T_(a) scaled_q = T_(mul)(beta, q);
  return T_(unacc)(T_(add)(scaled_p, scaled_q));
}

// out[i] = op(a[i], b[i]) for i < n; `out` may be `a` and/or `b` (each
// element, or byte, is read before it is written, by one work item).
INLINE void XCAT(zip, T)(__global const T_(s) *a, __global const T_(s) *b, __global T_(s) *out, ulong n, int op,
                                T_(a) alpha, T_(a) beta) {
  ulong first, end;
#if T_(PACKED)
  share((n + 1) / 2, 1, &first, &end);
  for (ulong u = first; u < end; u++) {
    long i = (long)(2 * u);
    uint lo = T_(nibble)(XCAT(zip_op, T)(op, T_(get)(a, i), T_(get)(b, i), alpha, beta));
    uint hi = 2 * u + 1 < n ? T_(nibble)(XCAT(zip_op, T)(op, T_(get)(a, i + 1), T_(get)(b, i + 1), alpha, beta))
                            : (uint)out[u] >> 4;
    out[u] = (uchar)(lo | hi << 4);
  }
#else
  share(n, 1, &first, &end);
  for (ulong i = first; i < end; i++) T_(put)(out, i, XCAT(zip_op, T)(op, T_(get)(a, i), T_(get)(b, i), alpha, beta));
#endif
}

// add_T(const T *a, const T *b, T *out, uint64_t n)
__kernel void XCAT(add, T)(__global const T_(s) *a, __global const T_(s) *b, __global T_(s) *out, ulong n) {
  XCAT(zip, T)(a, b, out, n, ZIP_ADD, T_(ZERO), T_(ZERO));
}

// mul_T(const T *a, const T *b, T *out, uint64_t n)
__kernel void XCAT(mul, T)(__global const T_(s) *a, __global const T_(s) *b, __global T_(s) *out, ulong n) {
  XCAT(zip, T)(a, b, out, n, ZIP_MUL, T_(ZERO), T_(ZERO));
}

// axpby_T(const T *a, const T *b, T *out, uint64_t n, T alpha, T beta)
__kernel void XCAT(axpby, T)(__global const T_(s) *a, __global const T_(s) *b, __global T_(s) *out, ulong n,
                             T_(s) alpha, T_(s) beta) {
  XCAT(zip, T)(a, b, out, n, ZIP_AXPBY, T_(acc)(T_(scalar)(alpha)), T_(acc)(T_(scalar)(beta)));
}

#undef ZIP_ADD
#undef ZIP_MUL
#undef ZIP_AXPBY
