// cast_strided_from_T(const T *src, void *dst, uint64_t ndim,
// uint64_t sizes[16], int64_t src_strides[16], int64_t dst_strides[16],
// uint route) for the type T: every strided cast from T (copy_strided_T is
// the cast of T to itself), the element conversion picked by the route
// (source.rs writes `cast_element_from_T` and `route_quantum`).
//
// Each work item walks its own run of logical (row-major) indices in
// order, a stretch along the innermost dimension at a time. The host has
// checked the shape and planned the work items: one alone where the
// destination's elements may coincide (the last write wins, as in the
// fake) or where they share bytes of a packed type in a way runs cannot
// keep apart; otherwise as many as suit. One walk calling an out-of-line
// conversion, rather than a walk per route, keeps the kernel small enough
// to compile in a second or two.
__kernel void XCAT(cast_strided_from, T)(__global const T_(s) *src, __global void *dst, ulong ndim, xdal_sizes sizes,
                                         xdal_strides src_strides, xdal_strides dst_strides, uint route) {
  uint dims = (uint)ndim;
  ulong first, end;
  if (!share(walk_count(dims, &sizes), route_quantum(route), &first, &end)) return;
  ulong idx[16];
  walk_index(dims, &sizes, first, idx);
  ulong s = walk_offset(dims, idx, &src_strides);
  ulong d = walk_offset(dims, idx, &dst_strides);
  ulong s_step = walk_step(dims, &src_strides), d_step = walk_step(dims, &dst_strides);
  for (ulong at = first;;) {
    ulong len = walk_run(dims, &sizes, idx, end - at);
    for (ulong r = 0; r < len; r++) XCAT(cast_element_from, T)(route, src, (long)(s + r * s_step), dst, (long)(d + r * d_step));
    at += len;
    if (at == end) break;
    // The stretch ended a row: from its last element, step into the next.
    if (dims > 0) idx[dims - 1] += len - 1;
    s += (len - 1) * s_step;
    d += (len - 1) * d_step;
    walk_next(dims, &sizes, idx, &src_strides, &s, &dst_strides, &d);
  }
}
