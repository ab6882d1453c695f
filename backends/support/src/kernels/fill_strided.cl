// fill_strided_T(T *dst, uint64_t ndim, uint64_t sizes[16],
// int64_t dst_strides[16], T value) for the type T: strided.cl's walk with
// one side (walked twice, the second copy unused), planned as it is.
__kernel void XCAT(fill_strided, T)(__global T_(s) *dst, ulong ndim, xdal_sizes sizes, xdal_strides strides,
                                    T_(s) value) {
  T_(v) v = T_(canonical)(T_(scalar)(value));
  uint dims = (uint)ndim;
  ulong first, end;
  if (!share(walk_count(dims, &sizes), T_(PACKED) ? 2 : 1, &first, &end)) return;
  ulong idx[16];
  walk_index(dims, &sizes, first, idx);
  ulong d = walk_offset(dims, idx, &strides);
  ulong unused = d;
  ulong step = walk_step(dims, &strides);
  for (ulong at = first;;) {
    ulong len = walk_run(dims, &sizes, idx, end - at);
    for (ulong r = 0; r < len; r++) T_(put)(dst, (long)(d + r * step), v);
    at += len;
    if (at == end) break;
    if (dims > 0) idx[dims - 1] += len - 1;
    d += (len - 1) * step;
    walk_next(dims, &sizes, idx, &strides, &d, &strides, &unused);
  }
}
