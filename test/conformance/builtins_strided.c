/* Strided built-in kernels (since 1.1, docs/kernels.md): copy_strided_<t>,
   cast_strided_<s>_<d>, cast_strided_trunc_<s>_<d> and fill_strided_<t>
   over up to 16 dimensions, sizes and strides passed by value as 128-byte
   arrays. Each layout (transposed, broadcast, negative and gapped strides,
   0 and 16 dimensions, an empty shape) is checked against a plain loop over
   the row-major order of the sizes, the whole destination buffer around
   the written elements included; then the exact argument sizes, and the
   launches that are refused: at the launch for a shape no kernel takes or
   a pointer outside its allocation, else by the kernel (its stream then
   reports XDAL_ERROR_LAUNCH_FAILED).

   Every test skips, after checking the exact status, on a backend without
   built-in kernels, and leaves out the types its dtype_mask does not list. */
#include "harness.h"

#include "builtins_common.h"

/* Sizes and strides in elements; entries past ndim are not used (the
   launches put garbage there). */
typedef struct layout {
  uint64_t ndim;
  uint64_t sizes[XDAL_STRIDED_MAX_DIMS];
  int64_t src[XDAL_STRIDED_MAX_DIMS], dst[XDAL_STRIDED_MAX_DIMS];
  const char *text;
} layout_t;

static const layout_t layouts[] = {
    {0, {0}, {0}, {0}, "ndim 0 (one element)"},
    {1, {1000}, {1}, {1}, "contiguous"},
    {2, {37, 41}, {1, 37}, {41, 1}, "transposed source"},
    {2, {23, 19}, {19, 1}, {1, 23}, "transposed destination"},
    {2, {8, 33}, {0, 1}, {33, 1}, "source row broadcast"},
    {2, {9, 7}, {-7, -1}, {14, 2}, "reversed source, gapped destination"},
    {3, {3, 4, 5}, {61, 13, 3}, {1, 3, 12}, "odd strides, 3-D"},
    {16,
     {2, 1, 2, 1, 3, 1, 2, 1, 2, 1, 2, 1, 1, 2, 1, 2},
     {1, 2, 2, 4, 4, 12, 12, 24, 24, 48, 48, 96, 96, 96, 192, 192},
     {618, 617, 308, 307, 102, 101, 50, 49, 24, 23, 11, 10, 9, 4, 3, 1},
     "16 dimensions"},
    {3, {4, 0, 3}, {1, 1, 1}, {1, 1, 1}, "empty"},
};
#define NLAYOUTS (sizeof layouts / sizeof layouts[0])

/* The 16-dimension layout's destination strides are written above by hand:
   row-major with each dimension padded by one element. Checked here. */
static void check_sixteen(void) {
  const layout_t *l = &layouts[7];
  int64_t step = 1;
  for (int k = XDAL_STRIDED_MAX_DIMS - 1; k >= 0; k--) {
    CHECK_EQ(l->dst[k], step);
    step = step * (int64_t)l->sizes[k] + 1;
  }
}

static uint64_t count_of(const layout_t *l) {
  uint64_t n = 1;
  for (uint64_t k = 0; k < l->ndim; k++) n *= l->sizes[k];
  return n;
}

/* The offset of element `index` (row-major over the sizes) on one side. */
static int64_t offset_of(const layout_t *l, const int64_t *strides, uint64_t index) {
  int64_t off = 0;
  for (int k = (int)l->ndim - 1; k >= 0; k--) {
    off += (int64_t)(index % l->sizes[k]) * strides[k];
    index /= l->sizes[k];
  }
  return off;
}

/* A buffer for one side: the element index of offset 0 (even, so that it
   starts a byte of a packed type) and the element count (even). */
static void extent(const layout_t *l, const int64_t *strides, size_t *origin, size_t *len) {
  int64_t lo = 0, hi = 0;
  for (uint64_t k = 0; k < l->ndim && count_of(l) > 0; k++) {
    int64_t reach = strides[k] * (int64_t)(l->sizes[k] - 1);
    if (reach < 0) lo += reach;
    else hi += reach;
  }
  *origin = (size_t)(-lo + 3) & ~(size_t)1;
  *len = (*origin + (size_t)hi + 4) & ~(size_t)1;
}

