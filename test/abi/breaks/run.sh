#!/usr/bin/env bash
# Self-test of the ABI checker: for each kind of upstream change that has
# broken out-of-tree accelerator backends before, change the Rust sources
# of a copy of this tree, regenerate the headers and build the library as
# a developer would, run `xdal-abi check`, and assert that it fails naming
# that break; and that pure additions pass.
#
# The baseline is frozen from the unchanged copy first, so the test does not
# depend on abi/baselines being current. Each variant is a file <name>.sh
# here that sets `outcome` (fail or pass), `expect` (text the check output
# must contain) and defines `apply` (run in the copy's root; helpers below).
#
#   run.sh <source-dir> <work-dir> <xdal-abi-tool> [variant...]
#
# The work directory keeps cargo's target directory between runs, so only
# the first run builds the dependencies.
set -euo pipefail

source_dir=$(cd "$1" && pwd)
work=$2
tool=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
shift 3
here=$(cd "$(dirname "$0")" && pwd)
cargo=${CARGO:-cargo}
mkdir -p "$work"
work=$(cd "$work" && pwd)
tree=$work/tree
export CARGO_TARGET_DIR=$work/target

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# --- editing helpers for the variants -----------------------------------------
# subst FILE PATTERN REPLACEMENT: a Perl regex over the whole file; `$1`..`$9`
# and `\n` in REPLACEMENT are expanded, the rest is literal. At least one
# match, or the variant no longer fits the sources and must be updated.
subst() {
  XDAL_PAT=$2 XDAL_REP=$3 perl -0777 -i -pe '
    BEGIN { $n = 0 }
    my $rep = $ENV{XDAL_REP};
    $rep =~ s/\\n/\n/g;
    $n += s{$ENV{XDAL_PAT}}{
      my @g = ($1, $2, $3, $4, $5, $6, $7, $8, $9);
      (my $r = $rep) =~ s/\$(\d)/defined $g[$1 - 1] ? $g[$1 - 1] : ""/ge;
      $r
    }ge;
    END { exit($n ? 0 : 3) }' "$1" || fail "$variant: no match for /$2/ in $1: update test/abi/breaks/$variant.sh"
}

# subst_rs PATTERN REPLACEMENT: subst over every Rust file of the library's
# crates (src/, backends/) that matches; at least one must.
subst_rs() {
  local f found=
  while IFS= read -r -d '' f; do
    if XDAL_PAT=$1 perl -0777 -ne 'exit(/$ENV{XDAL_PAT}/ ? 0 : 1)' "$f"; then
      subst "$f" "$1" "$2"
      found=1
    fi
  done < <(find src backends -name '*.rs' -print0)
  [ -n "$found" ] || fail "$variant: no Rust file matches /$1/: update test/abi/breaks/$variant.sh"
}

# --- the copy -------------------------------------------------------------------
# What cargo needs: the top-level files, the crates' directories and every
# workspace member; git decides what is source (tracked, or new and not
# ignored), so no build output is copied.
paths=(Cargo.toml Cargo.lock build.rs cbindgen.toml rustfmt.toml abi src backends tools tests include)
members=$(sed -n 's/^members *= *\[\(.*\)\]/\1/p' "$source_dir/Cargo.toml" | tr -d '" ' | tr ',' ' ')
for m in $members; do [ "$m" = . ] || paths+=("$m"); done
archive=$work/pristine.tar
if git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$source_dir" && git ls-files -z --cached --others --exclude-standard -- "${paths[@]}" |
    tar --null --ignore-failed-read -T - -cf "$archive" 2>/dev/null)
else
  existing=()
  for p in "${paths[@]}"; do [ -e "$source_dir/$p" ] && existing+=("$p"); done
  tar -C "$source_dir" --exclude=target -cf "$archive" "${existing[@]}"
fi

reset_tree() {
  rm -rf "$tree"
  mkdir -p "$tree"
  # -m: fresh modification times, so cargo rebuilds what changed since the last variant.
  tar -C "$tree" -xmf "$archive"
}

# The headers come from `xdal-abi headers` (the tool under test is built
# already; the golden test would build cbindgen again here). The library is
# built with the fake backend alone (the manifest program's features: the
# built-in catalogue is the fake's), which exports the same symbols and
# types as the default build, and the manifest program. abidw reads the
# ABI's types from the debug info of the front (which exports the
# functions) and of xdal-abi (which defines the types); the dependencies
# need none.
build() {
  (cd "$tree" &&
    "$tool" headers --root . &&
    "$cargo" build --locked -q -p xdal -p xdal-abi-manifest --config 'profile.dev.debug=0' \
      --config 'profile.dev.package.xdal.debug=2' --config 'profile.dev.package.xdal-abi.debug=2') \
    >"$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log" >&2; fail "${variant:-pristine}: the changed tree does not build"; }
}

# The library's manifest program, built from the same (changed) tree.
manifest=$CARGO_TARGET_DIR/debug/xdal-abi-manifest

check() {
  "$tool" check --headers "$tree/include/xdal" --library "$CARGO_TARGET_DIR/debug/libxdal.so" \
    --manifest "$manifest" --baselines "$work/baselines" >"$work/check.log" 2>&1
}

start=$SECONDS
variant=
reset_tree
build
version=$(sed -n 's/^#define XDAL_ABI_VERSION_\(MAJOR\|MINOR\) \([0-9]*\)$/\2/p' "$tree/include/xdal/xdal.h" | paste -sd.)
rm -rf "$work/baselines"
"$tool" freeze "$version" --headers "$tree/include/xdal" --library "$CARGO_TARGET_DIR/debug/libxdal.so" \
  --manifest "$manifest" --baselines "$work/baselines" >/dev/null
check || { cat "$work/check.log"; fail "the unchanged tree does not pass against its own baseline"; }
echo "pristine tree built and frozen as ABI $version ($((SECONDS - start)) s)"

if [ $# -eq 0 ]; then
  set -- $(cd "$here" && ls *.sh | grep -v '^run\.sh$' | sed 's/\.sh$//')
fi
failures=0
for variant in "$@"; do
  t0=$SECONDS
  outcome= expect=
  unset -f apply
  # shellcheck source=/dev/null
  source "$here/$variant.sh"
  reset_tree
  (cd "$tree" && apply)
  build
  status=0
  check || status=$?
  got=$([ $status -eq 0 ] && echo pass || echo fail)
  if [ $status -gt 1 ] || [ "$got" != "$outcome" ] || ! grep -qF -- "$expect" "$work/check.log"; then
    echo "FAIL $variant: expected the check to $outcome (exit status 0 or 1) naming: $expect" >&2
    sed 's/^/    /' "$work/check.log" >&2
    failures=$((failures + 1))
    continue
  fi
  echo "ok   $variant ($outcome, $((SECONDS - t0)) s): $description"
  # One process, reading to the end: `| head` would close the pipe while
  # sed still writes, and pipefail would end the run on its SIGPIPE.
  awk '/^  (BREAK|added)/ && shown++ < 12 { sub(/^  /, "       "); print }' "$work/check.log"
done
echo "$# variant(s), $failures failure(s), $((SECONDS - start)) s"
[ $failures -eq 0 ]
