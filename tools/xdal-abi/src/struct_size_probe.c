/* The struct_size rule, from a caller's side: compiled by xdal-abi against
 * one baseline's headers (so sizeof is that release's) and run against the
 * library under test, opened with dlopen (argv[1]) on the fake backend.
 *
 * Every function taking an extensible struct is called with the struct
 * sizes such a caller may pass: only `struct_size` itself, one byte short of
 * the baseline's struct, the baseline's struct, and larger than the library
 * knows. The struct sits at the start of a buffer of canary bytes: the
 * library may write only the bytes its caller's size and its own both
 * reach, must never change `struct_size`, and must write something when
 * there is room. An input struct of the baseline's exact size ends where an
 * inaccessible page begins, so that reading past it crashes the probe.
 *
 * Prints `COVERED <function>` for each function exercised and `FAIL <what>`
 * for each violation; exits 0 (a crash is the tool's finding too).
 * XDAL_KNOWN_<struct> (-D, from the current headers): the library's size. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xdal/xdal.h>

static void *library;

/* The library's functions, typed as the baseline's prototypes declare them. */
static struct {
  __typeof__(&xdal_init) init;
  __typeof__(&xdal_get_last_error_message) last_error_message;
  __typeof__(&xdal_malloc) malloc;
  __typeof__(&xdal_free) free;
  __typeof__(&xdal_device_get_properties) device_get_properties;
  __typeof__(&xdal_pointer_get_attributes) pointer_get_attributes;
  __typeof__(&xdal_mem_get_stats) mem_get_stats;
#if XDAL_ABI_VERSION_MAJOR > 1 || XDAL_ABI_VERSION_MINOR >= 2
  __typeof__(&xdal_tracer_create) tracer_create;
  __typeof__(&xdal_tracer_destroy) tracer_destroy;
#endif
} api;

/* Sets `*slot` (a function pointer of `size` bytes) to the library's
 * `name`; 0 when it does not export it. (Through memcpy: ISO C has no cast
 * from dlsym's object pointer to a function pointer.) */
static int resolve(void *slot, size_t size, const char *name) {
  void *address = dlsym(library, name);
  if (!address) {
    printf("FAIL %s is not exported by the library\n", name);
    return 0;
  }
  memcpy(slot, &address, size);
  return 1;
}
#define RESOLVE(member, name) resolve(&api.member, sizeof api.member, #name)

static int resolve_all(void) {
  int ok = RESOLVE(init, xdal_init) & RESOLVE(last_error_message, xdal_get_last_error_message) &
           RESOLVE(malloc, xdal_malloc) & RESOLVE(free, xdal_free) &
           RESOLVE(device_get_properties, xdal_device_get_properties) &
           RESOLVE(pointer_get_attributes, xdal_pointer_get_attributes) &
           RESOLVE(mem_get_stats, xdal_mem_get_stats);
#if XDAL_ABI_VERSION_MAJOR > 1 || XDAL_ABI_VERSION_MINOR >= 2
  ok &= RESOLVE(tracer_create, xdal_tracer_create) & RESOLVE(tracer_destroy, xdal_tracer_destroy);
#endif
  return ok;
}

enum { CANARY = 0xA5, ROOM = 512 };

/* Calls a function writing an extensible struct; `call` fills `out`. */
typedef xdal_status_t (*call_t)(void *out, void *context);

static void sized(const char *function, const char *type, size_t size, size_t known, call_t call,
                  void *context) {
  static unsigned char buffer[ROOM];
  memset(buffer, CANARY, sizeof buffer);
  memcpy(buffer, &size, sizeof size);
  xdal_status_t status = call(buffer, context);
  if (status != XDAL_SUCCESS) {
    printf("FAIL %s with %s.struct_size %zu returned status %d\n", function, type, size, (int)status);
    return;
  }
  size_t after;
  memcpy(&after, buffer, sizeof after);
  if (after != size)
    printf("FAIL %s changed %s.struct_size from %zu to %zu\n", function, type, size, after);
  size_t limit = size < known ? size : known;
  for (size_t i = limit; i < sizeof buffer; i++) {
    if (buffer[i] != CANARY) {
      printf("FAIL %s with %s.struct_size %zu wrote byte %zu, past the %zu bytes it may write\n", function,
             type, size, i, limit);
      break;
    }
  }
  int written = 0;
  for (size_t i = sizeof(size_t); i < limit; i++) written |= buffer[i] != CANARY;
  if (limit > sizeof(size_t) && !written)
    printf("FAIL %s with %s.struct_size %zu wrote nothing\n", function, type, size);
}

