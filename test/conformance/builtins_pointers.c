/* The pointer arguments of built-in kernels (ABI 1.2 defect list): every
   pointer a built-in takes must lie, with the bytes the kernel will touch
   from it, inside one live allocation of the launch's device. Anything else
   is refused at the launch with XDAL_ERROR_INVALID_POINTER and a message
   naming the argument; nothing is enqueued, so the stream stays usable and
   no memory is touched. Also: a num_args no launch can carry is refused
   before the argument array is read. Runs on every backend with built-in
   kernels. */
#include "harness.h"
#include "builtins_common.h"

/* Launches f expecting `expected` from the launch itself, with a message
   naming xdal_launch_kernel and containing `needle`; then the stream must
   still be clean (nothing was enqueued). */
static void expect_refused(bt_ctx *c, xdal_function_t f, const xdal_kernel_arg_t *args, size_t nargs,
                           xdal_status_t expected, const char *needle, const char *why) {
  if (!f) return;
  xdal_status_t st = xdal_launch_kernel(f, bt_shapes[1].grid, bt_shapes[1].block, 0, c->stream, args, nargs);
  if (CHECK_MSG(st == expected, "%s: xdal_launch_kernel returned %s, expected %s", why, xdal_status_string(st),
                xdal_status_string(expected))) {
    CHECK_MESSAGE_NAMES("xdal_launch_kernel");
    char message[1024];
    harness_last_message(message, sizeof message);
    CHECK_MSG(strstr(message, needle) != NULL, "%s: the message should contain \"%s\": \"%s\"", why, needle,
              message);
  }
  CHECK_MSG(xdal_stream_synchronize(c->stream) == XDAL_SUCCESS, "%s: the stream is not clean after the refusal", why);
}

