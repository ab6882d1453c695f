/* Devices: count, current device per thread, properties, peers, memory info,
   synchronization. */
#include "harness.h"

#define CANARY 0xA5

static void test_count(void) {
  int count = -1;
  REQUIRE_OK(xdal_device_get_count(&count));
  CHECK_MSG(count >= 1, "a started backend has at least one device; count = %d", count);
  printf("    %d device(s)\n", count);
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_get_count(NULL));
  int again = -1;
  CHECK_OK(xdal_device_get_count(&again));
  CHECK_EQ(again, count);
  if (backend_is_fake() && getenv("XDAL_FAKE_DEVICE_COUNT") == NULL) CHECK_EQ(count, 2);
}

static void test_set_get_and_invalid_devices(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  int device = -7;
  REQUIRE_OK(xdal_device_get(&device));
  CHECK_EQ(device, 0); /* the default in the main thread, before any set */

  for (int d = 0; d < count; d++) {
    REQUIRE_OK(xdal_device_set(d));
    CHECK_OK(xdal_device_get(&device));
    CHECK_EQ(device, d);
  }
  int last = count - 1;
  static const int bad[] = {-1, -2, -1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(bad[i]));
    CHECK_MESSAGE_NAMES("xdal_device_set");
    CHECK_OK(xdal_device_get(&device));
    CHECK_EQ(device, last);
  }
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(count));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(count + 1));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_set(0x7fffffff));
  CHECK_OK(xdal_device_get(&device));
  CHECK_EQ(device, last);

  device = 42;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_get(NULL));
  CHECK_OK(xdal_device_set(0));
  CHECK_OK(xdal_device_get(&device));
  CHECK_EQ(device, 0);
}

struct thread_device {
  int initial;
  int set_to;
  int after;
  pthread_barrier_t *barrier;
};

static void *device_thread(void *arg) {
  struct thread_device *t = (struct thread_device *)arg;
  CHECK_OK(xdal_device_get(&t->initial));
  CHECK_OK(xdal_device_set(t->set_to));
  pthread_barrier_wait(t->barrier); /* every thread has set its device */
  pthread_barrier_wait(t->barrier); /* the main thread has set its device */
  CHECK_OK(xdal_device_get(&t->after));
  return NULL;
}

static void test_current_device_is_per_thread(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  /* The main thread moves to the last device; new threads still start at 0. */
  REQUIRE_OK(xdal_device_set(count - 1));
  enum { THREADS = 4 };
  pthread_barrier_t barrier;
  REQUIRE(pthread_barrier_init(&barrier, NULL, THREADS + 1) == 0);
  struct thread_device t[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; i++) {
    t[i].initial = -5;
    t[i].after = -5;
    t[i].set_to = i % count;
    t[i].barrier = &barrier;
    REQUIRE(pthread_create(&threads[i], NULL, device_thread, &t[i]) == 0);
  }
  pthread_barrier_wait(&barrier);
  int mine = -1;
  CHECK_OK(xdal_device_get(&mine));
  CHECK_EQ(mine, count - 1);
  CHECK_OK(xdal_device_set(0));
  pthread_barrier_wait(&barrier);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    CHECK_EQ(t[i].initial, 0);
    CHECK_EQ(t[i].after, t[i].set_to);
  }
  pthread_barrier_destroy(&barrier);
}

static void test_properties(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  for (int d = 0; d < count; d++) {
    xdal_device_properties_t p;
    memset(&p, CANARY, sizeof p);
    p.struct_size = sizeof p;
    REQUIRE_OK(xdal_device_get_properties(d, &p));
    CHECK_EQ_U(p.struct_size, sizeof p);
    CHECK_MSG(memchr(p.name, '\0', sizeof p.name) != NULL, "device %d: name is not NUL-terminated", d);
    p.name[sizeof p.name - 1] = '\0';
    CHECK(p.name[0] != '\0');
    CHECK(p.total_memory > 0);
    CHECK(p.compute_units > 0);
    CHECK(p.max_threads_per_block > 0);
    CHECK(p.warp_size > 0);
    for (int i = 0; i < 3; i++) CHECK(p.max_block_dim[i] > 0 && p.max_grid_dim[i] > 0);
    CHECK(p.is_simulated == 0 || p.is_simulated == 1);
    if (d == 0) printf("    device 0: \"%s\", %llu bytes\n", p.name, (unsigned long long)p.total_memory);
    if (backend_is_fake()) {
      char expected[64];
      snprintf(expected, sizeof expected, "xdal fake device %d", d);
      CHECK_STR_EQ(p.name, expected);
      CHECK_EQ_U(p.is_simulated, 1);
      CHECK_EQ_U(p.warp_size, 32);
      CHECK_EQ_U(p.max_threads_per_block, 1024);
      CHECK_EQ_U(p.max_block_dim[0], 1024);
      CHECK_EQ_U(p.max_block_dim[1], 1024);
      CHECK_EQ_U(p.max_block_dim[2], 64);
      CHECK_EQ_U(p.max_grid_dim[0], 2147483647u);
      CHECK_EQ_U(p.max_grid_dim[1], 65535);
      CHECK_EQ_U(p.max_grid_dim[2], 65535);
      CHECK_EQ_U(p.shared_mem_per_block, 48 * 1024);
      if (getenv("XDAL_FAKE_MEMORY_BYTES") == NULL) CHECK_EQ_U(p.total_memory, 16ull << 30);
    }
  }
}

