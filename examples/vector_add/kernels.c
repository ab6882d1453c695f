/* The kernel module of the vector_add example: a host shared library whose
 * exported kernels have the xdal_host_kernel_t signature. The fake backend
 * calls a kernel once per block, blocks running in parallel on its worker
 * threads; the kernel loops over the threads of its block itself. */
#include <xdal/xdal.h>
#include <stdint.h>

/* Linear index of this block in the grid, x fastest, as on a GPU. */
static uint64_t block_linear(const xdal_kernel_context_t *ctx) {
  return ((uint64_t)ctx->block_idx.z * ctx->grid_dim.y + ctx->block_idx.y) * ctx->grid_dim.x +
         ctx->block_idx.x;
}

/* out[i] = a[i] + b[i] for i < n, written as a grid-stride loop so any grid
 * and block shape covers all n elements. Arguments: const float *a,
 * const float *b, float *out, uint64_t n. */
xdal_status_t vector_add(const xdal_kernel_context_t *ctx, void *const *args);
xdal_status_t vector_add(const xdal_kernel_context_t *ctx, void *const *args) {
  const float *a = *(const float *const *)args[0];
  const float *b = *(const float *const *)args[1];
  float *out = *(float *const *)args[2];
  uint64_t n = *(const uint64_t *)args[3];
  uint64_t block_threads = (uint64_t)ctx->block_dim.x * ctx->block_dim.y * ctx->block_dim.z;
  uint64_t grid_threads =
      block_threads * ctx->grid_dim.x * ctx->grid_dim.y * ctx->grid_dim.z;
  uint64_t first = block_linear(ctx) * block_threads;
  for (uint64_t t = 0; t < block_threads; t++)
    for (uint64_t i = first + t; i < n; i += grid_threads) out[i] = a[i] + b[i];
  return XDAL_SUCCESS;
}

/* Sums each block's slice into shared memory first, then adds the block's
 * partial sum to partials[block]: shows per-block shared memory. Arguments:
 * const float *x, float *partials, uint64_t n. Needs block_threads floats of
 * shared memory. */
xdal_status_t block_sums(const xdal_kernel_context_t *ctx, void *const *args);
xdal_status_t block_sums(const xdal_kernel_context_t *ctx, void *const *args) {
  const float *x = *(const float *const *)args[0];
  float *partials = *(float *const *)args[1];
  uint64_t n = *(const uint64_t *)args[2];
  uint64_t block_threads = (uint64_t)ctx->block_dim.x * ctx->block_dim.y * ctx->block_dim.z;
  if (ctx->shared_mem_bytes < block_threads * sizeof(float)) return XDAL_ERROR_INVALID_VALUE;
  float *lanes = (float *)ctx->shared_mem;
  uint64_t block = block_linear(ctx);
  uint64_t grid_threads =
      block_threads * ctx->grid_dim.x * ctx->grid_dim.y * ctx->grid_dim.z;
  for (uint64_t t = 0; t < block_threads; t++) {
    lanes[t] = 0.0f;
    for (uint64_t i = block * block_threads + t; i < n; i += grid_threads) lanes[t] += x[i];
  }
  float total = 0.0f;
  for (uint64_t t = 0; t < block_threads; t++) total += lanes[t];
  partials[block] = total;
  return XDAL_SUCCESS;
}
