// <xdal/xdal.h> is self-contained C++17 and its declarations are extern "C":
// this links against the library, which fails on a mangled name.
#include <xdal/xdal.h>

int main() {
  uint32_t major = 0, minor = 0, patch = 0;
  if (xdal_get_version(&major, &minor, &patch) != XDAL_SUCCESS) return 1;
  if (major != XDAL_ABI_VERSION_MAJOR) return 2;
  (void)minor;
  (void)patch;
  if (xdal_status_string(XDAL_ERROR_INTERNAL) == nullptr) return 3;
  xdal_device_properties_t props{};
  props.struct_size = sizeof props;
  return props.struct_size >= sizeof(size_t) ? 0 : 4;
}
