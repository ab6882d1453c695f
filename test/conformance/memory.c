/* Memory: device and pinned allocations, misuse of frees, pointer attributes,
   the stream-ordered pool and allocator statistics. */
#include "harness.h"

#define CANARY 0xA5
#define SENTINEL ((void *)0x5e5e5e5e)

static uint64_t total_memory(int device) {
  xdal_device_properties_t p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  if (!CHECK_OK(xdal_device_get_properties(device, &p))) return 0;
  return p.total_memory;
}

static int get_stats(int device, xdal_mem_stats_t *s) {
  memset(s, 0, sizeof *s);
  s->struct_size = sizeof *s;
  return CHECK_OK(xdal_mem_get_stats(device, s));
}

/* Round trip through device memory: the allocation works for copies. */
static void check_usable(void *dptr, size_t size, uint32_t seed) {
  unsigned char *host = calloc(1, size);
  unsigned char *back = calloc(1, size);
  if (!CHECK(host && back)) {
    free(host);
    free(back);
    return;
  }
  fill_pattern(host, size, seed);
  memset(back, 0, size);
  CHECK_OK(xdal_memcpy(dptr, host, size, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK_OK(xdal_memcpy(back, dptr, size, XDAL_MEMCPY_DEVICE_TO_HOST));
  CHECK_PATTERN(back, size, seed);
  free(host);
  free(back);
}

static void test_malloc_free(void) {
  static const size_t sizes[] = {1, 7, 255, 256, 257, 4096, 4097, 1 << 20, (3 << 20) + 5};
  void *ptrs[sizeof sizes / sizeof sizes[0]];
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    ptrs[i] = NULL;
    REQUIRE_OK(xdal_malloc(&ptrs[i], sizes[i]));
    REQUIRE(ptrs[i] != NULL);
    CHECK_MSG((uintptr_t)ptrs[i] % 256 == 0, "device allocations are 256-byte aligned: %p", ptrs[i]);
    for (size_t j = 0; j < i; j++) CHECK(ptrs[j] != ptrs[i]);
  }
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) check_usable(ptrs[i], sizes[i], (uint32_t)i);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) CHECK_OK(xdal_free(ptrs[i]));
  CHECK_OK(xdal_free(NULL));
}

static void test_malloc_invalid_arguments(void) {
  void *p = SENTINEL;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_malloc(&p, 0));
  CHECK_MESSAGE_NAMES("xdal_malloc");
  CHECK(p == SENTINEL);
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_malloc(NULL, 16));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_malloc_host(NULL, 16));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_malloc_async(NULL, 16, NULL));
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_malloc_async(&p, 0, NULL));
  CHECK_MESSAGE_NAMES("xdal_malloc_async");
  CHECK(p == SENTINEL);
  REQUIRE_OK(xdal_malloc(&p, 64));
  CHECK(p != SENTINEL && p != NULL);
  CHECK_OK(xdal_free(p));
}

static void test_out_of_memory(void) {
  uint64_t total = total_memory(0);
  REQUIRE(total > 0);
  xdal_mem_stats_t before, after;
  REQUIRE(get_stats(0, &before));

  void *p = SENTINEL;
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&p, (size_t)total + 1));
  CHECK_MESSAGE_NAMES("xdal_malloc");
  CHECK(p == SENTINEL);
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&p, (size_t)total * 2));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&p, SIZE_MAX));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc(&p, SIZE_MAX - 255));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc_async(&p, (size_t)total + 1, NULL));
  CHECK_MESSAGE_NAMES("xdal_malloc_async");
  CHECK(p == SENTINEL);

  REQUIRE(get_stats(0, &after));
  CHECK_EQ_U(after.num_ooms, before.num_ooms + 5);
  CHECK_EQ_U(after.num_allocs, before.num_allocs);
  CHECK_EQ_U(after.allocated_bytes, before.allocated_bytes);

  /* Still usable. */
  REQUIRE_OK(xdal_malloc(&p, 4096));
  check_usable(p, 4096, 11);
  CHECK_OK(xdal_free(p));

  /* Pinned host memory that cannot exist. */
  void *h = SENTINEL;
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc_host(&h, SIZE_MAX));
  CHECK_STATUS(XDAL_ERROR_OUT_OF_MEMORY, xdal_malloc_host(&h, (size_t)1 << 62));
  CHECK(h == SENTINEL);
  REQUIRE_OK(xdal_malloc_host(&h, 64));
  CHECK_OK(xdal_free_host(h));
}

