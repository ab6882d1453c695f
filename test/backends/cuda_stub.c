/* A stand-in for the CUDA driver (libcuda.so.1), so that the CUDA backend
 * can be tested on a machine without CUDA (the tests point
 * XDAL_CUDA_DRIVER here). Built twice:
 *
 * xdal_test_cuda_stub fails to start in the way XDAL_CUDA_STUB names:
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
 * cuDeviceGetCount, cuGetProcAddress (both forms) and cuGetErrorName.
 *
 * xdal_test_cuda_stub_full (CUDA_STUB_FULL) is a driver of one device that
 * runs no kernels: device memory is host memory, and every stream operation
 * runs when it is enqueued. It has every entry point the backend uses, so
 * the backend's streams, events, memory and copies can run a workload; its
 * graphs (cuda_stub_graph.c) record copy, set, host and empty nodes, and a
 * launch runs them in the order they were added.
 * XDAL_CUDA_STUB=by_symbol makes its cuGetProcAddress find nothing, so the
 * backend finds each entry point by its versioned symbol name instead;
 * XDAL_CUDA_STUB=graph_copies_refused makes it refuse every memcpy node.
 * Built with CUDA_STUB_NO_GRAPHS too, it lacks cuGraphLaunch, as a driver
 * without the whole graph API would.
 *
 * The driver API's C signatures are written out here and in cuda_stub.h
 * (no CUDA header). */
#define _DEFAULT_SOURCE /* clock_gettime, MAP_ANONYMOUS */
#include <stdlib.h>
#include <string.h>

#ifdef CUDA_STUB_FULL
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#endif

#include "cuda_stub.h"

int mode_is(const char *mode) {
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

#ifdef CUDA_STUB_FULL
static CUresult find_full(const char *symbol, void **pfn);
#endif

static CUresult find(const char *symbol, void **pfn) {
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
#ifdef CUDA_STUB_FULL
  if (mode_is("by_symbol")) return CUDA_ERROR_NOT_FOUND;
  if (find_full(symbol, pfn) == CUDA_SUCCESS) return CUDA_SUCCESS;
#endif
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

#ifdef CUDA_STUB_FULL
/* --- The full stub: one device, no kernels ----------------------------------------- */


#define STUB_TOTAL_MEMORY (1ull << 30)
#define MAX_ALLOCATIONS 4096

char the_context; /* the one primary context's address is its handle */
_Thread_local CUcontext current;

/* Device memory: an arena of address space of its own, as a GPU's is, so
   that no host allocation ever lands where device memory was (the backend
   takes such an address for freed device memory). Blocks are carved from
   it in order and reused, first fit, once freed; the table below knows
   each, live or not, for cuPointerGetAttributes. */
static pthread_mutex_t allocations_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t base; size_t size, capacity; int live; } allocations[MAX_ALLOCATIONS];
static unsigned char *arena;
static size_t arena_used, allocated_bytes;

static CUresult device_alloc(CUdeviceptr *ptr, size_t size) {
  if (ptr == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > STUB_TOTAL_MEMORY) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (size + 255) / 256 * 256;
  CUresult result = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&allocations_lock);
  if (arena == NULL) {
    void *reserved = mmap(NULL, STUB_TOTAL_MEMORY, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);
    arena = reserved == MAP_FAILED ? NULL : reserved;
  }
  int slot = -1;
  for (int i = 0; i < MAX_ALLOCATIONS && arena != NULL; i++) {
    if (!allocations[i].live && allocations[i].capacity >= rounded) { /* a freed block that fits */
      slot = i;
      break;
    }
    if (allocations[i].capacity == 0 && STUB_TOTAL_MEMORY - arena_used >= rounded) { /* a new block */
      allocations[i].base = (uintptr_t)(arena + arena_used);
      allocations[i].capacity = rounded;
      arena_used += rounded;
      slot = i;
      break;
    }
  }
  if (slot >= 0) {
    allocations[slot].size = size;
    allocations[slot].live = 1;
    allocated_bytes += size;
    *ptr = (CUdeviceptr)allocations[slot].base;
    result = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&allocations_lock);
  return result;
}

