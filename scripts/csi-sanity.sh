#!/usr/bin/env bash
# csi-sanity (kubernetes-csi/csi-test v5.3.1) against a CSI node plugin over
# the simulated Windows node: a thin caller of `csi-sim-cloud sanity`, which
# starts the simulated node and cloud, the plugin and csi-sanity, and stops
# them all (see `csi-sim-cloud sanity --help`; a driver author who installed
# csi-sim-cloud runs that command directly).
#
#   scripts/csi-sanity.sh                         # the example plugin, built here
#   scripts/csi-sanity.sh --cloud azurefile       # one cloud's profile (below)
#   scripts/csi-sanity.sh [OPTION]... --plugin PROGRAM [ARG]... [-- FLAG...]   # your plugin
#   scripts/csi-sanity.sh -- --ginkgo.v           # more csi-sanity flags
#
# --cloud generic|azure|azure-nvme|gcp|gcp-nvme|aws|vsphere|smb|azurefile
# plays that cloud (its node layout, ids and contexts) and, for the example
# plugin, the matching upstream driver's node side (`--driver`).
#
# --plugin PROGRAM [ARG]...: your plugin's command line, everything after
# --plugin up to a `--` (so give the other options first). Your plugin's
# own flag names go in as they are; these placeholders are replaced (by
# `csi-sim-cloud sanity`) before it starts:
#   {endpoint}    unix://DIR/csi.sock, where the plugin must serve CSI
#   {proxy}       the simulated CSI Proxy's socket directory
#   {node-id}     the node id (--node-id, default sanity-node)
#   {local-root}  the directory that stands for the simulated node's C:\
#                 (for a plugin that reads volume stats itself)
#   {controller}  unix://DIR/controller.sock, the cloud's controller (where
#                 a plugin run with --node-in-plugin serves it)
# For instance azurefile's flag names:
#   scripts/csi-sanity.sh --cloud azurefile --plugin target/debug/my-plugin \
#     --endpoint {endpoint} --nodeid {node-id} --proxy-dir {proxy} --local-root {local-root}
# The plugin must report CONTROLLER_SERVICE in GetPluginCapabilities (the
# example's --controller-service). Without --plugin the script runs the
# example plugin with its own flags; in azure-nvme it plays the simulated
# node itself, in HostProcess mode (--simulated-node, --node-in-plugin).
#
# Other options, passed to `csi-sim-cloud sanity`: --node-id ID,
# --volume-parameter KEY=VALUE (repeatable), --node-in-plugin (the plugin
# plays the simulated node and cloud itself).
#
# csi-sim-cloud: $CSI_SIM_CLOUD when set; else, with --plugin, the one on
# the PATH when there is one (`cargo install csi-sim-cloud`); else built
# from this checkout into $CARGO_TARGET_DIR (default target/). Without
# --plugin it is always built from the checkout, with the example plugin,
# so that what is tested is this checkout's code. csi-sanity: $CSI_SANITY,
# else the CI machine's offline build beside the checkout where there is
# one (not part of the repository), else what `csi-sim-cloud sanity` does
# itself (`go install` when Go and the network allow, or a message saying
# what to give it); docs/development.md has an offline way.
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

plugin=()
cloud=generic
options=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cloud) cloud=$2; shift 2 ;;
    --node-id|--volume-parameter) options+=("$1" "$2"); shift 2 ;;
    --node-in-plugin) options+=("$1"); shift ;;
    --plugin)
      shift
      while [ $# -gt 0 ] && [ "$1" != -- ]; do plugin+=("$1"); shift; done
      if [ ${#plugin[@]} -eq 0 ]; then
        echo "csi-sanity.sh: --plugin needs the plugin's command line" >&2; exit 2
      fi
      case " ${plugin[*]} " in
        *'{endpoint}'*) ;;
        *) echo "csi-sanity.sh: --plugin ${plugin[*]}: the command line has no {endpoint}, so the plugin would not serve where csi-sanity dials; name it with your plugin's own flag (for instance --endpoint {endpoint}; see the top of this script)" >&2
           exit 2 ;;
      esac ;;
    --plugin-arg)
      echo "csi-sanity.sh: --plugin-arg is gone: give the whole command line after --plugin, placeholders included (see the top of this script)" >&2
      exit 2 ;;
    --) shift; break ;;
    *) echo "csi-sanity.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

sanity=()
if [ -n "${CSI_SANITY:-}" ]; then
  sanity=(--csi-sanity "$CSI_SANITY")
elif [ -x "$repo/../shared/conformance/build-csi-sanity.sh" ]; then
  sanity=(--csi-sanity "$("$repo/../shared/conformance/build-csi-sanity.sh")")
fi
extra=()
for flag in "$@"; do extra+=("--sanity-arg=$flag"); done

if [ ${#plugin[@]} -gt 0 ]; then
  # Your plugin, its command line as given.
  if [ -n "${CSI_SIM_CLOUD:-}" ]; then
    sim=$CSI_SIM_CLOUD
  elif sim=$(command -v csi-sim-cloud); then
    echo "csi-sanity.sh: using $sim (installed; CSI_SIM_CLOUD=PATH picks another)" >&2
  else
    cargo build --quiet -p csi-sim-cloud
    sim=$target/debug/csi-sim-cloud
  fi
  exec "$sim" sanity --cloud "$cloud" "${options[@]}" "${sanity[@]}" "${extra[@]}" -- "${plugin[@]}"
fi

# The example plugin, as the matching upstream driver, and how it reaches
# the node: the proxy csi-sim-cloud serves or, in azure-nvme, a node it
# plays itself (below).
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
sim=${CSI_SIM_CLOUD:-$target/debug/csi-sim-cloud}
node_args=(--csi-proxy-socket-dir '{proxy}')
plugin_args=(--controller-service --driver "$driver")
if [ "$cloud" = azure-nvme ]; then
  # An Azure NVMe data disk is told by its NVMe namespace, which the
  # proxy does not report: HostProcess mode reads it, and in a test that
  # mode works on a simulated node in the plugin's own process.
  node_args=(--simulated-node "$cloud" --simulated-proxy-dir '{proxy}' --simulated-controller '{controller}')
  options+=(--node-in-plugin)
else
  plugin_args+=(--local-root '{local-root}')
fi
exec "$sim" sanity --cloud "$cloud" "${options[@]}" "${sanity[@]}" "${extra[@]}" -- \
  "$target/debug/csi-node-plugin" --endpoint '{endpoint}' "${node_args[@]}" --node-id '{node-id}' \
  "${plugin_args[@]}"
