#!/usr/bin/env bash
# Builds this repository's grpc-go peer of scripts/bench-grpc-go.sh,
# gobench-server and gobench-client, into OUT (default /tmp/gobench/repo-bin)
# from Debian's Go packages (grpc-go 1.33, golang/protobuf 1.3) in GOPATH
# mode: no module proxy, no protoc. Installs the packages with apt-get when
# missing and run as root; otherwise names them.
#   build.sh [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/gobench/repo-bin}
packages=(golang-go golang-google-grpc-dev golang-github-golang-protobuf-1-3-dev)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "grpc-go-peer: missing Debian packages: sudo apt-get install ${missing[*]}" >&2
        exit 2
    fi
fi
# Debian's go: the packages' sources are written for it, and GOPATH mode.
go=/usr/lib/go/bin/go
[ -x "$go" ] || go=$(command -v go)
work=$(mktemp -d "${TMPDIR:-/tmp}/grpc-go-peer.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/csiproxyclient" "$out"
cp -r "$here" "$work/src/csiproxyclient/grpcgopeer"
export GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOFLAGS= GOTOOLCHAIN=local
"$go" build -o "$out/gobench-server" csiproxyclient/grpcgopeer/server
"$go" build -o "$out/gobench-client" csiproxyclient/grpcgopeer/client
echo "built $out/gobench-server and $out/gobench-client with $("$go" version)" >&2
