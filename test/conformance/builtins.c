/* Built-in kernels (ABI.md "Built-in kernels", docs/kernels.md): the
   module, its names, exact argument sizes, dtype_mask, and fill_<t>,
   add_<t>, mul_<t>, sum_<t>, matmul_<t> for all fourteen types against a
   reference computed here (dtype_ref.h), over several counts and grid
   shapes. The casts are in builtins_cast.c.

   Every test skips, after checking the exact status, on a backend without
   built-in kernels (xdal_module_get_builtin: XDAL_ERROR_NOT_SUPPORTED), and
   leaves out the types its dtype_mask does not list. */
#include "harness.h"

#include "builtins_common.h"

static const char *const op_names[] = {"fill", "add", "mul", "sum", "matmul"};

/* --- The module --------------------------------------------------------- */

static void test_dtype_mask(void) {
  int count = device_count();
  for (int dev = 0; dev < count; dev++) {
    xdal_device_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    REQUIRE_OK(xdal_device_get_properties(dev, &props));
    xdal_module_t m = NULL;
    xdal_status_t st = xdal_module_get_builtin(&m);
    if (st == XDAL_ERROR_NOT_SUPPORTED) {
      CHECK_MSG(props.dtype_mask == 0, "device %d: dtype_mask 0x%llx, but there are no built-in kernels", dev,
                (unsigned long long)props.dtype_mask);
      SKIP("the backend has no built-in kernels (xdal_module_get_builtin: NOT_SUPPORTED)");
    }
    REQUIRE(CHECK_STATUS(XDAL_SUCCESS, st));
    CHECK_OK(xdal_module_unload(m));
    if (backend_is_fake()) {
      CHECK_MSG((props.dtype_mask & 0x3FFF) == 0x3FFF,
                "device %d: the fake backend handles all 14 types, dtype_mask is 0x%llx (bits 0..13 expected)", dev,
                (unsigned long long)props.dtype_mask);
    } else {
      printf("    note: device %d dtype_mask 0x%llx\n", dev, (unsigned long long)props.dtype_mask);
    }
  }
  /* The numbering the mask uses. */
  CHECK_EQ(XDAL_DTYPE_F64, 0);
  CHECK_EQ(XDAL_DTYPE_F8_E4M3, 4);
  CHECK_EQ(XDAL_DTYPE_F4_E2M1, 6);
  CHECK_EQ(XDAL_DTYPE_I64, 7);
  CHECK_EQ(XDAL_DTYPE_I4, 12);
  CHECK_EQ(XDAL_DTYPE_BOOL, 13);
}

