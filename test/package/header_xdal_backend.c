/* <xdal/xdal_backend.h> is self-contained C11: it is the only include here.
   A backend's view: fill a table with entries of the declared types. */
#include <xdal/xdal_backend.h>

static xdal_status_t count_devices(int *count) {
  *count = 1;
  return XDAL_SUCCESS;
}

static xdal_status_t create_stream(int device, uint32_t flags, int priority,
                                   xdal_backend_stream_t *stream) {
  (void)device;
  (void)flags;
  (void)priority;
  *stream = (xdal_backend_stream_t)0;
  return XDAL_ERROR_NOT_SUPPORTED;
}

/* The getter's declaration and its pointer type agree (unevaluated: the
   symbol is not needed at link time). */
_Static_assert(_Generic(&xdal_backend_get_v1, xdal_backend_get_v1_fn: 1, default: 0),
               "xdal_backend_get_v1 does not have the type xdal_backend_get_v1_fn");
_Static_assert(offsetof(xdal_backend_v1_t, struct_size) == 0,
               "the table starts with struct_size");

int main(void) {
  xdal_backend_v1_t table = {
      .struct_size = sizeof(xdal_backend_v1_t),
      .abi_major = XDAL_ABI_VERSION_MAJOR,
      .abi_minor = XDAL_ABI_VERSION_MINOR,
      .name = "header-test",
      .device_get_count = count_devices,
      .stream_create = create_stream,
  };
  int count = 0;
  xdal_backend_stream_t stream;
  if (table.device_get_count(&count) != XDAL_SUCCESS || count != 1) return 1;
  if (table.stream_create(0, XDAL_STREAM_DEFAULT, 0, &stream) != XDAL_ERROR_NOT_SUPPORTED) return 2;
  return table.struct_size == sizeof table && table.mem_alloc == 0 ? 0 : 3;
}