static void test_free_misuse(void) {
  void *p = NULL;
  REQUIRE_OK(xdal_malloc(&p, 4096));
  unsigned char *b = (unsigned char *)p;

  /* Interior pointers are not allocations; the allocation stays live. */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(b + 1));
  CHECK_MESSAGE_NAMES("xdal_free");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(b + 256));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(b + 4095));
  check_usable(p, 4096, 21);

  /* Plain host memory. */
  int on_stack = 0;
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(&on_stack));
  void *heap = calloc(1, 64);
  REQUIRE(heap != NULL);
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(heap));
  free(heap);

  /* Pinned memory is freed with xdal_free_host, and stays live meanwhile. */
  void *h = NULL;
  REQUIRE_OK(xdal_malloc_host(&h, 4096));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(h));
  memset(h, 0x3c, 4096);
  CHECK_OK(xdal_memcpy(p, h, 4096, XDAL_MEMCPY_HOST_TO_DEVICE));
  CHECK_OK(xdal_free_host(h));

  /* Double free. */
  CHECK_OK(xdal_free(p));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(p));
  CHECK_MESSAGE_NAMES("xdal_free");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(b + 1));

  /* Usable afterwards. */
  REQUIRE_OK(xdal_malloc(&p, 1000));
  check_usable(p, 1000, 22);
  CHECK_OK(xdal_free(p));
}

static void test_malloc_host(void) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  static const size_t sizes[] = {1, 100, 4096, 10000, 1 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *h = NULL;
    REQUIRE_OK(xdal_malloc_host(&h, sizes[i]));
    REQUIRE(h != NULL);
    CHECK_MSG((uintptr_t)h % (uintptr_t)page == 0, "pinned memory is page-aligned: %p", h);
    /* Host accessible. */
    fill_pattern(h, sizes[i], 31 + (uint32_t)i);
    CHECK_PATTERN(h, sizes[i], 31 + (uint32_t)i);
    CHECK_OK(xdal_free_host(h));
  }
  CHECK_OK(xdal_free_host(NULL));
}

static void test_free_host_misuse(void) {
  void *h = NULL, *d = NULL;
  REQUIRE_OK(xdal_malloc_host(&h, 8192));
  REQUIRE_OK(xdal_malloc(&d, 4096));

  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_host(d));
  CHECK_MESSAGE_NAMES("xdal_free_host");
  check_usable(d, 4096, 41); /* the device allocation is still live */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_host((unsigned char *)h + 1));
  int on_stack = 0;
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_host(&on_stack));
  memset(h, 1, 8192); /* still live */

  CHECK_OK(xdal_free_host(h));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_host(h));
  CHECK_OK(xdal_free(d));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_host(d));
}

static void attrs_init(xdal_pointer_attributes_t *a) {
  memset(a, CANARY, sizeof *a);
  a->struct_size = sizeof *a;
}

static void check_unregistered(const void *ptr, const char *what) {
  xdal_pointer_attributes_t a;
  attrs_init(&a);
  if (!CHECK_OK(xdal_pointer_get_attributes(ptr, &a))) return;
  CHECK_MSG(a.type == XDAL_MEMORY_TYPE_UNREGISTERED && a.device == -1 && a.base == NULL && a.size == 0,
            "%s: expected UNREGISTERED/-1/NULL/0, got type %d device %d base %p size %zu", what, (int)a.type,
            a.device, a.base, a.size);
}