static void test_builtin_names(void) {
  bt_ctx c;
  BT_BEGIN(c);
  char name[64];
  int found = 0;
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    for (int op = 0; op < 5; op++) {
      snprintf(name, sizeof name, "%s_%s", op_names[op], ref_types[t].name);
      xdal_function_t f1 = NULL, f2 = NULL;
      if (!CHECK_MSG(xdal_module_get_function(&f1, c.module, name) == XDAL_SUCCESS, "no built-in \"%s\"", name))
        continue;
      CHECK_OK(xdal_module_get_function(&f2, c.module, name));
      CHECK_MSG(f1 != NULL && f1 == f2, "\"%s\": asking twice gave %p and %p", name, (void *)f1, (void *)f2);
      found++;
    }
    for (int d = 0; d < REF_NTYPES; d++) {
      if (!bt_has_type(&c, d)) continue;
      snprintf(name, sizeof name, "cast_%s_%s", ref_types[t].name, ref_types[d].name);
      xdal_function_t f = NULL;
      if (CHECK_MSG(xdal_module_get_function(&f, c.module, name) == XDAL_SUCCESS, "no built-in \"%s\"", name))
        found += f != NULL;
    }
  }
  if (backend_is_fake()) CHECK_EQ(found, 14 * 5 + 14 * 14);
  xdal_function_t fill = bt_fn(&c, "fill_f32"), add = bt_fn(&c, "add_f32");
  CHECK(fill != NULL && add != NULL && fill != add);

  static const char *const unknown[] = {"",           "fill",         "fill_",        "fill_f128",
                                        "FILL_F32",   "fill_f32 ",    " fill_f32",    "fill_float",
                                        "cast_f32",   "cast_f32_",    "cast_f32_f33", "cast_f32_f32_f32",
                                        "sub_f32",    "div_i32",      "matmul",       "sum_f8e4m3fn",
                                        "vector_add", "fill_f32\n",   "cast__f32_f32"};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    xdal_function_t f = (xdal_function_t)0x1234;
    xdal_status_t st = xdal_module_get_function(&f, c.module, unknown[i]);
    CHECK_MSG(st == XDAL_ERROR_NOT_FOUND, "xdal_module_get_function(\"%s\") returned %s, expected NOT_FOUND",
              unknown[i], xdal_status_string(st));
    CHECK(f == (xdal_function_t)0x1234);
  }
  CHECK_MESSAGE_NAMES("xdal_module_get_function");
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_get_function(NULL, c.module, "fill_f32"));
  xdal_function_t f = NULL;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_get_function(&f, c.module, NULL));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_module_get_builtin(NULL));

  /* Each call gives a module of its own; unloading one invalidates its
     handles only. */
  xdal_module_t other = NULL;
  REQUIRE_OK(xdal_module_get_builtin(&other));
  CHECK(other != NULL && other != c.module);
  xdal_function_t other_fill = NULL;
  CHECK_OK(xdal_module_get_function(&other_fill, other, "fill_u8"));
  xdal_function_t mine_fill = bt_fn(&c, "fill_u8");
  CHECK_OK(xdal_module_unload(other));
  void *d = bt_dev(16);
  REQUIRE(d != NULL);
  uint64_t n = 16;
  uint8_t value = 42;
  xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {&value, 1}};
  xdal_dim3_t one = {1, 1, 1};
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_launch_kernel(other_fill, one, one, 0, c.stream, args, 3));
  CHECK_MESSAGE_NAMES("xdal_launch_kernel");
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_get_function(&f, other, "fill_u8"));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_module_unload(other));
  CHECK_OK(xdal_launch_kernel(mine_fill, one, one, 0, c.stream, args, 3));
  CHECK_OK(xdal_stream_synchronize(c.stream));
  unsigned char back[16];
  CHECK_OK(xdal_memcpy(back, d, 16, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_BYTES(back, 16, 42);
  CHECK_OK(xdal_free(d));
  bt_close(&c);
}

/* --- Argument sizes ------------------------------------------------------- */

static void expect_ok_sizes(bt_ctx *c, const char *name, const xdal_kernel_arg_t *args, size_t nargs) {
  xdal_function_t f = bt_fn(c, name);
  if (f) bt_run(c, f, &bt_shapes[1], args, nargs, name);
}

static void test_arg_sizes(void) {
  bt_ctx c;
  BT_BEGIN(c);
  const size_t bytes = 64;
  void *d = bt_dev(bytes), *d2 = bt_dev(bytes), *d3 = bt_dev(bytes);
  REQUIRE(d && d2 && d3);
  REQUIRE(bt_poison(d, bytes));
  uint64_t n = 4, value8 = 0x3FF0000000000000ull;
  uint32_t n4 = 4, value4 = 0x3F800000u;
  uint16_t value2 = 0x3C00;
  unsigned char big[16] = {0};
  /* fill_f32: T *dst (8), uint64_t n (8), float value (4). */
  if (bt_has_type(&c, XDAL_DTYPE_F32)) {
    xdal_kernel_arg_t v8[] = {{&d, 8}, {&n, 8}, {&value8, 8}};
    bt_expect_bad_sizes(&c, "fill_f32", v8, 3, "an 8-byte value");
    xdal_kernel_arg_t v2[] = {{&d, 8}, {&n, 8}, {&value2, 2}};
    bt_expect_bad_sizes(&c, "fill_f32", v2, 3, "a 2-byte value");
    xdal_kernel_arg_t two[] = {{&d, 8}, {&n, 8}};
    bt_expect_bad_sizes(&c, "fill_f32", two, 2, "2 arguments");
    xdal_kernel_arg_t four[] = {{&d, 8}, {&n, 8}, {&value4, 4}, {&value4, 4}};
    bt_expect_bad_sizes(&c, "fill_f32", four, 4, "4 arguments");
    bt_expect_bad_sizes(&c, "fill_f32", NULL, 0, "no arguments");
    xdal_kernel_arg_t n_small[] = {{&d, 8}, {&n4, 4}, {&value4, 4}};
    bt_expect_bad_sizes(&c, "fill_f32", n_small, 3, "a 4-byte n");
    xdal_kernel_arg_t p_small[] = {{&d, 4}, {&n, 8}, {&value4, 4}};
    bt_expect_bad_sizes(&c, "fill_f32", p_small, 3, "a 4-byte pointer");
    xdal_kernel_arg_t p_big[] = {{big, 16}, {&n, 8}, {&value4, 4}};
    bt_expect_bad_sizes(&c, "fill_f32", p_big, 3, "a 16-byte pointer");
    /* Nothing of those ran. */
    CHECK_OK(xdal_stream_synchronize(c.stream));
    unsigned char back[64 + BT_GUARD];
    CHECK_OK(xdal_memcpy(back, d, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
    CHECK_BYTES(back, sizeof back, BT_SENTINEL);
    xdal_kernel_arg_t ok[] = {{&d, 8}, {&n, 8}, {&value4, 4}};
    expect_ok_sizes(&c, "fill_f32", ok, 3);
  }
  /* Scalars are their type's size; 4-bit ones one byte. */
  static const struct {
    int t;
    size_t good, bad[3];
  } scalar[] = {
      {XDAL_DTYPE_F64, 8, {4, 2, 16}},  {XDAL_DTYPE_F16, 2, {4, 1, 8}},    {XDAL_DTYPE_BF16, 2, {4, 1, 8}},
      {XDAL_DTYPE_F8_E4M3, 1, {2, 4, 8}}, {XDAL_DTYPE_F8_E5M2, 1, {2, 4, 8}}, {XDAL_DTYPE_F4_E2M1, 1, {2, 4, 8}},
      {XDAL_DTYPE_I64, 8, {4, 2, 1}},   {XDAL_DTYPE_I32, 4, {8, 2, 1}},    {XDAL_DTYPE_I16, 2, {4, 1, 8}},
      {XDAL_DTYPE_I8, 1, {2, 4, 8}},    {XDAL_DTYPE_U8, 1, {2, 4, 8}},     {XDAL_DTYPE_I4, 1, {2, 4, 8}},
      {XDAL_DTYPE_BOOL, 1, {2, 4, 8}},
  };
  for (size_t i = 0; i < sizeof scalar / sizeof scalar[0]; i++) {
    int t = scalar[i].t;
    if (!bt_has_type(&c, t)) continue;
    char name[32], why[48];
    snprintf(name, sizeof name, "fill_%s", ref_types[t].name);
    CHECK_EQ(ref_scalar_bytes(t), scalar[i].good);
    for (int b = 0; b < 3; b++) {
      xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {big, scalar[i].bad[b]}};
      snprintf(why, sizeof why, "a %zu-byte value", scalar[i].bad[b]);
      bt_expect_bad_sizes(&c, name, args, 3, why);
    }
    xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {big, scalar[i].good}};
    expect_ok_sizes(&c, name, args, 3);
  }
  /* The other kernels. */
  if (bt_has_type(&c, XDAL_DTYPE_I32) && bt_has_type(&c, XDAL_DTYPE_I8)) {
    xdal_kernel_arg_t add3[] = {{&d, 8}, {&d2, 8}, {&d3, 8}};
    bt_expect_bad_sizes(&c, "add_i32", add3, 3, "3 arguments");
    xdal_kernel_arg_t add_n4[] = {{&d, 8}, {&d2, 8}, {&d3, 8}, {&n4, 4}};
    bt_expect_bad_sizes(&c, "mul_i32", add_n4, 4, "a 4-byte n");
    xdal_kernel_arg_t add5[] = {{&d, 8}, {&d2, 8}, {&d3, 8}, {&n, 8}, {&n, 8}};
    bt_expect_bad_sizes(&c, "add_i32", add5, 5, "5 arguments");
    xdal_kernel_arg_t cast4[] = {{&d, 8}, {&d2, 8}, {&n, 8}, {&n, 8}};
    bt_expect_bad_sizes(&c, "cast_i32_i8", cast4, 4, "4 arguments");
    xdal_kernel_arg_t cast_p4[] = {{&d, 4}, {&d2, 8}, {&n, 8}};
    bt_expect_bad_sizes(&c, "cast_i32_i8", cast_p4, 3, "a 4-byte source pointer");
    xdal_kernel_arg_t sum_n4[] = {{&d, 8}, {&d2, 8}, {&n4, 4}};
    bt_expect_bad_sizes(&c, "sum_i32", sum_n4, 3, "a 4-byte n");
    xdal_kernel_arg_t sum_n16[] = {{&d, 8}, {&d2, 8}, {big, 16}};
    bt_expect_bad_sizes(&c, "sum_i32", sum_n16, 3, "a 16-byte n");
    xdal_kernel_arg_t mm5[] = {{&d, 8}, {&d2, 8}, {&d3, 8}, {&n, 8}, {&n, 8}};
    bt_expect_bad_sizes(&c, "matmul_i32", mm5, 5, "5 arguments");
    xdal_kernel_arg_t mm7[] = {{&d, 8}, {&d2, 8}, {&d3, 8}, {&n, 8}, {&n, 8}, {&n, 8}, {&n, 8}};
    bt_expect_bad_sizes(&c, "matmul_i32", mm7, 7, "7 arguments");
    xdal_kernel_arg_t mm_k4[] = {{&d, 8}, {&d2, 8}, {&d3, 8}, {&n, 8}, {&n, 8}, {&n4, 4}};
    bt_expect_bad_sizes(&c, "matmul_i32", mm_k4, 6, "a 4-byte k");
    /* The right sizes still work: 2x2 by 2x2 fits in the buffers. */
    uint64_t two = 2;
    xdal_kernel_arg_t mm[] = {{&d, 8}, {&d2, 8}, {&d3, 8}, {&two, 8}, {&two, 8}, {&two, 8}};
    expect_ok_sizes(&c, "matmul_i32", mm, 6);
    xdal_kernel_arg_t sum[] = {{&d, 8}, {&d2, 8}, {&n, 8}};
    expect_ok_sizes(&c, "sum_i32", sum, 3);
    xdal_kernel_arg_t cast[] = {{&d, 8}, {&d2, 8}, {&n, 8}};
    expect_ok_sizes(&c, "cast_i32_i8", cast, 3);
    xdal_kernel_arg_t add[] = {{&d, 8}, {&d2, 8}, {&d3, 8}, {&n, 8}};
    expect_ok_sizes(&c, "add_i32", add, 4);
  }
  CHECK_OK(xdal_stream_synchronize(c.stream));
  CHECK_OK(xdal_free(d));
  CHECK_OK(xdal_free(d2));
  CHECK_OK(xdal_free(d3));
  bt_close(&c);
}

/* --- fill --------------------------------------------------------------- */

static const size_t elementwise_counts[] = {1, 2, 7, 10007};
#define NCOUNTS (sizeof elementwise_counts / sizeof elementwise_counts[0])
#define MAX_N 10007

static void test_fill(void) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0x5eed0001u};
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[32];
    snprintf(name, sizeof name, "fill_%s", ref_types[t].name);
    xdal_function_t f = bt_fn(&c, name);
    if (!f) continue;
    void *d = bt_dev(ref_bytes(t, MAX_N));
    unsigned char *h = (unsigned char *)bt_host(t, MAX_N);
    if (!d) continue;
    /* Values: random bits (NaN patterns included), then a fixed one. */
    uint64_t values[3] = {bt_random_bits(&rng, t), bt_random_bits(&rng, t), 1};
    if (ref_is_float(t)) values[2] = bt_from_double(t, -1.5);
    if (t == XDAL_DTYPE_BOOL) values[0] = 0;
    int bad = 0;
    for (size_t ni = 0; ni < NCOUNTS && !bad; ni++) {
      uint64_t n = elementwise_counts[ni];
      for (size_t s = 0; s < BT_NSHAPES && !bad; s++) {
        uint64_t value = values[(ni + s) % 3];
        unsigned char scalar[8];
        memcpy(scalar, &value, 8); /* little-endian: the low bytes (low nibble for 4-bit types) */
        if (!bt_poison(d, ref_bytes(t, n))) break;
        xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {scalar, ref_scalar_bytes(t)}};
        char what[96];
        snprintf(what, sizeof what, "%s(n=%llu, value 0x%llx)", name, (unsigned long long)n,
                 (unsigned long long)value);
        if (!bt_run(&c, f, &bt_shapes[s], args, 3, what)) {
          bad = 1;
          break;
        }
        if (!bt_download(h, d, ref_bytes(t, n))) break;
        size_t wrong = 0, first = 0;
        for (size_t i = 0; i < n; i++)
          if (ref_get(t, h, i) != value && wrong++ == 0) first = i;
        bad |= !CHECK_MSG(wrong == 0, "%s (%s): %zu elements wrong, the first %zu = 0x%llx", what,
                          bt_shapes[s].text, wrong, first, (unsigned long long)ref_get(t, h, first));
        bad |= !bt_check_untouched(t, h, n, what);
      }
    }
    free(h);
    CHECK_OK(xdal_free(d));
  }
  bt_close(&c);
}

