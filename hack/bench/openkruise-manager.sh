#!/usr/bin/env bash
# Runs the Go OpenKruise manager outside the cluster, as kruise-bench's `--manager` (so both
# managers are measured by the same harness with the same flags):
#
#   OPENKRUISE_MANAGER=<v1.9.0 binary> OPENKRUISE_SRC=<v1.9.0 source tree> \
#     target/release/kruise-bench --manager hack/bench/openkruise-manager.sh ...
#   hack/bench/openkruise-manager.sh --cleanup      # after the run: webhooks and CRD conversion
#
# Without --cleanup: renders OpenKruise's config/default, keeps its CRDs, webhook configurations
# and ClusterRoles with every webhook pointed at https://127.0.0.1:$OPENKRUISE_WEBHOOK_PORT
# (kruise-admission-corpus manifests), applies them, then execs the manager with the arguments
# given (the process keeps this script's pid, so kruise-bench reads the manager's own RSS), with
# the environment OpenKruise needs out of cluster (docs: openkruise-go-out-of-cluster).
# --cleanup deletes both webhook configurations and sets every Kruise CRD's conversion back to
# None: while they point at a stopped manager, pod and Kruise object creation fails.
# KUBECONFIG must name the testbed (hack/testbed/testbed.sh env).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${KUBECONFIG:?KUBECONFIG must name the testbed (eval \"\$(hack/testbed/testbed.sh env)\")}"
KUBECTL=${KUBECTL:-kubectl}
STATE=${OPENKRUISE_STATE_DIR:-target/openkruise-bench}
PORT=${OPENKRUISE_WEBHOOK_PORT:-9876}

if [ "${1:-}" = "--cleanup" ]; then
  $KUBECTL delete mutatingwebhookconfiguration kruise-mutating-webhook-configuration --ignore-not-found >/dev/null
  $KUBECTL delete validatingwebhookconfiguration kruise-validating-webhook-configuration --ignore-not-found >/dev/null
  for crd in $($KUBECTL get crd -o name | grep 'kruise\.io$'); do
    $KUBECTL patch "$crd" --type=json \
      -p '[{"op":"replace","path":"/spec/conversion","value":{"strategy":"None"}}]' >/dev/null 2>&1 || true
  done
  exit 0
fi

: "${OPENKRUISE_MANAGER:?path of the OpenKruise v1.9.0 manager binary}"
: "${OPENKRUISE_SRC:?OpenKruise v1.9.0 source tree (its config/default is applied)}"
CORPUS=${KRUISE_ADMISSION_CORPUS:-}
if [ -z "$CORPUS" ]; then
  for c in target/release/kruise-admission-corpus target/debug/kruise-admission-corpus; do
    [ -x "$c" ] && CORPUS=$c && break
  done
fi
[ -n "$CORPUS" ] || { echo "build kruise-admission-corpus first (cargo build -p kruise-corpus --bin kruise-admission-corpus)" >&2; exit 1; }
mkdir -p "$STATE/certs"
rm -f "$STATE"/certs/*
$KUBECTL create namespace kruise-system >/dev/null 2>&1 || true
$KUBECTL kustomize "$OPENKRUISE_SRC/config/default" > "$STATE/rendered.yaml"
"$CORPUS" manifests --url "https://127.0.0.1:$PORT" < "$STATE/rendered.yaml" > "$STATE/manifests.yaml"
$KUBECTL apply --server-side --force-conflicts -f "$STATE/manifests.yaml" >/dev/null
export POD_NAMESPACE=kruise-system WEBHOOK_HOST=127.0.0.1 WEBHOOK_PORT=$PORT \
  WEBHOOK_CERT_DIR=$STATE/certs WEBHOOK_CERT_WRITER=fs
exec "$OPENKRUISE_MANAGER" "$@"
