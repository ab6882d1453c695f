/* The weak default: libxdal refers to xdal_backend_get_v1 as a weak
 * undefined symbol. When a vendor library that defines it is loaded with the
 * program (linked with -Wl,--no-as-needed, exported with -rdynamic from the
 * executable, or LD_PRELOADed), the dynamic loader binds the reference to
 * it; otherwise the reference stays NULL and the front falls back to the
 * built-in fake backend. Rust has no stable weak linkage, hence this file. */
#include <stddef.h>
#include <stdint.h>

typedef int32_t (*xdal_getter_fn)(uint32_t, uint32_t, const void **);

extern int32_t xdal_backend_get_v1(uint32_t front_abi_major, uint32_t front_abi_minor,
                                   const void **table) __attribute__((weak));

/* The linked-in getter, or NULL when no loaded library defines one. */
xdal_getter_fn xdal_front_linked_backend_getter(void);
xdal_getter_fn xdal_front_linked_backend_getter(void) {
  return xdal_backend_get_v1;
}
