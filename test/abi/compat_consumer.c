/* Binary compatibility: a consumer compiled against a released baseline's
 * headers (abi/baselines/<version>/include), run against the current
 * libxdal.so. Every struct it passes has the baseline's size, every enum
 * value and macro is the baseline's, and every call goes through the
 * baseline's prototypes; whatever the library has become since, within
 * the major, this must still work.
 *
 *   compat_consumer [expected-backend-name]
 *
 * It runs on whichever backend XDAL_BACKEND selects; the module of built-in
 * kernels is exercised where the backend has one. Exit status 0 on success. */
#include <xdal/xdal.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY 0xA5

static void die(const char *what, xdal_status_t status) {
  char message[512] = "";
  xdal_get_last_error_message(message, sizeof message, NULL);
  fprintf(stderr, "FAIL: %s: %s (%s)\n", what, xdal_status_string(status), message);
  exit(1);
}

#define CHECK(call)                          \
  do {                                       \
    xdal_status_t status_ = (call);          \
    if (status_ != XDAL_SUCCESS) die(#call, status_); \
  } while (0)

#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "FAIL: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

/* Whether `len` bytes at `p` all still hold the canary. */
static int untouched(const void *p, size_t len) {
  const unsigned char *b = p;
  for (size_t i = 0; i < len; i++) {
    if (b[i] != CANARY) return 0;
  }
  return 1;
}

/* A function, so that the compiler does not see `minor >= 0` when the
 * baseline's minor is 0. */
static int at_least(uint32_t have, uint32_t want) { return have >= want; }

static void versions(const char *expected_backend) {
  uint32_t major = 0, minor = 0, patch = 0;
  CHECK(xdal_get_version(&major, &minor, &patch));
  printf("compiled against xdal %d.%d.%d (ABI %d.%d), running %u.%u.%u on backend \"%s\"\n",
         XDAL_VERSION_MAJOR, XDAL_VERSION_MINOR, XDAL_VERSION_PATCH, XDAL_ABI_VERSION_MAJOR,
         XDAL_ABI_VERSION_MINOR, major, minor, patch, xdal_backend_name());
  EXPECT(major == XDAL_VERSION_MAJOR);
  EXPECT(at_least(minor, XDAL_VERSION_MINOR));
  if (expected_backend != NULL) EXPECT(strcmp(xdal_backend_name(), expected_backend) == 0);
  EXPECT(strcmp(xdal_status_string(XDAL_ERROR_INVALID_VALUE), "XDAL_ERROR_INVALID_VALUE") == 0);
  EXPECT(strcmp(xdal_status_string(XDAL_ERROR_INTERNAL), "XDAL_ERROR_INTERNAL") == 0);
}

/* The struct_size rule, caller side: the library writes only the fields
 * that fit in the size this consumer was compiled with, or an older one. */
static void properties(void) {
  int count = 0;
  CHECK(xdal_device_get_count(&count));
  EXPECT(count >= 1);

  struct {
    xdal_device_properties_t props;
    unsigned char after[64];
  } p;
  memset(&p, CANARY, sizeof p);
  p.props.struct_size = sizeof p.props;
  CHECK(xdal_device_get_properties(0, &p.props));
  EXPECT(p.props.struct_size == sizeof p.props);
  EXPECT(p.props.name[0] != '\0' && memchr(p.props.name, '\0', sizeof p.props.name) != NULL);
  EXPECT(p.props.total_memory > 0);
  EXPECT(untouched(p.after, sizeof p.after));

  /* A caller from before total_memory existed. */
  const size_t old_size = offsetof(xdal_device_properties_t, total_memory);
  memset(&p, CANARY, sizeof p);
  p.props.struct_size = old_size;
  CHECK(xdal_device_get_properties(0, &p.props));
  EXPECT(p.props.name[0] != '\0');
  EXPECT(untouched((const unsigned char *)&p + old_size, sizeof p - old_size));
}

static void memory(void) {
  enum { N = 256 };
  int32_t host[N], back[N];
  for (int i = 0; i < N; i++) host[i] = i * 3;
  void *dev = NULL;
  CHECK(xdal_malloc(&dev, sizeof host));
  CHECK(xdal_memcpy(dev, host, sizeof host, XDAL_MEMCPY_HOST_TO_DEVICE));
  memset(back, 0, sizeof back);
  CHECK(xdal_memcpy(back, dev, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
  EXPECT(memcmp(host, back, sizeof host) == 0);
  CHECK(xdal_memset(dev, 0x11, sizeof host));
  CHECK(xdal_memcpy(back, dev, sizeof back, XDAL_MEMCPY_DEFAULT));
  EXPECT(back[7] == 0x11111111);

  struct {
    xdal_pointer_attributes_t attrs;
    unsigned char after[32];
  } a;
  memset(&a, CANARY, sizeof a);
  a.attrs.struct_size = sizeof a.attrs;
  CHECK(xdal_pointer_get_attributes((const char *)dev + 8, &a.attrs));
  EXPECT(a.attrs.type == XDAL_MEMORY_TYPE_DEVICE);
  EXPECT(a.attrs.device == 0);
  EXPECT(a.attrs.base == dev && a.attrs.size == sizeof host);
  EXPECT(untouched(a.after, sizeof a.after));
  memset(&a, CANARY, sizeof a);
  a.attrs.struct_size = sizeof a.attrs;
  CHECK(xdal_pointer_get_attributes(host, &a.attrs));
  EXPECT(a.attrs.type == XDAL_MEMORY_TYPE_UNREGISTERED);

  struct {
    xdal_mem_stats_t stats;
    unsigned char after[32];
  } s;
  memset(&s, CANARY, sizeof s);
  s.stats.struct_size = sizeof s.stats;
  CHECK(xdal_mem_get_stats(0, &s.stats));
  EXPECT(s.stats.allocated_bytes >= sizeof host);
  EXPECT(untouched(s.after, sizeof s.after));

  CHECK(xdal_free(dev));
  EXPECT(xdal_free(dev) == XDAL_ERROR_INVALID_POINTER);

  void *pinned = NULL;
  CHECK(xdal_malloc_host(&pinned, 4096));
  CHECK(xdal_free_host(pinned));
}

static void count_up(void *user_data) { ++*(int *)user_data; }

static void streams_and_events(void) {
  int least = 0, greatest = 0;
  CHECK(xdal_device_get_stream_priority_range(&least, &greatest));
  xdal_stream_t stream = NULL;
  CHECK(xdal_stream_create(&stream, XDAL_STREAM_DEFAULT, least));
  int device = -1;
  CHECK(xdal_stream_get_device(stream, &device));
  EXPECT(device == 0);

  xdal_event_t start = NULL, end = NULL;
  CHECK(xdal_event_create(&start, XDAL_EVENT_DEFAULT));
  CHECK(xdal_event_create(&end, XDAL_EVENT_DEFAULT));
  uint64_t host[64], back[64];
  for (int i = 0; i < 64; i++) host[i] = (uint64_t)i << 33;
  void *dev = NULL;
  CHECK(xdal_malloc_async(&dev, sizeof host, stream));
  CHECK(xdal_event_record(start, stream));
  CHECK(xdal_memcpy_async(dev, host, sizeof host, XDAL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK(xdal_memcpy_async(back, dev, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST, stream));
  int calls = 0;
  CHECK(xdal_launch_host_func(stream, count_up, &calls));
  CHECK(xdal_event_record(end, stream));
  CHECK(xdal_free_async(dev, stream));
  CHECK(xdal_event_synchronize(end));
  EXPECT(xdal_event_query(end) == XDAL_SUCCESS);
  float ms = -1.0f;
  CHECK(xdal_event_elapsed_time(&ms, start, end));
  EXPECT(ms >= 0.0f);
  CHECK(xdal_stream_synchronize(stream));
  EXPECT(calls == 1);
  EXPECT(memcmp(host, back, sizeof host) == 0);
  CHECK(xdal_event_destroy(start));
  CHECK(xdal_event_destroy(end));
  CHECK(xdal_stream_destroy(stream));
  CHECK(xdal_device_synchronize());
}

/* A host kernel reads the context the library fills: at least the size
 * this consumer knows (a newer library may append fields). */
static xdal_status_t stamp_blocks(const xdal_kernel_context_t *ctx, void *const *args) {
  if (ctx->struct_size < sizeof *ctx) return XDAL_ERROR_INVALID_VALUE;
  int32_t *out = *(int32_t *const *)args[0];
  int32_t base = *(const int32_t *)args[1];
  out[ctx->block_idx.x] = base + (int32_t)(ctx->block_idx.x * ctx->block_dim.x);
  return XDAL_SUCCESS;
}

static void kernels(void) {
  enum { BLOCKS = 4, THREADS = 8 };
  int32_t back[BLOCKS] = {0};
  void *dev = NULL;
  CHECK(xdal_malloc(&dev, sizeof back));
  xdal_function_t fn = NULL;
  CHECK(xdal_function_from_host(&fn, stamp_blocks));
  int32_t base = 1000;
  xdal_kernel_arg_t args[2] = {{&dev, sizeof dev}, {&base, sizeof base}};
  xdal_dim3_t grid = {BLOCKS, 1, 1}, block = {THREADS, 1, 1};
  CHECK(xdal_launch_kernel(fn, grid, block, 0, NULL, args, 2));
  CHECK(xdal_stream_synchronize(NULL));
  CHECK(xdal_memcpy(back, dev, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
  for (int b = 0; b < BLOCKS; b++) EXPECT(back[b] == 1000 + b * THREADS);

  xdal_module_t builtin = NULL;
  xdal_status_t status = xdal_module_get_builtin(&builtin);
  if (status == XDAL_ERROR_NOT_SUPPORTED) {
    printf("backend has no built-in kernels: skipped\n");
  } else {
    CHECK(status);
    xdal_function_t fill = NULL;
    CHECK(xdal_module_get_function(&fill, builtin, "fill_i32"));
    uint64_t n = BLOCKS;
    int32_t value = -7;
    xdal_kernel_arg_t fill_args[3] = {{&dev, sizeof dev}, {&n, sizeof n}, {&value, sizeof value}};
    xdal_dim3_t one = {1, 1, 1};
    CHECK(xdal_launch_kernel(fill, one, one, 0, NULL, fill_args, 3));
    CHECK(xdal_memcpy(back, dev, sizeof back, XDAL_MEMCPY_DEVICE_TO_HOST));
    for (int b = 0; b < BLOCKS; b++) EXPECT(back[b] == -7);
    CHECK(xdal_module_unload(builtin));
  }
  CHECK(xdal_free(dev));
}

/* What a consumer built against 1.1 or later headers uses of 1.1. */
#if XDAL_ABI_VERSION_MINOR >= 1
static int calls_1_1;
static void count_call(void *arg) { (void)arg; calls_1_1++; }

static void since_1_1(void) {
  xdal_stream_t stream = NULL, again = NULL;
  CHECK(xdal_device_get_default_stream(0, &stream));
  CHECK(xdal_device_get_default_stream(0, &again));
  EXPECT(stream != NULL && stream == again);
  int device = -1;
  CHECK(xdal_stream_get_device(stream, &device));
  EXPECT(device == 0);
  CHECK(xdal_launch_host_func(stream, count_call, NULL));
  CHECK(xdal_stream_synchronize(NULL)); /* the same stream */
  EXPECT(calls_1_1 == 1);
  EXPECT(xdal_stream_destroy(stream) == XDAL_ERROR_INVALID_VALUE);
  CHECK(xdal_stream_query(stream));
  EXPECT(xdal_device_get_default_stream(-1, &again) == XDAL_ERROR_INVALID_DEVICE);

  void *dev = NULL;
  CHECK(xdal_mem_reset_peak_stats(0));
  CHECK(xdal_malloc(&dev, 1 << 20));
  CHECK(xdal_free(dev));
  struct {
    xdal_mem_stats_t stats;
    unsigned char after[32];
  } s;
  memset(&s, CANARY, sizeof s);
  s.stats.struct_size = sizeof s.stats;
  CHECK(xdal_mem_get_stats(0, &s.stats));
  EXPECT(s.stats.peak_reserved_bytes >= s.stats.reserved_bytes + (1u << 20));
  EXPECT(untouched(s.after, sizeof s.after));
  CHECK(xdal_mem_reset_peak_stats(0));
  CHECK(xdal_mem_get_stats(0, &s.stats));
  EXPECT(s.stats.peak_reserved_bytes == s.stats.reserved_bytes);
}
#else
static void since_1_1(void) {}
#endif

static void errors(void) {
  EXPECT(xdal_malloc(NULL, 16) == XDAL_ERROR_NULL_POINTER);
  size_t needed = 0;
  char message[256];
  CHECK(xdal_get_last_error_message(message, sizeof message, &needed));
  EXPECT(needed > 1 && strlen(message) + 1 == needed);
  EXPECT(xdal_device_set(-1) == XDAL_ERROR_INVALID_DEVICE);
  EXPECT(xdal_stream_destroy(NULL) == XDAL_ERROR_INVALID_HANDLE);
}

int main(int argc, char **argv) {
  CHECK(xdal_init());
  versions(argc > 1 ? argv[1] : NULL);
  properties();
  memory();
  streams_and_events();
  kernels();
  since_1_1();
  errors();
  printf("ok\n");
  return 0;
}
