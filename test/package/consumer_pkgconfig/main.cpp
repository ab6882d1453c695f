// A C++ consumer built from `pkg-config --cflags --libs xdal` alone, with no
// build system. Exits non-zero on any failure.
#include <xdal/xdal.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

bool ok(xdal_status_t status, const char *call) {
  if (status == XDAL_SUCCESS) return true;
  char message[512] = "";
  std::size_t needed = 0;
  (void)xdal_get_last_error_message(message, sizeof message, &needed);
  std::fprintf(stderr, "consumer: %s -> %s: %s\n", call, xdal_status_string(status), message);
  return false;
}

}  // namespace

int main() {
  std::uint32_t major = 0, minor = 0, patch = 0;
  if (!ok(xdal_get_version(&major, &minor, &patch), "xdal_get_version")) return 1;
  if (major != XDAL_VERSION_MAJOR) return 1;

  int count = 0;
  if (!ok(xdal_device_get_count(&count), "xdal_device_get_count")) return 1;
  if (count < 1) return 1;

  std::vector<std::int64_t> in(1000), out(1000, 0);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int64_t>(i) * -31;
  const std::size_t bytes = in.size() * sizeof(in[0]);
  void *device = nullptr;
  if (!ok(xdal_malloc(&device, bytes), "xdal_malloc")) return 1;
  bool copied = ok(xdal_memcpy(device, in.data(), bytes, XDAL_MEMCPY_DEFAULT), "xdal_memcpy") &&
                ok(xdal_memcpy(out.data(), device, bytes, XDAL_MEMCPY_DEFAULT), "xdal_memcpy");
  if (!ok(xdal_free(device), "xdal_free") || !copied) return 1;
  if (in != out) {
    std::fprintf(stderr, "consumer: round trip changed the data\n");
    return 1;
  }
  std::printf("consumer (pkg-config, C++): xdal %u.%u.%u, %d device(s), round trip ok\n",
              static_cast<unsigned>(major), static_cast<unsigned>(minor),
              static_cast<unsigned>(patch), count);
  return 0;
}
