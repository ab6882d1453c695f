/* hello: the first things a consumer does with xdal.
 *
 * Prints the library version, the backend and every device, then copies a
 * buffer host -> device -> device -> host asynchronously on a stream of its
 * own, times the copies with two events and checks the bytes that came back.
 * Every call's status is checked; on failure the program prints the
 * thread's last error message and exits non-zero. */
#include <xdal/xdal.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *call, xdal_status_t status) {
  char message[512];
  size_t needed = 0;
  if (xdal_get_last_error_message(message, sizeof message, &needed) != XDAL_SUCCESS) {
    message[0] = '\0';
  }
  fprintf(stderr, "hello: %s failed: %s: %s\n", call, xdal_status_string(status),
          message);
  exit(EXIT_FAILURE);
}

/* Calls an xdal function and gives up on anything but XDAL_SUCCESS. */
#define CHECK(call)                                                              \
  do {                                                                           \
    xdal_status_t check_status_ = (call);                                        \
    if (check_status_ != XDAL_SUCCESS) fail(#call, check_status_);               \
  } while (0)

static void print_device(int device) {
  xdal_device_properties_t props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  CHECK(xdal_device_get_properties(device, &props));
  printf("device %d: %s%s\n", device, props.name,
         props.is_simulated ? " (simulated)" : "");
  printf("  memory            %llu MiB\n",
         (unsigned long long)(props.total_memory >> 20));
  printf("  compute units     %u\n", (unsigned)props.compute_units);
  printf("  threads per block %u (block %u x %u x %u, grid %u x %u x %u)\n",
         (unsigned)props.max_threads_per_block, (unsigned)props.max_block_dim[0],
         (unsigned)props.max_block_dim[1], (unsigned)props.max_block_dim[2],
         (unsigned)props.max_grid_dim[0], (unsigned)props.max_grid_dim[1],
         (unsigned)props.max_grid_dim[2]);
  printf("  shared memory     %llu bytes per block\n",
         (unsigned long long)props.shared_mem_per_block);
  printf("  warp size         %u\n", (unsigned)props.warp_size);
  printf("  dtype mask        0x%llx\n", (unsigned long long)props.dtype_mask);
}

int main(void) {
  uint32_t major = 0, minor = 0, patch = 0;
  CHECK(xdal_get_version(&major, &minor, &patch));
  printf("xdal %u.%u.%u (headers %d.%d.%d, ABI %d.%d)\n", (unsigned)major,
         (unsigned)minor, (unsigned)patch, (int)XDAL_VERSION_MAJOR,
         (int)XDAL_VERSION_MINOR, (int)XDAL_VERSION_PATCH,
         (int)XDAL_ABI_VERSION_MAJOR, (int)XDAL_ABI_VERSION_MINOR);
  if (major != XDAL_ABI_VERSION_MAJOR) {
    fprintf(stderr, "hello: built against ABI major %d, running on %u\n",
            (int)XDAL_ABI_VERSION_MAJOR, (unsigned)major);
    return EXIT_FAILURE;
  }

  CHECK(xdal_init());
  printf("backend: %s\n", xdal_backend_name());

  int count = 0;
  CHECK(xdal_device_get_count(&count));
  printf("devices: %d\n", count);
  for (int device = 0; device < count; ++device) print_device(device);
  if (count == 0) {
    fprintf(stderr, "hello: no device to copy on\n");
    return EXIT_FAILURE;
  }

  /* The round trip: pinned host -> device -> device -> pinned host, all on
     one stream, between two timing events. */
  enum { N = 1 << 20 };
  const size_t bytes = N * sizeof(uint32_t);
  void *pinned_in = NULL, *pinned_out = NULL, *dev_a = NULL, *dev_b = NULL;
  CHECK(xdal_device_set(0));
  CHECK(xdal_malloc_host(&pinned_in, bytes));
  CHECK(xdal_malloc_host(&pinned_out, bytes));
  CHECK(xdal_malloc(&dev_a, bytes));
  CHECK(xdal_malloc(&dev_b, bytes));
  uint32_t *host_in = pinned_in, *host_out = pinned_out;
  for (uint32_t i = 0; i < N; ++i) {
    host_in[i] = i * 2654435761u;
    host_out[i] = 0;
  }

  xdal_stream_t stream = NULL;
  xdal_event_t start = NULL, stop = NULL;
  CHECK(xdal_stream_create(&stream, XDAL_STREAM_DEFAULT, 0));
  CHECK(xdal_event_create(&start, XDAL_EVENT_DEFAULT));
  CHECK(xdal_event_create(&stop, XDAL_EVENT_DEFAULT));

  CHECK(xdal_event_record(start, stream));
  CHECK(xdal_memcpy_async(dev_a, host_in, bytes, XDAL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK(xdal_memcpy_async(dev_b, dev_a, bytes, XDAL_MEMCPY_DEVICE_TO_DEVICE, stream));
  CHECK(xdal_memcpy_async(host_out, dev_b, bytes, XDAL_MEMCPY_DEVICE_TO_HOST, stream));
  CHECK(xdal_event_record(stop, stream));
  CHECK(xdal_event_synchronize(stop));
  CHECK(xdal_stream_synchronize(stream));

  float ms = 0.0f;
  CHECK(xdal_event_elapsed_time(&ms, start, stop));
  if (memcmp(host_in, host_out, bytes) != 0) {
    fprintf(stderr, "hello: the bytes that came back differ from those sent\n");
    return EXIT_FAILURE;
  }
  printf("async round trip of %zu bytes: ok, %.3f ms\n", bytes, (double)ms);

  CHECK(xdal_event_destroy(stop));
  CHECK(xdal_event_destroy(start));
  CHECK(xdal_stream_destroy(stream));
  CHECK(xdal_free(dev_b));
  CHECK(xdal_free(dev_a));
  CHECK(xdal_free_host(pinned_out));
  CHECK(xdal_free_host(pinned_in));
  return EXIT_SUCCESS;
}