static void test_pointer_attributes(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  for (int dev = 0; dev < count && dev < 2; dev++) {
    REQUIRE_OK(xdal_device_set(dev));
    void *d = NULL;
    REQUIRE_OK(xdal_malloc(&d, 1000));
    const size_t offsets[] = {0, 1, 500, 999};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
      xdal_pointer_attributes_t a;
      attrs_init(&a);
      CHECK_OK(xdal_pointer_get_attributes((unsigned char *)d + offsets[i], &a));
      CHECK_EQ_U(a.struct_size, sizeof a);
      CHECK_EQ((int)a.type, (int)XDAL_MEMORY_TYPE_DEVICE);
      CHECK_EQ(a.device, dev);
      CHECK(a.base == d);
      CHECK_EQ_U(a.size, 1000);
    }
    CHECK_OK(xdal_free(d));
    check_unregistered(d, "a freed device allocation");
  }
  REQUIRE_OK(xdal_device_set(0));

  void *h = NULL;
  REQUIRE_OK(xdal_malloc_host(&h, 5000));
  const size_t offsets[] = {0, 4999};
  for (size_t i = 0; i < 2; i++) {
    xdal_pointer_attributes_t a;
    attrs_init(&a);
    CHECK_OK(xdal_pointer_get_attributes((unsigned char *)h + offsets[i], &a));
    CHECK_EQ((int)a.type, (int)XDAL_MEMORY_TYPE_HOST);
    CHECK_EQ(a.device, -1);
    CHECK(a.base == h);
    CHECK_EQ_U(a.size, 5000);
  }
  CHECK_OK(xdal_free_host(h));

  int on_stack = 0;
  check_unregistered(&on_stack, "a stack address");
  check_unregistered(NULL, "NULL");
  check_unregistered((void *)0x10, "a small integer");
  void *heap = calloc(1, 32);
  check_unregistered(heap, "malloc'd host memory");
  free(heap);

  /* Memory from the stream-ordered pool is device memory of the stream's device. */
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  void *pooled = NULL;
  REQUIRE_OK(xdal_malloc_async(&pooled, 3000, s));
  xdal_pointer_attributes_t a;
  attrs_init(&a);
  CHECK_OK(xdal_pointer_get_attributes((unsigned char *)pooled + 2999, &a));
  CHECK_EQ((int)a.type, (int)XDAL_MEMORY_TYPE_DEVICE);
  CHECK_EQ(a.device, 0);
  CHECK(a.base == pooled);
  CHECK_EQ_U(a.size, 3000);
  CHECK_OK(xdal_free_async(pooled, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_pointer_attributes_struct_size(void) {
  void *d = NULL;
  REQUIRE_OK(xdal_malloc(&d, 4096));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_pointer_get_attributes(d, NULL));
  CHECK_MESSAGE_NAMES("xdal_pointer_get_attributes");

  xdal_pointer_attributes_t a;
  memset(&a, CANARY, sizeof a);
  a.struct_size = 0;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_pointer_get_attributes(d, &a));
  a.struct_size = sizeof(size_t) - 1;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_pointer_get_attributes(d, &a));
  CHECK(value_mismatch((unsigned char *)&a + sizeof(size_t), sizeof a - sizeof(size_t), CANARY) ==
        sizeof a - sizeof(size_t));

  /* Only the fields that fit are written. */
  const size_t sizes[] = {sizeof(size_t), offsetof(xdal_pointer_attributes_t, device) + sizeof(int),
                          offsetof(xdal_pointer_attributes_t, base) + sizeof(void *)};
  for (size_t i = 0; i < 3; i++) {
    _Alignas(xdal_pointer_attributes_t) unsigned char buf[sizeof(xdal_pointer_attributes_t) + 32];
    memset(buf, CANARY, sizeof buf);
    memcpy(buf, &sizes[i], sizeof(size_t));
    CHECK_OK(xdal_pointer_get_attributes(d, (xdal_pointer_attributes_t *)(void *)buf));
    size_t n = sizeof buf - sizes[i];
    CHECK_MSG(value_mismatch(buf + sizes[i], n, CANARY) == n, "struct_size %zu: bytes past it were written",
              sizes[i]);
    xdal_pointer_attributes_t got;
    memcpy(&got, buf, sizeof got);
    CHECK_EQ_U(got.struct_size, sizes[i]);
    if (sizes[i] > sizeof(size_t)) {
      CHECK_EQ((int)got.type, (int)XDAL_MEMORY_TYPE_DEVICE);
      CHECK_EQ(got.device, 0);
    }
    if (sizes[i] > offsetof(xdal_pointer_attributes_t, base)) CHECK(got.base == d);
  }
  CHECK_OK(xdal_free(d));
}

