/* The CUDA backend's user modules on a GPU: PTX loaded from memory and from
 * a file, launches whose argument sizes the driver's parameter layout
 * checks, refusals of a bad image and a missing kernel, and a kernel that
 * writes to an illegal address, which loses its device (and only its
 * device) without taking the process down. Needs an NVIDIA GPU: ctest runs
 * it with XDAL_TEST_CUDA=ON (test/backends/CMakeLists.txt). The fault test
 * comes last: the device stays lost for the rest of the process. */
#include "harness.h"

#include <stdint.h>

/* touch(int *x, int v) writes v to x[0]; fault(int *x) writes 1 to x[0]
   (given an address no allocation holds, an illegal one). PTX ISA 8.0 for
   sm_80, which the built-ins use too. */
static const char ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry touch(\n"
    "\t.param .u64 touch_param_0,\n"
    "\t.param .u32 touch_param_1\n"
    ")\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<3>;\n"
    "\n"
    "\tld.param.u64 %rd1, [touch_param_0];\n"
    "\tld.param.u32 %r1, [touch_param_1];\n"
    "\tcvta.to.global.u64 %rd2, %rd1;\n"
    "\tst.global.u32 [%rd2], %r1;\n"
    "\tret;\n"
    "}\n"
    "\n"
    ".visible .entry fault(\n"
    "\t.param .u64 fault_param_0\n"
    ")\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<3>;\n"
    "\n"
    "\tld.param.u64 %rd1, [fault_param_0];\n"
    "\tcvta.to.global.u64 %rd2, %rd1;\n"
    "\tmov.u32 %r1, 1;\n"
    "\tst.global.u32 [%rd2], %r1;\n"
    "\tret;\n"
    "}\n";

static const xdal_dim3_t one = {1, 1, 1};

/* Launches touch(dst, value) on `s` through `f`, waits, and reads dst back. */
static int touched(xdal_function_t f, xdal_stream_t s, int *dst, int value) {
  xdal_kernel_arg_t args[] = {{&dst, sizeof dst}, {&value, sizeof value}};
  int back = 0;
  if (!CHECK_OK(xdal_launch_kernel(f, one, one, 0, s, args, 2))) return 0;
  if (!CHECK_OK(xdal_stream_synchronize(s))) return 0;
  if (!CHECK_OK(xdal_memcpy(&back, dst, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST))) return 0;
  return CHECK_MSG(back == value, "touch wrote %d, want %d", back, value);
}

static void test_ptx_from_memory_and_from_a_file(void) {
  xdal_stream_t s;
  int *dst;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_malloc((void **)&dst, sizeof *dst));

  xdal_module_t m;
  xdal_function_t f;
  REQUIRE_OK(xdal_module_load_data(&m, ptx, sizeof ptx));
  REQUIRE_OK(xdal_module_get_function(&f, m, "touch"));
  touched(f, s, dst, 42);

  char path[512];
  REQUIRE(temp_file(path, sizeof path, ptx, sizeof ptx - 1));
  xdal_module_t from_file;
  xdal_function_t g;
  if (CHECK_OK(xdal_module_load(&from_file, path)) && CHECK_OK(xdal_module_get_function(&g, from_file, "touch"))) {
    touched(g, s, dst, -7);
    CHECK_OK(xdal_module_unload(from_file));
  }
  remove(path);

  CHECK_OK(xdal_module_unload(m));
  CHECK_OK(xdal_free(dst));
  CHECK_OK(xdal_stream_destroy(s));
}

/* The driver tells each kernel's parameter sizes (cuFuncGetParamInfo, CUDA
   12.4): a launch whose arguments differ is refused before it runs, and
   the library goes on. */
static void test_argument_sizes_are_checked(void) {
  xdal_stream_t s;
  int *dst;
  xdal_module_t m;
  xdal_function_t f;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_malloc((void **)&dst, sizeof *dst));
  REQUIRE_OK(xdal_module_load_data(&m, ptx, sizeof ptx));
  REQUIRE_OK(xdal_module_get_function(&f, m, "touch"));

  int64_t wide = 5;
  xdal_kernel_arg_t too_wide[] = {{&dst, sizeof dst}, {&wide, sizeof wide}};
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_launch_kernel(f, one, one, 0, s, too_wide, 2));
  CHECK_MESSAGE_NAMES("xdal_launch_kernel");
  xdal_kernel_arg_t too_few[] = {{&dst, sizeof dst}};
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_launch_kernel(f, one, one, 0, s, too_few, 1));
  CHECK_OK(xdal_stream_synchronize(s));
  touched(f, s, dst, 9);

  CHECK_OK(xdal_module_unload(m));
  CHECK_OK(xdal_free(dst));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_bad_images_and_missing_kernels(void) {
  xdal_module_t m = NULL;
  static const char garbage[] = "this is no PTX, cubin or fatbin";
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_module_load_data(&m, garbage, sizeof garbage));
  CHECK_MESSAGE_NAMES("xdal_module_load_data");
  CHECK(m == NULL);
  CHECK_STATUS(XDAL_ERROR_NOT_FOUND, xdal_module_load(&m, "/nonexistent/xdal/kernels.ptx"));

  REQUIRE_OK(xdal_module_load_data(&m, ptx, sizeof ptx));
  xdal_function_t f = NULL;
  CHECK_STATUS(XDAL_ERROR_NOT_FOUND, xdal_module_get_function(&f, m, "no_such_kernel"));
  CHECK(f == NULL);
  CHECK_OK(xdal_module_unload(m));
}

/* An illegal address faults the kernel, and the driver then refuses every
   call of the device's context: the device is lost (its stream's wait and
   every later call say so), the process is not. */
static void test_an_illegal_address_loses_the_device(void) {
  xdal_stream_t s;
  xdal_module_t m;
  xdal_function_t f;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  REQUIRE_OK(xdal_module_load_data(&m, ptx, sizeof ptx));
  REQUIRE_OK(xdal_module_get_function(&f, m, "fault"));
  void *illegal = (void *)(uintptr_t)0x10;
  xdal_kernel_arg_t args[] = {{&illegal, sizeof illegal}};
  /* The launch is queued; the fault shows when the work runs. */
  xdal_status_t launched = xdal_launch_kernel(f, one, one, 0, s, args, 1);
  CHECK(launched == XDAL_SUCCESS || launched == XDAL_ERROR_DEVICE_LOST);
  CHECK_STATUS(XDAL_ERROR_DEVICE_LOST, xdal_stream_synchronize(s));
  char message[1024];
  harness_last_message(message, sizeof message);
  CHECK_MSG(strstr(message, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL && strstr(message, "device 0") != NULL,
            "the message names the fault and the device: %s", message);
  void *p = NULL;
  CHECK_STATUS(XDAL_ERROR_DEVICE_LOST, xdal_malloc(&p, 64));
  CHECK(p == NULL);
  CHECK_STATUS(XDAL_ERROR_DEVICE_LOST, xdal_device_synchronize());
  /* What does not need the device still answers. */
  int count = 0;
  CHECK_OK(xdal_device_get_count(&count));
  CHECK(count >= 1);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_ptx_from_memory_and_from_a_file),
    HARNESS_TEST(test_argument_sizes_are_checked),
    HARNESS_TEST(test_bad_images_and_missing_kernels),
    HARNESS_TEST(test_an_illegal_address_loses_the_device),
};

HARNESS_MAIN(tests)
