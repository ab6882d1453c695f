/* A test backend, compiled once per variant with -DPLUGIN_VARIANT=<n> (the
 * PLUGIN_* values below) to exercise what the front does with each kind of
 * table and getter it may meet (see CMakeLists.txt beside this file).
 *
 * The working variants are a synchronous, one-device backend over host
 * memory (like examples/minimal_backend), plus last_error_message, so that
 * the tests can follow a backend's own message through the front. Plain C11
 * and <xdal/xdal_backend.h>; nothing of libxdal is called. */
#if PLUGIN_VARIANT == 15
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#endif
#include <xdal/xdal_backend.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLUGIN_OK 1           /* a complete table: the reference */
#define PLUGIN_LINKED 2       /* the same, named "test-linked", for linking in */
#define PLUGIN_MAJOR2 3       /* abi_major 2 in the table */
#define PLUGIN_REFUSES 4      /* the getter serves major 2 only: refuses the front's 1 */
#define PLUGIN_GETTER_FAILS 5 /* the getter returns XDAL_ERROR_DEVICE_LOST */
#define PLUGIN_MISSING 6      /* mem_copy and event_query left NULL */
#define PLUGIN_V1_0 7         /* struct_size ends before the kernel entries */
#define PLUGIN_LARGER 8       /* struct_size covers extra trailing fields */
#define PLUGIN_TOO_SMALL 9    /* struct_size smaller than the table's header */
#define PLUGIN_CUT_REQUIRED 10 /* struct_size ends before event_query */
#define PLUGIN_NULL_TABLE 11  /* the getter succeeds but writes a NULL table */
#define PLUGIN_NO_NAME 12     /* the table's name is NULL */
#define PLUGIN_NO_GETTER 13   /* a shared library that is no plugin at all */
#define PLUGIN_STATS_1_0 14   /* mem_get_stats as a backend built against 1.0 fills it */
#define PLUGIN_REENTERS 15    /* the getter calls xdal_init (found with dlsym) */

#ifndef PLUGIN_VARIANT
#error "compile with -DPLUGIN_VARIANT=<n>"
#endif

#if PLUGIN_VARIANT == PLUGIN_LINKED
#define PLUGIN_NAME "test-linked"
#else
#define PLUGIN_NAME "test-plugin"
#endif

/* --- The backend's own messages -------------------------------------------------
   last_error_message: the calling thread's message for the last failed
   entry, which the front appends to its own. */
static _Thread_local char plugin_message[256];

static xdal_status_t plugin_fail(xdal_status_t status, const char *message) {
  snprintf(plugin_message, sizeof plugin_message, "%s", message);
  return status;
}

static const char *plugin_last_error_message(void) { return plugin_message[0] ? plugin_message : NULL; }

/* --- Devices ------------------------------------------------------------------- */
#define PLUGIN_MEMORY_BYTES ((uint64_t)1 << 30)
static atomic_uint_least64_t plugin_used;