static void test_malloc_async_free_async(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  const size_t size = 64 * 1024 + 3;
  unsigned char *host = calloc(1, size), *back = calloc(1, size);
  REQUIRE(host && back);
  fill_pattern(host, size, 51);

  void *p = SENTINEL;
  REQUIRE_OK(xdal_malloc_async(&p, size, s));
  REQUIRE(p != SENTINEL && p != NULL);
  CHECK_MSG((uintptr_t)p % 256 == 0, "device allocations are 256-byte aligned: %p", p);
  CHECK_OK(xdal_memcpy_async(p, host, size, XDAL_MEMCPY_HOST_TO_DEVICE, s));
  memset(back, 0, size);
  CHECK_OK(xdal_memcpy_async(back, p, size, XDAL_MEMCPY_DEVICE_TO_HOST, s));
  CHECK_OK(xdal_free_async(p, s));
  /* No longer live for later calls, even before the stream got there. */
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_async(p, s));
  CHECK_MESSAGE_NAMES("xdal_free_async");
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(p));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset_async(p, 0, 16, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_PATTERN(back, size, 51);
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_memset(p, 0, 16));

  /* The default stream; and xdal_free of pooled memory. */
  REQUIRE_OK(xdal_malloc_async(&p, 1024, NULL));
  check_usable(p, 1024, 52);
  CHECK_OK(xdal_free(p));

  /* free_async accepts plain allocations, and NULL. */
  REQUIRE_OK(xdal_malloc(&p, 2048));
  CHECK_OK(xdal_free_async(p, s));
  CHECK_OK(xdal_free_async(NULL, s));
  CHECK_OK(xdal_free_async(NULL, NULL));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free(p));

  CHECK_OK(xdal_stream_destroy(s));
  free(host);
  free(back);
}

static void test_free_async_misuse(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  void *p = NULL;
  REQUIRE_OK(xdal_malloc_async(&p, 4096, s));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_async((unsigned char *)p + 8, s));
  int on_stack = 0;
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_async(&on_stack, s));
  void *h = NULL;
  REQUIRE_OK(xdal_malloc_host(&h, 64));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free_async(h, s));
  CHECK_OK(xdal_free_host(h));

  /* Bad streams. */
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_free_async(p, (xdal_stream_t)0x12345));
  void *q = SENTINEL;
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_malloc_async(&q, 64, (xdal_stream_t)0x12345));
  CHECK(q == SENTINEL);
  xdal_stream_t dead = NULL;
  REQUIRE_OK(xdal_stream_create(&dead, XDAL_STREAM_DEFAULT, 0));
  CHECK_OK(xdal_stream_destroy(dead));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_malloc_async(&q, 64, dead));
  CHECK_STATUS(XDAL_ERROR_INVALID_HANDLE, xdal_free_async(p, dead));
  CHECK(q == SENTINEL);

  /* p survived every failed call. */
  check_usable(p, 4096, 61);
  CHECK_OK(xdal_free_async(p, s));
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_async_pool_reuse_and_empty_cache(void) {
  xdal_stream_t s = NULL;
  REQUIRE_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0));
  CHECK_OK(xdal_device_synchronize());
  CHECK_OK(xdal_mem_empty_cache(0));
  xdal_mem_stats_t s0, s1, s2, s3, s4;
  REQUIRE(get_stats(0, &s0));

  const size_t size = 1 << 20;
  void *p = NULL, *q = NULL;
  REQUIRE_OK(xdal_malloc_async(&p, size, s));
  REQUIRE(get_stats(0, &s1));
  CHECK_EQ_U(s1.allocated_bytes, s0.allocated_bytes + size);
  CHECK_EQ_U(s1.num_allocs, s0.num_allocs + 1);
  CHECK(s1.reserved_bytes >= s0.reserved_bytes + size);
  CHECK(s1.peak_allocated_bytes >= s1.allocated_bytes);

  CHECK_OK(xdal_free_async(p, s));
  CHECK_OK(xdal_stream_synchronize(s));
  REQUIRE(get_stats(0, &s2));
  CHECK_EQ_U(s2.allocated_bytes, s0.allocated_bytes);
  CHECK_EQ_U(s2.num_frees, s0.num_frees + 1);
  CHECK(s2.reserved_bytes >= s0.reserved_bytes);

  /* The same size again on the same stream reuses the pool's block: the
     allocator holds no more than it did for the first one. */
  REQUIRE_OK(xdal_malloc_async(&q, size, s));
  REQUIRE(get_stats(0, &s3));
  CHECK_EQ_U(s3.allocated_bytes, s0.allocated_bytes + size);
  CHECK_EQ_U(s3.num_allocs, s0.num_allocs + 2);
  CHECK_MSG(s3.reserved_bytes <= s1.reserved_bytes,
            "a freed pool block should be reused: reserved grew from %llu to %llu",
            (unsigned long long)s1.reserved_bytes, (unsigned long long)s3.reserved_bytes);
  if (q != p) printf("    note: the reused block has another address (%p, was %p)\n", q, p);
  check_usable(q, size, 71);
  CHECK_OK(xdal_free_async(q, s));
  CHECK_OK(xdal_stream_synchronize(s));

  /* empty_cache gives the cached blocks back. */
  CHECK_OK(xdal_mem_empty_cache(0));
  REQUIRE(get_stats(0, &s4));
  CHECK_EQ_U(s4.allocated_bytes, s0.allocated_bytes);
  CHECK_EQ_U(s4.reserved_bytes, s0.reserved_bytes);
  CHECK_EQ_U(s4.num_frees, s0.num_frees + 2);
  if (backend_is_fake()) {
    size_t free_bytes = 0, total = 0;
    CHECK_OK(xdal_mem_get_info(&free_bytes, &total));
    CHECK_EQ_U(free_bytes, total - s4.reserved_bytes);
  }
  CHECK_OK(xdal_stream_destroy(s));
}

