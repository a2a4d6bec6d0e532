#!/usr/bin/env bash
# Benchmark (not a test): one BroadcastJob over 500 kwok nodes of its own (labelled and tainted
# bench.kruise-rs.io/bcj, deleted at the end), run to completion by each manager given in turn
# with the same --rest-config-qps/--rest-config-burst (--qps/--burst, default 30/50): time from
# the job's creation to status.phase completed, the manager's API writes per pod (by resource),
# exactly one pod per node checked; baseline: a bare client creating one pod per node (bound by
# spec.nodeName) and waiting for all to succeed. See crates/kruise-bench/src/broadcastjob.rs.
#
#   hack/bench/broadcastjob.sh [--nodes 500] [--manager PATH]... [--qps 30] [--burst 50]
#                              [--webhook-port 9876]
#
# Beside the Go manager (OpenKruise v1.9.0 through hack/bench/openkruise-manager.sh; measure
# kruise-rs first, the Go manager installs OpenKruise's own CRDs):
#
#   eval "$(hack/testbed/testbed.sh env)"
#   OPENKRUISE_MANAGER=/path/to/openkruise-manager OPENKRUISE_SRC=/path/to/kruise-v1.9.0 \
#     hack/bench/broadcastjob.sh --manager target/release/kruise-manager \
#       --manager hack/bench/openkruise-manager.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "==> building release binaries (kruise-manager, kruise-bench)"
cargo build --release -q -p kruise-manager -p kruise-bench -p kruise-corpus --bin kruise-manager \
  --bin kruise-bench --bin kruise-admission-corpus
echo "==> testbed"
hack/testbed/testbed.sh status >/dev/null 2>&1 || hack/testbed/testbed.sh up
hack/demo/demo.sh stop >/dev/null
echo "==> benchmark"
exec target/release/kruise-bench broadcastjob "$@"
