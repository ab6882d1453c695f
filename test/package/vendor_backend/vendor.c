/* A minimal xdal backend, as a vendor would start one: one device whose
 * memory is host memory, and streams that run their work at once (so every
 * stream is always idle). It fills the entries the front requires and
 * event_elapsed_time, and leaves every other entry NULL.
 *
 * Plain C11 and <xdal/xdal_backend.h>; nothing of the front is called. */
#include <xdal/xdal_backend.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct xdal_backend_stream_s {
  int device;
  uint32_t flags;
  int priority;
};

struct xdal_backend_event_s {
  uint32_t flags;
  int recorded;
  double time_ms;
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

static xdal_status_t device_get_properties(int device, xdal_device_properties_t *props) {
  (void)device;
  /* The front passes its own struct_size; this backend was built against
     the same header, so anything smaller is a front from an older minor:
     write only what fits. */
  xdal_device_properties_t mine;
  memset(&mine, 0, sizeof mine);
  strcpy(mine.name, "vendor test device");
  mine.total_memory = (uint64_t)1 << 30;
  mine.compute_units = 1;
  mine.max_threads_per_block = 1;
  mine.max_block_dim[0] = mine.max_block_dim[1] = mine.max_block_dim[2] = 1;
  mine.max_grid_dim[0] = mine.max_grid_dim[1] = mine.max_grid_dim[2] = 1;
  mine.warp_size = 1;
  size_t fits = props->struct_size < sizeof mine ? props->struct_size : sizeof mine;
  if (fits > sizeof(size_t)) {
    memcpy((char *)props + sizeof(size_t), (const char *)&mine + sizeof(size_t),
           fits - sizeof(size_t));
  }
  return XDAL_SUCCESS;
}

static xdal_status_t vendor_malloc(int device, size_t size, void **ptr) {
  (void)device;
  size_t rounded = (size + 255) / 256 * 256;
  void *p = aligned_alloc(256, rounded);
  if (p == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  *ptr = p;
  return XDAL_SUCCESS;
}

static xdal_status_t vendor_free(int device, void *ptr) {
  (void)device;
  free(ptr);
  return XDAL_SUCCESS;
}

static xdal_status_t vendor_memcpy(void *dst, const void *src, size_t bytes,
                                   xdal_memcpy_kind_t kind) {
  (void)kind;
  memmove(dst, src, bytes);
  return XDAL_SUCCESS;
}

static xdal_status_t stream_create(int device, uint32_t flags, int priority,
                                   xdal_backend_stream_t *stream) {
  xdal_backend_stream_t s = calloc(1, sizeof *s);
  if (s == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  *stream = s;
  return XDAL_SUCCESS;
}

static xdal_status_t stream_destroy(xdal_backend_stream_t stream) {
  free(stream);
  return XDAL_SUCCESS;
}

static xdal_status_t stream_idle(xdal_backend_stream_t stream) {
  (void)stream;
  return XDAL_SUCCESS;
}

static xdal_status_t launch_host_func(xdal_backend_stream_t stream, xdal_host_fn_t func,
                                      void *user_data) {
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

static xdal_status_t event_elapsed_time(float *ms, xdal_backend_event_t start,
                                        xdal_backend_event_t end) {
  if ((start->flags & XDAL_EVENT_DISABLE_TIMING) || (end->flags & XDAL_EVENT_DISABLE_TIMING) ||
      !start->recorded || !end->recorded) {
    return XDAL_ERROR_INVALID_VALUE;
  }
  *ms = (float)(end->time_ms - start->time_ms);
  return XDAL_SUCCESS;
}

static const xdal_backend_v1_t vendor_table = {
    .struct_size = sizeof(xdal_backend_v1_t),
    .abi_major = XDAL_ABI_VERSION_MAJOR,
    .abi_minor = XDAL_ABI_VERSION_MINOR,
    .name = "vendor-test",
    .device_get_count = device_get_count,
    .device_get_properties = device_get_properties,
    .mem_alloc = vendor_malloc,
    .mem_free = vendor_free,
    .mem_copy = vendor_memcpy,
    .stream_create = stream_create,
    .stream_destroy = stream_destroy,
    .stream_query = stream_idle,
    .stream_synchronize = stream_idle,
    .launch_host_func = launch_host_func,
    .event_create = event_create,
    .event_destroy = event_destroy,
    .event_record = event_record,
    .event_query = event_done,
    .event_synchronize = event_done,
    .event_elapsed_time = event_elapsed_time,
};

xdal_status_t xdal_backend_get_v1(uint32_t front_abi_major, uint32_t front_abi_minor,
                                  const xdal_backend_v1_t **table) {
  (void)front_abi_minor;
  if (front_abi_major != XDAL_ABI_VERSION_MAJOR) return XDAL_ERROR_VERSION_MISMATCH;
  *table = &vendor_table;
  return XDAL_SUCCESS;
}
