/* minimal_backend: the smallest complete xdal backend, and the worked
 * example of docs/porting.md.
 *
 * One device whose "device memory" is host memory from the C library, and
 * synchronous streams: every piece of work runs to completion inside the
 * call that enqueues it, so a stream is never busy and an event is reached
 * the moment it is recorded. The backend fills ONLY the entries that
 * xdal_backend.h marks "Required"; every other entry stays NULL, and the
 * front either falls back to generic code built on these (memset through
 * mem_copy, async copies and sets through launch_host_func, pinned memory,
 * statistics, event timing, ...) or answers XDAL_ERROR_NOT_SUPPORTED
 * (modules and kernels). A real backend starts the same way and fills more
 * entries as it grows.
 *
 * What this file relies on (docs/porting.md explains each point):
 *   - it includes <xdal/xdal_backend.h> and calls nothing of libxdal: a
 *     backend is loaded BY the front, it does not link against it;
 *   - it exports exactly one symbol, xdal_backend_get_v1; everything else is
 *     static;
 *   - the front validates every argument before calling an entry (NULL
 *     outputs, device indices, live allocations, copy bounds, flags,
 *     priorities, handles), so entries only do the work;
 *   - entries may be called from any thread at the same time.
 *
 * Plain C11; build it as a shared module (libxdal_minimal_backend.so) and
 * run any xdal program on it with XDAL_BACKEND=<path to the .so>. */
#include <xdal/xdal_backend.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * The device
 * ------------------------------------------------------------------------- */

#define MINIMAL_DEVICE_COUNT 1

/* What the device claims to hold. Memory is taken from malloc only when it
   is allocated, so a generous figure costs nothing; it is enforced (see
   minimal_mem_alloc) because callers rely on XDAL_ERROR_OUT_OF_MEMORY when
   they ask for more than total_memory. */
#define MINIMAL_MEMORY_BYTES ((uint64_t)8 << 30)

/* xdal promises 256-byte aligned device allocations (docs/semantics.md). */
#define MINIMAL_ALIGNMENT ((size_t)256)

/* Bytes allocated and not yet freed, across threads. */
static atomic_uint_least64_t minimal_used_bytes;

static xdal_status_t minimal_device_get_count(int *count) {
  /* count is non-NULL: the front checked it. */
  *count = MINIMAL_DEVICE_COUNT;
  return XDAL_SUCCESS;
}