/* The three dimension arguments, with garbage past ndim. */
typedef struct dims {
  uint64_t ndim, sizes[XDAL_STRIDED_MAX_DIMS];
  int64_t src[XDAL_STRIDED_MAX_DIMS], dst[XDAL_STRIDED_MAX_DIMS];
} dims_t;

static void dims_of(const layout_t *l, dims_t *d) {
  d->ndim = l->ndim;
  for (int k = 0; k < XDAL_STRIDED_MAX_DIMS; k++) {
    int used = (uint64_t)k < l->ndim;
    d->sizes[k] = used ? l->sizes[k] : 0xBAD0000000000000ull + (uint64_t)k;
    d->src[k] = used ? l->src[k] : -0x7777;
    d->dst[k] = used ? l->dst[k] : 0x7777;
  }
}

/* The device address of element `index` (even for packed types) of a
   buffer of type t. */
static void *elem_ptr(void *base, int t, size_t index) { return (unsigned char *)base + ref_bytes(t, index); }

/* --- copy and cast -------------------------------------------------------- */

/* Runs `name` (a strided copy or cast from st to dt; trunc: the truncating
   conversion) on every layout; 0 when something failed. */
static int run_strided_cast(bt_ctx *c, const char *name, int st, int dt, int trunc, bt_rng *rng) {
  xdal_function_t f = bt_fn(c, name);
  if (!f) return 0;
  for (size_t li = 0; li < NLAYOUTS; li++) {
    const layout_t *l = &layouts[li];
    size_t so, sn, d_o, dn;
    extent(l, l->src, &so, &sn);
    extent(l, l->dst, &d_o, &dn);
    void *src = bt_host(st, sn), *expected = bt_host(dt, dn), *got = bt_host(dt, dn);
    void *dsrc = bt_dev(ref_bytes(st, sn)), *ddst = bt_dev(ref_bytes(dt, dn));
    int ok = dsrc && ddst;
    for (size_t i = 0; i < sn; i++) ref_set(st, src, i, bt_random_bits(rng, st));
    memset(expected, BT_SENTINEL, ref_bytes(dt, dn) + BT_GUARD);
    uint64_t n = count_of(l);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t bits = ref_get(st, src, (size_t)((int64_t)so + offset_of(l, l->src, i)));
      uint64_t out = trunc ? ref_convert_trunc(st, dt, bits) : ref_convert(st, dt, bits);
      ref_set(dt, expected, (size_t)((int64_t)d_o + offset_of(l, l->dst, i)), out);
    }
    ok = ok && bt_upload(dsrc, src, ref_bytes(st, sn));
    for (size_t s = 0; ok && s < BT_NSHAPES; s += 2) {
      if (!bt_poison(ddst, ref_bytes(dt, dn))) break;
      dims_t d;
      dims_of(l, &d);
      void *ps = elem_ptr(dsrc, st, so), *pd = elem_ptr(ddst, dt, d_o);
      xdal_kernel_arg_t args[] = {{&ps, 8}, {&pd, 8}, {&d.ndim, 8}, {d.sizes, 128}, {d.src, 128}, {d.dst, 128}};
      char what[128];
      snprintf(what, sizeof what, "%s (%s, %s)", name, l->text, bt_shapes[s].text);
      ok = bt_run(c, f, &bt_shapes[s], args, 6, what) && bt_download(got, ddst, ref_bytes(dt, dn));
      ok = ok && bt_compare(dt, got, expected, dn, what, NULL, dt, 0) == 0;
      ok = ok && bt_check_untouched(dt, got, dn, what);
    }
    free(src);
    free(expected);
    free(got);
    CHECK_OK(xdal_free(dsrc));
    CHECK_OK(xdal_free(ddst));
    if (!ok) return 0;
  }
  return 1;
}

