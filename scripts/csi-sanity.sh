#!/usr/bin/env bash
# csi-sanity (kubernetes-csi/csi-test v5.3.1) against a CSI node plugin over
# the simulated Windows node: csi-sim-cloud serves the reference CSI Proxy
# and a simulated cloud's controller over one node, the plugin talks to that
# proxy, and csi-sanity runs the whole Node suite and the Identity specs.
#
#   scripts/csi-sanity.sh                         # the example plugin, built here
#   scripts/csi-sanity.sh --cloud azure           # one cloud's profile (below)
#   scripts/csi-sanity.sh --plugin BIN [--plugin-arg ARG]...   # your plugin
#   scripts/csi-sanity.sh -- --ginkgo.v           # more csi-sanity flags
#
# --cloud generic|azure|gcp|aws|vsphere|smb plays that cloud
# (`csi-sim-cloud serve --cloud`: its node layout, ids and publish context)
# and, for the example plugin, the matching upstream driver's node side
# (`--driver example|azuredisk|gcp-pd|aws-ebs|vsphere|smb`). The smb profile
# gives csi-sanity the simulated share's credentials as stage secrets.
#
# The plugin is started as
#   BIN --endpoint unix://SOCKET --csi-proxy-socket-dir DIR --node-id NODE [ARG...]
# and must report CONTROLLER_SERVICE in GetPluginCapabilities (csi-sanity
# asks the node endpoint whether the driver has a controller, and publishes
# volumes only then; the example's --controller-service), and must take
# kubelet-style paths (/var/lib/kubelet/...), which the
# simulated node confines to C:\var\lib\kubelet. csi-sanity creates, removes
# and checks its mount and staging directories on that node, through the
# proxy (`csi-sim-cloud path`), not on this machine.
#
# Exit status: csi-sanity's (0 when every spec ran passed), 2 on a setup
# failure. The example plugin is given the simulated C: volume's directory
# as --local-root, so that NodeGetVolumeStats reads the node's paths
# locally (statvfs) as it does on Windows (GetDiskFreeSpaceExW). Every
# process started here is stopped on exit; logs are kept in
# $CSI_SANITY_LOGS when set.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

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

cargo build --quiet -p csi-sim-cloud
if [ -z "$plugin" ]; then
  cargo build --quiet -p csi-node-plugin
  plugin=target/debug/csi-node-plugin
  case "$cloud" in
    generic) driver=example ;;
    azure) driver=azuredisk ;;
    gcp) driver=gcp-pd ;;
    aws) driver=aws-ebs ;;
    vsphere|smb) driver=$cloud ;;
    *) echo "csi-sanity.sh: unknown cloud $cloud" >&2; exit 2 ;;
  esac
  plugin_args+=(--controller-service --driver "$driver")
fi
# CSI_SANITY: a csi-sanity v5.3.1 binary built already (a worktree elsewhere).
sanity=${CSI_SANITY:-$("$repo/../shared/conformance/build-csi-sanity.sh")}

work=$(mktemp -d "${TMPDIR:-/tmp}/csi-sanity.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "${CSI_SANITY_LOGS:-}" ]; then
    mkdir -p "$CSI_SANITY_LOGS" && cp "$work"/*.log "$CSI_SANITY_LOGS"/ 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# wait_for SOCKET PID NAME: until the socket exists, or the process is gone.
wait_for() {
  for _ in $(seq 100); do
    [ -S "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "csi-sanity.sh: $3 did not start; its log:" >&2
  cat "$work/$3.log" >&2
  exit 2
}

node=sanity-node
mkdir -p "$work/proxy" "$work/bin"
target/debug/csi-sim-cloud serve --socket-dir "$work/proxy" --cloud "$cloud" \
  --sandbox "$work/sandbox" \
  --endpoint "unix://$work/controller.sock" --node-id "$node" >"$work/cloud.log" 2>&1 &
pids+=($!)
wait_for "$work/controller.sock" "${pids[-1]}" cloud

# The example plugin reads volume stats itself, as on Windows: through the
# simulated node's C: volume directory (the one holding var\lib\kubelet),
# where the simulator's links are host symlinks the OS follows.
if [ "$plugin" = target/debug/csi-node-plugin ]; then
  kubelet_dir=$(ls -d "$work"/sandbox/volumes/*/var/lib/kubelet 2>/dev/null | head -n1)
  [ -n "$kubelet_dir" ] || { echo "csi-sanity.sh: no C:\\var\\lib\\kubelet in the sandbox" >&2; exit 2; }
  plugin_args+=(--local-root "${kubelet_dir%/var/lib/kubelet}")
fi

"$plugin" --endpoint "unix://$work/csi.sock" --csi-proxy-socket-dir "$work/proxy" \
  --node-id "$node" "${plugin_args[@]}" >"$work/plugin.log" 2>&1 &
pids+=($!)
wait_for "$work/csi.sock" "${pids[-1]}" plugin

# csi-sanity runs each of these with the path as its one argument.
for action in create remove check; do
  cat >"$work/bin/$action" <<EOF
#!/bin/sh
exec "$repo/target/debug/csi-sim-cloud" path $action --socket-dir "$work/proxy" "\$1"
EOF
  chmod +x "$work/bin/$action"
done

# The simulated share's account (the default node's), for SMB stages.
secrets=()
if [ "$cloud" = smb ]; then
  cat >"$work/secrets.yaml" <<'EOF'
NodeStageVolumeSecret:
  username: smbuser
  password: Sm8-Passw0rd!
EOF
  secrets=(--csi.secrets "$work/secrets.yaml")
fi

set +e
"$sanity" \
  "${secrets[@]}" \
  --csi.endpoint "unix://$work/csi.sock" \
  --csi.controllerendpoint "unix://$work/controller.sock" \
  --csi.mountdir /var/lib/kubelet/csi-sanity/mount \
  --csi.stagingdir /var/lib/kubelet/csi-sanity/staging \
  --csi.createmountpathcmd "$work/bin/create" \
  --csi.createstagingpathcmd "$work/bin/create" \
  --csi.removemountpathcmd "$work/bin/remove" \
  --csi.removestagingpathcmd "$work/bin/remove" \
  --csi.checkpathcmd "$work/bin/check" \
  --ginkgo.focus 'Node Service|Identity Service' \
  --ginkgo.no-color \
  "$@" 2>&1 | tee "$work/sanity.log"
status=${PIPESTATUS[0]}
set -e
if ! grep -Eq '^Ran [0-9]+ of [0-9]+ Specs' "$work/sanity.log"; then
  echo "csi-sanity.sh: no summary from csi-sanity" >&2
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
