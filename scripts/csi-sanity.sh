#!/usr/bin/env bash
# csi-sanity (kubernetes-csi/csi-test v5.3.1) against a CSI node plugin over
# the simulated Windows node: a thin caller of `csi-sim-cloud sanity`, which
# starts the simulated node and cloud, the plugin and csi-sanity, and stops
# them all (see `csi-sim-cloud sanity --help`; a driver author who installed
# csi-sim-cloud runs that command directly).
#
#   scripts/csi-sanity.sh                         # the example plugin, built here
#   scripts/csi-sanity.sh --cloud azurefile       # one cloud's profile (below)
#   scripts/csi-sanity.sh --plugin BIN [--plugin-arg ARG]...   # your plugin
#   scripts/csi-sanity.sh -- --ginkgo.v           # more csi-sanity flags
#
# --cloud generic|azure|azure-nvme|gcp|gcp-nvme|aws|vsphere|smb|azurefile
# plays that cloud (its node layout, ids and contexts) and, for the example
# plugin, the matching upstream driver's node side (`--driver`).
#
# The plugin is started as
#   BIN --endpoint unix://SOCKET --csi-proxy-socket-dir DIR --node-id NODE [ARG...]
# and must report CONTROLLER_SERVICE in GetPluginCapabilities (the
# example's --controller-service). The example plugin in azure-nvme is the
# exception: it plays the simulated node itself, in HostProcess mode
# (--simulated-node, csi-sim-cloud sanity --node-in-plugin).
#
# Builds into $CARGO_TARGET_DIR (default target/). csi-sanity: $CSI_SANITY,
# else the CI machine's offline build beside the checkout where there is
# one (not part of the repository), else what `csi-sim-cloud sanity` does
# itself (`go install` when Go and the network allow, or a message saying
# what to give it).
#
# Exit status: csi-sanity's (0 when every spec ran passed), 2 on a setup
# failure. The example plugin reads volume stats itself, as on Windows
# (GetDiskFreeSpaceExW), here with statvfs through the simulated node's C:
# volume directory (`--local-root {local-root}`). Logs are kept in
# $CSI_SANITY_LOGS when set.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$repo/$target" ;; esac

plugin=""
plugin_args=()
cloud=generic
while [ $# -gt 0 ]; do
  case "$1" in
    --cloud) cloud=$2; shift 2 ;;
    --plugin) plugin=$2; shift 2 ;;
    --plugin-arg) plugin_args+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "csi-sanity.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

# How the plugin reaches the node: the proxy csi-sim-cloud serves, or, for
# the example plugin in azure-nvme, a node it plays itself (below).
node_args=(--csi-proxy-socket-dir '{proxy}')
sim_args=()
if [ -z "$plugin" ]; then
  case "$cloud" in
    generic) driver=example ;;
    azure|azure-nvme) driver=azuredisk ;;
    gcp|gcp-nvme) driver=gcp-pd ;;
    aws) driver=aws-ebs ;;
    vsphere|smb|azurefile) driver=$cloud ;;
    *) echo "csi-sanity.sh: unknown cloud $cloud" >&2; exit 2 ;;
  esac
  # One build for every profile (and one of csi-proxy-client for both
  # programs): the simulated-node feature is what azure-nvme needs, and the
  # others do not use it.
  cargo build --quiet -p csi-sim-cloud -p csi-node-plugin --features csi-node-plugin/simulated-node
  plugin=$target/debug/csi-node-plugin
  plugin_args+=(--controller-service --driver "$driver")
  if [ "$cloud" = azure-nvme ]; then
    # An Azure NVMe data disk is told by its NVMe namespace, which the
    # proxy does not report: HostProcess mode reads it, and in a test that
    # mode works on a simulated node in the plugin's own process.
    node_args=(--simulated-node "$cloud" --simulated-proxy-dir '{proxy}' --simulated-controller '{controller}')
    sim_args=(--node-in-plugin)
  else
    plugin_args+=(--local-root '{local-root}')
  fi
else
  cargo build --quiet -p csi-sim-cloud
fi

sanity=()
if [ -n "${CSI_SANITY:-}" ]; then
  sanity=(--csi-sanity "$CSI_SANITY")
elif [ -x "$repo/../shared/conformance/build-csi-sanity.sh" ]; then
  sanity=(--csi-sanity "$("$repo/../shared/conformance/build-csi-sanity.sh")")
fi
extra=()
for flag in "$@"; do extra+=("--sanity-arg=$flag"); done

exec "$target/debug/csi-sim-cloud" sanity --cloud "$cloud" "${sim_args[@]}" "${sanity[@]}" "${extra[@]}" -- \
  "$plugin" --endpoint '{endpoint}' "${node_args[@]}" --node-id '{node-id}' \
  "${plugin_args[@]}"
