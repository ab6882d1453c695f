/* What the parts of the CUDA stub driver (cuda_stub.c, and
 * cuda_stub_graph.c in the full stub) share: the driver API's types and
 * codes they use, written out (no CUDA header), and the full stub's state. */
#ifndef XDAL_CUDA_STUB_H
#define XDAL_CUDA_STUB_H

typedef int CUresult;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_OPERATING_SYSTEM 304
#define CUDA_ERROR_NOT_FOUND 500

/* Whether XDAL_CUDA_STUB is `mode`. */
int mode_is(const char *mode);

#ifdef CUDA_STUB_FULL
#include <stddef.h>

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void (*CUhostFn)(void *);

/* The one primary context (its address is its handle), and the calling
   thread's current context. */
extern char the_context;
extern _Thread_local CUcontext current;

/* Whether `ptr` is in a live device allocation. */
int is_device(CUdeviceptr ptr);

/* Calls that need a current context refuse without one, as the driver does. */
#define NEEDS_CONTEXT() \
  do { \
    if (current == NULL) return 201; /* CUDA_ERROR_INVALID_CONTEXT */ \
  } while (0)

/* The graph API (cuda_stub_graph.c). */
CUresult cuGraphCreate(void **graph, unsigned int flags);
CUresult cuGraphDestroy(void *graph);
CUresult cuGraphAddEmptyNode(void **out, void *graph, void *const *deps, size_t num_deps);
CUresult cuGraphAddKernelNode_v2(void **out, void *graph, void *const *deps, size_t num_deps, const void *params);
struct CUDA_MEMCPY3D_st;
CUresult cuGraphAddMemcpyNode(void **out, void *graph, void *const *deps, size_t num_deps,
                              const struct CUDA_MEMCPY3D_st *copy, CUcontext context);
struct CUDA_MEMSET_NODE_PARAMS_st;
CUresult cuGraphAddMemsetNode(void **out, void *graph, void *const *deps, size_t num_deps,
                              const struct CUDA_MEMSET_NODE_PARAMS_st *set, CUcontext context);
struct CUDA_HOST_NODE_PARAMS_st;
CUresult cuGraphAddHostNode(void **out, void *graph, void *const *deps, size_t num_deps,
                            const struct CUDA_HOST_NODE_PARAMS_st *host);
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags);
#ifndef CUDA_STUB_NO_GRAPHS
CUresult cuGraphLaunch(void *exec, void *stream);
#endif
CUresult cuGraphExecDestroy(void *exec);
#endif

#endif
