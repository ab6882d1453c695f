/*
 * What the kernels of the conformance test module (test_kernels.c) and the
 * kernel tests (kernels.c) share: the layouts kernels write.
 */
#ifndef XDAL_CONFORMANCE_TEST_KERNELS_H
#define XDAL_CONFORMANCE_TEST_KERNELS_H

#include <xdal/xdal.h>

#include <stdint.h>

/* record_blocks writes one per block, at the block's linear index. */
typedef struct tk_block_record {
  uint32_t runs; /* times the block ran (atomic) */
  uint32_t shared_null;
  uint64_t struct_size;
  xdal_dim3_t grid_dim, block_dim, block_idx;
  uint32_t pad;
  uint64_t shared_mem_bytes;
} tk_block_record;

/* shared_check writes TK_SHARED_WORDS uint32_t per block. */
enum {
  TK_SHARED_BYTES = 0,    /* ctx->shared_mem_bytes (low 32 bits) */
  TK_SHARED_NONNULL = 1,  /* ctx->shared_mem != NULL */
  TK_SHARED_BAD = 2,      /* bytes that did not hold the block's pattern after the pause */
  TK_SHARED_RUNS = 3,     /* times the block ran (atomic) */
  TK_SHARED_WORDS = 4
};

/* args_echo copies its scalar arguments into one of these. */
#define TK_ECHO_BLOB 200
typedef struct tk_echo {
  uint64_t u64;
  uint8_t three[3];
  uint8_t one;
  uint8_t blob[TK_ECHO_BLOB];
  double f64;
} tk_echo;

#endif /* XDAL_CONFORMANCE_TEST_KERNELS_H */