static void test_copy_strided(void) {
  bt_ctx c;
  BT_BEGIN(c);
  check_sixteen();
  bt_rng rng = {0x57d1de01u};
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[48];
    snprintf(name, sizeof name, "copy_strided_%s", ref_types[t].name);
    run_strided_cast(&c, name, t, t, 0, &rng);
  }
  bt_close(&c);
}

static void test_cast_strided(void) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0x57d1de02u};
  static const int pairs[][2] = {
      {XDAL_DTYPE_F32, XDAL_DTYPE_BF16},   {XDAL_DTYPE_F32, XDAL_DTYPE_I32},      {XDAL_DTYPE_F16, XDAL_DTYPE_I4},
      {XDAL_DTYPE_I4, XDAL_DTYPE_F32},     {XDAL_DTYPE_F64, XDAL_DTYPE_F8_E4M3},  {XDAL_DTYPE_BOOL, XDAL_DTYPE_F16},
      {XDAL_DTYPE_F4_E2M1, XDAL_DTYPE_U8}, {XDAL_DTYPE_I64, XDAL_DTYPE_I8},       {XDAL_DTYPE_BF16, XDAL_DTYPE_F4_E2M1},
  };
  for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
    int st = pairs[p][0], dt = pairs[p][1];
    if (!bt_has_type(&c, st) || !bt_has_type(&c, dt)) continue;
    for (int trunc = 0; trunc < 2; trunc++) {
      char name[64];
      snprintf(name, sizeof name, "%s_%s_%s", trunc ? "cast_strided_trunc" : "cast_strided", ref_types[st].name,
               ref_types[dt].name);
      run_strided_cast(&c, name, st, dt, trunc, &rng);
    }
  }
  bt_close(&c);
}

/* --- fill ------------------------------------------------------------------- */

static void test_fill_strided(void) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0x57d1de03u};
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[48];
    snprintf(name, sizeof name, "fill_strided_%s", ref_types[t].name);
    xdal_function_t f = bt_fn(&c, name);
    if (!f) continue;
    int ok = 1;
    for (size_t li = 0; ok && li < NLAYOUTS; li++) {
      const layout_t *l = &layouts[li];
      size_t d_o, dn;
      extent(l, l->dst, &d_o, &dn);
      void *expected = bt_host(t, dn), *got = bt_host(t, dn), *ddst = bt_dev(ref_bytes(t, dn));
      uint64_t value = bt_random_bits(&rng, t);
      memset(expected, BT_SENTINEL, ref_bytes(t, dn) + BT_GUARD);
      for (uint64_t i = 0; i < count_of(l); i++)
        ref_set(t, expected, (size_t)((int64_t)d_o + offset_of(l, l->dst, i)), value);
      for (size_t s = 1; ddst && ok && s < BT_NSHAPES; s += 2) {
        if (!bt_poison(ddst, ref_bytes(t, dn))) break;
        dims_t d;
        dims_of(l, &d);
        void *pd = elem_ptr(ddst, t, d_o);
        unsigned char scalar[8];
        memcpy(scalar, &value, 8); /* little-endian: the low bytes */
        if (ref_is_packed(t)) scalar[0] |= 0xB0; /* not part of a 4-bit value */
        xdal_kernel_arg_t args[] = {
            {&pd, 8}, {&d.ndim, 8}, {d.sizes, 128}, {d.dst, 128}, {scalar, ref_scalar_bytes(t)}};
        char what[128];
        snprintf(what, sizeof what, "%s (%s, %s)", name, l->text, bt_shapes[s].text);
        ok = bt_run(&c, f, &bt_shapes[s], args, 5, what) && bt_download(got, ddst, ref_bytes(t, dn));
        ok = ok && bt_compare(t, got, expected, dn, what, NULL, t, 0) == 0;
        ok = ok && bt_check_untouched(t, got, dn, what);
      }
      free(expected);
      free(got);
      CHECK_OK(xdal_free(ddst));
    }
  }
  bt_close(&c);
}

/* --- Names and argument sizes -------------------------------------------- */