static void test_stats_counters(void) {
  CHECK_OK(xdal_device_synchronize());
  CHECK_OK(xdal_mem_empty_cache(0));
  xdal_mem_stats_t s0, s;
  REQUIRE(get_stats(0, &s0));
  CHECK(s0.reserved_bytes >= s0.allocated_bytes);
  CHECK(s0.peak_allocated_bytes >= s0.allocated_bytes);

  void *a = NULL, *b = NULL;
  REQUIRE_OK(xdal_malloc(&a, 1000));
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.allocated_bytes, s0.allocated_bytes + 1000);
  CHECK_EQ_U(s.num_allocs, s0.num_allocs + 1);
  CHECK(s.reserved_bytes >= s0.reserved_bytes + 1000);
  CHECK(s.peak_allocated_bytes >= s.allocated_bytes);
  if (backend_is_fake()) {
    size_t free_bytes = 0, total = 0;
    CHECK_OK(xdal_mem_get_info(&free_bytes, &total));
    CHECK_EQ_U(free_bytes, total - s.reserved_bytes);
  }

  REQUIRE_OK(xdal_malloc(&b, 5000));
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.allocated_bytes, s0.allocated_bytes + 6000);
  CHECK(s.peak_allocated_bytes >= s0.allocated_bytes + 6000);

  /* Failed calls count nothing but OOMs. */
  void *dummy = NULL;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_malloc(&dummy, 0));
  CHECK_STATUS(XDAL_ERROR_INVALID_POINTER, xdal_free((unsigned char *)a + 1));

  CHECK_OK(xdal_free(a));
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.allocated_bytes, s0.allocated_bytes + 5000);
  CHECK_EQ_U(s.num_allocs, s0.num_allocs + 2);
  CHECK_EQ_U(s.num_frees, s0.num_frees + 1);
  CHECK_EQ_U(s.num_ooms, s0.num_ooms);
  CHECK(s.peak_allocated_bytes >= s0.allocated_bytes + 6000);

  CHECK_OK(xdal_mem_reset_peak_stats(0));
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.peak_allocated_bytes, s.allocated_bytes);

  CHECK_OK(xdal_free(b));
  REQUIRE(get_stats(0, &s));
  CHECK_EQ_U(s.allocated_bytes, s0.allocated_bytes);
  CHECK_EQ_U(s.reserved_bytes, s0.reserved_bytes);
  CHECK_EQ_U(s.num_frees, s0.num_frees + 2);
  CHECK_EQ_U(s.peak_allocated_bytes, s0.allocated_bytes + 5000);
}

