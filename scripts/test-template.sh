#!/usr/bin/env bash
# A driver author's start, outside the workspace: `csi-sim-cloud new` writes
# the template into a temporary directory, the crates are taken from this
# checkout through the [patch.crates-io] section docs/development.md
# documents (read from it, not retyped here), and then the new crate's own
# commands from its README: its build, its unit tests, and with --sanity
# csi-sanity against it in both modes (proxy mode over `csi-sim-cloud
# sanity`, HostProcess mode over the simulated node in the plugin's
# process), volume stats on.
#
#   scripts/test-template.sh              # generate, build, unit tests (CI)
#   scripts/test-template.sh --sanity     # and csi-sanity in both modes
#
# Cost: the new crate builds into $CARGO_TARGET_DIR (default target/) with
# this workspace's Cargo.lock, so the registry dependencies the workspace
# built are not built again; the three crates are (cargo hashes a path
# dependency outside the workspace apart from the workspace's own build),
# with the new crate and its test dependencies. csi-sanity: $CSI_SANITY, else the CI machine's offline build
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
  say "the new crate stays in $work/my-driver"
else
  trap 'rm -rf "$work"' EXIT
fi
crate=$work/my-driver
say "csi-sim-cloud new $crate --name disk.csi.example.com"
"$sim" new "$crate" --name disk.csi.example.com

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
# The README's `cargo test`, with the feature its csi-sanity build takes:
# the same unit tests, and one build of the crates for both (a path
# dependency outside the workspace never shares the workspace's build, so
# each feature set would build csi-proxy-client and the rest once more).
say "cargo test --features simulated-node"
quiet cargo test --offline --quiet --features simulated-node
say "cargo build --features simulated-node"
quiet cargo build --offline --quiet --features simulated-node
plugin=$target/debug/my-driver

if $sanity; then
  if [ -z "${CSI_SANITY:-}" ] && [ -x "$repo/../shared/conformance/build-csi-sanity.sh" ]; then
    CSI_SANITY=$("$repo/../shared/conformance/build-csi-sanity.sh")
    export CSI_SANITY
  fi
  # The README's two commands, the binary where CARGO_TARGET_DIR put it.
  # csi-sanity skips the stats specs of a plugin without GET_VOLUME_STATS:
  # its output (--ginkgo.v) must show their steps run.
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
  say "csi-sanity, proxy mode"
  stats "$sim" sanity --sanity-arg=--ginkgo.v -- "$plugin" --endpoint '{endpoint}' \
    --csi-proxy-socket-dir '{proxy}' --node-id '{node-id}' --controller-service \
    --local-root '{local-root}'
  say "csi-sanity, HostProcess mode over the simulated node"
  stats "$sim" sanity --node-in-plugin --sanity-arg=--ginkgo.v -- "$plugin" --endpoint '{endpoint}' \
    --simulated-node generic --simulated-proxy-dir '{proxy}' \
    --simulated-controller '{controller}' --node-id '{node-id}' --controller-service
fi
say "the template's crate built, tested$($sanity && echo ' and passed csi-sanity in both modes')"
