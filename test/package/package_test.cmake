# Driver of the package tests (see CMakeLists.txt beside this file):
#
#   cmake -DSTEP=<step> -DSOURCE_DIR=... -DBUILD_DIR=... -DWORK_DIR=... \
#         [-DCONFIG=...] -DVERSION=... -DLIBDIR=... -DINCLUDEDIR=... \
#         -DGENERATOR=... [-DMAKE_PROGRAM=...] -DC_COMPILER=... -DCXX_COMPILER=... \
#         -DCTEST_COMMAND=... [-DPKG_CONFIG=...] -P package_test.cmake
#
# Steps:
#   install             cmake --install the build into WORK_DIR/staging, then
#                       move it to WORK_DIR/prefix (the package must not care)
#                       and check the layout, the SONAME and the exports
#   config              find_package version rules and the helper function
#   consumer_cmake      build and run test/package/consumer_cmake
#   consumer_pkgconfig  build consumers with `pkg-config --cflags --libs xdal`
#                       and the compilers alone, and run them
#   backend_plugin      build test/package/vendor_backend (a backend in C)
#                       and run on it with XDAL_BACKEND=<path to its .so>
#   backend_linked      the same backend linked in with xdal_link_backend();
#                       skipped while libxdal has no weak xdal_backend_get_v1
#   example_<name>      build and run examples/<name> against the prefix
#
# Every program runs with LD_LIBRARY_PATH unset: it finds libxdal.so.1
# through its RPATH/RUNPATH, as an installed program would.
cmake_minimum_required(VERSION 3.16)

foreach(var IN ITEMS STEP SOURCE_DIR BUILD_DIR WORK_DIR VERSION LIBDIR INCLUDEDIR
                     GENERATOR C_COMPILER CXX_COMPILER CTEST_COMMAND)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "package_test.cmake: -D${var}=... is required")
  endif()
endforeach()

unset(ENV{LD_LIBRARY_PATH})
# A consumer's configure must not pick up another xdal than the one under test.
unset(ENV{xdal_DIR})
unset(ENV{CMAKE_PREFIX_PATH})

set(PREFIX "${WORK_DIR}/prefix")
string(REGEX MATCH "^[0-9]+" VERSION_MAJOR "${VERSION}")
string(REGEX REPLACE "^[0-9]+\\.([0-9]+).*" "\\1" VERSION_MINOR "${VERSION}")
math(EXPR NEXT_MINOR "${VERSION_MINOR} + 1")
set(SONAME "libxdal.so.${VERSION_MAJOR}")
set(REAL_NAME "libxdal.so.${VERSION}")
set(STRICT_FLAGS "-Wall -Wextra -Wpedantic -Werror")
find_program(READELF readelf)

function(fail text)
  message(FATAL_ERROR "xdal-package-test (${STEP}): ${text}")
endfunction()

