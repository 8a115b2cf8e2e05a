#!/usr/bin/env bash
# A driver author's start, outside the workspace: `csi-sim-cloud new` (the
# command the template's README gives) writes the template into a
# temporary directory, the crates are taken from this checkout through the
# [patch.crates-io] section docs/development.md documents (read from it,
# not retyped here; each of its blocks is first checked to resolve without
# a cargo warning), and then the new crate's own commands, read from its
# README: `cargo test`, its `simulated-node` build, and with --sanity its
# two csi-sanity commands (proxy mode over `csi-sim-cloud sanity`,
# HostProcess mode over the simulated node in the plugin's process),
# volume stats on.
#
#   scripts/test-template.sh              # generate, build, unit tests (CI)
#   scripts/test-template.sh --sanity     # and csi-sanity in both modes
#
# Cost: the new crate builds into $CARGO_TARGET_DIR (default target/) with
# this workspace's Cargo.lock, so the registry dependencies the workspace
# built are not built again; the three crates are, once per feature set
# (cargo hashes a path dependency outside the workspace apart from the
# workspace's own build), with the new crate and its test dependencies. csi-sanity: $CSI_SANITY, else the CI machine's offline build
# beside the checkout where there is one, else what `csi-sim-cloud sanity`
# does itself (see scripts/csi-sanity.sh). KEEP=1 keeps the new crate.
#
# Exit status 0 when every step passed; the failing step's otherwise.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
export CARGO_TARGET_DIR=$target

sanity=false
case "${1:-}" in
  "") ;;
  --sanity) sanity=true ;;
  *) echo "test-template.sh: unknown argument $1 (--sanity or nothing)" >&2; exit 2 ;;
esac

start=$SECONDS
say() { printf 'test-template.sh [%ds]: %s\n' "$((SECONDS - start))" "$*" >&2; }

# csi-sim-cloud as scripts/csi-sanity.sh and CI build it (with the example
# plugin's features): built already, where one build of another feature
# set would take a minute.
cargo build --quiet -p csi-sim-cloud -p csi-node-plugin --features csi-node-plugin/simulated-node
sim=$target/debug/csi-sim-cloud

work=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then
  say "the new crate stays in $work"
else
  trap 'rm -rf "$work"' EXIT
fi
# The template's README gives the first command (`csi-sim-cloud new DIR
# --name DRIVER`), run here in the temporary directory.
read -r dir driver < <(sed -n 's/^csi-sim-cloud new \([^ ]*\) --name \([^ ]*\)$/\1 \2/p' \
  csi-sim-cloud/template/README.md) || true
if [ -z "${dir:-}" ] || [ -z "${driver:-}" ]; then
  echo "test-template.sh: no 'csi-sim-cloud new DIR --name DRIVER' in csi-sim-cloud/template/README.md" >&2
  exit 2
fi
crate=$work/$dir
say "csi-sim-cloud new $dir --name $driver (in $work)"
(cd "$work" && "$sim" new "$dir" --name "$driver")

