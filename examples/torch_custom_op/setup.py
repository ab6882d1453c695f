"""Builds the example operator library xdal_example (operators.cpp)
against the installed PyTorch and xdal (found with pkg-config):

    pip install --no-build-isolation examples/torch_custom_op

then, in Python: import torch, xdal_example; torch.ops.xdal_example.scaled_add(a, b, 0.5).
"""
import subprocess

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths


def pkg_config(*args: str) -> list:
    return subprocess.check_output(["pkg-config", *args, "xdal >= 1.1"], text=True).split()


cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
# PyTorch's headers as system headers: the warnings are for this code only
# (torch's headers do not build warning-free under -Wextra).
system_includes = [flag for d in include_paths() for flag in ("-isystem", d)]
setup(
    name="xdal_example",
    version="0.1.0",
    license="Apache-2.0",
    description="A custom PyTorch operator with an xdal kernel (an example of torch_xdal's)",
    ext_modules=[
        CppExtension(
            "xdal_example",
            ["operators.cpp", "module.cpp"],
            include_dirs=[f[2:] for f in cflags if f.startswith("-I")],
            library_dirs=[f[2:] for f in libs if f.startswith("-L")],
            libraries=[f[2:] for f in libs if f.startswith("-l")],
            runtime_library_dirs=[f[2:] for f in libs if f.startswith("-L")],
            extra_compile_args=["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Werror"] + system_includes,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
