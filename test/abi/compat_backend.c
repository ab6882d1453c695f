/* Binary compatibility: a backend plugin as a vendor ships it, built from
 * the headers of one ABI version and loaded by whatever front the user has.
 *
 * Built twice (test/abi/CMakeLists.txt):
 * - against a released baseline's headers: an old backend under the
 *   current front, whose table ends where that release's table ended;
 * - with XDAL_COMPAT_NEWER_MINOR, against the current headers: a backend
 *   from a later minor than the front, declaring a higher abi_minor and a
 *   larger table (struct_size > the front's sizeof) with trailing entries the
 *   front does not know. They abort if called: the front must ignore them.
 *
 * The backend: one device whose memory is host memory; streams run their
 * work at once, in order; host kernels run block by block at launch. */
#include <xdal/xdal_backend.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct xdal_backend_stream_s {
  int device;
  xdal_status_t sticky; /* the first failure of a kernel run on it */
};

struct xdal_backend_event_s {
  uint32_t flags;
  int recorded;
  double time_ms;
};

struct xdal_backend_function_s {
  xdal_host_kernel_t kernel;
};

static double now_ms(void) {
  struct timespec ts;
  if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return 0.0;
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static xdal_status_t device_get_count(int *count) {
  *count = 1;
  return XDAL_SUCCESS;
}

/* The struct_size rule, callee side: write only what fits in the front's
 * struct_size, whichever of the two is newer. */
static xdal_status_t device_get_properties(int device, xdal_device_properties_t *props) {
  (void)device;
  xdal_device_properties_t mine;
  memset(&mine, 0, sizeof mine);
  strcpy(mine.name, "abi compat device");
  mine.total_memory = (uint64_t)1 << 30;
  mine.compute_units = 1;
  mine.max_threads_per_block = 1024;
  mine.max_block_dim[0] = mine.max_block_dim[1] = 1024;
  mine.max_block_dim[2] = 64;
  mine.max_grid_dim[0] = mine.max_grid_dim[1] = mine.max_grid_dim[2] = 65535;
  mine.shared_mem_per_block = 48 << 10;
  mine.warp_size = 1;
  size_t fits = props->struct_size < sizeof mine ? props->struct_size : sizeof mine;
  if (fits > sizeof(size_t)) {
    memcpy((char *)props + sizeof(size_t), (const char *)&mine + sizeof(size_t), fits - sizeof(size_t));
  }
  return XDAL_SUCCESS;
}

static xdal_status_t mem_alloc(int device, size_t size, void **ptr) {
  (void)device;
  void *p = aligned_alloc(256, (size + 255) / 256 * 256);
  if (p == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  *ptr = p;
  return XDAL_SUCCESS;
}

static xdal_status_t mem_free(int device, void *ptr) {
  (void)device;
  free(ptr);
  return XDAL_SUCCESS;
}

static xdal_status_t mem_copy(void *dst, const void *src, size_t bytes, xdal_memcpy_kind_t kind) {
  (void)kind;
  memmove(dst, src, bytes);
  return XDAL_SUCCESS;
}

static xdal_status_t stream_create(int device, uint32_t flags, int priority, xdal_backend_stream_t *stream) {
  (void)flags;
  (void)priority;
  xdal_backend_stream_t s = calloc(1, sizeof *s);
  if (s == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  s->device = device;
  s->sticky = XDAL_SUCCESS;
  *stream = s;
  return XDAL_SUCCESS;
}

static xdal_status_t stream_destroy(xdal_backend_stream_t stream) {
  free(stream);
  return XDAL_SUCCESS;
}

/* Work runs at once, so a stream is always done: its state is its sticky error. */
static xdal_status_t stream_state(xdal_backend_stream_t stream) { return stream->sticky; }

static xdal_status_t launch_host_func(xdal_backend_stream_t stream, xdal_host_fn_t func, void *user_data) {
  (void)stream;
  func(user_data);
  return XDAL_SUCCESS;
}

static xdal_status_t event_create(int device, uint32_t flags, xdal_backend_event_t *event) {
  (void)device;
  xdal_backend_event_t e = calloc(1, sizeof *e);
  if (e == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  e->flags = flags;
  *event = e;
  return XDAL_SUCCESS;
}

static xdal_status_t event_destroy(xdal_backend_event_t event) {
  free(event);
  return XDAL_SUCCESS;
}

static xdal_status_t event_record(xdal_backend_event_t event, xdal_backend_stream_t stream) {
  (void)stream;
  event->recorded = 1;
  event->time_ms = now_ms();
  return XDAL_SUCCESS;
}

static xdal_status_t event_done(xdal_backend_event_t event) {
  (void)event;
  return XDAL_SUCCESS;
}

static xdal_status_t event_elapsed_time(float *ms, xdal_backend_event_t start, xdal_backend_event_t end) {
  if ((start->flags & XDAL_EVENT_DISABLE_TIMING) || (end->flags & XDAL_EVENT_DISABLE_TIMING) ||
      !start->recorded || !end->recorded) {
    return XDAL_ERROR_INVALID_VALUE;
  }
  *ms = (float)(end->time_ms - start->time_ms);
  return XDAL_SUCCESS;
}

static xdal_status_t function_from_host(xdal_host_kernel_t kernel, xdal_backend_function_t *function) {
  xdal_backend_function_t f = malloc(sizeof *f);
  if (f == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  f->kernel = kernel;
  *function = f;
  return XDAL_SUCCESS;
}

static xdal_status_t function_release(xdal_backend_function_t function) {
  free(function);
  return XDAL_SUCCESS;
}

/* Runs the kernel once per block, now. The context is this backend's
 * xdal_kernel_context_t, with its own struct_size. */
static xdal_status_t launch_kernel(xdal_backend_function_t function, xdal_dim3_t grid, xdal_dim3_t block,
                                   size_t shared_mem_bytes, xdal_backend_stream_t stream,
                                   const xdal_kernel_arg_t *args, size_t num_args) {
  void *values[16];
  if (num_args > sizeof values / sizeof values[0]) return XDAL_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < num_args; i++) values[i] = (void *)args[i].value;
  void *shared = shared_mem_bytes ? malloc(shared_mem_bytes) : NULL;
  if (shared_mem_bytes && shared == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  xdal_kernel_context_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.struct_size = sizeof ctx;
  ctx.grid_dim = grid;
  ctx.block_dim = block;
  ctx.shared_mem = shared;
  ctx.shared_mem_bytes = shared_mem_bytes;
  for (uint32_t z = 0; z < grid.z; z++) {
    for (uint32_t y = 0; y < grid.y; y++) {
      for (uint32_t x = 0; x < grid.x; x++) {
        ctx.block_idx.x = x;
        ctx.block_idx.y = y;
        ctx.block_idx.z = z;
        if (function->kernel(&ctx, values) != XDAL_SUCCESS && stream->sticky == XDAL_SUCCESS) {
          stream->sticky = XDAL_ERROR_LAUNCH_FAILED;
        }
      }
    }
  }
  free(shared);
  return XDAL_SUCCESS;
}

#define XDAL_COMPAT_ENTRIES                         \
  .device_get_count = device_get_count,             \
  .device_get_properties = device_get_properties,   \
  .mem_alloc = mem_alloc,                           \
  .mem_free = mem_free,                             \
  .mem_copy = mem_copy,                             \
  .stream_create = stream_create,                   \
  .stream_destroy = stream_destroy,                 \
  .stream_query = stream_state,                     \
  .stream_synchronize = stream_state,               \
  .launch_host_func = launch_host_func,             \
  .event_create = event_create,                     \
  .event_destroy = event_destroy,                   \
  .event_record = event_record,                     \
  .event_query = event_done,                        \
  .event_synchronize = event_done,                  \
  .event_elapsed_time = event_elapsed_time,         \
  .function_from_host = function_from_host,         \
  .function_release = function_release,             \
  .launch_kernel = launch_kernel

#ifndef XDAL_COMPAT_NEWER_MINOR

static const xdal_backend_v1_t table = {
  .struct_size = sizeof(xdal_backend_v1_t),
  .abi_major = XDAL_ABI_VERSION_MAJOR,
  .abi_minor = XDAL_ABI_VERSION_MINOR,
  .name = "abi-compat",
  XDAL_COMPAT_ENTRIES,
};
#define TABLE (&table)

#else

/* Entries of a later minor that this front does not know. */
static xdal_status_t future_entry(int device) {
  (void)device;
  abort();
}

static struct {
  xdal_backend_v1_t v1;
  xdal_status_t (*future[32])(int device);
} const newer = {
  .v1 = {
    .struct_size = sizeof newer,
    .abi_major = XDAL_ABI_VERSION_MAJOR,
    .abi_minor = XDAL_ABI_VERSION_MINOR + 1,
    .name = "abi-compat-newer",
    XDAL_COMPAT_ENTRIES,
  },
  .future = {
    future_entry, future_entry, future_entry, future_entry, future_entry, future_entry, future_entry,
    future_entry, future_entry, future_entry, future_entry, future_entry, future_entry, future_entry,
    future_entry, future_entry, future_entry, future_entry, future_entry, future_entry, future_entry,
    future_entry, future_entry, future_entry, future_entry, future_entry, future_entry, future_entry,
    future_entry, future_entry, future_entry, future_entry,
  },
};
#define TABLE (&newer.v1)

#endif

xdal_status_t xdal_backend_get_v1(uint32_t front_abi_major, uint32_t front_abi_minor,
                                  const xdal_backend_v1_t **table_out) {
  (void)front_abi_minor; /* any minor of the same major can use this table */
  if (front_abi_major != XDAL_ABI_VERSION_MAJOR) return XDAL_ERROR_VERSION_MISMATCH;
  *table_out = TABLE;
  return XDAL_SUCCESS;
}
