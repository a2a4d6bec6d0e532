#!/usr/bin/env bash
# Benchmark (not a test): restart of kruise-manager over many CloneSets (default 100 CloneSets x
# 100 pods = 10,000 pods, on enough kwok nodes for 110 pods each). For each manager binary given,
# in turn on the same objects (--rounds times, interleaved): time from process start to the first
# completed reconcile of every CloneSet (status.observedGeneration == metadata.generation after a
# generation bump made while it was stopped), its API requests (reads/writes, from
# rest_client_requests_total), its peak RSS and its RSS after a settle period; the restart must
# create and delete no pod. Baseline: a bare client LISTing every CloneSet and pod once. Every
# manager runs cluster-wide with the same --rest-config-qps/--rest-config-burst (--qps/--burst,
# default 30/50, OpenKruise's). See crates/kruise-bench/src/main.rs and
# `target/release/kruise-bench scale --help`.
#
#   hack/bench/scale.sh [--clonesets 100] [--pods-per-cloneset 100] [--nodes K]
#                       [--manager PATH]... [--manager-arg ARG]... [--settle-seconds 10]
#                       [--qps 30] [--burst 50] [--rounds N] [--json FILE] [--watch-namespace]
#
# Comparing a "before" build, the current tree and the Go manager (OpenKruise v1.9.0, through
# hack/bench/openkruise-manager.sh, which needs KUBECONFIG, OPENKRUISE_MANAGER, OPENKRUISE_SRC and
# a free OPENKRUISE_WEBHOOK_PORT) in one run, all measured on the same objects, each row
# labelled by its path, with medians, ranges and ratios to Go:
#
#   git worktree add /tmp/before <commit>
#   cargo build --release --manifest-path /tmp/before/Cargo.toml -p kruise-manager \
#       --target-dir /tmp/before-target
#   eval "$(hack/testbed/testbed.sh env)"
#   OPENKRUISE_MANAGER=/path/to/openkruise-manager OPENKRUISE_SRC=/path/to/kruise-v1.9.0 \
#     hack/bench/scale.sh --rounds 2 --json target/bench-scale.json \
#       --manager /tmp/before-target/release/kruise-manager --manager target/release/kruise-manager \
#       --manager hack/bench/openkruise-manager.sh
#
# Without --manager, measures target/release/kruise-manager. Every binary gets the same flags
# (leader election off, cluster-wide unless --watch-namespace, plus any --manager-arg), so figures
# compare; the pods are created first by a kruise-manager (--creator, default the first one given)
# without client throttling. Uses the running testbed (started if needed); stops the demo's
# manager first.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "==> building release binaries (kruise-manager, kruise-bench)"
cargo build --release -q -p kruise-manager -p kruise-bench -p kruise-corpus --bin kruise-manager \
  --bin kruise-bench --bin kruise-admission-corpus
echo "==> testbed"
hack/testbed/testbed.sh status >/dev/null 2>&1 || hack/testbed/testbed.sh up
hack/demo/demo.sh stop >/dev/null
echo "==> benchmark"
exec target/release/kruise-bench scale "$@"