/* --- add, mul ----------------------------------------------------------- */

/* Inputs for add / mul: floats half random bits (NaN, infinities,
   subnormals, overflow) and half small values; other types random. */
static uint64_t binary_input(bt_rng *rng, int t) {
  if (ref_is_float(t) && (bt_next(rng) & 1)) return bt_small_bits(rng, t);
  return bt_random_bits(rng, t);
}

static void run_binary(int op) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0xadd0000u + (uint64_t)op};
  static const size_t counts[] = {1, 7, 10007};
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[32];
    snprintf(name, sizeof name, "%s_%s", op_names[op], ref_types[t].name);
    xdal_function_t f = bt_fn(&c, name);
    if (!f) continue;
    size_t bytes = ref_bytes(t, MAX_N);
    void *da = bt_dev(bytes), *db = bt_dev(bytes), *dout = bt_dev(bytes);
    void *a = bt_host(t, MAX_N), *b = bt_host(t, MAX_N), *expected = bt_host(t, MAX_N), *got = bt_host(t, MAX_N);
    if (da && db && dout) {
      int bad = 0;
      for (size_t ci = 0; ci < 3 && !bad; ci++) {
        uint64_t n = counts[ci];
        for (size_t i = 0; i < n; i++) {
          ref_set(t, a, i, binary_input(&rng, t));
          ref_set(t, b, i, binary_input(&rng, t));
          ref_set(t, expected, i, ref_binary(t, op == 2, ref_get(t, a, i), ref_get(t, b, i)));
        }
        if (!bt_upload(da, a, ref_bytes(t, n)) || !bt_upload(db, b, ref_bytes(t, n))) break;
        for (size_t s = 0; s < BT_NSHAPES && !bad; s++) {
          if (!bt_poison(dout, ref_bytes(t, n))) break;
          xdal_kernel_arg_t args[] = {{&da, 8}, {&db, 8}, {&dout, 8}, {&n, 8}};
          char what[96];
          snprintf(what, sizeof what, "%s(n=%llu, %s)", name, (unsigned long long)n, bt_shapes[s].text);
          if (!bt_run(&c, f, &bt_shapes[s], args, 4, what) || !bt_download(got, dout, ref_bytes(t, n))) {
            bad = 1;
            break;
          }
          bad |= bt_compare(t, got, expected, n, what, NULL, t, 0) != 0;
          if (bad) {
            /* Show the inputs of the first wrong element. */
            for (size_t i = 0; i < n; i++)
              if (!ref_same(t, ref_get(t, expected, i), ref_get(t, got, i))) {
                printf("    first wrong element %zu: a = 0x%llx, b = 0x%llx\n", i,
                       (unsigned long long)ref_get(t, a, i), (unsigned long long)ref_get(t, b, i));
                break;
              }
          }
          bad |= !bt_check_untouched(t, got, n, what);
        }
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

static void test_add(void) { run_binary(1); }
static void test_mul(void) { run_binary(2); }

/* --- sum ---------------------------------------------------------------- */

/* The exact sum of n elements of t whose sums are exact in double (small
   values) as t's bits: floats rounded once, integers wrapped, bool any. */
static uint64_t exact_sum(int t, const void *x, size_t n) {
  if (ref_is_float(t)) {
    double total = 0;
    for (size_t i = 0; i < n; i++) {
      ref_value_t v = ref_decode(t, ref_get(t, x, i));
      total += ref_bits_to_f64(ref_encode_float(XDAL_DTYPE_F64, v));
    }
    return bt_from_double(t, total);
  }
  uint64_t total = 0;
  if (t == XDAL_DTYPE_BOOL) {
    for (size_t i = 0; i < n; i++) total |= ref_get(t, x, i) != 0;
    return total;
  }
  for (size_t i = 0; i < n; i++) total += ref_get(t, x, i);
  return total & ref_mask(t);
}

static void test_sum(void) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0x50570001u};
  static const size_t counts[] = {0, 1, 2, 7, 10007};
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[32];
    snprintf(name, sizeof name, "sum_%s", ref_types[t].name);
    xdal_function_t f = bt_fn(&c, name);
    if (!f) continue;
    void *dx = bt_dev(ref_bytes(t, MAX_N)), *dout = bt_dev(ref_bytes(t, 1));
    void *x = bt_host(t, MAX_N), *got = bt_host(t, 1);
    int bad = 0;
    /* For bool, the second pass puts a single 1 last, the third none. */
    for (int pass = 0; pass < (t == XDAL_DTYPE_BOOL ? 3 : 1) && dx && dout; pass++) {
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0] && !bad; ci++) {
        uint64_t n = counts[ci];
        for (size_t i = 0; i < n; i++) ref_set(t, x, i, pass == 0 ? bt_small_bits(&rng, t) : 0);
        if (pass == 1 && n > 0) ref_set(t, x, n - 1, 1);
        uint64_t expected = exact_sum(t, x, n);
        if (!bt_upload(dx, x, ref_bytes(t, n))) break;
        for (size_t s = 0; s < BT_NSHAPES && !bad; s++) {
          if (!bt_poison(dout, ref_bytes(t, 1))) break;
          xdal_kernel_arg_t args[] = {{&dx, 8}, {&dout, 8}, {&n, 8}};
          char what[96];
          snprintf(what, sizeof what, "%s(n=%llu, %s)", name, (unsigned long long)n, bt_shapes[s].text);
          if (!bt_run(&c, f, &bt_shapes[s], args, 3, what) || !bt_download(got, dout, ref_bytes(t, 1))) {
            bad = 1;
            break;
          }
          uint64_t g = ref_get(t, got, 0);
          bad |= !CHECK_MSG(bt_same_any_zero(t, expected, g), "%s: expected 0x%llx, got 0x%llx", what,
                            (unsigned long long)expected, (unsigned long long)g);
          bad |= !bt_check_untouched(t, got, 1, what);
        }
      }
    }
    free(x);
    free(got);
    CHECK_OK(xdal_free(dx));
    CHECK_OK(xdal_free(dout));
  }
  bt_close(&c);
}