# The documented section for a plugin on the node server and the simulated
# cloud (the template depends on csi-sim-cloud for `simulated-node`): the
# TOML block of docs/development.md that patches csi-sim-cloud, from its
# [patch.crates-io] line on, its vendor/ paths pointed at this checkout.
patch=$(awk '
  /^ *```toml/ { block = ""; inside = 1; next }
  inside && /^ *```/ { inside = 0; if (block ~ /csi-sim-cloud = \{ path/) print block; next }
  inside { sub(/^  /, ""); block = block $0 "\n" }
' docs/development.md | sed -n '/^\[patch.crates-io\]/,$p')
if [ -z "$patch" ]; then
  echo "test-template.sh: no [patch.crates-io] block patching csi-sim-cloud in docs/development.md" >&2
  exit 2
fi
patch=${patch//vendor\/csi-proxy-client-0.1.0/$repo}
patch=${patch//vendor\/csi-node-server-0.1.0/$repo\/csi-node-server}
patch=${patch//vendor\/csi-sim-cloud-0.1.0/$repo\/csi-sim-cloud}
printf '\n%s\n' "$patch" >>"$crate/Cargo.toml"
# The versions this checkout was tested with, and no registry needed.
cp Cargo.lock "$crate/"

# Every [patch.crates-io] block of docs/development.md (one per
# dependency set), whole, in a scratch crate of its own, resolves without
# a warning (cargo warns "patch ... was not used in the crate graph" for a
# patched crate the dependencies do not name). The control: the first
# block with csi-sim-cloud's patch line added must warn, else this check
# could not see the warning. `cargo tree`: a resolution, no build.
awk -v dir="$work" '
  /^ *```toml/ { block = ""; inside = 1; next }
  inside && /^ *```/ { inside = 0; if (block ~ /\[patch\.crates-io\]/) { n++; printf "%s", block > (dir "/patch-" n ".toml") }; next }
  inside { sub(/^  /, ""); block = block $0 "\n" }
' docs/development.md
resolve() {
  local dir=$1 block=$2
  mkdir -p "$dir"
  : >"$dir/lib.rs"
  block=${block//vendor\/csi-proxy-client-0.1.0/$repo}
  block=${block//vendor\/csi-node-server-0.1.0/$repo\/csi-node-server}
  block=${block//vendor\/csi-sim-cloud-0.1.0/$repo\/csi-sim-cloud}
  printf '[package]\nname = "patch-check"\nversion = "0.0.0"\nedition = "2024"\n\n[lib]\npath = "lib.rs"\n\n%s\n' \
    "$block" >"$dir/Cargo.toml"
  cp Cargo.lock "$dir/"
  (cd "$dir" && cargo tree --offline >/dev/null) 2>&1
}
blocks=("$work"/patch-*.toml)
if [ ! -f "${blocks[0]}" ]; then
  echo "test-template.sh: no [patch.crates-io] block in docs/development.md" >&2
  exit 2
fi
for block in "${blocks[@]}"; do
  out=$(resolve "$work/$(basename "$block" .toml)" "$(cat "$block")") || {
    printf '%s\n' "$out" >&2; exit 1; }
  if grep -q '^warning' <<<"$out"; then
    printf '%s\n' "$out" >&2
    echo "test-template.sh: docs/development.md's block $(basename "$block" .toml) is not quiet:" >&2
    cat "$block" >&2
    exit 1
  fi
done
control=$(resolve "$work/patch-control" "$(cat "${blocks[0]}")
csi-sim-cloud = { path = \"vendor/csi-sim-cloud-0.1.0\" }") || {
  printf '%s\n' "$control" >&2; exit 1; }
if ! grep -q 'was not used in the crate graph' <<<"$control"; then
  echo "test-template.sh: the control (a patch of a crate not depended on) did not warn: $control" >&2
  exit 1
fi
say "docs/development.md's ${#blocks[@]} [patch.crates-io] blocks resolve without a warning (the control warns)"

cd "$crate"
# cargo's warnings are what a driver author would read first (an unused
# patch, a manifest key cargo ignores): the new crate must have none.
quiet() {
  local log=$work/cargo.log
  if ! "$@" 2>"$log"; then cat "$log" >&2; exit 1; fi
  if grep -q '^warning' "$log"; then
    cat "$log" >&2
    echo "test-template.sh: cargo warned in the new crate: $*" >&2
    exit 1
  fi
}
# The new crate's README is what a driver author follows: its commands
# are read from it (its sh blocks, continuation lines joined), not retyped
# here, and run as written, `csi-sim-cloud` being the one built above and
# target/ $CARGO_TARGET_DIR; cargo is offline (CARGO_NET_OFFLINE), on the
# workspace's Cargo.lock.
commands=$(awk '
  /^```sh/ { inside = 1; line = ""; next }
  inside && /^```/ { inside = 0; next }
  inside {
    sub(/[[:space:]]+#.*$/, "")
    if (sub(/\\$/, "")) { line = line $0; next }
    line = line $0
    if (line ~ /^(cargo test|cargo build --features simulated-node|csi-sim-cloud sanity)( |$)/) print line
    line = ""
  }' README.md)
count() { grep -c "^$1" <<<"$commands" || true; }
if [ "$(count 'cargo test')" != 1 ] || [ "$(count 'cargo build --features simulated-node')" != 1 ] ||
  [ "$(count 'csi-sim-cloud sanity')" != 2 ]; then
  echo "test-template.sh: the new crate's README should give one cargo test, one cargo build --features simulated-node and two csi-sim-cloud sanity commands; it gives:" >&2
  printf '%s\n' "$commands" >&2
  exit 2
fi
export CARGO_NET_OFFLINE=true
plugin=$target/debug/$dir
while IFS= read -r command; do
  case "$command" in
    cargo*)
      say "$command"
      # shellcheck disable=SC2086 # the README's words, as a shell splits them
      quiet $command ;;
  esac
done <<<"$commands"
[ -x "$plugin" ] || { echo "test-template.sh: the README's build made no $plugin" >&2; exit 1; }

if $sanity; then
  if [ -z "${CSI_SANITY:-}" ] && [ -x "$repo/../shared/conformance/build-csi-sanity.sh" ]; then
    CSI_SANITY=$("$repo/../shared/conformance/build-csi-sanity.sh")
    export CSI_SANITY
  fi
  # csi-sanity skips the stats specs of a plugin without GET_VOLUME_STATS:
  # its output (--ginkgo.v, added) must show their steps run.
  stats() {
    local log=$work/sanity.log status=0
    "$@" >"$log" 2>&1 || status=$?
    grep -E '^Ran |Passed \|' "$log" >&2 || true
    if [ "$status" -ne 0 ]; then
      tail -n 60 "$log" >&2
      echo "test-template.sh: csi-sanity failed ($status)" >&2
      exit "$status"
    fi
    if ! grep -q 'STEP: Get node volume stats' "$log"; then
      echo "test-template.sh: csi-sanity ran no volume stats spec" >&2
      exit 1
    fi
  }
  while IFS= read -r command; do
    case "$command" in
      "csi-sim-cloud sanity "*)
        say "$command"
        rest=${command#csi-sim-cloud sanity }
        rest=${rest//target\/debug\//$target/debug/}
        # shellcheck disable=SC2086 # the README's words, as a shell splits them
        stats "$sim" sanity --sanity-arg=--ginkgo.v $rest ;;
    esac
  done <<<"$commands"
  for mode in '^csi-sim-cloud sanity -- ' '^csi-sim-cloud sanity --node-in-plugin -- '; do
    grep -q "$mode" <<<"$commands" || { echo "test-template.sh: the README has no $mode command" >&2; exit 1; }
  done
fi
say "the template's crate built, tested$($sanity && echo ' and passed csi-sanity in both modes')"
