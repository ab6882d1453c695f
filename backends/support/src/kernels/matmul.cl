// matmul_T for the type T: each work item takes a run of elements of c, or
// of bytes of c for the packed types.

// Element e of c = a * b (row-major, m x k times k x n): summed in order of
// k in the accumulator, from +0 for an empty sum and -0 otherwise, rounded
// or wrapped back once (builtin/matmul.rs).
INLINE T_(v) XCAT(matmul_element, T)(__global const T_(s) *a, __global const T_(s) *b, ulong n, ulong k, ulong e) {
  ulong i = e / n, j = e % n;
  T_(a) sum = k == 0 ? T_(ZERO) : T_(IDENTITY);
  for (ulong kk = 0; kk < k; kk++) {
    T_(a) product = T_(mul)(T_(acc)(T_(get)(a, (long)(i * k + kk))), T_(acc)(T_(get)(b, (long)(kk * n + j))));
    sum = T_(add)(sum, product);
  }
  return T_(unacc)(sum);
}

// matmul_T(const T *a, const T *b, T *c, uint64_t m, uint64_t n, uint64_t k):
// a work item per element of c (per byte of c for packed types).
__kernel void XCAT(matmul, T)(__global const T_(s) *a, __global const T_(s) *b, __global T_(s) *c, ulong m, ulong n,
                              ulong k) {
  ulong elements = m * n, first, end;
#if T_(PACKED)
  share((elements + 1) / 2, 1, &first, &end);
  for (ulong u = first; u < end; u++) {
    uint lo = T_(nibble)(XCAT(matmul_element, T)(a, b, n, k, 2 * u));
    uint hi = 2 * u + 1 < elements ? T_(nibble)(XCAT(matmul_element, T)(a, b, n, k, 2 * u + 1)) : (uint)c[u] >> 4;
    c[u] = (uchar)(lo | hi << 4);
  }
#else
  share(elements, 1, &first, &end);
  for (ulong e = first; e < end; e++) T_(put)(c, e, XCAT(matmul_element, T)(a, b, n, k, e));
#endif
}
