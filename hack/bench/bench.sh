#!/usr/bin/env bash
# Benchmark (not a test): in-place rollout of a CloneSet of N pods (default 1000) on >= 10 kwok
# nodes, against a bare-client baseline. See crates/kruise-bench/src/main.rs.
#
#   hack/bench/bench.sh [--pods N] [--nodes N] [--timeout-seconds S]
#
# Restart over many CloneSets (before/after builds): hack/bench/scale.sh.
#
# Uses the running testbed (started if needed). Stop any cluster-wide kruise-manager first
# (hack/demo/demo.sh stop); this script does it.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "==> building release binaries (kruise-manager, kruise-bench)"
cargo build --release -q -p kruise-manager -p kruise-bench --bin kruise-manager --bin kruise-bench
echo "==> testbed"
hack/testbed/testbed.sh status >/dev/null 2>&1 || hack/testbed/testbed.sh up
hack/demo/demo.sh stop >/dev/null
echo "==> benchmark"
exec target/release/kruise-bench rollout "$@"
