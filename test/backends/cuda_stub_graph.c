/* The full CUDA stub driver's graphs (see cuda_stub.c): a graph records
 * its nodes in the order they are added (which follows every dependency, as
 * a node's dependencies must exist first); an exec is a copy of that list,
 * and a launch runs it on the stream at once, as the stub runs all stream
 * work. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"

typedef struct CUDA_MEMCPY3D_st {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  unsigned int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray, *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  unsigned int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray, *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
typedef struct CUDA_MEMSET_NODE_PARAMS_st {
  CUdeviceptr dst;
  size_t pitch;
  unsigned int value, elementSize;
  size_t width, height;
} CUDA_MEMSET_NODE_PARAMS;
typedef struct CUDA_HOST_NODE_PARAMS_st {
  CUhostFn fn;
  void *userData;
} CUDA_HOST_NODE_PARAMS;

enum stub_node_kind { NODE_EMPTY, NODE_COPY, NODE_SET, NODE_HOST };
typedef struct stub_graph stub_graph;
typedef struct {
  stub_graph *graph;
  enum stub_node_kind kind;
  CUdeviceptr dst, src;
  size_t bytes;
  unsigned char value;
  CUhostFn fn;
  void *data;
} stub_node;
struct stub_graph {
  stub_node **nodes;
  size_t count;
};
typedef struct {
  stub_node *nodes;
  size_t count;
} stub_exec;

CUresult cuGraphCreate(void **graph, unsigned int flags) {
  if (graph == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *graph = calloc(1, sizeof(stub_graph));
  return *graph != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuGraphDestroy(void *graph) {
  stub_graph *g = graph;
  if (g == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < g->count; i++) free(g->nodes[i]);
  free(g->nodes);
  free(g);
  return CUDA_SUCCESS;
}

/* Adds `node` to `graph` after `deps`, which must be nodes of the graph
   (each once, as the driver requires). */
static CUresult add_node(void **out, void *graph, void *const *deps, size_t num_deps, stub_node node) {
  stub_graph *g = graph;
  if (out == NULL || g == NULL || (num_deps > 0 && deps == NULL)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < num_deps; i++) {
    if (deps[i] == NULL || ((stub_node *)deps[i])->graph != g) return CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; j < i; j++)
      if (deps[j] == deps[i]) return CUDA_ERROR_INVALID_VALUE;
  }
  stub_node *copy = malloc(sizeof *copy);
  stub_node **grown = realloc(g->nodes, (g->count + 1) * sizeof *grown);
  if (copy == NULL || grown == NULL) {
    free(copy);
    if (grown != NULL) g->nodes = grown;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *copy = node;
  copy->graph = g;
  g->nodes = grown;
  g->nodes[g->count++] = copy;
  *out = copy;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddEmptyNode(void **out, void *graph, void *const *deps, size_t num_deps) {
  stub_node node = {0};
  node.kind = NODE_EMPTY;
  return add_node(out, graph, deps, num_deps, node);
}

/* No kernels. */
CUresult cuGraphAddKernelNode_v2(void **out, void *graph, void *const *deps, size_t num_deps, const void *params) {
  (void)out, (void)graph, (void)deps, (void)num_deps, (void)params;
  return CUDA_ERROR_INVALID_HANDLE;
}

/* 1-D copies of unified addresses only: what the backend makes. */
CUresult cuGraphAddMemcpyNode(void **out, void *graph, void *const *deps, size_t num_deps,
                              const CUDA_MEMCPY3D *copy, CUcontext context) {
  if (copy == NULL || context != &the_context) return CUDA_ERROR_INVALID_VALUE;
  if (copy->srcMemoryType != 4 || copy->dstMemoryType != 4 || copy->Height != 1 || copy->Depth != 1 ||
      copy->srcXInBytes != 0 || copy->dstXInBytes != 0 || copy->WidthInBytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  /* As a driver refusing a copy's memory in a graph (pageable host memory
     on some) would. */
  if (mode_is("graph_copies_refused")) return CUDA_ERROR_INVALID_VALUE;
  stub_node node = {0};
  node.kind = NODE_COPY;
  node.dst = copy->dstDevice;
  node.src = copy->srcDevice;
  node.bytes = copy->WidthInBytes;
  return add_node(out, graph, deps, num_deps, node);
}

CUresult cuGraphAddMemsetNode(void **out, void *graph, void *const *deps, size_t num_deps,
                              const CUDA_MEMSET_NODE_PARAMS *set, CUcontext context) {
  if (set == NULL || context != &the_context || set->elementSize != 1 || set->height != 1 || set->width == 0 ||
      set->value > 255)
    return CUDA_ERROR_INVALID_VALUE;
  stub_node node = {0};
  node.kind = NODE_SET;
  node.dst = set->dst;
  node.bytes = set->width;
  node.value = (unsigned char)set->value;
  return add_node(out, graph, deps, num_deps, node);
}

CUresult cuGraphAddHostNode(void **out, void *graph, void *const *deps, size_t num_deps,
                            const CUDA_HOST_NODE_PARAMS *host) {
  if (host == NULL || host->fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  stub_node node = {0};
  node.kind = NODE_HOST;
  node.fn = host->fn;
  node.data = host->userData;
  return add_node(out, graph, deps, num_deps, node);
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  stub_graph *g = graph;
  NEEDS_CONTEXT();
  if (exec == NULL || g == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  stub_exec *e = calloc(1, sizeof *e);
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  e->nodes = calloc(g->count + 1, sizeof *e->nodes);
  if (e->nodes == NULL) {
    free(e);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < g->count; i++) e->nodes[i] = *g->nodes[i];
  e->count = g->count;
  *exec = e;
  return CUDA_SUCCESS;
}

#ifndef CUDA_STUB_NO_GRAPHS
CUresult cuGraphLaunch(void *exec, void *stream) {
  const stub_exec *e = exec;
  (void)stream;
  NEEDS_CONTEXT();
  if (e == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < e->count; i++) {
    const stub_node *n = &e->nodes[i];
    switch (n->kind) {
    case NODE_EMPTY: break;
    case NODE_COPY: memmove((void *)(uintptr_t)n->dst, (const void *)(uintptr_t)n->src, n->bytes); break;
    case NODE_SET: memset((void *)(uintptr_t)n->dst, n->value, n->bytes); break;
    case NODE_HOST: n->fn(n->data); break;
    }
  }
  return CUDA_SUCCESS;
}

#endif

CUresult cuGraphExecDestroy(void *exec) {
  stub_exec *e = exec;
  if (e == NULL) return CUDA_ERROR_INVALID_VALUE;
  free(e->nodes);
  free(e);
  return CUDA_SUCCESS;
}
