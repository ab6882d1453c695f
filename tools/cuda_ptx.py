"""Compiles the CUDA C++ sources of xdal's built-in kernels (written by
xdal-cuda-kernels) with NVRTC, loaded with ctypes from the pinned
nvidia-cuda-nvrtc-cu12 wheel, into PTX for compute_80 (what the CUDA backend
loads); --cubin also builds each for the given architectures, so that a
kernel ptxas refuses fails without a GPU; --compare fails when the PTX
differs from a directory's (the committed files). tools/cuda-ptx.sh drives
it.
"""

import argparse
import ctypes
import os
import pathlib
import sys
from concurrent.futures import ThreadPoolExecutor

import nvidia.cuda_nvrtc

# Floats as the fake backend computes them: no contraction into fused
# multiply-adds, denormals kept, IEEE division and square root.
EXACT = ["-std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true"]
# Warning 177, a function never referenced: every program carries every
# type's helpers and uses a few of them.
QUIET = ["--diag-suppress=177"]
PTX_ARCH = "compute_80"


def load_nvrtc():
    lib_dir = pathlib.Path(nvidia.cuda_nvrtc.__path__[0]) / "lib"
    nvrtc = ctypes.CDLL(str(lib_dir / "libnvrtc.so.12"))
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return nvrtc, f"{major.value}.{minor.value}"


def compile_program(nvrtc, cu, arch):
    """`cu` compiled for `arch`: PTX (compute_*) or cubin (sm_*) bytes, or
    the error message with NVRTC's log."""
    prog = ctypes.c_void_p()
    status = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), cu.read_bytes(), cu.name.encode(), 0, None, None)
    if status != 0:
        return f"{cu.name}: nvrtcCreateProgram failed ({status})"
    try:
        options = [o.encode() for o in EXACT + QUIET + [f"--gpu-architecture={arch}"]]
        status = nvrtc.nvrtcCompileProgram(prog, len(options), (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        if status != 0:
            nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            nvrtc.nvrtcGetProgramLog(prog, log)
            return f"{cu.name} does not build for {arch}:\n{log.value.decode(errors='replace')}"
        cubin = arch.startswith("sm_")
        get_size, get = (
            (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if cubin else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        )
        get_size(prog, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        get(prog, out)
        # PTX comes with a terminating NUL; the file is text without it.
        return out.raw if cubin else out.raw.rstrip(b"\0")
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))


def differences(built, committed):
    """What differs between two directories of PTX, one line per file."""
    found = []
    for name in sorted({p.name for p in built.glob("*.ptx")} | {p.name for p in committed.glob("*.ptx")}):
        new, old = built / name, committed / name
        if not old.exists():
            found.append(f"{name}: not committed")
        elif not new.exists():
            found.append(f"{name}: committed, no longer generated")
        elif new.read_bytes() != old.read_bytes():
            new_lines, old_lines = new.read_bytes().splitlines(), old.read_bytes().splitlines()
            line = next((i for i, pair in enumerate(zip(new_lines, old_lines)) if pair[0] != pair[1]), None)
            line = min(len(new_lines), len(old_lines)) if line is None else line
            found.append(
                f"{name}: differs from line {line + 1} ({len(old_lines)} lines committed, {len(new_lines)} generated)"
            )
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sources", type=pathlib.Path, help="the .cu files' directory")
    parser.add_argument("out", type=pathlib.Path, help="where the .ptx files go")
    parser.add_argument("--nvrtc", help="the NVRTC version required, MAJOR.MINOR")
    parser.add_argument("--cubin", nargs="*", default=[], help="architectures to build cubins for (sm_80 ...)")
    parser.add_argument("--compare", type=pathlib.Path, help="the directory whose PTX the new PTX must equal")
    args = parser.parse_args()

    nvrtc, version = load_nvrtc()
    if args.nvrtc and version != args.nvrtc:
        sys.exit(f"cuda_ptx.py: NVRTC {version} loaded, {args.nvrtc} pinned")
    sources = sorted(args.sources.glob("*.cu"))
    if not sources:
        sys.exit(f"cuda_ptx.py: no .cu file in {args.sources}")
    jobs = [(cu, arch) for cu in sources for arch in [PTX_ARCH] + args.cubin]

    # Each program in a thread of its own: NVRTC numbers the call sequences
    # in its PTX's comments with a per-thread counter that runs on from one
    # program to the next, so a reused thread would make a file depend on
    # what was compiled before it.
    def in_fresh_thread(job):
        with ThreadPoolExecutor(max_workers=1) as one:
            return one.submit(compile_program, nvrtc, *job).result()

    # Programs compile in parallel: ctypes releases the GIL around NVRTC.
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        results = list(pool.map(in_fresh_thread, jobs))
    errors = [result for result in results if isinstance(result, str)]
    if errors:
        sys.exit("\n".join(errors))

    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    for (cu, arch), result in zip(jobs, results):
        if arch == PTX_ARCH:
            (args.out / f"{cu.stem}.ptx").write_bytes(result)
            total += len(result)
    cubins = "".join(f", {arch} cubin" for arch in args.cubin)
    print(f"NVRTC {version}: {len(sources)} programs, {total / 1e6:.1f} MB of {PTX_ARCH} PTX{cubins}")
    if args.compare:
        found = differences(args.out, args.compare)
        if found:
            sys.exit("the generated PTX differs from the committed files:\n  " + "\n  ".join(found))


if __name__ == "__main__":
    main()
