#!/usr/bin/env bash
# Benchmark (not a test), issue #37: WorkloadSpread admission latency and the manager's idle CPU
# with 100 WorkloadSpreads and 10,000 pods, kruise-rs beside the Go OpenKruise v1.9.0 manager
# and a baseline with no manager (openkruise/kruise#1089: WorkloadSpread made the Go manager
# burn 150-250 mCPU idle). See crates/kruise-bench/src/workloadspread/mod.rs and
# `target/release/kruise-bench workloadspread --help`.
#
#   [OPENKRUISE_MANAGER=<v1.9.0 binary> OPENKRUISE_SRC=<v1.9.0 source tree>] \
#     hack/bench/workloadspread.sh [--workloadspreads 100] [--namespaces 10] [--pods 10000]
#                                  [--idle-seconds 60] [--settle-seconds 10] [--nodes N]
#                                  [--qps 30] [--burst 50] [--webhook-port 9876]
#                                  [--manager-arg ARG]... [--json FILE]
#
# Cases, in turn, each in 10 fresh namespaces: the baseline (no manager, no webhook
# configuration), kruise-rs (target/release/kruise-manager), then the Go manager through
# hack/bench/openkruise-manager.sh when OPENKRUISE_MANAGER and OPENKRUISE_SRC are set (else it is
# skipped, and said so). Each manager runs as users run it (cluster-wide, webhooks on, leader
# election off, its default feature gates, client QPS 30 / burst 50 for both); 100
# WorkloadSpreads (zone-a/b/c subsets, maxReplicas 40%/40%/none or 50%/none, every other one
# patching a label) target 100 Deployments of 100 replicas, all created at once: /mutate-pod
# p50/p99/mean (the manager's histogram), mpod.kb.io and pod CREATE as the API server timed them,
# time to all pods created and Ready, manager CPU; every pod's subset checked (annotation,
# maxReplicas, zone, patch; a violation fails the run); once settled, idle millicores over 60 s
# and RSS. One table prints the cases side by side with the ratios to the baseline and
# kruise-rs / Go; the JSON goes to target/kruise-bench/workloadspread.json.
#
# The README's table was taken with --qps 1000 --burst 2000 for both managers: kruise-rs' pod
# webhook then read Deployments live (~12 GETs per admission) and timed out at 30/50. It reads
# them from the shared cache since d845386 (78 reads over 2,000 admissions at 30/50).
#
# The run installs and deletes the cluster-wide kruise-*-webhook-configurations and runs its
# managers over every namespace, so it needs a testbed to itself; on a shared machine start one:
#
#   export KRUISE_TESTBED_DIR=/tmp/tb-ws KRUISE_TESTBED_PORT_BASE=19440
#   hack/testbed/testbed.sh up --nodes 10 --real-nodes 0
#   OPENKRUISE_MANAGER=... OPENKRUISE_SRC=... hack/bench/workloadspread.sh --webhook-port 19470
#   hack/testbed/testbed.sh down
#
# The Go manager's wrapper needs kruise-admission-corpus (target/release, target/debug or
# KRUISE_ADMISSION_CORPUS); it is built when none is found.
#
# Everything the run creates is removed at the end (namespaces, webhook configurations, the Go
# manager's CRD conversion settings, kwok nodes it added). Exits non-zero with a reason on failure.
# Uses the testbed of KRUISE_TESTBED_DIR (started if needed; stops that testbed's demo manager)
# and the binaries of CARGO_TARGET_DIR (default target/).
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
echo "==> building release binaries (kruise-manager, kruise-bench)"
cargo build --release -q -p kruise-manager -p kruise-bench --bin kruise-manager --bin kruise-bench
managers=(--manager "$target/release/kruise-manager")
if [ -n "${OPENKRUISE_MANAGER:-}" ] && [ -n "${OPENKRUISE_SRC:-}" ]; then
  if [ -z "${KRUISE_ADMISSION_CORPUS:-}" ] && [ ! -x "$target/release/kruise-admission-corpus" ] \
    && [ ! -x "$target/debug/kruise-admission-corpus" ]; then
    echo "==> building kruise-admission-corpus (the Go manager's webhook manifests)"
    cargo build --release -q -p kruise-corpus --bin kruise-admission-corpus
  fi
  managers+=(--manager hack/bench/openkruise-manager.sh)
else
  echo "==> the Go manager is skipped: set OPENKRUISE_MANAGER (v1.9.0 binary) and OPENKRUISE_SRC (its source tree)"
fi
echo "==> testbed"
hack/testbed/testbed.sh status >/dev/null 2>&1 || hack/testbed/testbed.sh up
eval "$(hack/testbed/testbed.sh env)"
hack/demo/demo.sh stop >/dev/null
# The Go manager's webhooks fail closed: undo them whatever happens.
if [ "${#managers[@]}" -gt 2 ]; then
  trap 'hack/bench/openkruise-manager.sh --cleanup' EXIT
fi
echo "==> benchmark"
"$target/release/kruise-bench" workloadspread "${managers[@]}" "$@"
