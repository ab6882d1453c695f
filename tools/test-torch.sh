#!/usr/bin/env bash
# Tests the PyTorch backend (integrations/torch) on a fresh machine too:
# creates or reuses the virtualenv .venv, installs torch==2.15.0, numpy and
# pytest there if missing, builds and installs xdal into build/prefix with
# CMake, builds and installs torch_xdal against that prefix, and runs its
# pytest suite on each backend of XDAL_TORCH_BACKENDS (default: fake), the
# fake one with XDAL_FAKE_PROTECT=1 (device memory inaccessible to host
# code). Exits non-zero on any failure.
#
#   XDAL_TORCH_VENV  virtualenv to use (default .venv)
#   XDAL_BUILD_DIR   CMake build directory (default build)
#   XDAL_TORCH_BACKENDS  backends to run the suite on, e.g. "fake opencl"
#   PYTEST_ARGS      extra pytest arguments
#   XDAL_TORCH_SETUP_ONLY  set: build and install, run no test (bench-torch.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
torch_version=2.15.0
venv=${XDAL_TORCH_VENV:-.venv}
build_dir=${XDAL_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v cc >/dev/null || missing+=(gcc)
command -v c++ >/dev/null || missing+=(g++)
command -v python3 >/dev/null || missing+=(python3)
python3 -c "import venv, ensurepip" 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
  echo "== installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "== virtualenv $venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$root/$venv/bin/python"
if ! "$py" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
  echo "== pip install torch==$torch_version"
  "$py" -m pip install -q "torch==$torch_version"
fi
"$py" -c "import numpy, pytest" 2>/dev/null || "$py" -m pip install -q numpy pytest
# expecttest: imported by PyTorch's OpInfo database (tests/test_opinfo.py).
"$py" -c "import expecttest" 2>/dev/null || "$py" -m pip install -q expecttest
"$py" -c "import setuptools, wheel" 2>/dev/null || "$py" -m pip install -q setuptools wheel
# ninja compiles the extension's translation units in parallel.
command -v ninja >/dev/null || "$py" -c "import ninja" 2>/dev/null || "$py" -m pip install -q ninja
export PATH="$root/$venv/bin:$PATH"

echo "== xdal: cmake build and install into $build_dir/prefix"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DXDAL_CARGO_TARGET_DIR="$root/target" >/dev/null
cmake --build "$build_dir" -j "$jobs"
prefix="$root/$build_dir/prefix"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null

echo "== torch_xdal: build and install"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CMAKE_PREFIX_PATH="$prefix${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
start=$(date +%s)
# Without autoloading: a broken torch_xdal installed earlier must not stop
# `import torch` in the build from building its replacement.
TORCH_DEVICE_BACKEND_AUTOLOAD=0 MAX_JOBS=$jobs "$py" -m pip install -q --no-build-isolation --no-deps ./integrations/torch
echo "   (extension build and install: $(($(date +%s) - start)) s)"

# tools/bench-torch.sh: the environment only.
if [ -n "${XDAL_TORCH_SETUP_ONLY:-}" ]; then
  exit 0
fi

# From the repository root, so that the installed torch_xdal is imported,
# not its source folder.
for backend in ${XDAL_TORCH_BACKENDS:-fake}; do
  if [ "$backend" = fake ]; then
    echo "== pytest integrations/torch/tests (fake backend, XDAL_FAKE_PROTECT=1)"
    # shellcheck disable=SC2086
    XDAL_FAKE_PROTECT=1 "$py" -m pytest integrations/torch/tests -q -p no:cacheprovider ${PYTEST_ARGS:-}
  else
    echo "== pytest integrations/torch/tests (XDAL_BACKEND=$backend)"
    # shellcheck disable=SC2086
    XDAL_BACKEND=$backend "$py" -m pytest integrations/torch/tests -q -p no:cacheprovider ${PYTEST_ARGS:-}
  fi
done

# Keeps the benchmark of PyTorch on xdal beside the CPU working (one short
# batch each; no timing is asserted): tools/bench-torch.sh for figures.
echo "== integrations/torch/bench/bench.py --reps 1 --seconds 0.02 (keeps it working; no timing asserted)"
"$py" integrations/torch/bench/bench.py --reps 1 --seconds 0.02
