#!/usr/bin/env bash
# Side-by-side bench with grpc-go: disk v1 GetDiskStats on a Unix
# socket, client and server in separate processes. Runs, in each of ROUNDS
# alternating rounds, the raw 64-byte ping-pong floor and the four pairs
#   go->go, ours->ours, ours->go, go->ours
# then prints the medians over the rounds and the ratios against go->go.
#
#   scripts/bench-grpc-go.sh [ROUNDS [N]]     defaults: 5 rounds, N = 20000 sequential calls
#
# The grpc-go peer (gobench-server, gobench-client) is built by the build.sh of
# GOBENCH_SRC, by default the shared grpc-go bench ../shared/bench/grpc-go
# beside the repository where it exists (this project's machines, offline;
# binaries in /tmp/gobench/bin, built when missing), else this repository's
# own peer, scripts/grpc-go-peer (Debian's grpc-go, no protoc; binaries in
# /tmp/gobench/repo-bin, rebuilt when its sources are newer).
# GOBENCH_OWN=1 takes the repository's peer even where the shared one exists;
# GOBENCH_BIN names where the binaries go. "ours" is the csi-proxy-server binary with its
# default node, serving disk/v1 only, and the grpc_go_peer bench target as the
# client; both built with the release (bench) profile. Every RESULT line is
# kept in $OUT (default a temporary directory) for later reading.
#
# OURS_SERVER and OURS_PEER replace the binaries built here (nothing is built
# when both are given). BASELINE_SERVER
# (a csi-proxy-server built from another commit) adds two pairs per round,
# ours->base and go->base, to compare a server change within one run;
# BASELINE_PEER (a grpc_go_peer built from another commit) adds basepeer->ours
# and basepeer->go, to compare a client change within one run.
set -euo pipefail
rounds=${1:-5}
n=${2:-20000}
repo=$(cd "$(dirname "$0")/.." && pwd)
gosrc=${GOBENCH_SRC:-}
if [[ -z $gosrc && ${GOBENCH_OWN:-0} != 1 && -x $repo/../shared/bench/grpc-go/build.sh ]]; then
    gosrc=$repo/../shared/bench/grpc-go
fi
if [[ -n $gosrc ]]; then
    gobin=${GOBENCH_BIN:-/tmp/gobench/bin}
else
    gosrc=$repo/scripts/grpc-go-peer
    gobin=${GOBENCH_BIN:-/tmp/gobench/repo-bin}
fi
out=${OUT:-$(mktemp -d)}
sock=$out/sockets
mkdir -p "$sock"

if [[ ! -x $gobin/gobench-server || ! -x $gobin/gobench-client ]]; then
    "$gosrc/build.sh" "$gobin"
elif [[ $gosrc == "$repo/scripts/grpc-go-peer" && -n $(find "$gosrc" -newer "$gobin/gobench-client" -print -quit) ]]; then
    "$gosrc/build.sh" "$gobin"
fi
echo "grpc-go peer: $gobin (built from $gosrc)" >&2
cd "$repo"
ours_server=${OURS_SERVER:-}
peer=${OURS_PEER:-}
if [[ -z $ours_server ]]; then
    cargo build --release --quiet --features server --bin csi-proxy-server
    ours_server=$repo/target/release/csi-proxy-server
fi
if [[ -z $peer ]]; then
    peer=$(cargo bench --bench grpc_go_peer --no-run --message-format=json 2>/dev/null |
        jq -r 'select(.reason == "compiler-artifact" and .target.name == "grpc_go_peer") | .executable')
fi
baseline=${BASELINE_SERVER:-}
baseline_peer=${BASELINE_PEER:-}

server_pid=
stop_server() {
    if [[ -n $server_pid ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=
    fi
}
trap stop_server EXIT

# Starts a server in the background and waits for its socket ($1: which, $2: socket).
start_server() {
    rm -f "$2"
    case $1 in
        go) "$gobin/gobench-server" "$2" 2>/dev/null & ;;
        ours) "$ours_server" --socket-dir "$(dirname "$2")" --serve disk/v1 --log-level warn >/dev/null & ;;
        base) "$baseline" --socket-dir "$(dirname "$2")" --serve disk/v1 --log-level warn >/dev/null & ;;
        echo) "$peer" echo-server "$2" 2>/dev/null & ;;
    esac
    server_pid=$!
    for _ in $(seq 200); do
        [[ -S $2 ]] && return 0
        sleep 0.05
    done
    echo "server $1 did not create $2" >&2
    exit 1
}