static void test_stats_per_device(void) {
  int count = device_count();
  if (count < 2) SKIP("per-device statistics need 2 devices, have %d", count);
  xdal_mem_stats_t d0, d1, d0b, d1b;
  REQUIRE(get_stats(0, &d0));
  REQUIRE(get_stats(1, &d1));
  REQUIRE_OK(xdal_device_set(1));
  void *p = NULL;
  REQUIRE_OK(xdal_malloc(&p, 4096));
  REQUIRE_OK(xdal_device_set(0));
  REQUIRE(get_stats(0, &d0b));
  REQUIRE(get_stats(1, &d1b));
  CHECK_EQ_U(d0b.allocated_bytes, d0.allocated_bytes);
  CHECK_EQ_U(d0b.num_allocs, d0.num_allocs);
  CHECK_EQ_U(d1b.allocated_bytes, d1.allocated_bytes + 4096);
  CHECK_EQ_U(d1b.num_allocs, d1.num_allocs + 1);
  /* Freed from another current device: it is still device 1's memory. */
  CHECK_OK(xdal_free(p));
  REQUIRE(get_stats(1, &d1b));
  CHECK_EQ_U(d1b.allocated_bytes, d1.allocated_bytes);
  CHECK_EQ_U(d1b.num_frees, d1.num_frees + 1);
}

static void test_stats_invalid(void) {
  int count = device_count();
  REQUIRE(count >= 1);
  xdal_mem_stats_t s;
  memset(&s, CANARY, sizeof s);
  s.struct_size = sizeof s;
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_mem_get_stats(-1, &s));
  CHECK_MESSAGE_NAMES("xdal_mem_get_stats");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_mem_get_stats(count, &s));
  CHECK_STATUS(XDAL_ERROR_NULL_POINTER, xdal_mem_get_stats(0, NULL));
  s.struct_size = 0;
  CHECK_STATUS(XDAL_ERROR_INVALID_VALUE, xdal_mem_get_stats(0, &s));
  CHECK(value_mismatch((unsigned char *)&s + sizeof(size_t), sizeof s - sizeof(size_t), CANARY) ==
        sizeof s - sizeof(size_t));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_mem_reset_peak_stats(-1));
  CHECK_MESSAGE_NAMES("xdal_mem_reset_peak_stats");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_mem_reset_peak_stats(count));
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_mem_empty_cache(-1));
  CHECK_MESSAGE_NAMES("xdal_mem_empty_cache");
  CHECK_STATUS(XDAL_ERROR_INVALID_DEVICE, xdal_mem_empty_cache(count));

  /* A smaller struct: only the fields that fit. */
  _Alignas(xdal_mem_stats_t) unsigned char buf[sizeof(xdal_mem_stats_t) + 16];
  memset(buf, CANARY, sizeof buf);
  size_t size = offsetof(xdal_mem_stats_t, reserved_bytes) + sizeof(uint64_t);
  memcpy(buf, &size, sizeof size);
  CHECK_OK(xdal_mem_get_stats(0, (xdal_mem_stats_t *)(void *)buf));
  CHECK(value_mismatch(buf + size, sizeof buf - size, CANARY) == sizeof buf - size);
  memcpy(&s, buf, sizeof s);
  CHECK_EQ_U(s.struct_size, size);
}

static const harness_test_t tests[] = {
    HARNESS_TEST(test_malloc_free),
    HARNESS_TEST(test_malloc_invalid_arguments),
    HARNESS_TEST(test_out_of_memory),
    HARNESS_TEST(test_free_misuse),
    HARNESS_TEST(test_malloc_host),
    HARNESS_TEST(test_free_host_misuse),
    HARNESS_TEST(test_pointer_attributes),
    HARNESS_TEST(test_pointer_attributes_struct_size),
    HARNESS_TEST(test_malloc_async_free_async),
    HARNESS_TEST(test_free_async_misuse),
    HARNESS_TEST(test_async_pool_reuse_and_empty_cache),
    HARNESS_TEST(test_stats_counters),
    HARNESS_TEST(test_stats_per_device),
    HARNESS_TEST(test_stats_invalid),
};

HARNESS_MAIN(tests)