static void test_strided_names(void) {
  bt_ctx c;
  BT_BEGIN(c);
  size_t found = 0;
  char name[64];
  for (int s = 0; s < REF_NTYPES; s++) {
    if (!bt_has_type(&c, s)) continue;
    static const char *const per_type[] = {"copy_strided", "fill_strided"};
    for (int k = 0; k < 2; k++) {
      snprintf(name, sizeof name, "%s_%s", per_type[k], ref_types[s].name);
      found += bt_fn(&c, name) != NULL;
    }
    for (int d = 0; d < REF_NTYPES; d++) {
      if (!bt_has_type(&c, d)) continue;
      static const char *const per_pair[] = {"cast_strided", "cast_strided_trunc", "cast_trunc"};
      for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof name, "%s_%s_%s", per_pair[k], ref_types[s].name, ref_types[d].name);
        found += bt_fn(&c, name) != NULL;
      }
    }
  }
  if (backend_is_fake()) CHECK_EQ(found, 14 * 2 + 3 * 14 * 14);
  static const char *const unknown[] = {"copy_strided", "copy_strided_f32_f32", "cast_strided_f32",
                                        "cast_trunc_strided_f32_i32", "fill_strided_", "strided_copy_f32"};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    xdal_function_t f = NULL;
    xdal_status_t st = xdal_module_get_function(&f, c.module, unknown[i]);
    CHECK_MSG(st == XDAL_ERROR_NOT_FOUND, "xdal_module_get_function(\"%s\") returned %s, expected NOT_FOUND",
              unknown[i], xdal_status_string(st));
  }
  bt_close(&c);
}

