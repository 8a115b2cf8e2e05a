#!/usr/bin/env bash
# Build the crate's tests for Windows (x86_64-pc-windows-gnu) and run them
# under Wine, so that the Windows-only code (named pipes) is tested on Linux.
#
#   scripts/test-windows.sh [--install] [--keep-prefix] [--package NAME] [--test NAME]... [-- TEST-ARGS...]
#
#   --install      install what is missing (rustup target, mingw-w64, wine64;
#                  apt-get update first). Implied when CI=true.
#   --keep-prefix  keep the temporary WINEPREFIX and print its path.
#   --package NAME build and run the tests of this workspace member instead
#                  of the crate's (e.g. csi-node-plugin); repeatable: the
#                  packages are built in one cargo run (one build of what
#                  they share) and run in one Wine prefix.
#   --test NAME    build and run only this integration test (repeatable);
#                  default: every test binary of the crate.
#   TEST-ARGS      passed to every test binary (a name filter, --nocapture, ...).
#
# Environment: CSI_WINE_TIMEOUT (seconds per test binary, default 600),
# CARGO_TARGET_DIR as cargo understands it.
#
# Without the toolchain and without --install it fails and says what is
# missing; it never skips. Exit status: 0 only when every test binary ran
# and passed.
set -euo pipefail

TARGET=x86_64-pc-windows-gnu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHIM_SRC="$ROOT/scripts/windows/processprng.c"
TIMEOUT_SECS=${CSI_WINE_TIMEOUT:-600}

say() { printf '==> %s\n' "$*"; }
die() {
    printf 'test-windows: error: %s\n' "$*" >&2
    exit 1
}

install=0
keep_prefix=0
[ "${CI:-}" = "true" ] && install=1
test_args=()
cargo_targets=()
packages=()
tests=()
while [ $# -gt 0 ]; do
    case "$1" in
        --install) install=1 ;;
        --no-install) install=0 ;;
        --keep-prefix) keep_prefix=1 ;;
        --package)
            [ $# -ge 2 ] || die "--package needs a package name"
            cargo_targets+=(--package "$2")
            packages+=("$2")
            shift
            ;;
        --test)
            [ $# -ge 2 ] || die "--test needs a test name"
            cargo_targets+=(--test "$2")
            tests+=("$2")
            shift
            ;;
        -h | --help)
            sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        --)
            shift
            test_args=("$@")
            break
            ;;
        *)
            echo "test-windows: unknown argument '$1' (see --help)" >&2
            exit 2
            ;;
    esac
    shift
