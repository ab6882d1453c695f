/* Random calls (since 1.2): three threads make a seeded mix of valid and
   invalid calls (stale and garbage handles, NULL, interior and host
   pointers, sizes from 0 to SIZE_MAX, unknown kinds, flags and modes,
   captures, graphs, events, host functions, module images of random
   bytes), while replacing each other's streams, events and graphs. Every
   call must return, every failure must come with a message that names the
   failed call, and the device must synchronize cleanly at the end.

   What only the caller can get right stays right: no pointer outside its
   allocation, and (except on the fake backend, which recognises freed
   device memory) no device pointer used after another thread freed it. */
#include "harness.h"

#define POINTERS 16
#define STREAMS 8
#define EVENTS 8
#define GRAPHS 4
#define HOST_BYTES (2u << 20)

static _Atomic(void *) pointers[POINTERS];
static _Atomic(xdal_stream_t) streams[STREAMS];
static _Atomic(xdal_event_t) events[EVENTS];
static _Atomic(xdal_graph_t) graphs[GRAPHS];
static _Atomic(xdal_graph_exec_t) execs[GRAPHS];
static unsigned char host_memory[3][HOST_BYTES];
static atomic_int unexplained, calls;
static int replace_memory; /* threads free each other's device memory */

static uint64_t next(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

static size_t any_size(uint64_t *s) {
  static const size_t sizes[] = {0, 1, 7, 64, 255, 256, 4096, 65536, 100000, 1u << 20, SIZE_MAX};
  return sizes[next(s) % (sizeof sizes / sizeof sizes[0])];
}

/* NULL, host memory, a live allocation or a pointer inside one (each
   allocation holds at least 256 bytes). */
static void *any_pointer(uint64_t *s) {
  switch (next(s) % 5) {
    case 0: return NULL;
    case 1: return host_memory[next(s) % 3] + next(s) % 1024;
    case 2: return (unsigned char *)atomic_load(&pointers[next(s) % POINTERS]) + next(s) % 256;
    default: return atomic_load(&pointers[next(s) % POINTERS]);
  }
}

/* A pointer that is no allocation's base: freeing it must be refused. */
static void *not_a_base(uint64_t *s) {
  switch (next(s) % 3) {
    case 0: return NULL;
    case 1: return host_memory[next(s) % 3] + next(s) % 1024;
    default: return (unsigned char *)atomic_load(&pointers[next(s) % POINTERS]) + 1 + next(s) % 255;
  }
}

static xdal_stream_t any_stream(uint64_t *s) {
  switch (next(s) % 5) {
    case 0: return NULL;
    case 1: return (xdal_stream_t)(uintptr_t)next(s);
    default: return atomic_load(&streams[next(s) % STREAMS]);
  }
}

static void answered(const char *function, xdal_status_t status) {
  atomic_fetch_add(&calls, 1);
  if (status == XDAL_SUCCESS || status == XDAL_ERROR_NOT_READY) return;
  char message[512] = "";
  harness_last_message(message, sizeof message);
  if (strncmp(message, function, strlen(function)) != 0 && atomic_fetch_add(&unexplained, 1) < 10)
    fprintf(stderr, "    %s returned %s with the message \"%s\"\n", function, xdal_status_string(status), message);
}
#define CALL(function, ...) answered(#function, function(__VA_ARGS__))

static void noop(void *arg) { (void)arg; }

static void random_call(uint64_t *s) {
  size_t size = any_size(s);
  switch (next(s) % 26) {
    case 0: {
      if (!replace_memory) break;
      void *fresh = NULL;
      CALL(xdal_malloc, &fresh, 256 + size % (1u << 22));
      if (fresh) CALL(xdal_free, atomic_exchange(&pointers[next(s) % POINTERS], fresh));
      break;
    }
    case 1: CALL(xdal_free, not_a_base(s)); break;
    case 2: CALL(xdal_memcpy, any_pointer(s), any_pointer(s), size, (xdal_memcpy_kind_t)(next(s) % 6)); break;
    case 3:
      CALL(xdal_memcpy_async, any_pointer(s), any_pointer(s), size, (xdal_memcpy_kind_t)(next(s) % 6), any_stream(s));
      break;
    case 4: CALL(xdal_memset, any_pointer(s), (int)next(s), size); break;
    case 5: CALL(xdal_memset_async, any_pointer(s), (int)next(s), size, any_stream(s)); break;
    case 6: CALL(xdal_stream_synchronize, any_stream(s)); break;
    case 7: CALL(xdal_stream_query, any_stream(s)); break;
    case 8: {
      xdal_stream_t fresh = NULL;
      CALL(xdal_stream_create, &fresh, (uint32_t)(next(s) % 3), -(int)(next(s) % 3));
      if (fresh) CALL(xdal_stream_destroy, atomic_exchange(&streams[next(s) % STREAMS], fresh));
      break;
    }
    case 9: CALL(xdal_event_record, atomic_load(&events[next(s) % EVENTS]), any_stream(s)); break;
    case 10: CALL(xdal_event_synchronize, atomic_load(&events[next(s) % EVENTS])); break;
    case 11: CALL(xdal_stream_wait_event, any_stream(s), atomic_load(&events[next(s) % EVENTS])); break;
    case 12: {
      float ms = 0;
      CALL(xdal_event_elapsed_time, &ms, atomic_load(&events[next(s) % EVENTS]),
           atomic_load(&events[next(s) % EVENTS]));
      break;
    }
    case 13: {
      xdal_event_t fresh = NULL;
      CALL(xdal_event_create, &fresh, (uint32_t)(next(s) % 4));
      if (fresh) CALL(xdal_event_destroy, atomic_exchange(&events[next(s) % EVENTS], fresh));
      break;
    }
    case 14: CALL(xdal_launch_host_func, any_stream(s), noop, NULL); break;
    case 15: {
      void *p = NULL;
      CALL(xdal_malloc_async, &p, size % (1u << 20), any_stream(s));
      if (p) CALL(xdal_free_async, p, any_stream(s));
      break;
    }
    case 16: CALL(xdal_free_async, not_a_base(s), any_stream(s)); break;
    case 17: {
      xdal_pointer_attributes_t attributes;
      memset(&attributes, 0, sizeof attributes);
      attributes.struct_size = sizeof attributes;
      CALL(xdal_pointer_get_attributes, any_pointer(s), &attributes);
      break;
    }
    case 18: {
      xdal_stream_t stream = atomic_load(&streams[next(s) % STREAMS]);
      if (xdal_stream_begin_capture(stream, (xdal_capture_mode_t)(next(s) % 4)) != XDAL_SUCCESS) break;
      CALL(xdal_memset_async, atomic_load(&pointers[next(s) % POINTERS]), 1, 64, stream);
      xdal_graph_t graph = NULL;
      CALL(xdal_stream_end_capture, stream, &graph);
      if (graph) CALL(xdal_graph_destroy, atomic_exchange(&graphs[next(s) % GRAPHS], graph));
      break;
    }
    case 19: {
      xdal_graph_exec_t exec = NULL;
      CALL(xdal_graph_instantiate, &exec, atomic_load(&graphs[next(s) % GRAPHS]));
      if (exec) CALL(xdal_graph_exec_destroy, atomic_exchange(&execs[next(s) % GRAPHS], exec));
      break;
    }
    case 20: CALL(xdal_graph_launch, atomic_load(&execs[next(s) % GRAPHS]), any_stream(s)); break;
    case 21: answered("xdal_device_synchronize", xdal_device_synchronize()); break;
    case 22: CALL(xdal_device_set, (int)(next(s) % 4) - 1); break;
    case 23: {
      xdal_mem_stats_t stats;
      memset(&stats, 0, sizeof stats);
      stats.struct_size = sizeof stats;
      CALL(xdal_mem_get_stats, (int)(next(s) % 3) - 1, &stats);
      break;
    }
    case 24: CALL(xdal_mem_empty_cache, (int)(next(s) % 3) - 1); break;
    default: {
      /* Rarely: a runtime that compiles text (OpenCL) takes milliseconds. */
      if (next(s) % 32 != 0) break;
      xdal_module_t module = NULL;
      CALL(xdal_module_load_data, &module, host_memory[next(s) % 3] + next(s) % 1024, size % 4096);
      if (module) CALL(xdal_module_unload, module);
      break;
    }
  }
}

static void *caller(void *seed) {
  uint64_t state = (uint64_t)(uintptr_t)seed * 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 20000; i++) random_call(&state);
  return NULL;
}