static xdal_status_t plugin_device_get_count(int *count) {
  *count = 1;
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_device_get_properties(int device, xdal_device_properties_t *props) {
  (void)device;
  xdal_device_properties_t mine;
  memset(&mine, 0, sizeof mine);
  snprintf(mine.name, sizeof mine.name, "%s device 0", PLUGIN_NAME);
  mine.total_memory = PLUGIN_MEMORY_BYTES;
  mine.compute_units = 1;
  mine.max_threads_per_block = 1024;
  mine.max_block_dim[0] = mine.max_block_dim[1] = 1024;
  mine.max_block_dim[2] = 64;
  mine.max_grid_dim[0] = mine.max_grid_dim[1] = mine.max_grid_dim[2] = 65535;
  mine.shared_mem_per_block = 48 * 1024;
  mine.warp_size = 1;
  mine.is_simulated = 1;
  size_t fits = props->struct_size < sizeof mine ? props->struct_size : sizeof mine;
  if (fits > sizeof(size_t))
    memcpy((char *)props + sizeof(size_t), (const char *)&mine + sizeof(size_t), fits - sizeof(size_t));
  return XDAL_SUCCESS;
}

/* The memory counts change and are read under one lock, so that a
   statistics read is a snapshot (docs/porting.md asks this of every
   backend's mem_get_stats). */
static atomic_flag plugin_books = ATOMIC_FLAG_INIT;
static void plugin_books_lock(void) {
  while (atomic_flag_test_and_set_explicit(&plugin_books, memory_order_acquire)) {
  }
}
static void plugin_books_unlock(void) { atomic_flag_clear_explicit(&plugin_books, memory_order_release); }

/* --- Statistics as a 1.0 backend keeps them ------------------------------------------
   A backend built against the 1.0 headers knows xdal_mem_stats_t up to
   num_ooms: it writes no byte past that, whatever struct_size the front
   passes, so the front must complete peak_reserved_bytes itself. Every
   byte counted is a rounded block, so allocated_bytes equals reserved_bytes
   here (the front's own counts would give the requested sizes instead,
   which tells the two apart). */
#if PLUGIN_VARIANT == PLUGIN_STATS_1_0
#define PLUGIN_STATS_1_0_SIZE offsetof(xdal_mem_stats_t, peak_reserved_bytes)
static atomic_uint_least64_t plugin_peak_used;
static atomic_uint_least64_t plugin_allocs, plugin_frees;

/* `used`: plugin_used just after this allocation took its bytes. */
static void plugin_note_alloc(uint_least64_t used) {
  uint_least64_t peak = atomic_load(&plugin_peak_used);
  while (used > peak && !atomic_compare_exchange_weak(&plugin_peak_used, &peak, used)) {
  }
  atomic_fetch_add(&plugin_allocs, 1);
}

static xdal_status_t plugin_mem_get_stats(int device, xdal_mem_stats_t *stats) {
  (void)device;
  xdal_mem_stats_t mine;
  memset(&mine, 0, sizeof mine);
  plugin_books_lock();
  mine.allocated_bytes = atomic_load(&plugin_used);
  mine.reserved_bytes = mine.allocated_bytes;
  mine.peak_allocated_bytes = atomic_load(&plugin_peak_used);
  mine.num_allocs = atomic_load(&plugin_allocs);
  mine.num_frees = atomic_load(&plugin_frees);
  plugin_books_unlock();
  size_t fits = stats->struct_size < PLUGIN_STATS_1_0_SIZE ? stats->struct_size : PLUGIN_STATS_1_0_SIZE;
  if (fits > sizeof(size_t))
    memcpy((char *)stats + sizeof(size_t), (const char *)&mine + sizeof(size_t), fits - sizeof(size_t));
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_mem_reset_peak_stats(int device) {
  (void)device;
  plugin_books_lock();
  atomic_store(&plugin_peak_used, atomic_load(&plugin_used));
  plugin_books_unlock();
  return XDAL_SUCCESS;
}
#else
static void plugin_note_alloc(uint_least64_t used) { (void)used; }
#endif

/* --- Memory: 256-aligned blocks with their size in a 256-byte header ------------ */
#define PLUGIN_ALIGN ((size_t)256)

/* Sizes that make mem_alloc fail in a chosen way, for the message tests. */
#define PLUGIN_SIZE_BACKEND_MESSAGE ((size_t)777)   /* OOM, with the backend's message */
#define PLUGIN_SIZE_BAD_STATUS ((size_t)778)        /* a status outside the enum */

static xdal_status_t plugin_mem_alloc(int device, size_t size, void **ptr) {
  (void)device;
  if (size == PLUGIN_SIZE_BACKEND_MESSAGE)
    return plugin_fail(XDAL_ERROR_OUT_OF_MEMORY, "test-plugin: no room for 777 bytes");
  if (size == PLUGIN_SIZE_BAD_STATUS) return (xdal_status_t)77;
  if ((uint64_t)size > PLUGIN_MEMORY_BYTES) return plugin_fail(XDAL_ERROR_OUT_OF_MEMORY, "test-plugin: too big");
  size_t rounded = (size + PLUGIN_ALIGN - 1) / PLUGIN_ALIGN * PLUGIN_ALIGN;
  unsigned char *block = aligned_alloc(PLUGIN_ALIGN, PLUGIN_ALIGN + rounded);
  if (block == NULL) return plugin_fail(XDAL_ERROR_OUT_OF_MEMORY, "test-plugin: malloc failed");
  plugin_books_lock();
  uint_least64_t used = atomic_load(&plugin_used);
  int fits = used + rounded <= PLUGIN_MEMORY_BYTES;
  if (fits) {
    atomic_store(&plugin_used, used + rounded);
    plugin_note_alloc(used + rounded);
  }
  plugin_books_unlock();
  if (!fits) {
    free(block);
    return plugin_fail(XDAL_ERROR_OUT_OF_MEMORY, "test-plugin: full");
  }
  memcpy(block, &rounded, sizeof rounded);
  *ptr = block + PLUGIN_ALIGN;
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_mem_free(int device, void *ptr) {
  (void)device;
  unsigned char *block = (unsigned char *)ptr - PLUGIN_ALIGN;
  size_t rounded = 0;
  memcpy(&rounded, block, sizeof rounded);
  plugin_books_lock();
  atomic_fetch_sub(&plugin_used, rounded);
#if PLUGIN_VARIANT == PLUGIN_STATS_1_0
  atomic_fetch_add(&plugin_frees, 1);
#endif
  plugin_books_unlock();
  free(block);
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_mem_copy(void *dst, const void *src, size_t bytes, xdal_memcpy_kind_t kind) {
  (void)kind;
  memmove(dst, src, bytes);
  return XDAL_SUCCESS;
}

/* --- Streams and events: synchronous ---------------------------------------------- */
struct xdal_backend_stream_s {
  int device;
};
struct xdal_backend_event_s {
  int device;
};

static xdal_status_t plugin_stream_create(int device, uint32_t flags, int priority, xdal_backend_stream_t *stream) {
  (void)flags;
  (void)priority;
  xdal_backend_stream_t s = malloc(sizeof *s);
  if (s == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  s->device = device;
  *stream = s;
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_stream_destroy(xdal_backend_stream_t stream) {
  free(stream);
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_stream_idle(xdal_backend_stream_t stream) {
  (void)stream;
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_launch_host_func(xdal_backend_stream_t stream, xdal_host_fn_t func, void *user_data) {
  (void)stream;
  func(user_data);
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_event_create(int device, uint32_t flags, xdal_backend_event_t *event) {
  (void)flags;
  xdal_backend_event_t e = malloc(sizeof *e);
  if (e == NULL) return XDAL_ERROR_OUT_OF_MEMORY;
  e->device = device;
  *event = e;
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_event_destroy(xdal_backend_event_t event) {
  free(event);
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_event_record(xdal_backend_event_t event, xdal_backend_stream_t stream) {
  (void)event;
  (void)stream;
  return XDAL_SUCCESS;
}

static xdal_status_t plugin_event_reached(xdal_backend_event_t event) {
  (void)event;
  return XDAL_SUCCESS;
}

/* --- Poisoned kernel entries -------------------------------------------------------
   Set in the v1.0 table beyond its struct_size: a front that read past
   struct_size would call them and get XDAL_ERROR_INTERNAL (and the test
   expects XDAL_ERROR_NOT_SUPPORTED). */
#if PLUGIN_VARIANT == PLUGIN_V1_0
#define POISON plugin_fail(XDAL_ERROR_INTERNAL, "test-plugin: the front called an entry beyond struct_size")
static xdal_status_t poison_module_load(const char *path, xdal_backend_module_t *module) {
  (void)path, (void)module;
  return POISON;
}
static xdal_status_t poison_module_load_data(const void *image, size_t bytes, xdal_backend_module_t *module) {
  (void)image, (void)bytes, (void)module;
  return POISON;
}
static xdal_status_t poison_module_get_builtin(xdal_backend_module_t *module) {
  (void)module;
  return POISON;
}
static xdal_status_t poison_module_unload(xdal_backend_module_t module) {
  (void)module;
  return POISON;
}
static xdal_status_t poison_module_get_function(xdal_backend_module_t module, const char *name,
                                                xdal_backend_function_t *function) {
  (void)module, (void)name, (void)function;
  return POISON;
}
static xdal_status_t poison_function_from_host(xdal_host_kernel_t kernel, xdal_backend_function_t *function) {
  (void)kernel, (void)function;
  return POISON;
}
static xdal_status_t poison_function_release(xdal_backend_function_t function) {
  (void)function;
  return POISON;
}
static xdal_status_t poison_launch_kernel(xdal_backend_function_t function, xdal_dim3_t grid, xdal_dim3_t block,
                                          size_t shared_mem_bytes, xdal_backend_stream_t stream,
                                          const xdal_kernel_arg_t *args, size_t num_args) {
  (void)function, (void)grid, (void)block, (void)shared_mem_bytes, (void)stream, (void)args, (void)num_args;
  return POISON;
}
#endif

/* --- The table ------------------------------------------------------------------------ */

/* The table with some room after it, as a newer backend's table would have:
   entries this front does not know. */
static const struct {
  xdal_backend_v1_t v1;
  uintptr_t newer_entries[8];
} plugin_table = {
    .v1 =
        {
#if PLUGIN_VARIANT == PLUGIN_V1_0
            .struct_size = offsetof(xdal_backend_v1_t, module_load),
#elif PLUGIN_VARIANT == PLUGIN_LARGER
            .struct_size = sizeof(xdal_backend_v1_t) + 8 * sizeof(uintptr_t),
#elif PLUGIN_VARIANT == PLUGIN_TOO_SMALL
            .struct_size = sizeof(size_t),
#elif PLUGIN_VARIANT == PLUGIN_CUT_REQUIRED
            .struct_size = offsetof(xdal_backend_v1_t, event_query),
#else
            .struct_size = sizeof(xdal_backend_v1_t),
#endif
#if PLUGIN_VARIANT == PLUGIN_MAJOR2
            .abi_major = 2,
#else
            .abi_major = XDAL_ABI_VERSION_MAJOR,
#endif
            .abi_minor = XDAL_ABI_VERSION_MINOR,
#if PLUGIN_VARIANT == PLUGIN_NO_NAME
            .name = NULL,
#else
            .name = PLUGIN_NAME,
#endif
            .device_get_count = plugin_device_get_count,
            .device_get_properties = plugin_device_get_properties,
            .mem_alloc = plugin_mem_alloc,
            .mem_free = plugin_mem_free,
#if PLUGIN_VARIANT != PLUGIN_MISSING
            .mem_copy = plugin_mem_copy,
#endif
            .stream_create = plugin_stream_create,
            .stream_destroy = plugin_stream_destroy,
            .stream_query = plugin_stream_idle,
            .stream_synchronize = plugin_stream_idle,
            .launch_host_func = plugin_launch_host_func,
            .event_create = plugin_event_create,
            .event_destroy = plugin_event_destroy,
            .event_record = plugin_event_record,
#if PLUGIN_VARIANT != PLUGIN_MISSING
            .event_query = plugin_event_reached,
#endif
            .event_synchronize = plugin_event_reached,
            .last_error_message = plugin_last_error_message,
#if PLUGIN_VARIANT == PLUGIN_STATS_1_0
            .mem_get_stats = plugin_mem_get_stats,
            .mem_reset_peak_stats = plugin_mem_reset_peak_stats,
#endif
#if PLUGIN_VARIANT == PLUGIN_V1_0
            .module_load = poison_module_load,
            .module_load_data = poison_module_load_data,
            .module_get_builtin = poison_module_get_builtin,
            .module_unload = poison_module_unload,
            .module_get_function = poison_module_get_function,
            .function_from_host = poison_function_from_host,
            .function_release = poison_function_release,
            .launch_kernel = poison_launch_kernel,
#endif
        },
    /* Nonsense a front must neither read as its own entries nor call. */
    .newer_entries = {1, 2, 3, 4, 5, 6, 7, 8},
};

/* --- The getter ------------------------------------------------------------------------ */
#if PLUGIN_VARIANT == PLUGIN_NO_GETTER
/* Exports something, just not the getter. */
int xdal_test_not_a_plugin(void);
int xdal_test_not_a_plugin(void) { return plugin_table.v1.name != NULL; }
#else
xdal_status_t xdal_backend_get_v1(uint32_t front_abi_major, uint32_t front_abi_minor,
                                  const xdal_backend_v1_t **table) {
  (void)front_abi_minor;
  (void)plugin_table; /* not handed out by every variant */
#if PLUGIN_VARIANT == PLUGIN_MISSING
  (void)plugin_mem_copy; /* defined, just not in the table */
#endif
#if PLUGIN_VARIANT == PLUGIN_REFUSES
  if (front_abi_major != 2) return XDAL_ERROR_VERSION_MISMATCH;
#else
  if (front_abi_major != XDAL_ABI_VERSION_MAJOR) return XDAL_ERROR_VERSION_MISMATCH;
#endif
#if PLUGIN_VARIANT == PLUGIN_GETTER_FAILS
  (void)table;
  return XDAL_ERROR_DEVICE_LOST;
#elif PLUGIN_VARIANT == PLUGIN_NULL_TABLE
  *table = NULL;
  return XDAL_SUCCESS;
#elif PLUGIN_VARIANT == PLUGIN_REENTERS
  /* What a careless backend does: calls into libxdal (already loaded, since
     it is what calls this getter) while it starts. The front must refuse
     the call, saying why, instead of waiting for itself; the getter then
     finishes, and the backend starts. Any other outcome fails the start. */
  xdal_status_t (*init)(void) = NULL;
  xdal_status_t (*message)(char *, size_t, size_t *) = NULL;
  *(void **)&init = dlsym(RTLD_DEFAULT, "xdal_init");
  *(void **)&message = dlsym(RTLD_DEFAULT, "xdal_get_last_error_message");
  if (init == NULL || message == NULL) return XDAL_ERROR_INTERNAL;
  if (init() != XDAL_ERROR_BACKEND_UNAVAILABLE) return XDAL_ERROR_INTERNAL;
  char text[512];
  size_t needed = 0;
  if (message(text, sizeof text, &needed) != XDAL_SUCCESS || strstr(text, "starting the backend") == NULL)
    return XDAL_ERROR_INTERNAL;
  *table = &plugin_table.v1;
  return XDAL_SUCCESS;
#else
  *table = &plugin_table.v1;
  return XDAL_SUCCESS;
#endif
}
#endif
