/*
 * The kernel module of the conformance tests (kernels.c): a host shared
 * library of xdal_host_kernel_t kernels, as the fake backend loads them
 * (docs/kernels.md). Each kernel is called once per block and loops over
 * the threads of its block itself. Needs only the header: nothing here
 * calls libxdal.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_kernels.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define KERNEL(name)                                                                                          \
  xdal_status_t name(const xdal_kernel_context_t *ctx, void *const *args);                                   \
  xdal_status_t name(const xdal_kernel_context_t *ctx, void *const *args)

/* Linear index of this block in the grid, x fastest. */
static uint64_t block_linear(const xdal_kernel_context_t *ctx) {
  return ((uint64_t)ctx->block_idx.z * ctx->grid_dim.y + ctx->block_idx.y) * ctx->grid_dim.x + ctx->block_idx.x;
}

static uint64_t grid_blocks(const xdal_kernel_context_t *ctx) {
  return (uint64_t)ctx->grid_dim.x * ctx->grid_dim.y * ctx->grid_dim.z;
}

static uint64_t block_threads(const xdal_kernel_context_t *ctx) {
  return (uint64_t)ctx->block_dim.x * ctx->block_dim.y * ctx->block_dim.z;
}

static void pause_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* vector_add(const float *a, const float *b, float *out, uint64_t n):
   out[i] = a[i] + b[i], a grid-stride loop over any grid and block. */
KERNEL(vector_add) {
  const float *a = *(const float *const *)args[0];
  const float *b = *(const float *const *)args[1];
  float *out = *(float *const *)args[2];
  uint64_t n = *(const uint64_t *)args[3];
  uint64_t threads = block_threads(ctx), all = threads * grid_blocks(ctx);
  uint64_t first = block_linear(ctx) * threads;
  for (uint64_t t = 0; t < threads; t++)
    for (uint64_t i = first + t; i < n; i += all) out[i] = a[i] + b[i];
  return XDAL_SUCCESS;
}

/* add_u32(uint32_t *x, uint64_t n, uint32_t v): x[i] += v. */
KERNEL(add_u32) {
  uint32_t *x = *(uint32_t *const *)args[0];
  uint64_t n = *(const uint64_t *)args[1];
  uint32_t v = *(const uint32_t *)args[2];
  uint64_t threads = block_threads(ctx), all = threads * grid_blocks(ctx);
  uint64_t first = block_linear(ctx) * threads;
  for (uint64_t t = 0; t < threads; t++)
    for (uint64_t i = first + t; i < n; i += all) x[i] += v;
  return XDAL_SUCCESS;
}

/* record_blocks(tk_block_record *records, uint32_t *errors): each block
   records what it saw at its linear index; a block index outside the grid
   counts in *errors instead. */
KERNEL(record_blocks) {
  tk_block_record *records = *(tk_block_record *const *)args[0];
  uint32_t *errors = *(uint32_t *const *)args[1];
  if (ctx->block_idx.x >= ctx->grid_dim.x || ctx->block_idx.y >= ctx->grid_dim.y ||
      ctx->block_idx.z >= ctx->grid_dim.z) {
    atomic_fetch_add((_Atomic uint32_t *)errors, 1);
    return XDAL_SUCCESS;
  }
  tk_block_record *r = &records[block_linear(ctx)];
  atomic_fetch_add((_Atomic uint32_t *)&r->runs, 1);
  r->struct_size = ctx->struct_size;
  r->grid_dim = ctx->grid_dim;
  r->block_dim = ctx->block_dim;
  r->block_idx = ctx->block_idx;
  r->shared_mem_bytes = ctx->shared_mem_bytes;
  r->shared_null = ctx->shared_mem == NULL;
  return XDAL_SUCCESS;
}

/* shared_check(uint32_t *result, uint64_t pause_us): fills the block's
   shared memory with a pattern of its own, pauses (so that other blocks run
   meanwhile), then counts the bytes that changed. */