/* --- matmul ------------------------------------------------------------- */

/* c[m,n] = a[m,k] b[k,n] exactly (floats: data whose sums are exact, rounded
   once to t; integers wrap; bool OR of ANDs). */
static void exact_matmul(int t, const void *a, const void *b, void *c, size_t m, size_t n, size_t k) {
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      uint64_t out;
      if (ref_is_float(t)) {
        double total = 0;
        for (size_t p = 0; p < k; p++) {
          double x = ref_bits_to_f64(ref_encode_float(XDAL_DTYPE_F64, ref_decode(t, ref_get(t, a, i * k + p))));
          double y = ref_bits_to_f64(ref_encode_float(XDAL_DTYPE_F64, ref_decode(t, ref_get(t, b, p * n + j))));
          total += x * y;
        }
        out = bt_from_double(t, total);
      } else if (t == XDAL_DTYPE_BOOL) {
        out = 0;
        for (size_t p = 0; p < k; p++) out |= ref_get(t, a, i * k + p) != 0 && ref_get(t, b, p * n + j) != 0;
      } else {
        out = 0;
        for (size_t p = 0; p < k; p++) out += ref_get(t, a, i * k + p) * ref_get(t, b, p * n + j);
        out &= ref_mask(t);
      }
      ref_set(t, c, i * n + j, out);
    }
}