static void test_strided_arg_sizes(void) {
  bt_ctx c;
  BT_BEGIN(c);
  if (!bt_has_type(&c, XDAL_DTYPE_F32) || !bt_has_type(&c, XDAL_DTYPE_F16) || !bt_has_type(&c, XDAL_DTYPE_I32)) {
    bt_close(&c);
    SKIP("dtype_mask lacks f32, f16 or i32");
  }
  void *a = bt_dev(256), *b = bt_dev(256);
  REQUIRE(a && b);
  REQUIRE(bt_poison(b, 256));
  uint64_t ndim = 1, sizes[XDAL_STRIDED_MAX_DIMS] = {4}, big[32] = {0};
  uint32_t ndim4 = 1;
  int64_t one[XDAL_STRIDED_MAX_DIMS] = {1};
  float value = 2.0f;
  double value8 = 2.0;
  xdal_kernel_arg_t five[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 128}};
  bt_expect_bad_sizes(&c, "copy_strided_f32", five, 5, "5 arguments");
  xdal_kernel_arg_t seven[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 128}, {one, 128}, {&ndim, 8}};
  bt_expect_bad_sizes(&c, "copy_strided_f32", seven, 7, "7 arguments");
  xdal_kernel_arg_t n4[] = {{&a, 8}, {&b, 8}, {&ndim4, 4}, {sizes, 128}, {one, 128}, {one, 128}};
  bt_expect_bad_sizes(&c, "copy_strided_f32", n4, 6, "a 4-byte ndim");
  xdal_kernel_arg_t sizes64[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {sizes, 64}, {one, 128}, {one, 128}};
  bt_expect_bad_sizes(&c, "copy_strided_f32", sizes64, 6, "64-byte sizes");
  xdal_kernel_arg_t sizes256[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {big, 256}, {one, 128}, {one, 128}};
  bt_expect_bad_sizes(&c, "cast_strided_f32_i32", sizes256, 6, "256-byte sizes");
  xdal_kernel_arg_t strides_ptr[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 8}, {one, 128}};
  bt_expect_bad_sizes(&c, "cast_strided_trunc_f32_i32", strides_ptr, 6, "8-byte source strides");
  xdal_kernel_arg_t dst127[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 128}, {one, 127}};
  bt_expect_bad_sizes(&c, "cast_strided_trunc_f32_i32", dst127, 6, "127-byte destination strides");
  xdal_kernel_arg_t fill8[] = {{&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 128}, {&value8, 8}};
  bt_expect_bad_sizes(&c, "fill_strided_f32", fill8, 5, "an 8-byte value");
  xdal_kernel_arg_t fill4[] = {{&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 128}, {&value, 4}};
  bt_expect_bad_sizes(&c, "fill_strided_f16", fill4, 5, "a 4-byte value");
  xdal_kernel_arg_t fill_src[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 128}, {&value, 4}};
  bt_expect_bad_sizes(&c, "fill_strided_f32", fill_src, 6, "a copy's arguments");
  xdal_kernel_arg_t trunc4[] = {{&a, 8}, {&b, 8}, {&ndim4, 4}};
  bt_expect_bad_sizes(&c, "cast_trunc_f32_i32", trunc4, 3, "a 4-byte n");
  /* Nothing of those ran; the right sizes do. */
  CHECK_OK(xdal_stream_synchronize(c.stream));
  unsigned char back[256 + BT_GUARD];
  CHECK_OK(xdal_memcpy(back, b, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, sizeof back, BT_SENTINEL);
  xdal_kernel_arg_t copy[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 128}, {one, 128}};
  CHECK(bt_run(&c, bt_fn(&c, "cast_strided_trunc_f32_i32"), &bt_shapes[1], copy, 6, "cast_strided_trunc_f32_i32"));
  xdal_kernel_arg_t fill[] = {{&b, 8}, {&ndim, 8}, {sizes, 128}, {one, 128}, {&value, 4}};
  CHECK(bt_run(&c, bt_fn(&c, "fill_strided_f32"), &bt_shapes[1], fill, 5, "fill_strided_f32"));
  float four[4];
  CHECK_OK(xdal_memcpy(four, b, sizeof four, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK(four[0] == 2.0f && four[3] == 2.0f);
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
  bt_close(&c);
}

/* --- Launches the kernels refuse ----------------------------------------- */

/* Launches f with args: the launch succeeds (its sizes are right), the
   kernel fails, so the stream reports LAUNCH_FAILED (then it is replaced). */
static void expect_kernel_failure(bt_ctx *c, xdal_function_t f, const xdal_kernel_arg_t *args, size_t nargs,
                                  const char *why) {
  if (!f) return;
  CHECK_OK(xdal_launch_kernel(f, bt_shapes[2].grid, bt_shapes[2].block, 0, c->stream, args, nargs));
  xdal_status_t st = xdal_stream_synchronize(c->stream);
  CHECK_MSG(st == XDAL_ERROR_LAUNCH_FAILED, "%s: xdal_stream_synchronize returned %s, expected LAUNCH_FAILED", why,
            xdal_status_string(st));
  CHECK_OK(xdal_stream_destroy(c->stream));
  c->stream = NULL;
  CHECK_OK(xdal_stream_create(&c->stream, XDAL_STREAM_NON_BLOCKING, 0));
}

/* Launches f expecting the launch itself to refuse with `expected` (since
   1.2 the front checks the shape and every pointer before enqueuing). */
static void expect_launch_refused(bt_ctx *c, xdal_function_t f, const xdal_kernel_arg_t *args, size_t nargs,
                                  xdal_status_t expected, const char *why) {
  if (!f) return;
  xdal_status_t st = xdal_launch_kernel(f, bt_shapes[2].grid, bt_shapes[2].block, 0, c->stream, args, nargs);
  if (CHECK_MSG(st == expected, "%s: xdal_launch_kernel returned %s, expected %s", why, xdal_status_string(st),
                xdal_status_string(expected)))
    CHECK_MESSAGE_NAMES("xdal_launch_kernel");
  CHECK_OK(xdal_stream_synchronize(c->stream));
}

static void test_strided_refusals(void) {
  bt_ctx c;
  BT_BEGIN(c);
  if (!bt_has_type(&c, XDAL_DTYPE_F32) || !bt_has_type(&c, XDAL_DTYPE_F64)) {
    bt_close(&c);
    SKIP("dtype_mask lacks f32 or f64");
  }
  xdal_function_t copy = bt_fn(&c, "copy_strided_f32"), fill = bt_fn(&c, "fill_strided_f32");
  xdal_function_t widen = bt_fn(&c, "cast_strided_f32_f64");
  void *a = bt_dev(4096), *b = bt_dev(4096), *null = NULL;
  REQUIRE(a && b);
  void *a16 = (unsigned char *)a + 16, *odd = (unsigned char *)b + 2;
  uint64_t ndim = 2, ndim17 = XDAL_STRIDED_MAX_DIMS + 1, sizes[XDAL_STRIDED_MAX_DIMS] = {4, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  int64_t rows[XDAL_STRIDED_MAX_DIMS] = {3, 1}, broadcast[XDAL_STRIDED_MAX_DIMS] = {0, 1}, transposed[XDAL_STRIDED_MAX_DIMS] = {1, 4};
  float value = 1.0f;
#define COPY(src, dst, nd, s, d)                                                                                \
  {                                                                                                             \
    {&src, 8}, {&dst, 8}, {&nd, 8}, {sizes, 128}, {s, 128}, { d, 128 }                                          \
  }
  xdal_kernel_arg_t zero_stride[] = COPY(a, b, ndim, rows, broadcast);
  expect_kernel_failure(&c, copy, zero_stride, 6, "a destination stride of 0 over 4 elements");
  xdal_kernel_arg_t too_many[] = COPY(a, b, ndim17, rows, rows);
  expect_launch_refused(&c, copy, too_many, 6, XDAL_ERROR_INVALID_VALUE, "ndim 17");
  xdal_kernel_arg_t null_dst[] = COPY(a, null, ndim, rows, rows);
  expect_launch_refused(&c, copy, null_dst, 6, XDAL_ERROR_INVALID_POINTER, "a NULL destination");
  xdal_kernel_arg_t misaligned[] = COPY(a, odd, ndim, rows, rows);
  expect_kernel_failure(&c, copy, misaligned, 6, "a misaligned destination");
  xdal_kernel_arg_t overlap[] = COPY(a, a16, ndim, rows, rows);
  expect_kernel_failure(&c, copy, overlap, 6, "overlapping source and destination");
  xdal_kernel_arg_t transpose_onto_itself[] = COPY(a, a, ndim, rows, transposed);
  expect_kernel_failure(&c, copy, transpose_onto_itself, 6, "a transpose onto itself");
  xdal_kernel_arg_t wider_in_place[] = COPY(a, a, ndim, rows, rows);
  expect_kernel_failure(&c, widen, wider_in_place, 6, "an in-place cast between widths");
  xdal_kernel_arg_t fill_zero[] = {{&b, 8}, {&ndim, 8}, {sizes, 128}, {broadcast, 128}, {&value, 4}};
  expect_kernel_failure(&c, fill, fill_zero, 5, "a fill with a stride of 0 over 4 elements");
  /* Allowed: a stride of 0 over one element, nothing to do with NULL
     arrays, and the same elements in place. */
  uint64_t one_row[XDAL_STRIDED_MAX_DIMS] = {1, 3};
  xdal_kernel_arg_t single[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {one_row, 128}, {rows, 128}, {broadcast, 128}};
  CHECK(bt_run(&c, copy, &bt_shapes[2], single, 6, "a stride of 0 over one element"));
  uint64_t empty[XDAL_STRIDED_MAX_DIMS] = {4, 0};
  xdal_kernel_arg_t nothing[] = {{&null, 8}, {&null, 8}, {&ndim, 8}, {empty, 128}, {rows, 128}, {rows, 128}};
  CHECK(bt_run(&c, copy, &bt_shapes[2], nothing, 6, "no elements, NULL arrays"));
  xdal_kernel_arg_t in_place[] = COPY(a, a, ndim, transposed, transposed);
  CHECK(bt_run(&c, copy, &bt_shapes[2], in_place, 6, "in place, same strides"));
#undef COPY
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
  bt_close(&c);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_strided_names),  HARNESS_TEST(test_strided_arg_sizes), HARNESS_TEST(test_copy_strided),
    HARNESS_TEST(test_cast_strided),   HARNESS_TEST(test_fill_strided),      HARNESS_TEST(test_strided_refusals),
};

HARNESS_MAIN(tests)
