/* Runs on whatever backend xdal selected and checks that it is the one
   expected (argv[1]): backend name, a copy round trip, a stream with a host
   function, and timed events. Only what every backend must implement is
   used (no fallbacks). */
#include <xdal/xdal.h>

#include <stdio.h>
#include <string.h>

static int failed(const char *call, xdal_status_t status) {
  char message[512] = "";
  (void)xdal_get_last_error_message(message, sizeof message, NULL);
  fprintf(stderr, "app: %s -> %s: %s\n", call, xdal_status_string(status), message);
  return 1;
}

static void count_call(void *user_data) { ++*(int *)user_data; }

#define CHECK(call)                                                          \
  do {                                                                       \
    xdal_status_t check_status_ = (call);                                    \
    if (check_status_ != XDAL_SUCCESS) return failed(#call, check_status_); \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: app <expected backend name>\n");
    return 2;
  }
  CHECK(xdal_init());
  if (strcmp(xdal_backend_name(), argv[1]) != 0) {
    fprintf(stderr, "app: backend is '%s', expected '%s'\n", xdal_backend_name(), argv[1]);
    return 1;
  }
  int count = 0;
  CHECK(xdal_device_get_count(&count));
  xdal_device_properties_t props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  CHECK(xdal_device_get_properties(0, &props));

  char in[1000], out[1000];
  for (size_t i = 0; i < sizeof in; ++i) in[i] = (char)(i % 101);
  memset(out, 0, sizeof out);
  void *device = NULL;
  xdal_stream_t stream = NULL;
  xdal_event_t start = NULL, stop = NULL;
  CHECK(xdal_malloc(&device, sizeof in));
  CHECK(xdal_stream_create(&stream, XDAL_STREAM_DEFAULT, 0));
  CHECK(xdal_event_create(&start, XDAL_EVENT_DEFAULT));
  CHECK(xdal_event_create(&stop, XDAL_EVENT_DEFAULT));
  CHECK(xdal_memcpy(device, in, sizeof in, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK(xdal_memcpy(out, device, sizeof out, XDAL_MEMCPY_DEVICE_TO_HOST));
  int calls = 0;
  CHECK(xdal_event_record(start, stream));
  CHECK(xdal_launch_host_func(stream, count_call, &calls));
  CHECK(xdal_event_record(stop, stream));
  CHECK(xdal_stream_synchronize(stream));
  CHECK(xdal_event_synchronize(stop));
  if (calls != 1) {
    fprintf(stderr, "app: the host function ran %d times\n", calls);
    return 1;
  }
  float ms = -1.0f;
  CHECK(xdal_event_elapsed_time(&ms, start, stop));
  CHECK(xdal_event_destroy(stop));
  CHECK(xdal_event_destroy(start));
  CHECK(xdal_stream_destroy(stream));
  CHECK(xdal_free(device));
  if (memcmp(in, out, sizeof in) != 0) {
    fprintf(stderr, "app: round trip changed the data\n");
    return 1;
  }
  printf("app: backend %s, %d device(s), device 0 '%s', round trip ok (%.3f ms)\n",
         xdal_backend_name(), count, props.name, (double)ms);
  return 0;
}