static xdal_status_t minimal_device_get_properties(int device, xdal_device_properties_t *props) {
  (void)device; /* always 0: the front checked it against device_get_count */
  xdal_device_properties_t mine;
  memset(&mine, 0, sizeof mine);
  strcpy(mine.name, "xdal minimal device 0");
  mine.total_memory = MINIMAL_MEMORY_BYTES;
  mine.compute_units = 1;
  /* Launch limits: this backend runs no kernels (launch_kernel is NULL, so
     launches are XDAL_ERROR_NOT_SUPPORTED), but the fields must still be
     sensible for callers that read them. */
  mine.max_threads_per_block = 1024;
  mine.max_block_dim[0] = 1024;
  mine.max_block_dim[1] = 1024;
  mine.max_block_dim[2] = 64;
  mine.max_grid_dim[0] = 2147483647u;
  mine.max_grid_dim[1] = 65535;
  mine.max_grid_dim[2] = 65535;
  mine.shared_mem_per_block = 48 * 1024;
  mine.warp_size = 1;
  mine.dtype_mask = 0;    /* no built-in kernels */
  mine.is_simulated = 1;  /* it runs on the CPU, like the fake backend */

  /* struct_size is the caller's: a front built against an older header
     passes a smaller struct, a newer one a larger struct. Write the fields
     that fit in both, never a byte past either, and leave struct_size as
     it is. This is the rule for every extensible struct in xdal. */
  size_t fits = props->struct_size < sizeof mine ? props->struct_size : sizeof mine;
  if (fits > sizeof(size_t)) {
    memcpy((char *)props + sizeof(size_t), (const char *)&mine + sizeof(size_t), fits - sizeof(size_t));
  }
  return XDAL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Memory
 *
 * mem_free is given only the pointer, so each block carries its size in a
 * header just before the address handed out. The header is a whole
 * alignment unit, so the address handed out stays 256-byte aligned.
 * ------------------------------------------------------------------------- */

typedef struct minimal_block_header {
  size_t size; /* rounded size, as counted in minimal_used_bytes */
} minimal_block_header;

static xdal_status_t minimal_mem_alloc(int device, size_t size, void **ptr) {
  (void)device;
  /* size > 0 (the front refuses 0). Refuse beyond the capacity before any
     arithmetic, so that the rounding below cannot overflow. */
  if ((uint64_t)size > MINIMAL_MEMORY_BYTES) return XDAL_ERROR_OUT_OF_MEMORY;
  size_t rounded = (size + MINIMAL_ALIGNMENT - 1) / MINIMAL_ALIGNMENT * MINIMAL_ALIGNMENT;
  /* Reserve the bytes first; give them back if malloc fails. */
  uint_least64_t used = atomic_load(&minimal_used_bytes);
  do {
    if (used + rounded > MINIMAL_MEMORY_BYTES) return XDAL_ERROR_OUT_OF_MEMORY;
  } while (!atomic_compare_exchange_weak(&minimal_used_bytes, &used, used + rounded));
  /* aligned_alloc wants a size that is a multiple of the alignment. */
  unsigned char *block = aligned_alloc(MINIMAL_ALIGNMENT, MINIMAL_ALIGNMENT + rounded);
  if (block == NULL) {
    atomic_fetch_sub(&minimal_used_bytes, rounded);
    return XDAL_ERROR_OUT_OF_MEMORY;
  }
  ((minimal_block_header *)(void *)block)->size = rounded;
  *ptr = block + MINIMAL_ALIGNMENT; /* written only on success */
  return XDAL_SUCCESS;
}

static xdal_status_t minimal_mem_free(int device, void *ptr) {
  (void)device;
  /* ptr is the base of a live allocation of this backend: the front keeps a
     registry of every allocation and refuses double frees, interior
     pointers and foreign pointers before they get here. It has also
     waited for the device's pending work (here there never is any). */
  unsigned char *block = (unsigned char *)ptr - MINIMAL_ALIGNMENT;
  atomic_fetch_sub(&minimal_used_bytes, ((minimal_block_header *)(void *)block)->size);
  free(block);
  return XDAL_SUCCESS;
}

static xdal_status_t minimal_mem_copy(void *dst, const void *src, size_t bytes, xdal_memcpy_kind_t kind) {
  /* Every kind is a plain host copy here, because device memory is host
     memory. The front has resolved XDAL_MEMCPY_DEFAULT, checked that both
     ranges lie inside their allocations and that the kind matches the
     pointers. memmove, not memcpy: a device-to-device copy within one
     allocation may overlap. */
  (void)kind;
  memmove(dst, src, bytes);
  return XDAL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Streams
 *
 * The front maps each xdal_stream_t to one native stream handle of ours;
 * it keeps the handle table, so destroyed or foreign handles never reach
 * us. The struct behind xdal_backend_stream_t is ours to define.
 * ------------------------------------------------------------------------- */

struct xdal_backend_stream_s {
  int device;
  uint32_t flags;
  int priority; /* always 0: without device_get_stream_priority_range the
                   front offers a single priority level, 0 */
};

static xdal_status_t minimal_stream_create(int device, uint32_t flags, int priority,
                                           xdal_backend_stream_t *stream) {
  xdal_backend_stream_t s = malloc(sizeof *s);
  if (s == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  *stream = s;
  return XDAL_SUCCESS;
}

static xdal_status_t minimal_stream_destroy(xdal_backend_stream_t stream) {
  /* "Pending work still completes": there is none, all work ran already. */
  free(stream);
  return XDAL_SUCCESS;
}

/* stream_query and stream_synchronize: work never stays pending, and
   nothing this backend runs can fail later, so there is no sticky error to
   report (work the front enqueues as a fallback keeps its own). */
static xdal_status_t minimal_stream_idle(xdal_backend_stream_t stream) {
  (void)stream;
  return XDAL_SUCCESS;
}

static xdal_status_t minimal_launch_host_func(xdal_backend_stream_t stream, xdal_host_fn_t func,
                                              void *user_data) {
  /* Synchronous: run the function now, on the caller's thread. Stream order
     holds trivially, since everything enqueued earlier has already run. The
     front also builds its fallbacks on this entry (async copies and sets,
     event time stamps), so they run here too. */
  (void)stream;
  func(user_data);
  return XDAL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Events
 *
 * A recorded point is reached as soon as it is recorded, so an event needs
 * no state: query and synchronize always succeed. Timing is left to the
 * front (event_elapsed_time is NULL: the front stamps the host time when a
 * stream reaches each record).
 * ------------------------------------------------------------------------- */

struct xdal_backend_event_s {
  int device;
  uint32_t flags;
};

static xdal_status_t minimal_event_create(int device, uint32_t flags, xdal_backend_event_t *event) {
  xdal_backend_event_t e = malloc(sizeof *e);
  if (e == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  e->device = device;
  e->flags = flags;
  *event = e;
  return XDAL_SUCCESS;
}

static xdal_status_t minimal_event_destroy(xdal_backend_event_t event) {
  free(event);
  return XDAL_SUCCESS;
}

static xdal_status_t minimal_event_record(xdal_backend_event_t event, xdal_backend_stream_t stream) {
  (void)event;
  (void)stream;
  return XDAL_SUCCESS;
}

static xdal_status_t minimal_event_reached(xdal_backend_event_t event) {
  (void)event;
  return XDAL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * The table and the getter
 * ------------------------------------------------------------------------- */

/* Static and constant: the front copies it once and it must stay valid for
   the life of the process. Designated initializers leave every entry not
   named NULL ("not implemented"). struct_size is the size of the table as
   this backend was compiled: a newer front treats entries past it as NULL,
   an older front ignores the ones it does not know. */
static const xdal_backend_v1_t minimal_table = {
    .struct_size = sizeof(xdal_backend_v1_t),
    .abi_major = XDAL_ABI_VERSION_MAJOR,
    .abi_minor = XDAL_ABI_VERSION_MINOR,
    .name = "minimal",

    .device_get_count = minimal_device_get_count,
    .device_get_properties = minimal_device_get_properties,

    .mem_alloc = minimal_mem_alloc,
    .mem_free = minimal_mem_free,
    .mem_copy = minimal_mem_copy,

    .stream_create = minimal_stream_create,
    .stream_destroy = minimal_stream_destroy,
    .stream_query = minimal_stream_idle,
    .stream_synchronize = minimal_stream_idle,
    .launch_host_func = minimal_launch_host_func,

    .event_create = minimal_event_create,
    .event_destroy = minimal_event_destroy,
    .event_record = minimal_event_record,
    .event_query = minimal_event_reached,
    .event_synchronize = minimal_event_reached,
};

/* The one exported symbol. The front calls it once, with its own ABI
   version, before anything else. A backend serves one major version: a
   front of another major has another table layout, so refuse it (the
   front then reports XDAL_ERROR_VERSION_MISMATCH to every call). Any minor
   is fine: tables only grow at the end, and struct_size tells the front
   how far ours goes. Never abort here: a framework may load xdal at import
   time, and a backend that cannot start must only say so. */
xdal_status_t xdal_backend_get_v1(uint32_t front_abi_major, uint32_t front_abi_minor,
                                  const xdal_backend_v1_t **table) {
  (void)front_abi_minor;
  if (front_abi_major != XDAL_ABI_VERSION_MAJOR) return XDAL_ERROR_VERSION_MISMATCH;
  *table = &minimal_table;
  return XDAL_SUCCESS;
}
