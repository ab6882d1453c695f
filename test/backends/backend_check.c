/* Checks which backend xdal selected, or why it refused one. Run with the
 * environment that makes the choice (XDAL_BACKEND, a linked-in backend,
 * LD_PRELOAD) and one of:
 *
 *   backend_check uses <name> [no-kernels]
 *       xdal_init succeeds on backend <name>, which runs a small workload
 *       (copies, a set, streams, a host function, timed events); with
 *       no-kernels, every kernel call is XDAL_ERROR_NOT_SUPPORTED.
 *   backend_check refused <STATUS> <text>...
 *       xdal_init returns <STATUS> (its C name); its message names
 *       xdal_init and contains every <text>; xdal_backend_name() is "none";
 *       and every later call, from this thread and another, returns the
 *       same status with a message that names the call and says why.
 *   backend_check entry-errors
 *       on the test plugin: a backend's own message (last_error_message)
 *       reaches the caller, and a status outside the enum becomes
 *       XDAL_ERROR_INTERNAL.
 *   backend_check stats-1-0
 *       on the test plugin whose mem_get_stats writes only the 1.0 fields:
 *       the front reports the backend's numbers, and completes
 *       peak_reserved_bytes with its documented lower bound.
 *
 * The checks come from the conformance harness; the exit status is 0 only
 * when all pass. */
#include "harness.h"

/* --- uses ------------------------------------------------------------------------ */