static void test_matmul(void) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0x3a73u};
  static const size_t dims[][3] = {{1, 1, 1}, {5, 7, 3}, {33, 17, 65}, {4, 4, 4}, {2, 9, 1}, {7, 1, 5}};
  const size_t most = 33 * 65 + 65 * 17 + 33 * 17;
  for (int t = 0; t < REF_NTYPES; t++) {
    if (!bt_has_type(&c, t)) continue;
    char name[32];
    snprintf(name, sizeof name, "matmul_%s", ref_types[t].name);
    xdal_function_t f = bt_fn(&c, name);
    if (!f) continue;
    void *da = bt_dev(ref_bytes(t, most)), *db = bt_dev(ref_bytes(t, most)), *dc = bt_dev(ref_bytes(t, most));
    void *a = bt_host(t, most), *b = bt_host(t, most), *expected = bt_host(t, most), *got = bt_host(t, most);
    int bad = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0] && !bad && da && db && dc; di++) {
      uint64_t m = dims[di][0], n = dims[di][1], k = dims[di][2];
      for (size_t i = 0; i < m * k; i++) ref_set(t, a, i, bt_small_bits(&rng, t));
      for (size_t i = 0; i < k * n; i++) ref_set(t, b, i, bt_small_bits(&rng, t));
      exact_matmul(t, a, b, expected, m, n, k);
      if (!bt_upload(da, a, ref_bytes(t, m * k)) || !bt_upload(db, b, ref_bytes(t, k * n))) break;
      for (size_t s = 0; s < BT_NSHAPES && !bad; s++) {
        if (!bt_poison(dc, ref_bytes(t, m * n))) break;
        xdal_kernel_arg_t args[] = {{&da, 8}, {&db, 8}, {&dc, 8}, {&m, 8}, {&n, 8}, {&k, 8}};
        char what[96];
        snprintf(what, sizeof what, "%s(m=%llu, n=%llu, k=%llu, %s)", name, (unsigned long long)m,
                 (unsigned long long)n, (unsigned long long)k, bt_shapes[s].text);
        if (!bt_run(&c, f, &bt_shapes[s], args, 6, what) || !bt_download(got, dc, ref_bytes(t, m * n))) {
          bad = 1;
          break;
        }
        bad |= bt_compare(t, got, expected, m * n, what, NULL, t, 1) != 0;
        bad |= !bt_check_untouched(t, got, m * n, what);
      }
    }
    free(a);
    free(b);
    free(expected);
    free(got);
    CHECK_OK(xdal_free(da));
    CHECK_OK(xdal_free(db));
    CHECK_OK(xdal_free(dc));
  }
  bt_close(&c);
}

