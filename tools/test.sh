#!/usr/bin/env bash
# Runs every test of xdal, on a fresh machine too: installs what is missing
# (cmake, pkg-config, abigail-tools, a C/C++ compiler and PoCL from Debian's
# packages; crates come through cargo, cbindgen pinned in Cargo.lock; PyTorch
# pinned, into .venv), then formatting, lints, the Rust tests, the CMake build
# with the C/C++ conformance, package, example and ABI tests (ctest), the
# xdal-info smoke test, the PyTorch integration's pytest suite and a short
# benchmark run.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v cc >/dev/null || missing+=(gcc)
command -v c++ >/dev/null || missing+=(g++)
command -v abidiff >/dev/null || missing+=(abigail-tools)  # abidw/abidiff for the ABI check (ctest -L abi)
# The OpenCL backend's conformance run: an ICD loader and PoCL (OpenCL 3.0
# with SVM on the CPU).
ldconfig -p 2>/dev/null | grep -q 'libOpenCL\.so\.1 ' || missing+=(ocl-icd-libopencl1)
[ -e /etc/OpenCL/vendors/pocl.icd ] || missing+=(pocl-opencl-icd)
if ((${#missing[@]})); then
  echo "== installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
# The OpenCL runtime's kernel cache inside the build tree, not the home
# directory, for every step below.
export POCL_CACHE_DIR="$PWD/target/pocl-cache"

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The front alone, without built-in backends (the ABI self-test builds it so).
cargo clippy -p xdal --no-default-features --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked

echo "== cmake build and ctest (conformance, package, examples)"
build_dir=${XDAL_BUILD_DIR:-build}
# cargo shares target/ with the steps above and below: one release build.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DXDAL_CARGO_TARGET_DIR="$PWD/target" >/dev/null
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"

echo "== xdal-info"
cargo run --release --locked -q -p xdal-info

echo "== xdal-info on the OpenCL backend (PoCL)"
XDAL_BACKEND=opencl cargo run --release --locked -q -p xdal-info

echo "== PyTorch integration (torch_xdal, pytest on fake under XDAL_FAKE_PROTECT=1, then on OpenCL)"
XDAL_BUILD_DIR="$build_dir" XDAL_TORCH_BACKENDS="fake opencl" bash tools/test-torch.sh

echo "== xdal-bench --quick (keeps the benchmark working; no timing is asserted)"
cargo run --release --locked -q -p xdal-bench -- --quick