# One pair: prints "PAIR name RESULT ..." into the results file.
run_pair() {
    local name=$1 client=$2 server=$3 socket line
    case $server in
        ours | base) socket=$sock/csi-proxy-disk-v1.sock ;;
        *) socket=$sock/$server.sock ;;
    esac
    start_server "$server" "$socket"
    case $client in
        go) line=$(SERVER_PID=$server_pid "$gobin/gobench-client" "$socket" "$n") ;;
        ours) line=$(SERVER_PID=$server_pid "$peer" client "$socket" "$n") ;;
        basepeer) line=$(SERVER_PID=$server_pid "$baseline_peer" client "$socket" "$n") ;;
        floor) line=$(SERVER_PID=$server_pid "$peer" echo-client "$socket" "$n") ;;
    esac
    stop_server
    echo "PAIR $name $line" | tee -a "$out/results"
}

: >"$out/results"
for round in $(seq "$rounds"); do
    echo "round $round of $rounds" >&2
    run_pair floor floor echo
    run_pair go-go go go
    run_pair ours-ours ours ours
    run_pair ours-go ours go
    run_pair go-ours go ours
    if [[ -n $baseline ]]; then
        run_pair ours-base ours base
        run_pair go-base go base
    fi
    if [[ -n $baseline_peer ]]; then
        run_pair bpeer-ours basepeer ours
        run_pair bpeer-go basepeer go
    fi
done

# Medians over the rounds, then the ratios the issue asks for.
awk '
function median(list,    parts, k, i, j, t) {
    k = split(list, parts, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
        if (parts[j] + 0 < parts[i] + 0) { t = parts[i]; parts[i] = parts[j]; parts[j] = t }
    return k % 2 ? parts[(k + 1) / 2] : (parts[k / 2] + parts[k / 2 + 1]) / 2
}
$1 == "PAIR" {
    pair = $2
    if (!(pair in seen)) { seen[pair] = 1; order[++pairs] = pair }
    for (i = 4; i <= NF; i++) { split($i, kv, "="); values[pair, kv[1]] = values[pair, kv[1]] " " kv[2] }
}
END {
    split("seq_us p50_us p99_us conc_cps cli_cpu_seq_us srv_cpu_seq_us cli_cpu_conc_us srv_cpu_conc_us", keys, " ")
    printf "%-10s", "pair"
    for (k = 1; k <= 8; k++) printf " %15s", keys[k]
    printf "\n"
    for (p = 1; p <= pairs; p++) {
        printf "%-10s", order[p]
        for (k = 1; k <= 8; k++) {
            m[order[p], keys[k]] = median(values[order[p], keys[k]])
            printf " %15.2f", m[order[p], keys[k]]
        }
        printf "\n"
    }
    printf "\nratios (medians; the project targets in brackets)\n"
    printf "ours->ours 64 in flight / go->go:  %.2f  [>= 1.3]\n", m["ours-ours", "conc_cps"] / m["go-go", "conc_cps"]
    printf "ours->ours p50 / go->go p50:       %.2f  [<= 0.75]\n", m["ours-ours", "p50_us"] / m["go-go", "p50_us"]
    printf "ours->go 64 in flight / go->go:    %.2f  [>= 1.0]\n", m["ours-go", "conc_cps"] / m["go-go", "conc_cps"]
    printf "go->ours 64 in flight / go->go:    %.2f  [>= 1.0]\n", m["go-ours", "conc_cps"] / m["go-go", "conc_cps"]
    printf "ours->go p50 / go->go p50:         %.2f\n", m["ours-go", "p50_us"] / m["go-go", "p50_us"]
    printf "go->ours p50 / go->go p50:         %.2f\n", m["go-ours", "p50_us"] / m["go-go", "p50_us"]
    printf "floor p50 / go->go p50:            %.2f\n", m["floor", "p50_us"] / m["go-go", "p50_us"]
    if ("ours-base" in seen) {
        printf "ours->ours / ours->base, 64 in flight: %.2f\n", m["ours-ours", "conc_cps"] / m["ours-base", "conc_cps"]
        printf "go->ours / go->base, 64 in flight:     %.2f\n", m["go-ours", "conc_cps"] / m["go-base", "conc_cps"]
        printf "ours->ours / ours->base, p50:          %.2f\n", m["ours-ours", "p50_us"] / m["ours-base", "p50_us"]
    }
    if ("bpeer-ours" in seen) {
        printf "ours->ours / basepeer->ours, client CPU/seq call: %.2f\n", m["ours-ours", "cli_cpu_seq_us"] / m["bpeer-ours", "cli_cpu_seq_us"]
        printf "ours->go / basepeer->go, client CPU/seq call:     %.2f\n", m["ours-go", "cli_cpu_seq_us"] / m["bpeer-go", "cli_cpu_seq_us"]
        printf "ours->ours / basepeer->ours, p50:                 %.2f\n", m["ours-ours", "p50_us"] / m["bpeer-ours", "p50_us"]
        printf "ours->go / basepeer->go, p50:                     %.2f\n", m["ours-go", "p50_us"] / m["bpeer-go", "p50_us"]
    }
}' "$out/results" | tee "$out/table"
echo "results in $out" >&2