static CUresult device_free(CUdeviceptr ptr) {
  CUresult result = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&allocations_lock);
  for (int i = 0; i < MAX_ALLOCATIONS; i++) {
    if (allocations[i].live && allocations[i].base == (uintptr_t)ptr) {
      allocations[i].live = 0;
      allocated_bytes -= allocations[i].size;
      result = CUDA_SUCCESS;
      break;
    }
  }
  pthread_mutex_unlock(&allocations_lock);
  return result;
}

int is_device(CUdeviceptr ptr) {
  int found = 0;
  pthread_mutex_lock(&allocations_lock);
  for (int i = 0; i < MAX_ALLOCATIONS && !found; i++)
    found = allocations[i].live && ptr >= allocations[i].base && ptr - allocations[i].base < allocations[i].size;
  pthread_mutex_unlock(&allocations_lock);
  return found;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (device == NULL || ordinal != 0) return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
  if (name == NULL || len <= 0 || device != 0) return CUDA_ERROR_INVALID_VALUE;
  strncpy(name, "xdal CUDA stub", (size_t)len - 1);
  name[len - 1] = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
  if (bytes == NULL || device != 0) return CUDA_ERROR_INVALID_VALUE;
  *bytes = STUB_TOTAL_MEMORY;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
  if (value == NULL || device != 0) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
  case 1: case 2: case 3: *value = 1024; break;   /* threads per block, block x, y */
  case 4: *value = 64; break;                      /* block z */
  case 5: *value = 2147483647; break;              /* grid x */
  case 6: case 7: *value = 65535; break;           /* grid y, z */
  case 8: *value = 49152; break;                   /* shared memory per block */
  case 10: *value = 32; break;                     /* warp size */
  case 16: *value = 4; break;                      /* multiprocessors */
  case 75: *value = 8; break;                      /* compute capability 8.0 */
  case 115: *value = 1; break;                     /* memory pools */
  default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice device, CUdevice peer) {
  if (can == NULL || device != 0 || peer != 0) return CUDA_ERROR_INVALID_VALUE;
  *can = 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (context == NULL || device != 0) return CUDA_ERROR_INVALID_VALUE;
  *context = &the_context;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  if (context == NULL) return CUDA_ERROR_INVALID_VALUE;
  *context = current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  if (context != NULL && context != &the_context) return CUDA_ERROR_INVALID_HANDLE;
  current = context;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) { NEEDS_CONTEXT(); return CUDA_SUCCESS; }

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  NEEDS_CONTEXT();
  if (least != NULL) *least = 0;
  if (greatest != NULL) *greatest = -1;
  return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  (void)peer;
  (void)flags;
  return 217; /* CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: one device */
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  NEEDS_CONTEXT();
  if (free_bytes == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&allocations_lock);
  *free_bytes = STUB_TOTAL_MEMORY - allocated_bytes;
  pthread_mutex_unlock(&allocations_lock);
  *total = STUB_TOTAL_MEMORY;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t size) { NEEDS_CONTEXT(); return device_alloc(ptr, size); }
CUresult cuMemFree_v2(CUdeviceptr ptr) { NEEDS_CONTEXT(); return device_free(ptr); }
CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t size, void *stream) {
  (void)stream;
  NEEDS_CONTEXT();
  return device_alloc(ptr, size);
}
CUresult cuMemFreeAsync(CUdeviceptr ptr, void *stream) {
  (void)stream;
  NEEDS_CONTEXT();
  return device_free(ptr);
}

