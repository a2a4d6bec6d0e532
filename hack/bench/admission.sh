#!/usr/bin/env bash
# Benchmark (not a test): the pod webhooks (/mutate-pod, /validate-pod), with kruise-manager run
# as users run it (webhook server on, --webhook-host 127.0.0.1, POD_NAMESPACE=kruise-system,
# every namespace). See crates/kruise-bench/src/admission/mod.rs and
# `target/release/kruise-bench admission --help`.
#
#   hack/bench/admission.sh [--part injection|blast|budget|both|all] [--sidecarsets 50]
#                           [--matching 10] [--pods 2000] [--rate 200] [--concurrency 8]
#                           [--deployment-pods 1000] [--evictions 20] [--delete-wait-seconds 60]
#                           [--budgets 1000] [--budget-namespaces 10] [--deletes 500]
#                           [--delete-rate 50] [--webhook-port 9876] [--manager PATH]
#                           [--manager-arg ARG]...
#
# (`both` = injection and blast, the default; `all` adds budget.)
# Part 1 (injection, issue #14): 50 SidecarSets (10 select the pods), pods created at 200/s;
# p50/p99 of /mutate-pod from the manager's histogram and of the create requests against the
# same creates without the webhook, manager CPU seconds and peak RSS, every pod's sidecars checked.
# Part 2 (blast radius, issues #21 and #35): a Deployment of 1,000 plain pods with no manager,
# with the scoped pod webhook (--pod-webhook-scope needed) and with OpenKruise's (all):
# admission calls, their p99, time to all created and all Ready; then the manager killed (its
# configurations left, failing closed) and, in that namespace without budgets, 20 evictions and
# the Deployment scaled to 0, then deleted: vpodeviction/vpod calls, refusals, time to all pods
# gone.
# Part 3 (budget, issue #35): 1,000 PodUnavailableBudgets over 10 namespaces, one covering 560
# bare pods (minAvailable 10); 500 pod DELETEs at 50/s, each admitted by /validate-pod and
# spending the budget; p50/p99 of /validate-pod from the manager's histogram and of the DELETE
# requests against the same deletes without a webhook, manager CPU seconds and peak RSS.
#
# The run installs and deletes the cluster-wide kruise-*-webhook-configurations and runs its
# manager over every namespace, so it needs a testbed to itself; on a shared machine start one:
#
#   export KRUISE_TESTBED_DIR=/tmp/tb-bench KRUISE_TESTBED_PORT_BASE=19440
#   hack/testbed/testbed.sh up --nodes 10 --real-nodes 0
#   hack/bench/admission.sh --webhook-port 19470
#   hack/testbed/testbed.sh down
#
# Prints progress, a table per part and the path of the JSON result (--json, default
# target/kruise-bench/admission.json); exits non-zero with a reason on failure.
#
# Uses the testbed of KRUISE_TESTBED_DIR (started if needed; stops that testbed's demo manager)
# and the binaries of CARGO_TARGET_DIR (default target/).
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
echo "==> building release binaries (kruise-manager, kruise-bench)"
cargo build --release -q -p kruise-manager -p kruise-bench --bin kruise-manager --bin kruise-bench
echo "==> testbed"
hack/testbed/testbed.sh status >/dev/null 2>&1 || hack/testbed/testbed.sh up
hack/demo/demo.sh stop >/dev/null
echo "==> benchmark"
manager=(--manager "$target/release/kruise-manager")
for arg in "$@"; do
  case "$arg" in --manager|--manager=*) manager=() ;; esac
done
exec "$target/release/kruise-bench" admission "${manager[@]}" "$@"