static void count_fn(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void check_workload(void) {
  int count = 0;
  REQUIRE_OK(xdal_device_get_count(&count));
  REQUIRE(count >= 1);
  xdal_device_properties_t props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  REQUIRE_OK(xdal_device_get_properties(0, &props));
  printf("backend %s: %d device(s), device 0 \"%s\"\n", xdal_backend_name(), count, props.name);

  enum { N = 10000 };
  static unsigned char in[N], out[N];
  fill_pattern(in, N, 17);
  unsigned char *d = NULL;
  REQUIRE_OK(xdal_malloc((void **)&d, N));
  CHECK_OK(xdal_memcpy(d, in, N, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK_OK(xdal_memcpy(out, d, N, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_PATTERN(out, N, 17);
  CHECK_OK(xdal_memset(d + 10, 0x3c, 100));
  CHECK_OK(xdal_memcpy(out, d, N, XDAL_MEMCPY_DEFAULT));
  CHECK_BYTES(out + 10, 100, 0x3c);
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memcpy(d + 1, in, N, XDAL_MEMCPY_HOST_TO_DEVICE));

  xdal_stream_t s = NULL;
  xdal_event_t start = NULL, stop = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  REQUIRE_OK(xdal_event_create(&start, XDAL_EVENT_DEFAULT));
  REQUIRE_OK(xdal_event_create(&stop, XDAL_EVENT_DEFAULT));
  static atomic_int calls;
  atomic_init(&calls, 0);
  memset(out, 0, N);
  CHECK_OK(xdal_event_record(start, s));
  CHECK_OK(xdal_memcpy_async(d, in, N, XDAL_MEMCPY_HOST_TO_DEVICE, s));
  CHECK_OK(xdal_memset_async(d, 0x11, 5, s));
  CHECK_OK(xdal_launch_host_func(s, count_fn, &calls));
  CHECK_OK(xdal_memcpy_async(out, d, N, XDAL_MEMCPY_DEVICE_TO_HOST, s));
  CHECK_OK(xdal_event_record(stop, s));
  CHECK_OK(xdal_stream_wait_event(NULL, stop));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_event_synchronize(stop));
  CHECK_EQ(atomic_load(&calls), 1);
  CHECK_BYTES(out, 5, 0x11);
  CHECK_PATTERN_AT(out + 5, N - 5, 17, 5);
  float ms = -1.0f;
  CHECK_OK(xdal_event_elapsed_time(&ms, start, stop));
  CHECK(ms >= 0.0f);
  CHECK_OK(xdal_device_synchronize());
  CHECK_OK(xdal_event_destroy(start));
  CHECK_OK(xdal_event_destroy(stop));
  CHECK_OK(xdal_stream_destroy(s));
  CHECK_OK(xdal_free(d));
}

static xdal_status_t noop_kernel(const xdal_kernel_context_t *ctx, void *const *args) {
  (void)ctx;
  (void)args;
  return XDAL_SUCCESS;
}

/* A backend without kernels refuses every kernel call the same way. */
static void check_no_kernels(void) {
  xdal_module_t m = NULL;
  xdal_function_t f = NULL;
  static const unsigned char image[16] = {0x7f, 'E', 'L', 'F'};
  CHECK_STATUS(XDAL_ERROR_NOT_SUPPORTED, xdal_module_get_builtin(&m));
  CHECK_MESSAGE_NAMES("xdal_module_get_builtin");
  CHECK_STATUS(XDAL_ERROR_NOT_SUPPORTED, xdal_module_load(&m, "no-such-module.so"));
  CHECK_MESSAGE_NAMES("xdal_module_load");
  CHECK_STATUS(XDAL_ERROR_NOT_SUPPORTED, xdal_module_load_data(&m, image, sizeof image));
  CHECK_MESSAGE_NAMES("xdal_module_load_data");
  CHECK_STATUS(XDAL_ERROR_NOT_SUPPORTED, xdal_function_from_host(&f, noop_kernel));
  CHECK_MESSAGE_NAMES("xdal_function_from_host");
  CHECK(m == NULL && f == NULL);
}

static int run_uses(const char *expected, int no_kernels) {
  if (!CHECK_OK(xdal_init())) return 1;
  CHECK_STR_EQ(xdal_backend_name(), expected);
  if (strcmp(xdal_backend_name(), expected) != 0) return 1;
  check_workload();
  if (no_kernels) check_no_kernels();
  return 0;
}

/* --- refused ----------------------------------------------------------------------- */

static xdal_status_t expected_status;
static int n_reasons;
static char **reasons;

/* The last error message names `function` and gives every reason. */
static void check_reasons(const char *function) {
  CHECK_MESSAGE_NAMES(function);
  char message[2048];
  harness_last_message(message, sizeof message);
  for (int i = 0; i < n_reasons; i++)
    CHECK_MSG(strstr(message, reasons[i]) != NULL, "%s: the message \"%s\" should contain \"%s\"", function,
              message, reasons[i]);
}

#define CHECK_REFUSED(function, call)                                                                      \
  do {                                                                                                     \
    CHECK_STATUS(expected_status, call);                                                                   \
    check_reasons(function);                                                                               \
  } while (0)

static void dummy_host_fn(void *arg) { (void)arg; }

/* Every call that needs a backend, with arguments that would be valid on a
   working one. */
static void check_every_call_refused(void) {
  int i = 7, j = 7;
  size_t a = 7, b = 7;
  void *p = NULL;
  unsigned char host[64] = {0}, host2[64] = {0};
  xdal_device_properties_t props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  xdal_pointer_attributes_t attrs;
  memset(&attrs, 0, sizeof attrs);
  attrs.struct_size = sizeof attrs;
  xdal_mem_stats_t stats;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  xdal_stream_t s = NULL;
  xdal_event_t e = NULL;
  xdal_module_t m = NULL;
  xdal_function_t f = NULL;
  float ms = 0.0f;

  CHECK_REFUSED("xdal_init", xdal_init());
  CHECK_REFUSED("xdal_device_get_count", xdal_device_get_count(&i));
  CHECK_REFUSED("xdal_device_set", xdal_device_set(0));
  CHECK_REFUSED("xdal_device_get", xdal_device_get(&i));
  CHECK_REFUSED("xdal_device_get_properties", xdal_device_get_properties(0, &props));
  CHECK_REFUSED("xdal_device_synchronize", xdal_device_synchronize());
  CHECK_REFUSED("xdal_device_get_stream_priority_range", xdal_device_get_stream_priority_range(&i, &j));
  CHECK_REFUSED("xdal_device_can_access_peer", xdal_device_can_access_peer(&i, 0, 0));
  CHECK_REFUSED("xdal_mem_get_info", xdal_mem_get_info(&a, &b));
  CHECK_REFUSED("xdal_malloc", xdal_malloc(&p, 64));
  CHECK_REFUSED("xdal_free", xdal_free(host));
  CHECK_REFUSED("xdal_malloc_host", xdal_malloc_host(&p, 64));
  CHECK_REFUSED("xdal_free_host", xdal_free_host(host));
  CHECK_REFUSED("xdal_malloc_async", xdal_malloc_async(&p, 64, NULL));
  CHECK_REFUSED("xdal_free_async", xdal_free_async(host, NULL));
  CHECK_REFUSED("xdal_pointer_get_attributes", xdal_pointer_get_attributes(host, &attrs));
  CHECK_REFUSED("xdal_memcpy", xdal_memcpy(host2, host, sizeof host, XDAL_MEMCPY_HOST_TO_HOST));
  CHECK_REFUSED("xdal_memcpy_async", xdal_memcpy_async(host2, host, sizeof host, XDAL_MEMCPY_DEFAULT, NULL));
  CHECK_REFUSED("xdal_memcpy_peer", xdal_memcpy_peer(host2, 0, host, 0, sizeof host));
  CHECK_REFUSED("xdal_memset", xdal_memset(host, 0, sizeof host));
  CHECK_REFUSED("xdal_memset_async", xdal_memset_async(host, 0, sizeof host, NULL));
  CHECK_REFUSED("xdal_mem_get_stats", xdal_mem_get_stats(0, &stats));
  CHECK_REFUSED("xdal_mem_reset_peak_stats", xdal_mem_reset_peak_stats(0));
  CHECK_REFUSED("xdal_mem_empty_cache", xdal_mem_empty_cache(0));
  CHECK_REFUSED("xdal_stream_create", xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  CHECK_REFUSED("xdal_device_get_default_stream", xdal_device_get_default_stream(0, &s));
  CHECK_REFUSED("xdal_stream_query", xdal_stream_query(NULL));
  CHECK_REFUSED("xdal_stream_synchronize", xdal_stream_synchronize(NULL));
  CHECK_REFUSED("xdal_stream_get_priority", xdal_stream_get_priority(NULL, &i));
  CHECK_REFUSED("xdal_stream_get_device", xdal_stream_get_device(NULL, &i));
  CHECK_REFUSED("xdal_launch_host_func", xdal_launch_host_func(NULL, dummy_host_fn, NULL));
  CHECK_REFUSED("xdal_event_create", xdal_event_create(&e, XDAL_EVENT_DEFAULT));
  CHECK_REFUSED("xdal_module_load", xdal_module_load(&m, "no-such-module.so"));
  CHECK_REFUSED("xdal_module_load_data", xdal_module_load_data(&m, host, sizeof host));
  CHECK_REFUSED("xdal_module_get_builtin", xdal_module_get_builtin(&m));
  CHECK_REFUSED("xdal_function_from_host", xdal_function_from_host(&f, noop_kernel));
  /* Nothing was written. */
  CHECK(i == 7 && j == 7 && a == 7 && b == 7 && p == NULL && s == NULL && e == NULL && m == NULL && f == NULL);
  CHECK(ms == 0.0f);
  CHECK_STR_EQ(xdal_backend_name(), "none");
}

static void *refused_in_thread(void *arg) {
  (void)arg;
  check_every_call_refused();
  return NULL;
}

static int run_refused(void) {
  /* The first call, and the load with it. */
  CHECK_STATUS(expected_status, xdal_init());
  check_reasons("xdal_init");
  char message[2048];
  harness_last_message(message, sizeof message);
  printf("xdal_init -> %s: \"%s\"\n", xdal_status_string(expected_status), message);
  const char *name = xdal_backend_name();
  CHECK(name != NULL);
  CHECK_STR_EQ(name, "none");

  check_every_call_refused();
  pthread_t t;
  if (CHECK(pthread_create(&t, NULL, refused_in_thread, NULL) == 0)) pthread_join(t, NULL);

  /* What needs no backend still works. */
  uint32_t major = 0, minor = 0, patch = 0;
  CHECK_OK(xdal_get_version(&major, &minor, &patch));
  CHECK_EQ_U(major, XDAL_ABI_VERSION_MAJOR);
  CHECK_STR_EQ(xdal_status_string(expected_status), xdal_status_string(expected_status));
  return 0;
}

static int parse_status(const char *name, xdal_status_t *status) {
  for (int v = 0; v < 64; v++) {
    if (strcmp(xdal_status_string((xdal_status_t)v), name) == 0) {
      *status = (xdal_status_t)v;
      return 1;
    }
  }
  return 0;
}

/* --- entry-errors -------------------------------------------------------------------- */

static int run_entry_errors(void) {
  if (!CHECK_OK(xdal_init())) return 1;
  CHECK_STR_EQ(xdal_backend_name(), "test-plugin");
  xdal_mem_stats_t before, after;
  memset(&before, 0, sizeof before);
  before.struct_size = sizeof before;
  after = before;
  CHECK_OK(xdal_mem_get_stats(0, &before));

  /* The test plugin fails a 777-byte allocation with its own message. */
  void *p = NULL;
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&p, 777));
  CHECK_MESSAGE_NAMES("xdal_malloc");
  char message[1024];
  harness_last_message(message, sizeof message);
  printf("xdal_malloc(777) -> \"%s\"\n", message);
  CHECK_MSG(strstr(message, "test-plugin: no room for 777 bytes") != NULL,
            "the backend's own message should reach the caller: \"%s\"", message);
  CHECK(p == NULL);

  /* ... and a 778-byte one with a status that xdal does not have. */
  CHECK_STATUS(XDAL_ERROR_INTERNAL, xdal_malloc(&p, 778));
  CHECK_MESSAGE_NAMES("xdal_malloc");
  harness_last_message(message, sizeof message);
  printf("xdal_malloc(778) -> \"%s\"\n", message);
  CHECK_MSG(strstr(message, "77") != NULL, "the message should give the backend's raw status 77: \"%s\"", message);
  CHECK(p == NULL);

  /* The front counted the out-of-memory, not the other failure. */
  CHECK_OK(xdal_mem_get_stats(0, &after));
  CHECK_EQ_U(after.num_ooms, before.num_ooms + 1);
  CHECK_EQ_U(after.num_allocs, before.num_allocs);

  /* Still usable. */
  check_workload();
  return 0;
}

/* --- stats-1-0 ------------------------------------------------------------------------ */

static int get_stats(xdal_mem_stats_t *s) {
  memset(s, 0, sizeof *s);
  s->struct_size = sizeof *s;
  return CHECK_OK(xdal_mem_get_stats(0, s));
}

/* Under a backend whose statistics end before peak_reserved_bytes, the front
   reports the highest of reserved_bytes now, peak_allocated_bytes, and every
   reserved_bytes it reported since the last reset (docs/semantics.md). */
static int run_stats_1_0(void) {
  if (!CHECK_OK(xdal_init())) return 1;
  CHECK_STR_EQ(xdal_backend_name(), "test-plugin");
  xdal_mem_stats_t s0, s1, s2, s3;
  CHECK_OK(xdal_mem_reset_peak_stats(0));
  if (!get_stats(&s0)) return 1;
  CHECK_EQ_U(s0.peak_reserved_bytes, s0.reserved_bytes);

  /* The backend's numbers, not the front's: the plugin counts rounded
     blocks, the front would count the 1000 bytes asked for. */
  void *a = NULL;
  if (!CHECK_OK(xdal_malloc(&a, 1000))) return 1;
  if (!get_stats(&s1)) return 1;
  CHECK_EQ_U(s1.allocated_bytes, s0.allocated_bytes + 1024);
  CHECK_EQ_U(s1.reserved_bytes, s0.reserved_bytes + 1024);
  CHECK_EQ_U(s1.peak_reserved_bytes, s1.reserved_bytes);

  /* A reservation the front reported stays the peak after a free. */
  CHECK_OK(xdal_free(a));
  if (!get_stats(&s2)) return 1;
  CHECK_EQ_U(s2.reserved_bytes, s0.reserved_bytes);
  CHECK_EQ_U(s2.peak_reserved_bytes, s1.reserved_bytes);

  /* Growth the front never reported: peak_allocated_bytes bounds it. */
  CHECK_OK(xdal_mem_reset_peak_stats(0));
  void *b = NULL, *c = NULL;
  if (!CHECK_OK(xdal_malloc(&b, 1 << 20)) || !CHECK_OK(xdal_malloc(&c, 1 << 20))) return 1;
  CHECK_OK(xdal_free(b));
  CHECK_OK(xdal_free(c));
  if (!get_stats(&s3)) return 1;
  CHECK_EQ_U(s3.peak_allocated_bytes, s0.reserved_bytes + (2u << 20));
  CHECK_EQ_U(s3.peak_reserved_bytes, s3.peak_allocated_bytes);

  /* A reset forgets both. */
  CHECK_OK(xdal_mem_reset_peak_stats(0));
  if (!get_stats(&s3)) return 1;
  CHECK_EQ_U(s3.peak_reserved_bytes, s0.reserved_bytes);
  return 0;
}

/* --- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *env = getenv("XDAL_BACKEND");
  printf("backend_check (XDAL_BACKEND=%s)\n", env ? env : "<unset>");
  int usage = 0;
  if (argc >= 3 && strcmp(argv[1], "uses") == 0) {
    int no_kernels = argc >= 4 && strcmp(argv[3], "no-kernels") == 0;
    usage = argc > 4 || (argc == 4 && !no_kernels);
    if (!usage) run_uses(argv[2], no_kernels);
  } else if (argc >= 3 && strcmp(argv[1], "refused") == 0) {
    usage = !parse_status(argv[2], &expected_status);
    n_reasons = argc - 3;
    reasons = argv + 3;
    if (!usage) run_refused();
  } else if (argc == 2 && strcmp(argv[1], "entry-errors") == 0) {
    run_entry_errors();
  } else if (argc == 2 && strcmp(argv[1], "stats-1-0") == 0) {
    run_stats_1_0();
  } else {
    usage = 1;
  }
  if (usage) {
    fprintf(stderr,
            "usage: backend_check uses <name> [no-kernels]\n"
            "       backend_check refused <STATUS> <text>...\n"
            "       backend_check entry-errors\n"
            "       backend_check stats-1-0\n");
    return 2;
  }
  int failures = atomic_load(&harness_failures);
  printf("%s: %d failed check(s)\n", failures ? "FAILED" : "passed", failures);
  return failures ? 1 : 0;
}