/* A caller built against an older header passes a smaller struct: only the
   fields that fit are written, not a byte past struct_size. */
static void test_properties_smaller_struct_size(void) {
  xdal_device_properties_t full;
  memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  REQUIRE_OK(xdal_device_get_properties(0, &full));

  const size_t sizes[] = {
      sizeof(size_t),
      offsetof(xdal_device_properties_t, name) + 10, /* a field cut in the middle */
      offsetof(xdal_device_properties_t, total_memory),
      offsetof(xdal_device_properties_t, total_memory) + sizeof(uint64_t),
      offsetof(xdal_device_properties_t, warp_size) + sizeof(uint32_t),
      offsetof(xdal_device_properties_t, is_simulated),
  };
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t size = sizes[i];
    _Alignas(xdal_device_properties_t) unsigned char buf[sizeof(xdal_device_properties_t) + 64];
    memset(buf, CANARY, sizeof buf);
    memcpy(buf, &size, sizeof size);
    REQUIRE_OK(xdal_device_get_properties(0, (xdal_device_properties_t *)(void *)buf));
    size_t kept = 0;
    memcpy(&kept, buf, sizeof kept);
    CHECK_EQ_U(kept, size);
    CHECK_MSG(value_mismatch(buf + size, sizeof buf - size, CANARY) == sizeof buf - size,
              "struct_size %zu: byte %zu past struct_size was written", size,
              size + value_mismatch(buf + size, sizeof buf - size, CANARY));
    /* Whole fields that fit hold the same values as with the full size. */
    if (size >= offsetof(xdal_device_properties_t, total_memory) + sizeof(uint64_t)) {
      xdal_device_properties_t got;
      memcpy(&got, buf, sizeof got);
      CHECK_STR_EQ(got.name, full.name);
      CHECK_EQ_U(got.total_memory, full.total_memory);
    }
  }

  /* A larger struct (a newer header) is accepted; struct_size is kept. */
  _Alignas(xdal_device_properties_t) unsigned char big[sizeof(xdal_device_properties_t) + 64];
  memset(big, CANARY, sizeof big);
  size_t big_size = sizeof big;
  memcpy(big, &big_size, sizeof big_size);
  CHECK_OK(xdal_device_get_properties(0, (xdal_device_properties_t *)(void *)big));
  xdal_device_properties_t got;
  memcpy(&got, big, sizeof got);
  CHECK_EQ_U(got.struct_size, sizeof big);
  CHECK_EQ_U(got.total_memory, full.total_memory);
  CHECK_EQ_U(got.is_simulated, full.is_simulated);
}

static void test_properties_invalid(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  xdal_device_properties_t p;
  memset(&p, CANARY, sizeof p);
  p.struct_size = 0;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_device_get_properties(0, &p));
  CHECK_MESSAGE_NAMES("xdal_device_get_properties");
  CHECK_EQ_U(p.struct_size, 0);
  CHECK(value_mismatch((unsigned char *)&p + sizeof(size_t), sizeof p - sizeof(size_t), CANARY) ==
        sizeof p - sizeof(size_t));
  p.struct_size = sizeof(size_t) - 1;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_device_get_properties(0, &p));
  CHECK(value_mismatch((unsigned char *)&p + sizeof(size_t), sizeof p - sizeof(size_t), CANARY) ==
        sizeof p - sizeof(size_t));

  p.struct_size = sizeof p;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_get_properties(0, NULL));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_get_properties(-1, &p));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_get_properties(count, &p));
  CHECK(value_mismatch((unsigned char *)&p + sizeof(size_t), sizeof p - sizeof(size_t), CANARY) ==
        sizeof p - sizeof(size_t));
  /* Still usable. */
  CHECK_OK(xdal_device_get_properties(count - 1, &p));
}