KERNEL(shared_check) {
  uint32_t *result = *(uint32_t *const *)args[0] + TK_SHARED_WORDS * block_linear(ctx);
  uint64_t pause = *(const uint64_t *)args[1];
  unsigned char *shared = (unsigned char *)ctx->shared_mem;
  size_t bytes = ctx->shared_mem_bytes;
  uint32_t seed = (uint32_t)block_linear(ctx) * 2654435761u + 12345u;
  atomic_fetch_add((_Atomic uint32_t *)&result[TK_SHARED_RUNS], 1);
  result[TK_SHARED_BYTES] = (uint32_t)bytes;
  result[TK_SHARED_NONNULL] = shared != NULL;
  if (shared == NULL) return XDAL_SUCCESS;
  for (size_t i = 0; i < bytes; i++) shared[i] = (unsigned char)((seed >> (i % 24)) + i * 7u);
  pause_us((long)pause);
  uint32_t bad = 0;
  for (size_t i = 0; i < bytes; i++) bad += shared[i] != (unsigned char)((seed >> (i % 24)) + i * 7u);
  result[TK_SHARED_BAD] = bad;
  return XDAL_SUCCESS;
}

/* args_echo(tk_echo *out, uint64_t u64, uint8_t three[3], uint8_t one,
   uint8_t blob[TK_ECHO_BLOB], double f64): copies its arguments out. */
KERNEL(args_echo) {
  if (block_linear(ctx) != 0) return XDAL_SUCCESS;
  tk_echo *out = *(tk_echo *const *)args[0];
  memcpy(&out->u64, args[1], 8);
  memcpy(out->three, args[2], 3);
  memcpy(&out->one, args[3], 1);
  memcpy(out->blob, args[4], TK_ECHO_BLOB);
  memcpy(&out->f64, args[5], 8);
  return XDAL_SUCCESS;
}

/* echo_blob(uint8_t *out, uint64_t size, uint8_t blob[size]). */
KERNEL(echo_blob) {
  if (block_linear(ctx) != 0) return XDAL_SUCCESS;
  unsigned char *out = *(unsigned char *const *)args[0];
  uint64_t size = *(const uint64_t *)args[1];
  memcpy(out, args[2], size);
  return XDAL_SUCCESS;
}

/* fail_with(int32_t status, uint32_t block): returns `status` from block
   `block` (every block if UINT32_MAX), success from the others. */
KERNEL(fail_with) {
  int32_t status = *(const int32_t *)args[0];
  uint32_t block = *(const uint32_t *)args[1];
  if (block == UINT32_MAX || block == block_linear(ctx)) return (xdal_status_t)status;
  return XDAL_SUCCESS;
}

/* count_blocks(uint32_t *counter, ...): one atomic increment per block;
   any further arguments are ignored. */
KERNEL(count_blocks) {
  (void)ctx;
  uint32_t *counter = *(uint32_t *const *)args[0];
  atomic_fetch_add((_Atomic uint32_t *)counter, 1);
  return XDAL_SUCCESS;
}

/* rendezvous(uint32_t *arrived, uint32_t *met, uint64_t timeout_ms): each
   block arrives, then waits (up to the timeout) until every block of the
   grid has arrived; met[block] says whether it saw them all. Only blocks
   running at the same time can meet. */
KERNEL(rendezvous) {
  uint32_t *arrived = *(uint32_t *const *)args[0];
  uint32_t *met = *(uint32_t *const *)args[1];
  uint64_t timeout = *(const uint64_t *)args[2];
  uint64_t total = grid_blocks(ctx);
  atomic_fetch_add((_Atomic uint32_t *)arrived, 1);
  double start = now_ms();
  while (atomic_load((_Atomic uint32_t *)arrived) < total && now_ms() - start < (double)timeout) pause_us(100);
  met[block_linear(ctx)] = atomic_load((_Atomic uint32_t *)arrived) >= total;
  return XDAL_SUCCESS;
}
