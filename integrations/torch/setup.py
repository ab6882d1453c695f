"""Build of torch_xdal: a PyTorch PrivateUse1 backend on the xdal C ABI.

The C++ extension links the installed libxdal.so.1, found through
pkg-config (PKG_CONFIG_PATH) or, failing that, through xdal's CMake package
(CMAKE_PREFIX_PATH or xdal_DIR). xdal's sources are never compiled in.

    pip install --no-build-isolation integrations/torch
"""

import glob
import os
import shutil
import subprocess
import tempfile

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths

HERE = os.path.dirname(os.path.abspath(__file__))


def _from_pkg_config():
    if not shutil.which("pkg-config"):
        return None
    try:
        # 1.1: default-stream handles and peak_reserved_bytes.
        cflags = subprocess.check_output(["pkg-config", "--cflags", "xdal >= 1.1"], text=True).split()
        libs = subprocess.check_output(["pkg-config", "--libs", "xdal >= 1.1"], text=True).split()
    except subprocess.CalledProcessError:
        return None
    includes = [f[2:] for f in cflags if f.startswith("-I")]
    libdirs = [os.path.normpath(f[2:]) for f in libs if f.startswith("-L")]
    return includes, libdirs, "pkg-config"


_CMAKE_PROBE = """
cmake_minimum_required(VERSION 3.16)
project(probe NONE)
find_package(xdal 1.1 CONFIG REQUIRED)
get_target_property(inc xdal::xdal INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(lib xdal::xdal IMPORTED_LOCATION)
file(WRITE "${CMAKE_BINARY_DIR}/xdal.txt" "${inc}\\n${lib}\\n")
"""


def _from_cmake():
    if not shutil.which("cmake"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "CMakeLists.txt"), "w") as f:
            f.write(_CMAKE_PROBE)
        try:
            subprocess.check_call(["cmake", "-S", tmp, "-B", os.path.join(tmp, "b")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except subprocess.CalledProcessError:
            return None
        with open(os.path.join(tmp, "b", "xdal.txt")) as f:
            inc, lib = f.read().split("\n")[:2]
    return inc.split(";"), [os.path.dirname(lib)], "CMake package"


def find_xdal():
    found = _from_pkg_config() or _from_cmake()
    if not found:
        raise RuntimeError(
            "torch_xdal: xdal not found. Install xdal (cmake --install build --prefix PREFIX) and set "
            "PKG_CONFIG_PATH=PREFIX/lib/pkgconfig or CMAKE_PREFIX_PATH=PREFIX."
        )
    includes, libdirs, how = found
    print(f"torch_xdal: xdal from {how}: include {includes}, lib {libdirs}")
    return includes, libdirs


includes, libdirs = find_xdal()
# PyTorch's headers are included as system headers: -Wall -Wextra -Werror then
# apply to this extension's own code only (torch 2.15's headers do not build
# warning-free under -Wextra: unused parameters, -Winterference-size).
# Kineto's headers (the PrivateUse1 profiler plugin) sit in their own folder.
torch_includes = include_paths() + [os.path.join(include_paths()[0], "kineto")]
system_includes = [flag for d in torch_includes for flag in ("-isystem", d)]
warnings = ["-Wall", "-Wextra"]
if os.environ.get("TORCH_XDAL_WERROR", "1") == "1":
    warnings.append("-Werror")

# Every translation unit in csrc/, relative to this directory as setuptools
# wants them (one integration point each: see csrc/xdal_torch.h).
sources = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "*.cpp")))

ext = CppExtension(
    name="torch_xdal._C",
    sources=sources,
    include_dirs=[os.path.join(HERE, "csrc")] + includes,
    library_dirs=libdirs,
    libraries=["xdal"],
    runtime_library_dirs=libdirs,
    extra_compile_args=["-std=c++20", "-O2"] + system_includes + warnings,
)

setup(
    name="torch_xdal",
    version="0.1.0",
    description="PyTorch PrivateUse1 backend on the xdal C ABI",
    packages=["torch_xdal"],
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    install_requires=["torch"],
    python_requires=">=3.9",
    entry_points={"torch.backends": ["xdal = torch_xdal:_autoload"]},
)
