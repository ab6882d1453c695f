/* <xdal/xdal.h> is self-contained C11: it is the only include here. */
#include <xdal/xdal.h>

int main(void) {
  uint32_t major = 0, minor = 0, patch = 0;
  xdal_device_properties_t props;
  if (xdal_get_version(&major, &minor, &patch) != XDAL_SUCCESS) return 1;
  if (major != XDAL_ABI_VERSION_MAJOR) return 2;
  (void)minor;
  (void)patch;
  if (xdal_status_string(XDAL_ERROR_INTERNAL) == (const char *)0) return 3;
  props.struct_size = sizeof props;
  return props.struct_size >= sizeof(size_t) ? 0 : 4;
}
