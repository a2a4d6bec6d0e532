#!/usr/bin/env bash
# Runs every test of the repository: static checks, unit tests, and the end-to-end tests against
# the real local testbed (built on first use, see hack/testbed/).
#
#   hack/test.sh              # what `make test` and CI run
#   KEEP_TESTBED=1 hack/test.sh   # leave a testbed this script started running afterwards
#
# If the testbed is already up it is reused and left running; otherwise it is started (with its
# default real node: containerd + kubelet, which needs root) and stopped again on exit (also on
# failure). Stopping checks that the real node left the host as it found it (processes, mounts,
# cgroups, interfaces, sysctls); if not, the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# No incremental compilation: it pays off only for repeated builds of one checkout, and its files
# grow without bound (a working copy's target/ reached 60 GB, 36 GB of it incremental, when CI's
# clean clone ran out of disk building the tests). Without it clippy and the test build of a
# clean clone take 4.0 GB. Set CARGO_INCREMENTAL=1 to keep it for local iteration.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step() { printf '\n==> %s\n' "$*"; }
started_testbed=0
cleanup() {
  local rc=$?
  if [ "$started_testbed" = 1 ] && [ "${KEEP_TESTBED:-0}" != 1 ]; then
    step "stopping the testbed this run started"
    if ! hack/testbed/testbed.sh down; then
      echo "testbed teardown failed or left the host unclean (see NOT CLEAN above)" >&2
      [ "$rc" != 0 ] || rc=1
    fi
  fi
  if [ "$rc" = 0 ]; then step "all tests passed"; else step "FAILED (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT

step "protoc (kruise-daemon's CRI client is generated at build time)"
hack/tools/ensure-protoc.sh

step "cargo fmt --check"
cargo fmt --all --check

step "generated manifests are up to date (config/crd/bases, config/webhook, config/rbac, charts/kruise-rs)"
cargo run -q -p kruise-api --bin kruise-crdgen -- --check
cargo run -q -p kruise-manager --bin kruise-webhookgen -- --check
cargo run -q -p kruise-manager --bin kruise-rbacgen -- --check
cargo run -q -p kruise-daemon --bin kruise-daemon-rbacgen -- --check
cargo run -q -p kruise-manager --bin kruise-chartgen -- --check

step "Helm chart: helm lint and the helm template goldens (charts/kruise-rs/ci/golden)"
hack/chart/check.sh

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets -q -- -D warnings

step "building the tests"
cargo test --workspace --no-run -q

if ! hack/testbed/testbed.sh status >/dev/null 2>&1; then
  step "starting the testbed (first run builds the control plane from Go modules)"
  started_testbed=1
  hack/testbed/testbed.sh up
else
  step "reusing the running testbed"
fi

# A cluster-wide manager (e.g. from `make demo`) would fight with the per-test managers.
hack/demo/demo.sh stop >/dev/null
# So would one installed in the cluster (the README's helm install): refuse rather than remove it.
if (eval "$(hack/testbed/testbed.sh env)" && kubectl -n kruise-system get deployment kruise-controller-manager) >/dev/null 2>&1; then
  echo "a Kruise manager is installed in the testbed (Deployment kruise-system/kruise-controller-manager);" >&2
  echo "it would act on the tests' objects: remove it first (hack/chart/helm.sh uninstall kruise --wait)" >&2
  exit 1
fi

step "unit and end-to-end tests"
cargo test --workspace