# run(<command>... [WORKING_DIRECTORY <dir>] [OUTPUT_VARIABLE <var>])
# Runs a command, echoing it, and fails the test when it fails.
function(run)
  cmake_parse_arguments(RUN "" "WORKING_DIRECTORY;OUTPUT_VARIABLE" "" ${ARGN})
  set(command ${RUN_UNPARSED_ARGUMENTS})
  string(REPLACE ";" " " shown "${command}")
  message(STATUS "run: ${shown}")
  set(extra)
  if(RUN_WORKING_DIRECTORY)
    list(APPEND extra WORKING_DIRECTORY "${RUN_WORKING_DIRECTORY}")
  endif()
  if(RUN_OUTPUT_VARIABLE)
    list(APPEND extra OUTPUT_VARIABLE output OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  execute_process(COMMAND ${command} ${extra} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("command failed (${rc}): ${shown}")
  endif()
  if(RUN_OUTPUT_VARIABLE)
    set(${RUN_OUTPUT_VARIABLE} "${output}" PARENT_SCOPE)
  endif()
endfunction()

function(require_prefix)
  if(NOT IS_DIRECTORY "${PREFIX}")
    fail("no installed prefix at ${PREFIX}: run the package_install test first")
  endif()
endfunction()

# The dynamic section of an ELF file, or "" without readelf.
function(dynamic_section file out)
  set(text "")
  if(READELF)
    run("${READELF}" -d -W "${file}" OUTPUT_VARIABLE text)
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# An installed program must load libxdal.so.1 by SONAME from an RPATH or
# RUNPATH entry that leads into the prefix.
function(check_program file)
  if(NOT EXISTS "${file}")
    fail("no program at ${file}")
  endif()
  dynamic_section("${file}" dyn)
  if(dyn STREQUAL "")
    return()
  endif()
  if(NOT dyn MATCHES "NEEDED[^\n]*\\[${SONAME}\\]")
    fail("${file} does not load ${SONAME} by its SONAME:\n${dyn}")
  endif()
  if(NOT dyn MATCHES "(RPATH|RUNPATH)[^\n]*\\[([^]\n]*)\\]")
    fail("${file} has no RPATH/RUNPATH:\n${dyn}")
  endif()
  set(found FALSE)
  string(REPLACE ":" ";" entries "${CMAKE_MATCH_2}")
  get_filename_component(libdir "${PREFIX}/${LIBDIR}" REALPATH)
  foreach(entry IN LISTS entries)
    get_filename_component(entry "${entry}" REALPATH)
    if(entry STREQUAL libdir)
      set(found TRUE)
    endif()
  endforeach()
  if(NOT found)
    fail("${file}: no RPATH/RUNPATH entry leads to ${libdir}:\n${dyn}")
  endif()
endfunction()

# configure, build and test an out-of-tree CMake project against the prefix;
# extra arguments go to its ctest run (none with RUN_CTEST set to FALSE).
function(build_cmake_project source binary)
  require_prefix()
  file(REMOVE_RECURSE "${binary}")
  set(args -S "${source}" -B "${binary}" -G "${GENERATOR}"
      "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
      "-DCMAKE_C_FLAGS=${STRICT_FLAGS}" "-DCMAKE_CXX_FLAGS=${STRICT_FLAGS}"
      -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${PREFIX}"
      -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
      -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON
      --no-warn-unused-cli)
  if(MAKE_PROGRAM)
    list(APPEND args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  run("${CMAKE_COMMAND}" ${args})
  # The package found must be the one under test.
  file(STRINGS "${binary}/CMakeCache.txt" xdal_dir REGEX "^xdal_DIR:")
  string(REGEX REPLACE "^xdal_DIR:[A-Z]+=" "" xdal_dir "${xdal_dir}")
  get_filename_component(xdal_dir "${xdal_dir}" REALPATH)
  get_filename_component(expected "${PREFIX}/${LIBDIR}/cmake/xdal" REALPATH)
  if(NOT xdal_dir STREQUAL expected)
    fail("${source} found xdal in '${xdal_dir}', not in ${expected}")
  endif()
  run("${CMAKE_COMMAND}" --build "${binary}" --config Release)
  if(NOT DEFINED RUN_CTEST OR RUN_CTEST)
    run("${CTEST_COMMAND}" -C Release --output-on-failure ${ARGN} WORKING_DIRECTORY "${binary}")
  endif()
endfunction()

# The single file called <name> (an executable) under <dir>.
function(find_built dir name out)
  file(GLOB_RECURSE found LIST_DIRECTORIES false "${dir}/${name}")
  list(FILTER found EXCLUDE REGEX "/CMakeFiles/")
  list(LENGTH found n)
  if(NOT n EQUAL 1)
    fail("expected one '${name}' under ${dir}, found: ${found}")
  endif()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# --- Steps ---------------------------------------------------------------------------
if(STEP STREQUAL "install")
  file(REMOVE_RECURSE "${WORK_DIR}")
  set(staging "${WORK_DIR}/staging")
  set(config_args)
  if(CONFIG)
    set(config_args --config "${CONFIG}")
  endif()
  run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${staging}" ${config_args})
  # Everything below uses the moved tree: the package must be relocatable.
  file(RENAME "${staging}" "${PREFIX}")

  set(lib "${PREFIX}/${LIBDIR}")
  foreach(file IN ITEMS "${lib}/${REAL_NAME}" "${PREFIX}/${INCLUDEDIR}/xdal/xdal.h"
                        "${PREFIX}/${INCLUDEDIR}/xdal/xdal_backend.h"
                        "${lib}/cmake/xdal/xdalConfig.cmake"
                        "${lib}/cmake/xdal/xdalConfigVersion.cmake"
                        "${lib}/cmake/xdal/xdalHelpers.cmake"
                        "${lib}/pkgconfig/xdal.pc")
    if(NOT EXISTS "${file}" OR IS_SYMLINK "${file}" OR IS_DIRECTORY "${file}")
      fail("not installed as a regular file: ${file}")
    endif()
  endforeach()
  foreach(link_target IN ITEMS "${SONAME}:${REAL_NAME}" "libxdal.so:${SONAME}")
    string(REPLACE ":" ";" link_target "${link_target}")
    list(GET link_target 0 link)
    list(GET link_target 1 target)
    if(NOT IS_SYMLINK "${lib}/${link}")
      fail("${lib}/${link} is not a symlink")
    endif()
    file(READ_SYMLINK "${lib}/${link}" points_to)
    if(NOT points_to STREQUAL target)
      fail("${lib}/${link} points to '${points_to}', not ${target}")
    endif()
  endforeach()

  # No file of the package may name the directories it was built or
  # installed in.
  foreach(file IN ITEMS "${lib}/cmake/xdal/xdalConfig.cmake"
                        "${lib}/cmake/xdal/xdalConfigVersion.cmake"
                        "${lib}/cmake/xdal/xdalHelpers.cmake"
                        "${lib}/pkgconfig/xdal.pc")
    file(READ "${file}" text)
    foreach(dir IN ITEMS "${staging}" "${SOURCE_DIR}" "${BUILD_DIR}")
      string(FIND "${text}" "${dir}" at)
      if(NOT at EQUAL -1)
        fail("${file} names the directory ${dir}: not relocatable")
      endif()
    endforeach()
  endforeach()

  dynamic_section("${lib}/${REAL_NAME}" dyn)
  if(READELF)
    if(NOT dyn MATCHES "SONAME[^\n]*\\[${SONAME}\\]")
      fail("${REAL_NAME} lacks SONAME ${SONAME}:\n${dyn}")
    endif()
    # The exports are exactly the functions the headers declare: every
    # function xdal.h declares is exported, and nothing else is.
    set(declared)
    foreach(header IN ITEMS xdal.h xdal_backend.h)
      file(READ "${PREFIX}/${INCLUDEDIR}/xdal/${header}" text)
      string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" text "${text}")
      string(REGEX REPLACE "//[^\n]*" "" text "${text}")
      string(REGEX MATCHALL "[A-Za-z0-9_]+[ \t\n*]+xdal_[a-z0-9_]+\\(" names "${text}")
      list(TRANSFORM names REPLACE "^.*[ \t\n*](xdal_[a-z0-9_]+)\\($" "\\1")
      list(REMOVE_DUPLICATES names)
      set(declared_${header} ${names})
      list(APPEND declared ${names})
    endforeach()
    list(LENGTH declared_xdal.h n_declared)
    if(n_declared LESS 10)
      fail("found only ${n_declared} function declarations in xdal.h: ${declared_xdal.h}")
    endif()
    run("${READELF}" --dyn-syms -W "${lib}/${REAL_NAME}" OUTPUT_VARIABLE syms)
    set(missing)
    foreach(fn IN LISTS declared_xdal.h)
      if(NOT syms MATCHES "FUNC +(GLOBAL|WEAK) +DEFAULT +[0-9]+ +${fn}([@ \n]|$)")
        list(APPEND missing ${fn})
      endif()
    endforeach()
    if(missing)
      fail("declared in xdal.h but not exported by ${REAL_NAME}: ${missing}")
    endif()
    string(REGEX MATCHALL "(FUNC|OBJECT) +(GLOBAL|WEAK) +[A-Z]+ +[0-9]+ +[A-Za-z0-9_]+" exported "${syms}")
    list(TRANSFORM exported REPLACE "^.* ([A-Za-z0-9_]+)$" "\\1")
    set(undeclared)
    foreach(symbol IN LISTS exported)
      if(NOT symbol IN_LIST declared)
        list(APPEND undeclared ${symbol})
      endif()
    endforeach()
    if(undeclared)
      fail("exported by ${REAL_NAME} but declared in no header: ${undeclared}")
    endif()
    list(LENGTH exported n_exported)
    message(STATUS "${n_declared} functions declared in xdal.h, all exported; "
                   "${n_exported} exports, none undeclared")
  else()
    message(STATUS "readelf not found: SONAME and export checks skipped")
  endif()

elseif(STEP STREQUAL "config")
  # SameMajorVersion: every minor up to this release's is accepted (1.0
  # and 1.1 for 1.1.x), a later minor, 2.0 and 0.x are not; the helper
  # function comes with the package.
  set(dir "${WORK_DIR}/config")
  file(REMOVE_RECURSE "${dir}")
  file(WRITE "${dir}/src/CMakeLists.txt" "
cmake_minimum_required(VERSION 3.16)
project(xdal_config_check LANGUAGES C)
find_package(xdal 2.0 CONFIG QUIET)
if(xdal_FOUND)
  message(FATAL_ERROR \"find_package(xdal 2.0) accepted \${xdal_VERSION}\")
endif()
find_package(xdal 0.9 CONFIG QUIET)
if(xdal_FOUND)
  message(FATAL_ERROR \"find_package(xdal 0.9) accepted \${xdal_VERSION}\")
endif()
find_package(xdal ${VERSION_MAJOR}.${NEXT_MINOR} CONFIG QUIET)
if(xdal_FOUND)
  message(FATAL_ERROR \"find_package(xdal ${VERSION_MAJOR}.${NEXT_MINOR}) accepted \${xdal_VERSION}\")
endif()
find_package(xdal ${VERSION_MAJOR}.${VERSION_MINOR} CONFIG REQUIRED)
if(NOT xdal_VERSION VERSION_EQUAL \"${VERSION}\")
  message(FATAL_ERROR \"xdal_VERSION is '\${xdal_VERSION}', expected ${VERSION}\")
endif()
find_package(xdal ${VERSION_MAJOR}.0 CONFIG REQUIRED)
if(NOT xdal_VERSION VERSION_EQUAL \"${VERSION}\")
  message(FATAL_ERROR \"xdal_VERSION is '\${xdal_VERSION}', expected ${VERSION}\")
endif()
if(NOT TARGET xdal::xdal OR NOT COMMAND xdal_link_backend)
  message(FATAL_ERROR \"xdal::xdal or xdal_link_backend missing\")
endif()
get_target_property(soname xdal::xdal IMPORTED_SONAME)
if(NOT soname STREQUAL \"${SONAME}\")
  message(FATAL_ERROR \"IMPORTED_SONAME is '\${soname}'\")
endif()
# Finding the package twice is harmless.
find_package(xdal ${VERSION_MAJOR} CONFIG REQUIRED)
add_executable(app_with_backend app.c)
# As on distributions whose linker drops unused libraries by default.
target_link_options(app_with_backend PRIVATE -Wl,--as-needed)
target_link_libraries(app_with_backend PRIVATE xdal::xdal)
add_library(vendor_backend SHARED vendor.c)
xdal_link_backend(app_with_backend vendor_backend)
enable_testing()
add_test(NAME app_with_backend COMMAND app_with_backend)
")
  # The helper keeps a library the program never calls on its NEEDED list.
  file(WRITE "${dir}/src/vendor.c" "int xdal_config_check_vendor(void);\nint xdal_config_check_vendor(void) { return 0; }\n")
  file(WRITE "${dir}/src/app.c" "#include <xdal/xdal.h>\nint main(void) { return xdal_status_string(XDAL_SUCCESS) ? 0 : 1; }\n")
  build_cmake_project("${dir}/src" "${dir}/build")
  find_built("${dir}/build" app_with_backend app)
  dynamic_section("${app}" dyn)
  if(READELF AND NOT dyn MATCHES "NEEDED[^\n]*\\[libvendor_backend.so\\]")
    fail("xdal_link_backend did not keep the vendor library:\n${dyn}")
  endif()

elseif(STEP STREQUAL "consumer_cmake")
  set(dir "${WORK_DIR}/consumer_cmake")
  build_cmake_project("${SOURCE_DIR}/test/package/consumer_cmake" "${dir}")
  find_built("${dir}" app app)
  check_program("${app}")

elseif(STEP STREQUAL "consumer_pkgconfig")
  require_prefix()
  if(NOT PKG_CONFIG)
    fail("-DPKG_CONFIG=<pkg-config> is required for this step")
  endif()
  set(dir "${WORK_DIR}/consumer_pkgconfig")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
  run("${PKG_CONFIG}" --modversion xdal OUTPUT_VARIABLE modversion)
  if(NOT modversion STREQUAL VERSION)
    fail("pkg-config --modversion xdal says '${modversion}', expected ${VERSION}")
  endif()
  run("${PKG_CONFIG}" --cflags --libs xdal OUTPUT_VARIABLE flags)
  run("${PKG_CONFIG}" --variable=libdir xdal OUTPUT_VARIABLE libdir)
  get_filename_component(real_libdir "${libdir}" REALPATH)
  get_filename_component(expected "${PREFIX}/${LIBDIR}" REALPATH)
  if(NOT real_libdir STREQUAL expected)
    fail("pkg-config libdir '${libdir}' is not ${expected}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  separate_arguments(strict UNIX_COMMAND "${STRICT_FLAGS}")
  # C++ consumer, and the CMake consumer's C source built the pkg-config way.
  run("${CXX_COMPILER}" -std=c++17 ${strict}
      "${SOURCE_DIR}/test/package/consumer_pkgconfig/main.cpp"
      ${flags} "-Wl,-rpath,${libdir}" -o "${dir}/app_cxx")
  run("${C_COMPILER}" -std=c11 ${strict}
      "${SOURCE_DIR}/test/package/consumer_cmake/main.c"
      ${flags} "-Wl,-rpath,${libdir}" -o "${dir}/app_c")
  foreach(app IN ITEMS app_cxx app_c)
    check_program("${dir}/${app}")
    run("${dir}/${app}")
  endforeach()

elseif(STEP STREQUAL "backend_plugin")
  # A vendor backend built against the installed headers, loaded with
  # XDAL_BACKEND=<path>; without it the program runs on the fake backend.
  build_cmake_project("${SOURCE_DIR}/test/package/vendor_backend"
                      "${WORK_DIR}/backend_plugin" -R "^(plugin|default)$")

elseif(STEP STREQUAL "backend_linked")
  # The same backend linked into the program with xdal_link_backend(): its
  # xdal_backend_get_v1 overrides the weak default getter that libxdal
  # declares (DESIGN.md, "Backend selection").
  set(dir "${WORK_DIR}/backend_linked")
  set(RUN_CTEST FALSE)
  build_cmake_project("${SOURCE_DIR}/test/package/vendor_backend" "${dir}")
  find_built("${dir}" app_linked app)
  dynamic_section("${app}" dyn)
  if(READELF AND NOT dyn MATCHES "NEEDED[^\n]*\\[libxdal_vendor_test.so\\]")
    fail("xdal_link_backend did not keep the vendor library:\n${dyn}")
  endif()
  if(READELF)
    run("${READELF}" --dyn-syms -W "${PREFIX}/${LIBDIR}/${REAL_NAME}" OUTPUT_VARIABLE syms)
    if(NOT syms MATCHES "WEAK +DEFAULT +UND +xdal_backend_get_v1([@ \n]|$)")
      message(STATUS "XDAL_TEST_SKIPPED: ${REAL_NAME} has no weak undefined "
                     "xdal_backend_get_v1, so a linked-in backend cannot override it")
      return()
    endif()
  endif()
  run("${CTEST_COMMAND}" -C Release --output-on-failure -R "^linked$" WORKING_DIRECTORY "${dir}")

elseif(STEP MATCHES "^example_(.+)$")
  set(name "${CMAKE_MATCH_1}")
  set(dir "${WORK_DIR}/example_${name}")
  build_cmake_project("${SOURCE_DIR}/examples/${name}" "${dir}")
  find_built("${dir}" "xdal_example_${name}" app)
  check_program("${app}")

else()
  fail("unknown step '${STEP}'")
endif()