CUresult cuMemHostAlloc(void **ptr, size_t size, unsigned int flags) {
  (void)flags;
  NEEDS_CONTEXT();
  if (ptr == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > STUB_TOTAL_MEMORY) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  return *ptr != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFreeHost(void *ptr) {
  NEEDS_CONTEXT();
  free(ptr);
  return CUDA_SUCCESS;
}

/* CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2) and _DEVICE_ORDINAL (9); others are
   left alone. Unknown addresses keep the caller's defaults, as on CUDA. */
CUresult cuPointerGetAttributes(unsigned int count, const int *attributes, void **data, CUdeviceptr ptr) {
  if (attributes == NULL || data == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!is_device(ptr)) return CUDA_SUCCESS;
  for (unsigned int i = 0; i < count; i++) {
    if (attributes[i] == 2) *(unsigned int *)data[i] = 2; /* CU_MEMORYTYPE_DEVICE */
    if (attributes[i] == 9) *(int *)data[i] = 0;
  }
  return CUDA_SUCCESS;
}

/* Every stream operation runs when it is enqueued. */
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  NEEDS_CONTEXT();
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream) {
  (void)stream;
  return cuMemcpy(dst, src, bytes);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context,
                           size_t bytes, void *stream) {
  (void)dst_context;
  (void)src_context;
  (void)stream;
  return cuMemcpy(dst, src, bytes);
}
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t bytes) {
  NEEDS_CONTEXT();
  memset((void *)(uintptr_t)dst, value, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes, void *stream) {
  (void)stream;
  return cuMemsetD8_v2(dst, value, bytes);
}

typedef struct { unsigned int flags; int priority; } stub_stream;
typedef struct { unsigned int flags; double ms; } stub_event;

CUresult cuStreamCreateWithPriority(void **stream, unsigned int flags, int priority) {
  NEEDS_CONTEXT();
  if (stream == NULL || priority < -1 || priority > 0) return CUDA_ERROR_INVALID_VALUE;
  stub_stream *s = malloc(sizeof *s);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  s->flags = flags;
  s->priority = priority;
  *stream = s;
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(void *stream) {
  free(stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamQuery(void *stream) { (void)stream; return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(void *stream) { (void)stream; return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned int flags) {
  (void)stream;
  return event != NULL && flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuLaunchHostFunc(void *stream, CUhostFn fn, void *user_data) {
  (void)stream;
  if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  fn(user_data);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(void **event, unsigned int flags) {
  NEEDS_CONTEXT();
  stub_event *e = calloc(1, sizeof *e);
  if (event == NULL || e == NULL) {
    free(e);
    return CUDA_ERROR_INVALID_VALUE;
  }
  e->flags = flags;
  *event = e;
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(void *event) {
  free(event);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(void *event, void *stream) {
  (void)stream;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  ((stub_event *)event)->ms = (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
  return CUDA_SUCCESS;
}
CUresult cuEventQuery(void *event) { (void)event; return CUDA_SUCCESS; }
CUresult cuEventSynchronize(void *event) { (void)event; return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
  const stub_event *a = start, *b = end;
  if (ms == NULL || ((a->flags | b->flags) & 2)) return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)(b->ms - a->ms);
  return CUDA_SUCCESS;
}

/* No kernels: no image is a module of this driver. */
CUresult cuModuleLoadData(void **module, const void *image) {
  (void)module;
  (void)image;
  return CUDA_ERROR_INVALID_IMAGE;
}
CUresult cuModuleUnload(void *module) { (void)module; return CUDA_ERROR_INVALID_HANDLE; }
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  (void)function;
  (void)module;
  (void)name;
  return CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                        unsigned int bz, unsigned int shared, void *stream, void **params, void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream;
  (void)params, (void)extra;
  return CUDA_ERROR_INVALID_HANDLE;
}

/* cuGetProcAddress's names (unversioned) and the functions of CUDA 12.0's
   ABI behind them. */
#define ENTRY(name, fn) {name, (any_fn)fn}
static const struct { const char *name; any_fn fn; } entries[] = {
    ENTRY("cuDeviceGet", cuDeviceGet), ENTRY("cuDeviceGetName", cuDeviceGetName),
    ENTRY("cuDeviceTotalMem", cuDeviceTotalMem_v2), ENTRY("cuDeviceGetAttribute", cuDeviceGetAttribute),
    ENTRY("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer), ENTRY("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    ENTRY("cuCtxGetCurrent", cuCtxGetCurrent), ENTRY("cuCtxSetCurrent", cuCtxSetCurrent),
    ENTRY("cuCtxSynchronize", cuCtxSynchronize), ENTRY("cuCtxGetStreamPriorityRange", cuCtxGetStreamPriorityRange),
    ENTRY("cuCtxEnablePeerAccess", cuCtxEnablePeerAccess), ENTRY("cuMemGetInfo", cuMemGetInfo_v2),
    ENTRY("cuMemAlloc", cuMemAlloc_v2), ENTRY("cuMemFree", cuMemFree_v2),
    ENTRY("cuMemAllocAsync", cuMemAllocAsync), ENTRY("cuMemFreeAsync", cuMemFreeAsync),
    ENTRY("cuMemHostAlloc", cuMemHostAlloc), ENTRY("cuMemFreeHost", cuMemFreeHost),
    ENTRY("cuPointerGetAttributes", cuPointerGetAttributes), ENTRY("cuMemcpy", cuMemcpy),
    ENTRY("cuMemcpyAsync", cuMemcpyAsync), ENTRY("cuMemcpyPeerAsync", cuMemcpyPeerAsync),
    ENTRY("cuMemsetD8", cuMemsetD8_v2), ENTRY("cuMemsetD8Async", cuMemsetD8Async),
    ENTRY("cuStreamCreateWithPriority", cuStreamCreateWithPriority), ENTRY("cuStreamDestroy", cuStreamDestroy_v2),
    ENTRY("cuStreamQuery", cuStreamQuery), ENTRY("cuStreamSynchronize", cuStreamSynchronize),
    ENTRY("cuStreamWaitEvent", cuStreamWaitEvent), ENTRY("cuLaunchHostFunc", cuLaunchHostFunc),
    ENTRY("cuEventCreate", cuEventCreate), ENTRY("cuEventDestroy", cuEventDestroy_v2),
    ENTRY("cuEventRecord", cuEventRecord), ENTRY("cuEventQuery", cuEventQuery),
    ENTRY("cuEventSynchronize", cuEventSynchronize), ENTRY("cuEventElapsedTime", cuEventElapsedTime),
    ENTRY("cuModuleLoadData", cuModuleLoadData), ENTRY("cuModuleUnload", cuModuleUnload),
    ENTRY("cuModuleGetFunction", cuModuleGetFunction), ENTRY("cuLaunchKernel", cuLaunchKernel),
    ENTRY("cuGraphCreate", cuGraphCreate), ENTRY("cuGraphDestroy", cuGraphDestroy),
    ENTRY("cuGraphAddEmptyNode", cuGraphAddEmptyNode), ENTRY("cuGraphAddKernelNode", cuGraphAddKernelNode_v2),
    ENTRY("cuGraphAddMemcpyNode", cuGraphAddMemcpyNode), ENTRY("cuGraphAddMemsetNode", cuGraphAddMemsetNode),
    ENTRY("cuGraphAddHostNode", cuGraphAddHostNode), ENTRY("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
#ifndef CUDA_STUB_NO_GRAPHS
    ENTRY("cuGraphLaunch", cuGraphLaunch),
#endif
    ENTRY("cuGraphExecDestroy", cuGraphExecDestroy),
};

static CUresult find_full(const char *symbol, void **pfn) {
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    if (strcmp(symbol, entries[i].name) == 0) return hand_out(pfn, entries[i].fn);
  return CUDA_ERROR_NOT_FOUND;
}
#endif