done
# Whether the crate's windows_pipes tests must run: the crate's tests
# built (among the packages, the default; no --test) and no name filter
# in TEST-ARGS (`--skip NAME` is no filter).
pipes_expected=1
if [ ${#tests[@]} -gt 0 ]; then
    pipes_expected=0
elif [ ${#packages[@]} -gt 0 ] && ! printf '%s\n' "${packages[@]}" | grep -qx csi-proxy-client; then
    pipes_expected=0
fi
after_skip=0
for arg in "${test_args[@]}"; do
    if [ "$after_skip" = 1 ]; then
        after_skip=0
    elif [ "$arg" = --skip ]; then
        after_skip=1
    elif [ "${arg#-}" = "$arg" ]; then
        pipes_expected=0
    fi
done


start_all=$(date +%s)
step_start=$start_all
step_done() {
    local now
    now=$(date +%s)
    printf '    (%s: %ss)\n' "$1" "$((now - step_start))"
    step_start=$now
}

# ---------------------------------------------------------------- requirements
find_wine() {
    local w
    for w in wine64 /usr/lib/wine/wine64 wine; do
        if command -v "$w" >/dev/null 2>&1; then
            command -v "$w"
            return 0
        fi
    done
    return 1
}

missing_apt=()
need_target=0
command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (rustup) first"
if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
    need_target=1
fi
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing_apt+=(gcc-mingw-w64-x86-64)
find_wine >/dev/null || missing_apt+=(wine64)

if [ "$need_target" = 1 ] || [ ${#missing_apt[@]} -gt 0 ]; then
    what=()
    [ "$need_target" = 1 ] && what+=("rustup target $TARGET")
    [ ${#missing_apt[@]} -gt 0 ] && what+=("apt packages: ${missing_apt[*]}")
    if [ "$install" != 1 ]; then
        die "missing: ${what[*]}.
  Run 'scripts/test-windows.sh --install' (needs root and apt), or install them yourself:
    rustup target add $TARGET
    apt-get update && apt-get install -y --no-install-recommends gcc-mingw-w64-x86-64 wine64"
    fi
    say "installing: ${what[*]}"
    if [ "$need_target" = 1 ]; then
        rustup target add "$TARGET" || die "could not add the rustup target $TARGET"
    fi
    if [ ${#missing_apt[@]} -gt 0 ]; then
        sudo=()
        if [ "$(id -u)" != 0 ]; then
            command -v sudo >/dev/null 2>&1 || die "installing ${missing_apt[*]} needs root (or sudo)"
            sudo=(sudo)
        fi
        apt_log=$(mktemp)
        if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update &&
            "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
                apt-get install -y --no-install-recommends "${missing_apt[@]}"; } >"$apt_log" 2>&1; then
            tail -n 30 "$apt_log" >&2
            rm -f "$apt_log"
            die "could not install ${missing_apt[*]} with apt-get (output above)"
        fi
        rm -f "$apt_log"
    fi
    command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || die "x86_64-w64-mingw32-gcc still not found after installing"
    find_wine >/dev/null || die "wine64 still not found after installing"
    step_done "install"
fi
WINE=$(find_wine)
WINESERVER=$(command -v wineserver || echo /usr/lib/wine/wineserver)
say "toolchain: $(rustc --version), $(x86_64-w64-mingw32-gcc --version | head -n1), $("$WINE" --version 2>/dev/null)"

# ---------------------------------------------------------------- build
say "building test binaries for $TARGET"
cd "$ROOT"
build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
# Cargo's progress goes to stderr, the JSON messages to the log.
message_format=json
[ -t 2 ] && message_format=json-diagnostic-rendered-ansi
if ! cargo test --target "$TARGET" --all-features --no-run "${cargo_targets[@]}" \
    --message-format="$message_format" >"$build_log"; then
    # Show the compiler's errors (rendered), not the JSON.
    python3 - "$build_log" <<'PY' >&2 || true
import json, sys
seen = set()
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-message":
        rendered = msg["message"].get("rendered")
        if rendered and rendered not in seen:
            seen.add(rendered)
            sys.stderr.write(rendered)
PY
    die "cargo test --target $TARGET --no-run failed"
fi
mapfile -t test_exes < <(python3 - "$build_log" <<'PY'
import json, sys
seen = set()
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") != "compiler-artifact":
        continue
    exe = msg.get("executable")
    if exe and msg.get("profile", {}).get("test") and exe not in seen:
        seen.add(exe)
        print(exe)
PY
)
[ ${#test_exes[@]} -gt 0 ] || die "cargo built no test binary for $TARGET"
step_done "build"

# ---------------------------------------------------------------- shim DLL
# Rust's std imports ProcessPrng from bcryptprimitives.dll; Wine 8 lacks it.
declare -A shim_dirs=()
for exe in "${test_exes[@]}"; do shim_dirs["$(dirname "$exe")"]=1; done
shim_build="$(dirname "${test_exes[0]}")/bcryptprimitives.dll"
if [ ! -f "$shim_build" ] || [ "$SHIM_SRC" -nt "$shim_build" ]; then
    say "building the ProcessPrng shim (bcryptprimitives.dll)"
    x86_64-w64-mingw32-gcc -shared -O2 -Wall -Werror -o "$shim_build" "$SHIM_SRC" -ladvapi32 ||
        die "could not build $SHIM_SRC"
fi
for dir in "${!shim_dirs[@]}"; do
    [ "$dir/bcryptprimitives.dll" -ef "$shim_build" ] || cp "$shim_build" "$dir/"
done

# ---------------------------------------------------------------- wine prefix
export WINEDEBUG=-all
export WINEARCH=win64
# Our bcryptprimitives.dll (beside the exe) before Wine's builtin one; no
# Mono or Gecko installers during wineboot.
export WINEDLLOVERRIDES="bcryptprimitives=n,b;mscoree=;mshtml="
WINEPREFIX=$(mktemp -d "${TMPDIR:-/tmp}/csi-wine.XXXXXX")
export WINEPREFIX
unset DISPLAY WAYLAND_DISPLAY
cleanup() {
    "$WINESERVER" -k >/dev/null 2>&1 || true
    if [ "$keep_prefix" = 1 ]; then
        echo "test-windows: WINEPREFIX kept at $WINEPREFIX"
    else
        rm -rf "$WINEPREFIX"
    fi
    rm -f "$build_log"
}
trap cleanup EXIT
say "creating a fresh WINEPREFIX ($WINEPREFIX)"
wine_log="$WINEPREFIX.boot.log"
if ! "$WINE" wineboot --init >"$wine_log" 2>&1; then
    cat "$wine_log" >&2
    die "wineboot failed"
fi
"$WINESERVER" -w >/dev/null 2>&1 || true
rm -f "$wine_log"
step_done "wineboot"

# ---------------------------------------------------------------- run
total_passed=0
total_failed=0
total_ignored=0
failed_bins=()
pipe_tests=0
for exe in "${test_exes[@]}"; do
    name=$(basename "$exe" .exe)
    say "wine: $name"
    out=$(mktemp)
    set +e
    # Wine's own messages (with WINEDEBUG=-all, only fatal ones) go to stderr
    # with the program's; both are kept in order.
    timeout --kill-after=10 "$TIMEOUT_SECS" "$WINE" "$exe" "${test_args[@]}" 2>&1 | tee "$out"
    status=${PIPESTATUS[0]}
    set -e
    result=$(grep -E '^test result: ' "$out" | tail -n1 || true)
    passed=$(sed -nE 's/.* ([0-9]+) passed;.*/\1/p' <<<"$result")
    failed=$(sed -nE 's/.* ([0-9]+) failed;.*/\1/p' <<<"$result")
    ignored=$(sed -nE 's/.* ([0-9]+) ignored;.*/\1/p' <<<"$result")
    total_passed=$((total_passed + ${passed:-0}))
    total_failed=$((total_failed + ${failed:-0}))
    total_ignored=$((total_ignored + ${ignored:-0}))
    if [ "$status" != 0 ] || [ -z "$result" ]; then
        if [ "$status" = 124 ] || [ "$status" = 137 ]; then
            echo "test-windows: $name timed out after ${TIMEOUT_SECS}s" >&2
        else
            echo "test-windows: $name exited with status $status" >&2
        fi
        if [ "$status" = 53 ] && [ -z "$result" ]; then
            echo "test-windows: (Wine could not load $name; a DLL is missing? Rerun it with WINEDEBUG=err+module)" >&2
        fi
        failed_bins+=("$name")
        # A binary that died without reporting failures still counts as one.
        if [ -z "$failed" ] || [ "$failed" = 0 ]; then
            total_failed=$((total_failed + 1))
        fi
    fi
    # The named-pipe tests are the suite's windows_pipes module (in tests/it).
    pipe_tests=$((pipe_tests + $(grep -cE '^test windows_pipes::.* \.\.\. ok$' "$out" || true)))
    rm -f "$out"
done
step_done "tests"

echo
echo "Windows tests ran under $("$WINE" --version 2>/dev/null) for $TARGET: ${#test_exes[@]} test binaries, in $(($(date +%s) - start_all))s."
if [ "$pipe_tests" -gt 0 ]; then
    printf 'Named pipes: %s tests (windows_pipes) ran over real Windows named pipes (%s) served by Wine.\n' \
        "$pipe_tests" '\\.\pipe\...'
else
    echo "Named pipes: no windows_pipes test ran; only the other tests ran." >&2
    if [ -f "$ROOT/tests/it/windows_pipes.rs" ] && [ "$pipes_expected" = 1 ]; then
        failed_bins+=("windows_pipes (ran no test)")
    fi
fi
if [ ${#failed_bins[@]} -gt 0 ]; then
    echo "Failed binaries: ${failed_bins[*]}" >&2
fi
echo "wine: $total_passed passed, $total_failed failed, $total_ignored skipped"
[ ${#failed_bins[@]} -eq 0 ] && [ "$total_failed" -eq 0 ]