/* --- f32 / f64 with rounding: within the error bound of any order --------- */

static double absd(double x) { return x < 0 ? -x : x; }

static void test_float_accumulation_bounds(void) {
  bt_ctx c;
  BT_BEGIN(c);
  bt_rng rng = {0xf10a7u};
  const size_t n = 10007, m = 9, nn = 11, k = 300;
  for (int t = XDAL_DTYPE_F64; t <= XDAL_DTYPE_F32; t++) {
    if (!bt_has_type(&c, t)) continue;
    /* Unit roundoff of the accumulation. */
    const double u = t == XDAL_DTYPE_F32 ? 1.0 / 16777216.0 : 1.0 / 9007199254740992.0;
    char name[32];
    snprintf(name, sizeof name, "sum_%s", ref_types[t].name);
    xdal_function_t sum = bt_fn(&c, name);
    snprintf(name, sizeof name, "matmul_%s", ref_types[t].name);
    xdal_function_t mm = bt_fn(&c, name);
    void *x = bt_host(t, n), *out = bt_host(t, m * nn);
    void *dx = bt_dev(ref_bytes(t, n)), *dy = bt_dev(ref_bytes(t, n)), *dout = bt_dev(ref_bytes(t, m * nn));
    if (!sum || !mm || !dx || !dy || !dout) goto next;
    /* Values in [-1, 1) with full mantissas. */
    for (size_t i = 0; i < n; i++) {
      double v = (double)(int64_t)(bt_next(&rng) >> 11) / 4503599627370496.0 - 1.0;
      ref_set(t, x, i, t == XDAL_DTYPE_F32 ? ref_f32_to_bits((float)v) : ref_f64_to_bits(v));
    }
    double ref = 0, comp = 0, mag = 0;
    for (size_t i = 0; i < n; i++) { /* compensated, near exact */
      double v = t == XDAL_DTYPE_F32 ? (double)ref_bits_to_f32((uint32_t)ref_get(t, x, i))
                                     : ref_bits_to_f64(ref_get(t, x, i));
      double y = v - comp, s = ref + y;
      comp = (s - ref) - y;
      ref = s;
      mag += absd(v);
    }
    if (!bt_upload(dx, x, ref_bytes(t, n))) goto next;
    for (size_t s = 0; s < BT_NSHAPES; s++) {
      uint64_t n64 = n;
      xdal_kernel_arg_t args[] = {{&dx, 8}, {&dout, 8}, {&n64, 8}};
      if (!bt_run(&c, sum, &bt_shapes[s], args, 3, "sum") || !bt_download(out, dout, ref_bytes(t, 1))) break;
      double got = t == XDAL_DTYPE_F32 ? (double)ref_bits_to_f32((uint32_t)ref_get(t, out, 0))
                                       : ref_bits_to_f64(ref_get(t, out, 0));
      double bound = (double)n * u * mag + u * absd(ref);
      CHECK_MSG(absd(got - ref) <= bound, "sum_%s of %zu values in [-1, 1) (%s): got %.17g, expected %.17g +- %.3g",
                ref_types[t].name, n, bt_shapes[s].text, got, ref, bound);
    }
    /* matmul m x k by k x nn, operands taken from x. */
    if (!bt_upload(dy, (const unsigned char *)x + ref_bytes(t, m * k), ref_bytes(t, k * nn))) goto next;
    for (size_t s = 0; s < BT_NSHAPES; s++) {
      uint64_t m64 = m, n64 = nn, k64 = k;
      xdal_kernel_arg_t args[] = {{&dx, 8}, {&dy, 8}, {&dout, 8}, {&m64, 8}, {&n64, 8}, {&k64, 8}};
      if (!bt_run(&c, mm, &bt_shapes[s], args, 6, "matmul") || !bt_download(out, dout, ref_bytes(t, m * nn)))
        break;
      size_t wrong = 0;
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < nn; j++) {
          double r = 0, rmag = 0;
          for (size_t p = 0; p < k; p++) {
            size_t ia = i * k + p, ib = m * k + p * nn + j;
            double av = t == XDAL_DTYPE_F32 ? (double)ref_bits_to_f32((uint32_t)ref_get(t, x, ia))
                                            : ref_bits_to_f64(ref_get(t, x, ia));
            double bv = t == XDAL_DTYPE_F32 ? (double)ref_bits_to_f32((uint32_t)ref_get(t, x, ib))
                                            : ref_bits_to_f64(ref_get(t, x, ib));
            r += av * bv;
            rmag += absd(av * bv);
          }
          double got = t == XDAL_DTYPE_F32 ? (double)ref_bits_to_f32((uint32_t)ref_get(t, out, i * nn + j))
                                           : ref_bits_to_f64(ref_get(t, out, i * nn + j));
          double bound = (double)(k + 2) * u * rmag + (t == XDAL_DTYPE_F64 ? 4 * (double)k * u * rmag : 0);
          if (absd(got - r) > bound && wrong++ < 3)
            CHECK_MSG(0, "matmul_%s %zux%zux%zu (%s): c[%zu][%zu] = %.17g, expected %.17g +- %.3g", ref_types[t].name,
                      m, nn, k, bt_shapes[s].text, i, j, got, r, bound);
        }
    }
  next:
    free(x);
    free(out);
    CHECK_OK(xdal_free(dx));
    CHECK_OK(xdal_free(dy));
    CHECK_OK(xdal_free(dout));
  }
  bt_close(&c);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_dtype_mask),
    HARNESS_TEST(test_builtin_names),
    HARNESS_TEST(test_arg_sizes),
    HARNESS_TEST(test_fill),
    HARNESS_TEST(test_add),
    HARNESS_TEST(test_mul),
    HARNESS_TEST(test_sum),
    HARNESS_TEST(test_matmul),
    HARNESS_TEST(test_float_accumulation_bounds),
};

HARNESS_MAIN(tests)
