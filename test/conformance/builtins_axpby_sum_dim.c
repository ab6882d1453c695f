/* axpby_<t> and sum_dim_<t> (built-in kernels since 1.1, docs/kernels.md)
   for all fourteen types against references computed here, over several
   sizes and grid shapes; their exact argument sizes; and the overlaps they
   refuse (the stream then reports XDAL_ERROR_LAUNCH_FAILED).

   Every test skips, after checking the exact status, on a backend without
   built-in kernels, and leaves out the types its dtype_mask does not list. */
#include "harness.h"

#include "builtins_common.h"

/* --- axpby ---------------------------------------------------------------- */

/* alpha * a + beta * b as axpby_<t> defines it: f64 in f64; the narrower
   floats in f32 (each product and the sum rounded to f32), rounded back;
   integers wrap; bool (alpha && a) || (beta && b). */
static uint64_t ref_axpby(int t, uint64_t alpha, uint64_t beta, uint64_t a, uint64_t b) {
  if (t == XDAL_DTYPE_F64) {
    volatile double p = ref_bits_to_f64(alpha) * ref_bits_to_f64(a);
    volatile double q = ref_bits_to_f64(beta) * ref_bits_to_f64(b);
    volatile double r = p + q;
    return ref_f64_to_bits(r);
  }
  if (ref_is_float(t)) {
    volatile float p = ref_to_f32(t, alpha) * ref_to_f32(t, a);
    volatile float q = ref_to_f32(t, beta) * ref_to_f32(t, b);
    volatile float r = p + q;
    return ref_from_f32(t, r);
  }
  if (t == XDAL_DTYPE_BOOL) return (alpha != 0 && a != 0) || (beta != 0 && b != 0);
  return (alpha * a + beta * b) & ref_mask(t);
}

/* Floats: half random bits (NaN, infinities, overflow), half small values;
   other types random. */
static uint64_t input(bt_rng *rng, int t) {
  if (ref_is_float(t) && (bt_next(rng) & 1)) return bt_small_bits(rng, t);
  return bt_random_bits(rng, t);
}

#define AXPBY_N 10007

static void test_axpby(void) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0xa8b70001u};
  static const size_t counts[] = {1, 7, AXPBY_N};
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[32];
    snprintf(name, sizeof name, "axpby_%s", ref_types[t].name);
    xdal_function_t f = bt_fn(&c, name);
    if (!f) continue;
    size_t bytes = ref_bytes(t, AXPBY_N);
    void *da = bt_dev(bytes), *db = bt_dev(bytes), *dout = bt_dev(bytes);
    void *a = bt_host(t, AXPBY_N), *b = bt_host(t, AXPBY_N), *expected = bt_host(t, AXPBY_N);
    void *got = bt_host(t, AXPBY_N);
    int bad = !(da && db && dout);
    for (size_t ci = 0; ci < 3 && !bad; ci++) {
      uint64_t n = counts[ci];
      /* PyTorch's sub with alpha 2 (1, -2) for floats, then random scalars. */
      uint64_t alpha = ref_is_float(t) ? bt_from_double(t, 1.0) : bt_random_bits(&rng, t);
      uint64_t beta = ref_is_float(t) ? bt_from_double(t, -2.0) : bt_random_bits(&rng, t);
      if (ci == 2) {
        alpha = input(&rng, t);
        beta = input(&rng, t);
      }
      for (size_t i = 0; i < n; i++) {
        ref_set(t, a, i, input(&rng, t));
        ref_set(t, b, i, input(&rng, t));
        ref_set(t, expected, i, ref_axpby(t, alpha, beta, ref_get(t, a, i), ref_get(t, b, i)));
      }
      unsigned char sa[8], sb[8];
      memcpy(sa, &alpha, 8); /* little-endian: the low bytes */
      memcpy(sb, &beta, 8);
      if (ref_is_packed(t)) {
        sa[0] |= 0x70; /* not part of a 4-bit value */
        sb[0] |= 0xC0;
      }
      for (size_t s = 0; s < BT_NSHAPES && !bad; s++) {
        if (!bt_upload(da, a, ref_bytes(t, n)) || !bt_upload(db, b, ref_bytes(t, n))) break;
        if (!bt_poison(dout, ref_bytes(t, n))) break;
        size_t k = ref_scalar_bytes(t);
        xdal_kernel_arg_t args[] = {{&da, 8}, {&db, 8}, {&dout, 8}, {&n, 8}, {sa, k}, {sb, k}};
        char what[96];
        snprintf(what, sizeof what, "%s(n=%llu, %s)", name, (unsigned long long)n, bt_shapes[s].text);
        bad = !bt_run(&c, f, &bt_shapes[s], args, 6, what) || !bt_download(got, dout, ref_bytes(t, n));
        bad = bad || bt_compare(t, got, expected, n, what, NULL, t, 0) != 0 || !bt_check_untouched(t, got, n, what);
        /* In place: out = a. */
        xdal_kernel_arg_t in_place[] = {{&da, 8}, {&db, 8}, {&da, 8}, {&n, 8}, {sa, k}, {sb, k}};
        snprintf(what, sizeof what, "%s(n=%llu, %s, out = a)", name, (unsigned long long)n, bt_shapes[s].text);
        bad = bad || !bt_run(&c, f, &bt_shapes[s], in_place, 6, what) || !bt_download(got, da, ref_bytes(t, n));
        bad = bad || bt_compare(t, got, expected, n, what, NULL, t, 0) != 0;
      }
    }
    free(a);
    free(b);
    free(expected);
    free(got);
    CHECK_OK(xdal_free(da));
    CHECK_OK(xdal_free(db));
    CHECK_OK(xdal_free(dout));
  }
  bt_close(&c);
}

