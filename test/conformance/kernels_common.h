/*
 * Helpers shared by the kernel tests (kernels.c, kernels_exec.c): host
 * kernels, capability checks, the test module (test_kernels.c) and small
 * launch helpers. Include after harness.h.
 *
 * The test module's path comes from XDAL_TEST_MODULE_PATH (set by CMake),
 * or the environment variable XDAL_CONFORMANCE_MODULE, which overrides it.
 */
#ifndef XDAL_CONFORMANCE_KERNELS_COMMON_H
#define XDAL_CONFORMANCE_KERNELS_COMMON_H

#include "test_kernels.h"

#define GARBAGE ((void *)0x12345)

/* --- Host kernels ----------------------------------------------------------- */

static inline xdal_status_t noop_kernel(const xdal_kernel_context_t *ctx, void *const *args) {
  (void)ctx;
  (void)args;
  return XDAL_SUCCESS;
}

static inline uint64_t block_linear(const xdal_kernel_context_t *ctx) {
  return ((uint64_t)ctx->block_idx.z * ctx->grid_dim.y + ctx->block_idx.y) * ctx->grid_dim.x + ctx->block_idx.x;
}

/* host_add_u32(uint32_t *x, uint64_t n, uint32_t v): x[i] += v. */
static inline xdal_status_t host_add_u32(const xdal_kernel_context_t *ctx, void *const *args) {
  uint32_t *x = *(uint32_t *const *)args[0];
  uint64_t n = *(const uint64_t *)args[1];
  uint32_t v = *(const uint32_t *)args[2];
  uint64_t threads = (uint64_t)ctx->block_dim.x * ctx->block_dim.y * ctx->block_dim.z;
  uint64_t all = threads * ctx->grid_dim.x * ctx->grid_dim.y * ctx->grid_dim.z;
  for (uint64_t t = 0; t < threads; t++)
    for (uint64_t i = block_linear(ctx) * threads + t; i < n; i += all) x[i] += v;
  return XDAL_SUCCESS;
}

/* --- Capabilities, the module ------------------------------------------------ */

/* SUCCESS when the backend runs host kernels, NOT_SUPPORTED when it does
   not; anything else is a failure of the caller's test. */
static inline xdal_status_t host_kernel_status(void) {
  xdal_function_t f = NULL;
  return xdal_function_from_host(&f, noop_kernel);
}

#define REQUIRE_HOST_KERNELS()                                                                                \
  do {                                                                                                        \
    xdal_status_t st_ = host_kernel_status();                                                                 \
    if (st_ == XDAL_ERROR_NOT_SUPPORTED)                                                                      \
      SKIP("the backend runs no host kernels (xdal_function_from_host: XDAL_ERROR_NOT_SUPPORTED)");           \
    REQUIRE_STATUS(XDAL_SUCCESS, st_);                                                                        \
  } while (0)

static inline const char *module_path(void) {
  const char *env = getenv("XDAL_CONFORMANCE_MODULE");
  if (env != NULL && *env != '\0') return env;
#ifdef XDAL_TEST_MODULE_PATH
  return XDAL_TEST_MODULE_PATH;
#else
  return NULL;
#endif
}

static inline xdal_module_t load_test_module(void) {
  const char *path = module_path();
  if (!CHECK_MSG(path != NULL, "the test module's path is unknown: set XDAL_CONFORMANCE_MODULE")) return NULL;
  xdal_module_t m = NULL;
  if (!CHECK_OK(xdal_module_load(&m, path))) return NULL;
  CHECK(m != NULL);
  return m;
}

static inline xdal_function_t get_fn(xdal_module_t m, const char *name) {
  xdal_function_t f = NULL;
  if (!CHECK_MSG(xdal_module_get_function(&f, m, name) == XDAL_SUCCESS, "the test module has no kernel \"%s\"",
                 name))
    return NULL;
  return f;
}