/* The sizes a caller of the baseline may pass, each in turn. */
static void every_size(const char *function, const char *type, size_t baseline, size_t known, call_t call,
                       void *context) {
  const size_t sizes[] = {sizeof(size_t), baseline - 1, baseline, known + 64};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    if (sizes[i] >= sizeof(size_t) && sizes[i] + 1 <= ROOM) sized(function, type, sizes[i], known, call, context);
  }
  printf("COVERED %s\n", function);
}

static xdal_status_t get_properties(void *out, void *context) {
  (void)context;
  return api.device_get_properties(0, out);
}

static xdal_status_t get_attributes(void *out, void *context) {
  return api.pointer_get_attributes(context, out);
}

static xdal_status_t get_stats(void *out, void *context) {
  (void)context;
  return api.mem_get_stats(0, out);
}

#if XDAL_ABI_VERSION_MAJOR > 1 || XDAL_ABI_VERSION_MINOR >= 2
/* An input struct of exactly the baseline's size, ending at an inaccessible
 * page; then one larger than the library knows, its tail not zero. */
static void tracer_desc(void) {
  long page = sysconf(_SC_PAGESIZE);
  unsigned char *pages = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED || mprotect(pages + page, (size_t)page, PROT_NONE) != 0) {
    printf("FAIL cannot map a guard page\n");
    return;
  }
  xdal_tracer_desc_t *desc = (xdal_tracer_desc_t *)(pages + page - sizeof *desc);
  memset(desc, 0, sizeof *desc);
  desc->struct_size = sizeof *desc;
  xdal_tracer_t tracer = NULL;
  xdal_status_t status = api.tracer_create(&tracer, desc);
  if (status != XDAL_SUCCESS)
    printf("FAIL xdal_tracer_create with desc.struct_size %zu returned status %d\n", sizeof *desc, (int)status);
  else
    api.tracer_destroy(tracer);
  static unsigned char larger[ROOM];
  memset(larger, CANARY, sizeof larger);
  memset(larger, 0, sizeof(xdal_tracer_desc_t));
  size_t size = XDAL_KNOWN_xdal_tracer_desc + 64;
  memcpy(larger, &size, sizeof size);
  status = api.tracer_create(&tracer, (xdal_tracer_desc_t *)larger);
  if (status != XDAL_SUCCESS)
    printf("FAIL xdal_tracer_create with desc.struct_size %zu (larger than the library knows) returned status %d\n",
           size, (int)status);
  else
    api.tracer_destroy(tracer);
  printf("COVERED xdal_tracer_create\n");
}
#endif

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    printf("NOLOAD %s\n", dlerror());
    return 0;
  }
  if (!resolve_all()) return 0;
  if (api.init() != XDAL_SUCCESS) {
    char message[512] = "";
    api.last_error_message(message, sizeof message, NULL);
    printf("NOINIT %s\n", message);
    return 0;
  }
  every_size("xdal_device_get_properties", "xdal_device_properties_t", sizeof(xdal_device_properties_t),
             XDAL_KNOWN_xdal_device_properties, get_properties, NULL);
  void *memory = NULL;
  if (api.malloc(&memory, 4096) != XDAL_SUCCESS) {
    printf("FAIL xdal_malloc of 4096 bytes failed\n");
  } else {
    every_size("xdal_pointer_get_attributes", "xdal_pointer_attributes_t", sizeof(xdal_pointer_attributes_t),
               XDAL_KNOWN_xdal_pointer_attributes, get_attributes, memory);
    api.free(memory);
  }
  every_size("xdal_mem_get_stats", "xdal_mem_stats_t", sizeof(xdal_mem_stats_t), XDAL_KNOWN_xdal_mem_stats,
             get_stats, NULL);
#if XDAL_ABI_VERSION_MAJOR > 1 || XDAL_ABI_VERSION_MINOR >= 2
  tracer_desc();
#endif
  fflush(stdout);
  return 0;
}
