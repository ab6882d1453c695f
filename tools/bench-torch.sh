#!/usr/bin/env bash
# PyTorch on xdal beside PyTorch on the CPU (integrations/torch/bench):
# sets up what tools/test-torch.sh sets up (the virtualenv with torch, xdal
# built and installed, torch_xdal built and installed), then runs the
# benchmark on the fake backend, one thread each unless told otherwise.
# Arguments go to bench.py (--reps, --threads, --only, --json).
#
#   bash tools/bench-torch.sh [--only mm add] [--json results.json]
set -euo pipefail
cd "$(dirname "$0")/.."
XDAL_TORCH_SETUP_ONLY=1 bash tools/test-torch.sh
venv=${XDAL_TORCH_VENV:-.venv}
echo "== integrations/torch/bench/bench.py $*"
"$venv/bin/python" integrations/torch/bench/bench.py "$@"
