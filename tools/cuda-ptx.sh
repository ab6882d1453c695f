#!/usr/bin/env bash
# Generates the CUDA backend's built-in kernels: the CUDA C++ source of each
# built-in program (xdal-cuda-kernels writes it from the one source in
# backends/support/src/kernels), compiled ahead of time by NVRTC into
# backends/cuda/ptx/<dtype>.ptx, which are committed and loaded with
# cuModuleLoadData. NVRTC comes from the pinned nvidia-cuda-nvrtc-cu12 wheel,
# installed into .venv if missing, and needs no GPU.
#
#   tools/cuda-ptx.sh          rewrites backends/cuda/ptx
#   tools/cuda-ptx.sh --check  regenerates into a temporary directory and
#                              fails if that differs from the committed PTX;
#                              also builds every program to cubin for sm_80
#                              and sm_90, failing on any that does not build
set -euo pipefail
cd "$(dirname "$0")/.."

# The oldest CUDA 12 NVRTC (CUDA 12.0, the first to know sm_90): its PTX is
# ISA 8.0, which every driver since R525 (the first of CUDA 12) loads. A
# newer NVRTC writes a newer ISA, which older drivers refuse.
nvrtc_version=12.0.76
ptx_dir=backends/cuda/ptx
venv=.venv

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *)
    echo "usage: tools/cuda-ptx.sh [--check]" >&2
    exit 2
    ;;
esac

missing=()
command -v python3 >/dev/null || missing+=(python3)
python3 -c "import venv, ensurepip" 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
  echo "== installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
if ! "$py" -c "import importlib.metadata as m, sys
sys.exit(m.version('nvidia-cuda-nvrtc-cu12') != '$nvrtc_version')" 2>/dev/null; then
  echo "== pip install nvidia-cuda-nvrtc-cu12==$nvrtc_version"
  "$py" -m pip install -q "nvidia-cuda-nvrtc-cu12==$nvrtc_version"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run --locked -q -p xdal-cuda-kernels -- "$tmp/cu" >/dev/null
nvrtc=(tools/cuda_ptx.py "$tmp/cu" "$tmp/ptx" --nvrtc "${nvrtc_version%.*}")
if ((check)); then
  "$py" "${nvrtc[@]}" --cubin sm_80 sm_90 --compare "$ptx_dir" || {
    echo "tools/cuda-ptx.sh --check failed; if the kernels changed, run tools/cuda-ptx.sh and commit $ptx_dir" >&2
    exit 1
  }
else
  "$py" "${nvrtc[@]}"
  mkdir -p "$ptx_dir"
  rm -f "$ptx_dir"/*.ptx
  cp "$tmp"/ptx/*.ptx "$ptx_dir"/
  ls -l "$ptx_dir"
fi
