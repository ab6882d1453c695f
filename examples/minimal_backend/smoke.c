/* smoke: runs a few calls on the minimal backend (XDAL_BACKEND names its
 * .so) and checks that it is the backend in use: a copy round trip, a
 * memset (a front fallback built on mem_copy), a host function on a
 * stream, two timed events (the front's timing fallback), and a kernel
 * call that this backend does not support. */
#include <xdal/xdal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *call, xdal_status_t status) {
  char message[512] = "";
  (void)xdal_get_last_error_message(message, sizeof message, NULL);
  fprintf(stderr, "smoke: %s -> %s: %s\n", call, xdal_status_string(status), message);
  exit(EXIT_FAILURE);
}

#define EXPECT(expected, call)                                   \
  do {                                                           \
    xdal_status_t expect_status_ = (call);                       \
    if (expect_status_ != (expected)) fail(#call, expect_status_); \
  } while (0)
#define CHECK(call) EXPECT(XDAL_SUCCESS, call)

static void count_call(void *user_data) { ++*(int *)user_data; }

int main(void) {
  CHECK(xdal_init());
  if (strcmp(xdal_backend_name(), "minimal") != 0) {
    fprintf(stderr, "smoke: backend is '%s', not 'minimal': set XDAL_BACKEND to the path of "
                    "libxdal_minimal_backend.so\n", xdal_backend_name());
    return EXIT_FAILURE;
  }
  unsigned char in[4096], out[4096];
  for (size_t i = 0; i < sizeof in; ++i) in[i] = (unsigned char)(i * 7 + 3);
  void *device = NULL;
  CHECK(xdal_malloc(&device, sizeof in));
  CHECK(xdal_memcpy(device, in, sizeof in, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK(xdal_memcpy(out, device, sizeof out, XDAL_MEMCPY_DEVICE_TO_HOST));
  if (memcmp(in, out, sizeof in) != 0) {
    fprintf(stderr, "smoke: the round trip changed the data\n");
    return EXIT_FAILURE;
  }
  CHECK(xdal_memset(device, 0x5a, 16));
  CHECK(xdal_memcpy(out, device, 16, XDAL_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 16; ++i) {
    if (out[i] != 0x5a) {
      fprintf(stderr, "smoke: memset wrote 0x%02x at byte %d\n", out[i], i);
      return EXIT_FAILURE;
    }
  }

  xdal_stream_t stream = NULL;
  xdal_event_t start = NULL, stop = NULL;
  CHECK(xdal_stream_create(&stream, XDAL_STREAM_DEFAULT, 0));
  CHECK(xdal_event_create(&start, XDAL_EVENT_DEFAULT));
  CHECK(xdal_event_create(&stop, XDAL_EVENT_DEFAULT));
  int calls = 0;
  CHECK(xdal_event_record(start, stream));
  CHECK(xdal_launch_host_func(stream, count_call, &calls));
  CHECK(xdal_memcpy_async(device, in, sizeof in, XDAL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK(xdal_event_record(stop, stream));
  CHECK(xdal_stream_synchronize(stream));
  float ms = -1.0f;
  CHECK(xdal_event_elapsed_time(&ms, start, stop));
  if (calls != 1 || ms < 0.0f) {
    fprintf(stderr, "smoke: host function ran %d times, elapsed %f ms\n", calls, (double)ms);
    return EXIT_FAILURE;
  }

  /* No kernels on this backend: a clean refusal, not a crash. */
  xdal_module_t builtin = NULL;
  EXPECT(XDAL_ERROR_NOT_SUPPORTED, xdal_module_get_builtin(&builtin));

  CHECK(xdal_event_destroy(stop));
  CHECK(xdal_event_destroy(start));
  CHECK(xdal_stream_destroy(stream));
  CHECK(xdal_free(device));
  printf("smoke: backend %s: round trip, memset, host function, events (%.3f ms) ok\n", xdal_backend_name(),
         (double)ms);
  return EXIT_SUCCESS;
}
