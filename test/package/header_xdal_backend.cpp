// <xdal/xdal_backend.h> is self-contained C++17: it is the only include
// here. A backend's view: fill a table with entries of the declared types.
#include <xdal/xdal_backend.h>

namespace {

template <typename T, typename U>
struct same_type {
  static constexpr bool value = false;
};
template <typename T>
struct same_type<T, T> {
  static constexpr bool value = true;
};

// Unevaluated: the getter is not needed at link time.
static_assert(same_type<decltype(&xdal_backend_get_v1), xdal_backend_get_v1_fn>::value,
              "xdal_backend_get_v1 does not have the type xdal_backend_get_v1_fn");
static_assert(offsetof(xdal_backend_v1_t, struct_size) == 0, "the table starts with struct_size");

xdal_status_t count_devices(int *count) {
  *count = 1;
  return XDAL_SUCCESS;
}

}  // namespace

int main() {
  xdal_backend_v1_t table{};
  table.struct_size = sizeof table;
  table.abi_major = XDAL_ABI_VERSION_MAJOR;
  table.abi_minor = XDAL_ABI_VERSION_MINOR;
  table.name = "header-test";
  table.device_get_count = count_devices;
  int count = 0;
  if (table.device_get_count(&count) != XDAL_SUCCESS || count != 1) return 1;
  return table.mem_alloc == nullptr && table.stream_create == nullptr ? 0 : 2;
}
