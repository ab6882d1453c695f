/* A stand-in for the CUDA driver (libcuda.so.1) that fails to start in the
 * way XDAL_CUDA_STUB names, so that the CUDA backend's refusals can be
 * tested on a machine without CUDA (the tests point XDAL_CUDA_DRIVER here):
 *
 *   init_fails    cuInit fails with CUDA_ERROR_OPERATING_SYSTEM (a code
 *                 the backend knows no name for: its message must carry
 *                 the driver's own, from cuGetErrorName)
 *   too_old       cuDriverGetVersion reports 11.8 (11080)
 *   no_device     cuDeviceGetCount reports 0 devices
 *   no_entries    one device, but no other entry point of the driver API
 *                 (cuGetProcAddress finds nothing else, nor does dlsym)
 *
 * It exports only what a driver's start needs: cuInit, cuDriverGetVersion,
 * cuDeviceGetCount, cuGetProcAddress (both forms) and cuGetErrorName, with
 * the driver API's C signatures written out here (no CUDA header). */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OPERATING_SYSTEM 304
#define CUDA_ERROR_NOT_FOUND 500

static int mode_is(const char *mode) {
  const char *value = getenv("XDAL_CUDA_STUB");
  return value != NULL && strcmp(value, mode) == 0;
}

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return mode_is("init_fails") ? CUDA_ERROR_OPERATING_SYSTEM : CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = mode_is("too_old") ? 11080 : 12040;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  *count = mode_is("no_device") ? 0 : 1;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
  case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
  case CUDA_ERROR_OPERATING_SYSTEM: *name = "CUDA_ERROR_OPERATING_SYSTEM"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
  default: *name = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

/* A function pointer as cuGetProcAddress hands it out. ISO C has no
   conversion between function and object pointers: the bytes are copied. */
typedef void (*any_fn)(void);

static CUresult hand_out(void **pfn, any_fn fn) {
  memcpy(pfn, &fn, sizeof fn);
  return CUDA_SUCCESS;
}

static CUresult find(const char *symbol, void **pfn) {
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  if (strcmp(symbol, "cuInit") == 0) return hand_out(pfn, (any_fn)cuInit);
  if (strcmp(symbol, "cuDriverGetVersion") == 0) return hand_out(pfn, (any_fn)cuDriverGetVersion);
  if (strcmp(symbol, "cuDeviceGetCount") == 0) return hand_out(pfn, (any_fn)cuDeviceGetCount);
  if (strcmp(symbol, "cuGetErrorName") == 0) return hand_out(pfn, (any_fn)cuGetErrorName);
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, unsigned long long flags) {
  (void)cuda_version;
  (void)flags;
  return find(symbol, pfn);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, unsigned long long flags,
                             int *symbol_status) {
  (void)cuda_version;
  (void)flags;
  CUresult result = find(symbol, pfn);
  /* CU_GET_PROC_ADDRESS_SUCCESS (0) or _SYMBOL_NOT_FOUND (1). */
  if (symbol_status != NULL) *symbol_status = result == CUDA_SUCCESS ? 0 : 1;
  return result;
}
