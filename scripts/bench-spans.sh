#!/usr/bin/env bash
# The spans' cost (benches/spans.rs) with its `compiled_out` baseline: builds
# the bench twice, as is and with tracing's `max_level_off` (every span and
# event compiled out), then runs the first, which runs each setting and the
# baseline in their own processes, in turn.
#
#   scripts/bench-spans.sh            # CSI_SPAN_BENCH_ROUNDS rounds (default 7)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The path of the spans bench binary that `cargo bench --no-run "$@"` builds.
build() {
    cargo bench -p csi-proxy-client --bench spans --no-run --message-format=json "$@" |
        python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "spans" and msg.get("executable"):
        print(msg["executable"])
'
}

bench=$(build)
baseline=$(build --features tracing/max_level_off)
[ -n "$bench" ] && [ -n "$baseline" ] && [ "$bench" != "$baseline" ] ||
    { echo "bench-spans: could not build both binaries" >&2; exit 1; }
CSI_SPAN_BENCH_BASELINE="$baseline" "$bench"