static void test_fill_past_its_allocation(void) {
  bt_ctx c;
  BT_BEGIN(c);
  xdal_function_t fill = bt_fn(&c, "fill_f32");
  void *small = NULL, *next = NULL;
  REQUIRE_OK(xdal_malloc(&small, 1024));
  REQUIRE_OK(xdal_malloc(&next, 1024));
  REQUIRE_OK(xdal_memset(next, 0x5a, 1024));
  float value = 3.0f;
  uint64_t n = 1024; /* 4 KiB into a 1 KiB allocation */
  xdal_kernel_arg_t over[] = {{&small, 8}, {&n, 8}, {&value, 4}};
  expect_refused(&c, fill, over, 3, XDAL_ERROR_INVALID_POINTER, "argument 0 (dst)", "fill_f32 n=1024 on 1 KiB");
  uint64_t fits = 256;
  xdal_kernel_arg_t whole[] = {{&small, 8}, {&fits, 8}, {&value, 4}};
  CHECK(bt_run(&c, fill, &bt_shapes[1], whole, 3, "fill_f32 n=256 on 1 KiB"));
  /* An interior pointer: the bytes from it must fit what is left. */
  void *last = (unsigned char *)small + 1020;
  uint64_t one = 1, two = 2;
  xdal_kernel_arg_t last_one[] = {{&last, 8}, {&one, 8}, {&value, 4}};
  CHECK(bt_run(&c, fill, &bt_shapes[1], last_one, 3, "fill_f32 of the last element"));
  xdal_kernel_arg_t last_two[] = {{&last, 8}, {&two, 8}, {&value, 4}};
  expect_refused(&c, fill, last_two, 3, XDAL_ERROR_INVALID_POINTER, "run past the end", "two elements from the last");
  unsigned char back[1024];
  CHECK_OK(xdal_memcpy(back, next, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_MSG(value_mismatch(back, sizeof back, 0x5a) == sizeof back, "the next allocation was written");
  CHECK_OK(xdal_free(small));
  CHECK_OK(xdal_free(next));
  bt_close(&c);
}

static void test_pointers_outside_device_memory(void) {
  bt_ctx c;
  BT_BEGIN(c);
  xdal_function_t fill = bt_fn(&c, "fill_u8");
  unsigned char stack[64];
  memset(stack, 7, sizeof stack);
  void *host = stack, *low = (void *)(uintptr_t)0x1000, *null = NULL, *freed = NULL;
  REQUIRE_OK(xdal_malloc(&freed, 256));
  CHECK_OK(xdal_free(freed));
  unsigned char value = 1;
  uint64_t n = 16, zero = 0;
  xdal_kernel_arg_t on_stack[] = {{&host, 8}, {&n, 8}, {&value, 1}};
  expect_refused(&c, fill, on_stack, 3, XDAL_ERROR_INVALID_POINTER, "argument 0 (dst)", "a host stack pointer");
  CHECK_MSG(value_mismatch(stack, sizeof stack, 7) == sizeof stack, "the host stack was written");
  xdal_kernel_arg_t at_low[] = {{&low, 8}, {&n, 8}, {&value, 1}};
  expect_refused(&c, fill, at_low, 3, XDAL_ERROR_INVALID_POINTER, "argument 0 (dst)", "address 0x1000");
  xdal_kernel_arg_t at_freed[] = {{&freed, 8}, {&n, 8}, {&value, 1}};
  expect_refused(&c, fill, at_freed, 3, XDAL_ERROR_INVALID_POINTER, "argument 0 (dst)", "a freed pointer");
  xdal_kernel_arg_t at_null[] = {{&null, 8}, {&n, 8}, {&value, 1}};
  expect_refused(&c, fill, at_null, 3, XDAL_ERROR_INVALID_POINTER, "NULL", "NULL with 16 elements");
  /* Nothing to touch: any pointer will do. */
  xdal_kernel_arg_t none[] = {{&null, 8}, {&zero, 8}, {&value, 1}};
  CHECK(bt_run(&c, fill, &bt_shapes[1], none, 3, "NULL with no elements"));
  void *pinned = NULL;
  if (CHECK_OK(xdal_malloc_host(&pinned, 4096))) {
    xdal_kernel_arg_t at_pinned[] = {{&pinned, 8}, {&n, 8}, {&value, 1}};
    expect_refused(&c, fill, at_pinned, 3, XDAL_ERROR_INVALID_POINTER, "pinned host memory", "pinned host memory");
    CHECK_OK(xdal_free_host(pinned));
  }
  bt_close(&c);
}

static void test_every_pointer_argument_is_checked(void) {
  bt_ctx c;
  BT_BEGIN(c);
  void *a = NULL, *b = NULL, *out = NULL;
  REQUIRE_OK(xdal_malloc(&a, 64));
  REQUIRE_OK(xdal_malloc(&b, 32));
  REQUIRE_OK(xdal_malloc(&out, 64));
  uint64_t n = 16; /* 64 bytes of f32: b holds only 32 */
  xdal_kernel_arg_t add[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&n, 8}};
  expect_refused(&c, bt_fn(&c, "add_f32"), add, 4, XDAL_ERROR_INVALID_POINTER, "argument 1 (b)", "add_f32, b short");
  uint64_t m = 4, k = 4, cols = 4; /* c[4x4] f32 = 64 bytes fits; b[4x4] = 64 does not fit 32 */
  xdal_kernel_arg_t mm[] = {{&a, 8}, {&b, 8}, {&out, 8}, {&m, 8}, {&cols, 8}, {&k, 8}};
  expect_refused(&c, bt_fn(&c, "matmul_f32"), mm, 6, XDAL_ERROR_INVALID_POINTER, "argument 1 (b)", "matmul_f32");
  uint64_t eight = 8;
  xdal_kernel_arg_t widen[] = {{&a, 8}, {&b, 8}, {&eight, 8}}; /* 8 f64 = 64 bytes into 32 */
  expect_refused(&c, bt_fn(&c, "cast_f32_f64"), widen, 3, XDAL_ERROR_INVALID_POINTER, "argument 1 (dst)",
                 "cast_f32_f64 into a short dst");
  xdal_kernel_arg_t narrow[] = {{&a, 8}, {&b, 8}, {&n, 8}}; /* 16 f32 -> 16 f16 = 32 bytes: fits */
  CHECK(bt_run(&c, bt_fn(&c, "cast_f32_f16"), &bt_shapes[1], narrow, 3, "cast_f32_f16 into 32 bytes"));
  uint64_t outer = 2, reduce = 4, inner = 2;
  xdal_kernel_arg_t sd[] = {{&a, 8}, {&b, 8}, {&outer, 8}, {&reduce, 8}, {&inner, 8}};
  CHECK(bt_run(&c, bt_fn(&c, "sum_dim_f32"), &bt_shapes[1], sd, 5, "sum_dim_f32 in bounds"));
  reduce = 8; /* x: 2*8*2 f32 = 128 bytes of 64 */
  expect_refused(&c, bt_fn(&c, "sum_dim_f32"), sd, 5, XDAL_ERROR_INVALID_POINTER, "argument 0 (x)", "sum_dim_f32");
  /* A strided view reaching before its base. */
  uint64_t ndim = 1, sizes[XDAL_STRIDED_MAX_DIMS] = {4};
  int64_t forward[XDAL_STRIDED_MAX_DIMS] = {1}, backward[XDAL_STRIDED_MAX_DIMS] = {-1};
  void *end = (unsigned char *)a + 12; /* elements 3, 2, 1, 0 of a going backwards: fine */
  xdal_kernel_arg_t back_ok[] = {{&end, 8}, {&b, 8}, {&ndim, 8}, {sizes, 128}, {backward, 128}, {forward, 128}};
  CHECK(bt_run(&c, bt_fn(&c, "copy_strided_f32"), &bt_shapes[1], back_ok, 6, "a backward view inside a"));
  xdal_kernel_arg_t back_out[] = {{&a, 8}, {&b, 8}, {&ndim, 8}, {sizes, 128}, {backward, 128}, {forward, 128}};
  expect_refused(&c, bt_fn(&c, "copy_strided_f32"), back_out, 6, XDAL_ERROR_INVALID_POINTER, "argument 0 (src)",
                 "a backward view from a's first element");
  float value = 0.0f;
  sizes[0] = 9; /* 9 f32 = 36 bytes into 32 */
  xdal_kernel_arg_t fs[] = {{&b, 8}, {&ndim, 8}, {sizes, 128}, {forward, 128}, {&value, 4}};
  expect_refused(&c, bt_fn(&c, "fill_strided_f32"), fs, 5, XDAL_ERROR_INVALID_POINTER, "argument 0 (dst)",
                 "fill_strided_f32 past b");
  CHECK_OK(xdal_free(a));
  CHECK_OK(xdal_free(b));
  CHECK_OK(xdal_free(out));
  bt_close(&c);
}

static void test_memory_of_another_device(void) {
  if (device_count() < 2) SKIP("needs two devices");
  bt_ctx c;
  BT_BEGIN(c);
  void *other = NULL;
  REQUIRE_OK(xdal_device_set(1));
  xdal_status_t st = xdal_malloc(&other, 256);
  REQUIRE_OK(xdal_device_set(0));
  REQUIRE_OK(st);
  unsigned char value = 1;
  uint64_t n = 16;
  xdal_kernel_arg_t args[] = {{&other, 8}, {&n, 8}, {&value, 1}};
  expect_refused(&c, bt_fn(&c, "fill_u8"), args, 3, XDAL_ERROR_INVALID_POINTER, "device 1",
                 "device 1's memory on a device 0 stream");
  CHECK_OK(xdal_free(other));
  bt_close(&c);
}

static void test_argument_counts_past_the_limit(void) {
  bt_ctx c;
  BT_BEGIN(c);
  xdal_function_t fill = bt_fn(&c, "fill_u8");
  void *d = NULL;
  REQUIRE_OK(xdal_malloc(&d, 256));
  unsigned char value = 1;
  uint64_t n = 16;
  xdal_kernel_arg_t args[] = {{&d, 8}, {&n, 8}, {&value, 1}};
  /* Only three entries exist: a count beyond the 4096-byte limit must be
     refused without reading past them. */
  expect_refused(&c, fill, args, (size_t)1 << 40, XDAL_ERROR_INVALID_VALUE, "num_args", "num_args = 2^40");
  expect_refused(&c, fill, args, SIZE_MAX, XDAL_ERROR_INVALID_VALUE, "num_args", "num_args = SIZE_MAX");
  expect_refused(&c, fill, args, 4097, XDAL_ERROR_INVALID_VALUE, "num_args", "num_args = 4097");
  CHECK(bt_run(&c, fill, &bt_shapes[1], args, 3, "the right count afterwards"));
  CHECK_OK(xdal_free(d));
  bt_close(&c);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_fill_past_its_allocation),
    HARNESS_TEST(test_pointers_outside_device_memory),
    HARNESS_TEST(test_every_pointer_argument_is_checked),
    HARNESS_TEST(test_memory_of_another_device),
    HARNESS_TEST(test_argument_counts_past_the_limit),
};

HARNESS_MAIN(tests)
