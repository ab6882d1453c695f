#!/usr/bin/env bash
# Freezes the ABI of this tree as the baseline abi/baselines/<major>.<minor>/:
# the headers as they are, their description (abi.json) and libabigail's
# record (abidw.xml) of the library built with full debug info (the dev
# profile: the release profile keeps only line tables, which hold no types),
# with what the library's manifest adds (the entries the front requires, the
# built-in kernel catalogue; its layouts must be the headers').
#
#   bash tools/xdal-abi/freeze.sh 1.0            # a new baseline
#   bash tools/xdal-abi/freeze.sh 1.0 --force    # regenerate one not yet released
#
# The version must be the headers' XDAL_ABI_VERSION_MAJOR.MINOR. The
# allow-list abidiff.suppr beside the baseline is kept as it is.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=${1:?usage: tools/xdal-abi/freeze.sh <major>.<minor> [--force]}
shift
target_dir=${CARGO_TARGET_DIR:-target}

# The committed headers must be what the sources generate.
cargo test --locked -q -p xdal --test headers
cargo build --locked -q -p xdal -p xdal-abi-tool -p xdal-abi-manifest
"$target_dir/debug/xdal-abi" freeze "$version" \
  --headers include/xdal \
  --library "$target_dir/debug/libxdal.so" \
  --manifest "$target_dir/debug/xdal-abi-manifest" \
  --baselines abi/baselines "$@"