static void test_random_calls_are_all_answered(void) {
  /* Each thread's device memory may be freed by another only where freed
     device memory is recognised. */
  replace_memory = backend_is_fake();
  for (int i = 0; i < POINTERS; i++) {
    void *p = NULL;
    REQUIRE_OK(xdal_malloc(&p, 256u << (i % 6)));
    atomic_store(&pointers[i], p);
  }
  for (int i = 0; i < STREAMS; i++) {
    xdal_stream_t stream = NULL;
    REQUIRE_OK(xdal_stream_create(&stream, i % 2 ? XDAL_STREAM_NON_BLOCKING : XDAL_STREAM_DEFAULT, 0));
    atomic_store(&streams[i], stream);
    xdal_event_t event = NULL;
    REQUIRE_OK(xdal_event_create(&event, XDAL_EVENT_DEFAULT));
    atomic_store(&events[i], event);
  }
  pthread_t threads[3];
  for (uintptr_t t = 0; t < 3; t++) REQUIRE(pthread_create(&threads[t], NULL, caller, (void *)(t + 1)) == 0);
  for (int t = 0; t < 3; t++) pthread_join(threads[t], NULL);
  CHECK_OK(xdal_device_set(0));
  CHECK_MSG(atomic_load(&unexplained) == 0, "%d of %d failed calls came without a message naming the call",
            atomic_load(&unexplained), atomic_load(&calls));
  /* Whatever the work did, the device can be waited for, and what is
     left can be destroyed. */
  xdal_status_t sync = xdal_device_synchronize();
  CHECK_MSG(sync == XDAL_SUCCESS || sync == XDAL_ERROR_LAUNCH_FAILED, "xdal_device_synchronize: %s",
            xdal_status_string(sync));
  for (int i = 0; i < GRAPHS; i++) {
    if (atomic_load(&execs[i])) CHECK_OK(xdal_graph_exec_destroy(atomic_load(&execs[i])));
    if (atomic_load(&graphs[i])) CHECK_OK(xdal_graph_destroy(atomic_load(&graphs[i])));
  }
  for (int i = 0; i < STREAMS; i++) {
    CHECK_OK(xdal_stream_destroy(atomic_load(&streams[i])));
    CHECK_OK(xdal_event_destroy(atomic_load(&events[i])));
  }
  for (int i = 0; i < POINTERS; i++) CHECK_OK(xdal_free(atomic_load(&pointers[i])));
  printf("    %d calls\n", atomic_load(&calls));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_random_calls_are_all_answered),
};

HARNESS_MAIN(tests)
