/* A minimal consumer: version, devices, and a synchronous copy round trip.
   Exits non-zero on any failure. */
#include <xdal/xdal.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failed(const char *call, xdal_status_t status) {
  char message[512] = "";
  size_t needed = 0;
  (void)xdal_get_last_error_message(message, sizeof message, &needed);
  fprintf(stderr, "consumer: %s -> %s: %s\n", call, xdal_status_string(status), message);
  return 1;
}

#define CHECK(call)                                                 \
  do {                                                              \
    xdal_status_t check_status_ = (call);                           \
    if (check_status_ != XDAL_SUCCESS) return failed(#call, check_status_); \
  } while (0)

int main(void) {
  uint32_t major = 0, minor = 0, patch = 0;
  CHECK(xdal_get_version(&major, &minor, &patch));
  if (major != XDAL_VERSION_MAJOR) {
    fprintf(stderr, "consumer: library major %u, headers %d\n", (unsigned)major,
            (int)XDAL_VERSION_MAJOR);
    return 1;
  }

  int count = 0;
  CHECK(xdal_device_get_count(&count));
  if (count < 1) {
    fprintf(stderr, "consumer: %d devices\n", count);
    return 1;
  }

  unsigned char in[4096], out[4096];
  for (size_t i = 0; i < sizeof in; ++i) in[i] = (unsigned char)(i * 7u + 3u);
  memset(out, 0, sizeof out);
  void *device = NULL;
  CHECK(xdal_malloc(&device, sizeof in));
  CHECK(xdal_memcpy(device, in, sizeof in, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK(xdal_memcpy(out, device, sizeof out, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK(xdal_free(device));
  if (memcmp(in, out, sizeof in) != 0) {
    fprintf(stderr, "consumer: round trip changed the data\n");
    return 1;
  }
  /* A double free is reported, not undefined behaviour. */
  if (xdal_free(device) != XDAL_ERROR_INVALID_POINTER) {
    fprintf(stderr, "consumer: a double free was not reported\n");
    return 1;
  }

  printf("consumer: xdal %u.%u.%u, backend %s, %d device(s), round trip ok\n",
         (unsigned)major, (unsigned)minor, (unsigned)patch, xdal_backend_name(), count);
  return 0;
}
