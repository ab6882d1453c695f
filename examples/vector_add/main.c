/* vector_add: loads a kernel module, launches it over a 2-D grid on a
 * stream, and checks the result on the host. Usage:
 *   xdal_example_vector_add <path to the kernel module .so>
 * CMake passes the module it built next to this program. */
#include <xdal/xdal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    xdal_status_t status_ = (call);                                          \
    if (status_ != XDAL_SUCCESS) {                                           \
      char msg_[512];                                                        \
      xdal_get_last_error_message(msg_, sizeof msg_, NULL);                  \
      fprintf(stderr, "%s failed: %s: %s\n", #call, xdal_status_string(status_), msg_); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <kernel module .so>\n", argv[0]);
    return 2;
  }
  enum { N = 1000003 }; /* not a multiple of any block shape */
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *out = malloc(N * sizeof *out);
  if (!a || !b || !out) return 1;
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)(i % 1000);
  }

  xdal_module_t module;
  xdal_function_t vector_add, block_sums;
  CHECK(xdal_module_load(&module, argv[1]));
  CHECK(xdal_module_get_function(&vector_add, module, "vector_add"));
  CHECK(xdal_module_get_function(&block_sums, module, "block_sums"));

  xdal_stream_t stream;
  CHECK(xdal_stream_create(&stream, XDAL_STREAM_DEFAULT, 0));
  void *da, *db, *dout, *dpartials;
  CHECK(xdal_malloc(&da, N * sizeof(float)));
  CHECK(xdal_malloc(&db, N * sizeof(float)));
  CHECK(xdal_malloc(&dout, N * sizeof(float)));
  CHECK(xdal_memcpy_async(da, a, N * sizeof(float), XDAL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK(xdal_memcpy_async(db, b, N * sizeof(float), XDAL_MEMCPY_HOST_TO_DEVICE, stream));

  /* A 2-D grid of 2-D blocks: 16 x 8 blocks of 32 x 4 threads. */
  uint64_t n = N;
  xdal_dim3_t grid = {16, 8, 1}, block = {32, 4, 1};
  xdal_kernel_arg_t args[] = {
      {&da, sizeof da}, {&db, sizeof db}, {&dout, sizeof dout}, {&n, sizeof n}};
  CHECK(xdal_launch_kernel(vector_add, grid, block, 0, stream, args, 4));

  /* Per-block partial sums of the result, using shared memory. */
  uint64_t blocks = (uint64_t)grid.x * grid.y, threads = (uint64_t)block.x * block.y;
  CHECK(xdal_malloc(&dpartials, blocks * sizeof(float)));
  xdal_kernel_arg_t sum_args[] = {{&dout, sizeof dout}, {&dpartials, sizeof dpartials}, {&n, sizeof n}};
  CHECK(xdal_launch_kernel(block_sums, grid, block, threads * sizeof(float), stream, sum_args, 3));

  float *partials = malloc(blocks * sizeof *partials);
  if (!partials) return 1;
  CHECK(xdal_memcpy_async(out, dout, N * sizeof(float), XDAL_MEMCPY_DEVICE_TO_HOST, stream));
  CHECK(xdal_memcpy_async(partials, dpartials, blocks * sizeof(float), XDAL_MEMCPY_DEVICE_TO_HOST, stream));
  CHECK(xdal_stream_synchronize(stream));

  int wrong = 0;
  double expected_total = 0.0, total = 0.0;
  for (int i = 0; i < N; i++) {
    if (out[i] != a[i] + b[i]) wrong++;
    expected_total += (double)a[i] + (double)b[i];
  }
  for (uint64_t i = 0; i < blocks; i++) total += partials[i];
  printf("vector_add over a %ux%u grid of %ux%u blocks: %d of %d elements wrong\n", grid.x, grid.y,
         block.x, block.y, wrong, N);
  printf("block_sums: %.6g (expected %.6g)\n", total, expected_total);
  int ok = wrong == 0 && fabs(total - expected_total) <= 1e-4 * expected_total;

  CHECK(xdal_free(da));
  CHECK(xdal_free(db));
  CHECK(xdal_free(dout));
  CHECK(xdal_free(dpartials));
  CHECK(xdal_stream_destroy(stream));
  CHECK(xdal_module_unload(module));
  free(a);
  free(b);
  free(out);
  free(partials);
  puts(ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