static void test_stream_priority_range(void) {
  int least = 99, greatest = 99;
  REQUIRE_OK(xdal_device_get_stream_priority_range(&least, &greatest));
  CHECK_MSG(greatest <= least, "numerically lower is more urgent: greatest %d should be <= least %d", greatest,
            least);
  if (backend_is_fake()) {
    CHECK_EQ(least, 0);
    CHECK_EQ(greatest, -2);
  }
  int a = 99;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_get_stream_priority_range(NULL, &a));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_get_stream_priority_range(&a, NULL));
  CHECK_EQ(a, 99);
}

static void test_can_access_peer(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  int can = 7;
  for (int d = 0; d < count; d++) {
    can = 7;
    CHECK_OK(xdal_device_can_access_peer(&can, d, d));
    CHECK_EQ(can, 0); /* a device is not its own peer */
  }
  can = 7;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_device_can_access_peer(NULL, 0, 0));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_can_access_peer(&can, -1, 0));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_can_access_peer(&can, 0, -1));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_can_access_peer(&can, count, 0));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_device_can_access_peer(&can, 0, count));
  CHECK_EQ(can, 7);
  if (count < 2) SKIP("peer access between two devices needs 2 devices, have %d", count);
  can = 7;
  CHECK_OK(xdal_device_can_access_peer(&can, 0, 1));
  CHECK(can == 0 || can == 1);
  if (backend_is_fake()) CHECK_EQ(can, 1);
  can = 7;
  CHECK_OK(xdal_device_can_access_peer(&can, 1, 0));
  if (backend_is_fake()) CHECK_EQ(can, 1);
}

static void test_mem_get_info(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  for (int d = 0; d < count; d++) {
    REQUIRE_OK(xdal_device_set(d));
    size_t free_bytes = 0, total = 0;
    REQUIRE_OK(xdal_mem_get_info(&free_bytes, &total));
    xdal_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    REQUIRE_OK(xdal_device_get_properties(d, &p));
    CHECK_EQ_U(total, p.total_memory);
    CHECK(free_bytes <= total);
  }
  REQUIRE_OK(xdal_device_set(0));

  size_t a = 1, b = 2;
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_mem_get_info(NULL, &b));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_mem_get_info(&a, NULL));
  CHECK(a == 1 && b == 2);

  if (!backend_is_fake()) return; /* free memory of a real device moves on its own */
  size_t free0 = 0, total0 = 0, free1 = 0, total1 = 0, free2 = 0, total2 = 0;
  REQUIRE_OK(xdal_mem_get_info(&free0, &total0));
  void *ptr = NULL;
  REQUIRE_OK(xdal_malloc(&ptr, 8 << 20));
  CHECK_OK(xdal_mem_get_info(&free1, &total1));
  CHECK_EQ_U(total1, total0);
  CHECK_MSG(free0 - free1 >= (8u << 20), "free should drop by 8 MiB or more: %zu -> %zu", free0, free1);
  CHECK_OK(xdal_free(ptr));
  CHECK_OK(xdal_mem_get_info(&free2, &total2));
  CHECK_EQ_U(free2, free0);
}

static void test_device_synchronize(void) {
  CHECK_OK(xdal_device_synchronize());
  int count = device_count();
  REQUIRE(count >= 1);
  /* Work on the default stream and on a created stream of the current
     device has all run when device_synchronize returns. */
  for (int d = 0; d < count && d < 2; d++) {
    REQUIRE_OK(xdal_device_set(d));
    xdal_stream_t s = NULL;
    REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
    atomic_int counter;
    atomic_init(&counter, 0);
    for (int i = 0; i < 50; i++) {
      CHECK_OK(xdal_launch_host_func(NULL, increment_host_fn, &counter));
      CHECK_OK(xdal_launch_host_func(s, increment_host_fn, &counter));
    }
    CHECK_OK(xdal_device_synchronize());
    CHECK_EQ(atomic_load(&counter), 100);
    CHECK_OK(xdal_stream_query(s));
    CHECK_OK(xdal_stream_query(NULL));
    CHECK_OK(xdal_stream_destroy(s));
  }
  CHECK_OK(xdal_device_set(0));
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_count),
    HARNESS_TEST(test_set_get_and_invalid_devices),
    HARNESS_TEST(test_current_device_is_per_thread),
    HARNESS_TEST(test_properties),
    HARNESS_TEST(test_properties_smaller_struct_size),
    HARNESS_TEST(test_properties_invalid),
    HARNESS_TEST(test_stream_priority_range),
    HARNESS_TEST(test_can_access_peer),
    HARNESS_TEST(test_mem_get_info),
    HARNESS_TEST(test_device_synchronize),
};

HARNESS_MAIN(tests)