/* The bytes of the module file (free them), or NULL. */
static inline unsigned char *read_module_file(size_t *size) {
  const char *path = module_path();
  if (!CHECK_MSG(path != NULL, "the test module's path is unknown")) return NULL;
  FILE *f = fopen(path, "rb");
  if (!CHECK_MSG(f != NULL, "cannot open the test module %s", path)) return NULL;
  unsigned char *bytes = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 65536;
      unsigned char *grown = (unsigned char *)realloc(bytes, cap);
      if (!grown) break;
      bytes = grown;
    }
    size_t got = fread(bytes + len, 1, cap - len, f);
    if (got == 0) break;
    len += got;
  }
  fclose(f);
  *size = len;
  if (!CHECK_MSG(len > 0, "the test module %s is empty", path)) {
    free(bytes);
    return NULL;
  }
  return bytes;
}

static inline xdal_device_properties_t device_props(void) {
  xdal_device_properties_t props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  CHECK_OK(xdal_device_get_properties(0, &props));
  return props;
}

#define ONE ((xdal_dim3_t){1, 1, 1})

/* The 32-bit counter at device address d. */
static inline uint32_t read_counter(void *d) {
  uint32_t v = 0;
  CHECK_OK(xdal_memcpy(&v, d, 4, XDAL_MEMCPY_DEVICE_TO_HOST));
  return v;
}

/* The last error message is at least `function: something`. */
static inline void check_message_says_why(const char *function) {
  CHECK_MESSAGE_NAMES(function);
  char message[1024];
  harness_last_message(message, sizeof message);
  CHECK_MSG(strlen(message) > strlen(function) + 3, "the message of %s says nothing: \"%s\"", function, message);
}

/* Launches add_u32 (`f`: the module's or the host version) adding 1 to 64
   words at `d` (zeroed first) on `stream`, and checks the result. */
static inline int good_launch(xdal_function_t f, void *d, xdal_stream_t stream) {
  uint32_t back[64];
  uint64_t n = 64;
  uint32_t one = 1;
  xdal_kernel_arg_t args[] = {{&d, sizeof d}, {&n, 8}, {&one, 4}};
  if (!CHECK_OK(xdal_memset(d, 0, sizeof back))) return 0;
  if (!CHECK_OK(xdal_launch_kernel(f, (xdal_dim3_t){3, 1, 1}, (xdal_dim3_t){5, 2, 1}, 0, stream, args, 3))) return 0;
  if (!CHECK_OK(xdal_stream_synchronize(stream))) return 0;
  if (!CHECK_OK(xdal_memcpy(back, d, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST))) return 0;
  for (int i = 0; i < 64; i++)
    if (!CHECK_MSG(back[i] == 1, "after the good launch word %d is %u, expected 1", i, back[i])) return 0;
  return 1;
}

/* Runs the module's vector_add over n elements and checks it. */
static inline void check_vector_add(xdal_module_t m, const char *what) {
  xdal_function_t f = get_fn(m, "vector_add");
  if (!f) return;
  enum { N = 1001 };
  static float a[N], b[N], out[N];
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 0.25f * (float)i;
  }
  void *da = NULL, *db = NULL, *dout = NULL;
  if (CHECK_OK(xdal_malloc(&da, sizeof a)) && CHECK_OK(xdal_malloc(&db, sizeof b)) &&
      CHECK_OK(xdal_malloc(&dout, sizeof out))) {
    CHECK_OK(xdal_memcpy(da, a, sizeof a, XDAL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(xdal_memcpy(db, b, sizeof b, XDAL_MEMCPY_HOST_TO_DEVICE));
    uint64_t n = N;
    xdal_kernel_arg_t args[] = {{&da, 8}, {&db, 8}, {&dout, 8}, {&n, 8}};
    CHECK_OK(xdal_launch_kernel(f, (xdal_dim3_t){4, 2, 1}, (xdal_dim3_t){16, 2, 1}, 0, NULL, args, 4));
    CHECK_OK(xdal_stream_synchronize(NULL));
    CHECK_OK(xdal_memcpy(out, dout, sizeof out, XDAL_MEMCPY_DEVICE_TO_HOST));
    int bad = 0;
    for (int i = 0; i < N && !bad; i++)
      bad = !CHECK_MSG(out[i] == a[i] + b[i], "%s: vector_add out[%d] = %g, expected %g", what, i, (double)out[i],
                       (double)(a[i] + b[i]));
  }
  CHECK_OK(xdal_free(da));
  CHECK_OK(xdal_free(db));
  CHECK_OK(xdal_free(dout));
}

#endif /* XDAL_CONFORMANCE_KERNELS_COMMON_H */
