// sum_T and sum_dim_T for the type T. The sums follow the fake's
// order exactly (builtin/sum.rs): runs of RUN elements, each summed in
// LANES interleaved partial sums that are combined pairwise, and the run
// sums combined as a balanced binary tree whose left half holds
// floor(count / 2) runs. That order is the result's bits for floats.
#ifndef RUN
#define RUN 4096ul
#define LANES 16
// Depth of the tree over runs: 2^64 / RUN runs at most.
#define TREE_DEPTH 64
#endif

// The sum of one run: x[start + r * stride] for r in [first, first + len).
INLINE T_(a) XCAT(run_sum, T)(__global const T_(s) *x, ulong start, ulong stride, ulong first, ulong len) {
  T_(a) lanes[LANES];
  for (int j = 0; j < LANES; j++) lanes[j] = T_(IDENTITY);
  ulong at = start + first * stride;
  ulong whole = len / LANES * LANES;
  for (ulong r = 0; r < whole; r += LANES)
    for (int j = 0; j < LANES; j++) {
      lanes[j] = T_(add)(lanes[j], T_(acc)(T_(get)(x, (long)at)));
      at += stride;
    }
  for (ulong r = whole; r < len; r++) {
    int j = (int)(r - whole);
    lanes[j] = T_(add)(lanes[j], T_(acc)(T_(get)(x, (long)at)));
    at += stride;
  }
  // Pairwise: neighbours, then neighbouring pairs, and so on (a balanced
  // tree over a power of two of lanes).
  for (int step = 1; step < LANES; step *= 2)
    for (int l = 0; l < LANES; l += 2 * step) lanes[l] = T_(add)(lanes[l], lanes[l + step]);
  return lanes[0];
}

// The sum of x[start + r * stride] for r < count (count >= 1): the fake's
// recursive tree over runs, evaluated with an explicit stack.
INLINE T_(a) XCAT(total, T)(__global const T_(s) *x, ulong start, ulong stride, ulong count) {
  ulong lo[TREE_DEPTH], hi[TREE_DEPTH];
  T_(a) left[TREE_DEPTH];
  // 0: not started; 1: left half under way; 2: right half under way.
  uchar state[TREE_DEPTH];
  int depth = 0;
  lo[0] = 0;
  hi[0] = (count + RUN - 1) / RUN;
  state[0] = 0;
  T_(a) value = T_(IDENTITY);
  int returning = 0;
  while (depth >= 0) {
    if (!returning) {
      if (hi[depth] - lo[depth] == 1) {
        ulong first = lo[depth] * RUN;
        value = XCAT(run_sum, T)(x, start, stride, first, min(RUN, count - first));
        returning = 1;
        depth--;
      } else {
        state[depth] = 1;
        lo[depth + 1] = lo[depth];
        hi[depth + 1] = lo[depth] + (hi[depth] - lo[depth]) / 2;
        state[depth + 1] = 0;
        depth++;
      }
    } else if (state[depth] == 1) {
      left[depth] = value;
      state[depth] = 2;
      lo[depth + 1] = lo[depth] + (hi[depth] - lo[depth]) / 2;
      hi[depth + 1] = hi[depth];
      state[depth + 1] = 0;
      returning = 0;
      depth++;
    } else {
      value = T_(add)(left[depth], value);
      depth--;
    }
  }
  return value;
}

// sum_T(const T *x, T *out, uint64_t n): one work item sums everything,
// reading all of x before out is written (out may lie inside x).
__kernel void XCAT(sum, T)(__global const T_(s) *x, __global T_(s) *out, ulong n) {
  if (get_global_id(0) != 0) return;
  T_(a) sum = n == 0 ? T_(ZERO) : XCAT(total, T)(x, 0, 1, n);
  T_(put)(out, 0, T_(unacc)(sum));
}

// Output o of sum_dim: the sum over r of x[(o / inner) * reduce * inner +
// r * inner + o % inner], in sum_T's order; an empty sum is +0.
INLINE T_(v) XCAT(sum_dim_output, T)(__global const T_(s) *x, ulong reduce, ulong inner, ulong o) {
  if (reduce == 0) return T_(unacc)(T_(ZERO));
  return T_(unacc)(XCAT(total, T)(x, o / inner * reduce * inner + o % inner, inner, reduce));
}

// sum_dim_T(const T *x, T *out, uint64_t outer, uint64_t reduce, uint64_t inner):
// each work item takes a run of outputs (of bytes of outputs for packed types).
__kernel void XCAT(sum_dim, T)(__global const T_(s) *x, __global T_(s) *out, ulong outer, ulong reduce, ulong inner) {
  ulong outputs = outer * inner, first, end;
#if T_(PACKED)
  share((outputs + 1) / 2, 1, &first, &end);
  for (ulong u = first; u < end; u++) {
    uint lo = T_(nibble)(XCAT(sum_dim_output, T)(x, reduce, inner, 2 * u));
    uint hi = 2 * u + 1 < outputs ? T_(nibble)(XCAT(sum_dim_output, T)(x, reduce, inner, 2 * u + 1)) : (uint)out[u] >> 4;
    out[u] = (uchar)(lo | hi << 4);
  }
#else
  share(outputs, 1, &first, &end);
  for (ulong o = first; o < end; o++) T_(put)(out, o, XCAT(sum_dim_output, T)(x, reduce, inner, o));
#endif
}
