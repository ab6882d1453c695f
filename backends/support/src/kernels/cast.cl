// One dense cast, CAST_NAME(const S *src, D *dst, uint64_t n):
// dst[i] = CONVERT(src[i]). Pasted in once per pair and rounding rule with
// S, D, CAST_NAME and CONVERT(x) #defined; the kernel cast_from_S calls
// the one its route argument names. Each work item takes a run of
// elements, or of bytes of a packed destination; a same-width in-place
// cast (dst == src) reads each element before writing it, in the same
// work item.
FUNCTION void CAST_NAME(__global const S_(s) *src, __global D_(s) *dst, ulong n) {
  ulong first, end;
#if D_(PACKED)
  share((n + 1) / 2, 1, &first, &end);
  for (ulong u = first; u < end; u++) {
    long i = (long)(2 * u);
    uint lo = D_(nibble)(CONVERT(S_(get)(src, i)));
    uint hi = 2 * u + 1 < n ? D_(nibble)(CONVERT(S_(get)(src, i + 1))) : (uint)dst[u] >> 4;
    dst[u] = (uchar)(lo | hi << 4);
  }
#else
  share(n, 1, &first, &end);
  for (ulong i = first; i < end; i++) D_(put)(dst, i, CONVERT(S_(get)(src, i)));
#endif
}