/* --- sum_dim ---------------------------------------------------------------- */

/* The exact sum of x[o][.][i] (small values: float sums are exact) as t's
   bits: floats rounded once, integers wrapped, bool any. */
static uint64_t exact_slice_sum(int t, const void *x, size_t reduce, size_t inner, size_t o, size_t i) {
  uint64_t total = 0;
  double sum = 0;
  for (size_t r = 0; r < reduce; r++) {
    uint64_t v = ref_get(t, x, (o * reduce + r) * inner + i);
    if (ref_is_float(t))
      sum += ref_bits_to_f64(ref_encode_float(XDAL_DTYPE_F64, ref_decode(t, v)));
    else if (t == XDAL_DTYPE_BOOL)
      total |= v != 0;
    else
      total += v;
  }
  return ref_is_float(t) ? bt_from_double(t, sum) : total & ref_mask(t);
}

static void test_sum_dim(void) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0x5d170001u};
  static const size_t shapes[][3] = {{3, 5, 2}, {2, 9, 17}, {4, 7, 1}, {1, 4100, 3}, {5, 3, 70},
                                     {2, 0, 3}, {0, 3, 2},  {1, 1, 1}};
  const size_t most_x = 4100 * 3, most_out = 5 * 70;
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[32];
    snprintf(name, sizeof name, "sum_dim_%s", ref_types[t].name);
    xdal_function_t f = bt_fn(&c, name);
    if (!f) continue;
    void *dx = bt_dev(ref_bytes(t, most_x)), *dout = bt_dev(ref_bytes(t, most_out));
    void *x = bt_host(t, most_x), *expected = bt_host(t, most_out), *got = bt_host(t, most_out);
    int bad = !(dx && dout);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !bad; si++) {
      uint64_t outer = shapes[si][0], reduce = shapes[si][1], inner = shapes[si][2];
      size_t nx = (size_t)(outer * reduce * inner), nout = (size_t)(outer * inner);
      for (size_t i = 0; i < nx; i++) ref_set(t, x, i, bt_small_bits(&rng, t));
      for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++)
          ref_set(t, expected, o * inner + i, exact_slice_sum(t, x, reduce, inner, o, i));
      if (!bt_upload(dx, x, ref_bytes(t, nx))) break;
      for (size_t s = 0; s < BT_NSHAPES && !bad; s++) {
        if (!bt_poison(dout, ref_bytes(t, nout))) break;
        xdal_kernel_arg_t args[] = {{&dx, 8}, {&dout, 8}, {&outer, 8}, {&reduce, 8}, {&inner, 8}};
        char what[96];
        snprintf(what, sizeof what, "%s([%llu, %llu, %llu], %s)", name, (unsigned long long)outer,
                 (unsigned long long)reduce, (unsigned long long)inner, bt_shapes[s].text);
        bad = !bt_run(&c, f, &bt_shapes[s], args, 5, what) || !bt_download(got, dout, ref_bytes(t, nout));
        bad = bad || bt_compare(t, got, expected, nout, what, NULL, t, 1) != 0;
        bad = bad || !bt_check_untouched(t, got, nout, what);
      }
    }
    free(x);
    free(expected);
    free(got);
    CHECK_OK(xdal_free(dx));
    CHECK_OK(xdal_free(dout));
  }
  bt_close(&c);
}

