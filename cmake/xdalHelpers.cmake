# Helpers shipped with the xdal CMake package (included by xdalConfig.cmake,
# and by xdal's own build).
include_guard(GLOBAL)

# xdal_link_backend(<target> <vendor-library>...)
#
# Links a vendor backend library into <target> so that it overrides the
# built-in backend choice. libxdal declares the backend table getter
# (xdal_backend_get_v1) as a weak symbol; a vendor library that defines it
# takes over when it is loaded with the program. The program itself calls
# nothing in that library, so a linker running with --as-needed (the default
# of several distributions) would drop it from the program's NEEDED entries
# and the override would silently not happen. The library is therefore
# linked between -Wl,--no-as-needed and -Wl,--as-needed.
#
# <vendor-library> is anything target_link_libraries accepts: a target, a
# full path to a .so, or a plain library name. (A vendor object linked
# statically needs its getter exported instead, e.g. with -rdynamic; setting
# XDAL_BACKEND=<name-or-path> at run time or LD_PRELOAD work as well.)
function(xdal_link_backend target)
  if(ARGC LESS 2)
    message(FATAL_ERROR "xdal_link_backend(<target> <vendor-library>...): "
                        "no vendor library given")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "xdal_link_backend: '${target}' is not a target")
  endif()
  target_link_libraries("${target}" PRIVATE
    "-Wl,--no-as-needed" ${ARGN} "-Wl,--as-needed")
endfunction()
