#!/usr/bin/env bash
# The cost of each CSI node call at the real proxy's latencies
# (csi-node-server/benches/cost.rs): the plugin's host time and host calls
# against each upstream driver's sequence, per latency profile, then the
# boot storm. Host time is modelled (tokio's paused clock), so a run takes
# seconds; the figures and how to read them are in docs/cost.md.
#
#   scripts/bench-cost.sh            # every line
#   scripts/bench-cost.sh | grep ^COST
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The dev profile: the figures are modelled host time, which optimisation
# does not change, and it builds in a fraction of the release time.
exec cargo bench -q --profile dev -p csi-node-server --bench cost "$@"