/* f32 with rounding: each output within the error bound of any order of
   summation, and the same on every grid shape (deterministic). */
static void test_sum_dim_f32_accuracy(void) {
  bt_ctx c;
  BT_BEGIN(c);
  if (!bt_has_type(&c, XDAL_DTYPE_F32)) {
    bt_close(&c);
    SKIP("dtype_mask does not list f32");
  }
  xdal_function_t f = bt_fn(&c, "sum_dim_f32");
  const uint64_t outer = 2, reduce = 10007, inner = 3;
  const size_t nx = outer * reduce * inner, nout = outer * inner;
  float *x = (float *)bt_host(XDAL_DTYPE_F32, nx), *first = (float *)bt_host(XDAL_DTYPE_F32, nout);
  float *got = (float *)bt_host(XDAL_DTYPE_F32, nout);
  void *dx = bt_dev(nx * 4), *dout = bt_dev(nout * 4);
  bt_rng rng = {0x5d170002u};
  for (size_t i = 0; i < nx; i++) x[i] = (float)((double)(bt_next(&rng) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  if (f && dx && dout && bt_upload(dx, x, nx * 4)) {
    for (size_t s = 0; s < BT_NSHAPES; s++) {
      xdal_kernel_arg_t args[] = {{&dx, 8}, {&dout, 8}, {&outer, 8}, {&reduce, 8}, {&inner, 8}};
      if (!bt_run(&c, f, &bt_shapes[s], args, 5, "sum_dim_f32") || !bt_download(got, dout, nout * 4)) break;
      for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
          double exact = 0, mag = 0;
          for (size_t r = 0; r < reduce; r++) {
            double v = x[(o * reduce + r) * inner + i];
            exact += v;
            mag += v < 0 ? -v : v;
          }
          double err = got[o * inner + i] - exact, bound = (double)reduce * mag / 16777216.0;
          CHECK_MSG((err < 0 ? -err : err) <= bound, "sum_dim_f32 (%zu, %zu) (%s): %.9g, expected %.9g +- %.3g", o, i,
                    bt_shapes[s].text, (double)got[o * inner + i], exact, bound);
        }
      if (s == 0) memcpy(first, got, nout * 4);
      CHECK_MSG(memcmp(first, got, nout * 4) == 0, "sum_dim_f32: %s gives other bits than %s", bt_shapes[s].text,
                bt_shapes[0].text);
    }
  }
  free(x);
  free(first);
  free(got);
  CHECK_OK(xdal_free(dx));
  CHECK_OK(xdal_free(dout));
  bt_close(&c);
}

/* --- Names, argument sizes, refusals ------------------------------------- */

static void expect_kernel_failure(bt_ctx *c, const char *name, const xdal_kernel_arg_t *args, size_t nargs,
                                  const char *why) {
  xdal_function_t f = bt_fn(c, name);
  if (!f) return;
  CHECK_OK(xdal_launch_kernel(f, bt_shapes[2].grid, bt_shapes[2].block, 0, c->stream, args, nargs));
  xdal_status_t st = xdal_stream_synchronize(c->stream);
  CHECK_MSG(st == XDAL_ERROR_LAUNCH_FAILED, "%s with %s: xdal_stream_synchronize returned %s, expected LAUNCH_FAILED",
            name, why, xdal_status_string(st));
  CHECK_OK(xdal_stream_destroy(c->stream));
  c->stream = NULL;
  CHECK_OK(xdal_stream_create(&c->stream, XDAL_STREAM_NON_BLOCKING, 0));
}

static void test_axpby_sum_dim_arguments(void) {
  bt_ctx c;
  BT_BEGIN(c);
  size_t found = 0;
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[32];
    snprintf(name, sizeof name, "axpby_%s", ref_types[t].name);
    found += bt_fn(&c, name) != NULL;
    snprintf(name, sizeof name, "sum_dim_%s", ref_types[t].name);
    found += bt_fn(&c, name) != NULL;
  }
  if (backend_is_fake()) CHECK_EQ(found, 28);
  if (!bt_has_type(&c, XDAL_DTYPE_F32) || !bt_has_type(&c, XDAL_DTYPE_I4)) {
    bt_close(&c);
    SKIP("dtype_mask lacks f32 or i4");
  }
  void *a = bt_dev(256), *b = bt_dev(256), *out = bt_dev(256);
  REQUIRE(a && b && out);
  uint64_t n = 4, outer = 2, reduce = 3, inner = 2;
  uint32_t n4 = 4;
  float alpha = 1.0f;
  double alpha8 = 1.0;
  uint16_t two_bytes = 1;
  unsigned char nibble = 1;
  xdal_kernel_arg_t a8[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&n, 8}, {&alpha8, 8}, {&alpha, 4}};
  bt_expect_bad_sizes(&c, "axpby_f32", a8, 6, "an 8-byte alpha");
  xdal_kernel_arg_t five[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&n, 8}, {&alpha, 4}};
  bt_expect_bad_sizes(&c, "axpby_f32", five, 5, "5 arguments (no beta)");
  xdal_kernel_arg_t add_args[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&n, 8}};
  bt_expect_bad_sizes(&c, "axpby_f32", add_args, 4, "add's arguments");
  xdal_kernel_arg_t small_n[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&n4, 4}, {&alpha, 4}, {&alpha, 4}};
  bt_expect_bad_sizes(&c, "axpby_f32", small_n, 6, "a 4-byte n");
  xdal_kernel_arg_t i4_2[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&n, 8}, {&two_bytes, 2}, {&nibble, 1}};
  bt_expect_bad_sizes(&c, "axpby_i4", i4_2, 6, "a 2-byte 4-bit alpha");
  xdal_kernel_arg_t sd4[] = {{&a, 8}, {&out, 8}, {&outer, 8}, {&reduce, 8}};
  bt_expect_bad_sizes(&c, "sum_dim_f32", sd4, 4, "4 arguments");
  xdal_kernel_arg_t sd_small[] = {{&a, 8}, {&out, 8}, {&n4, 4}, {&reduce, 8}, {&inner, 8}};
  bt_expect_bad_sizes(&c, "sum_dim_f32", sd_small, 5, "a 4-byte outer");
  xdal_kernel_arg_t sd_sum[] = {{&a, 8}, {&out, 8}, {&n, 8}};
  bt_expect_bad_sizes(&c, "sum_dim_f32", sd_sum, 3, "sum's arguments");
  CHECK_OK(xdal_stream_synchronize(c.stream));
  /* The right sizes run; the overlaps the kernels refuse fail the launch. */
  xdal_kernel_arg_t axpby_ok[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&n, 8}, {&alpha, 4}, {&alpha, 4}};
  CHECK(bt_run(&c, bt_fn(&c, "axpby_f32"), &bt_shapes[1], axpby_ok, 6, "axpby_f32"));
  xdal_kernel_arg_t i4_ok[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&n, 8}, {&nibble, 1}, {&nibble, 1}};
  CHECK(bt_run(&c, bt_fn(&c, "axpby_i4"), &bt_shapes[1], i4_ok, 6, "axpby_i4"));
  xdal_kernel_arg_t sd_ok[] = {{&a, 8}, {&out, 8}, {&outer, 8}, {&reduce, 8}, {&inner, 8}};
  CHECK(bt_run(&c, bt_fn(&c, "sum_dim_f32"), &bt_shapes[1], sd_ok, 5, "sum_dim_f32"));
  void *shifted = (unsigned char *)a + 4;
  xdal_kernel_arg_t axpby_overlap[] = {{&a, 8}, {&b, 8}, {&shifted, 8}, {&n, 8}, {&alpha, 4}, {&alpha, 4}};
  expect_kernel_failure(&c, "axpby_f32", axpby_overlap, 6, "out one element past a");
  xdal_kernel_arg_t sd_overlap[] = {{&a, 8}, {&shifted, 8}, {&outer, 8}, {&reduce, 8}, {&inner, 8}};
  expect_kernel_failure(&c, "sum_dim_f32", sd_overlap, 5, "out inside x");
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
  CHECK_OK(xdal_free(out));
  bt_close(&c);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_axpby_sum_dim_arguments),
    HARNESS_TEST(test_axpby),
    HARNESS_TEST(test_sum_dim),
    HARNESS_TEST(test_sum_dim_f32_accuracy),
};

HARNESS_MAIN(tests)
