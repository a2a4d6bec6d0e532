#!/usr/bin/env bash
# Records OpenKruise v1.9.0's admission verdicts into tests/admission-corpus/ (see README.md).
# Usage: hack/admission-corpus/record.sh --src <OpenKruise v1.9.0 source tree> [--only <corpus>]...
# Needs: Go (builds the manager from --src), the kruise-rs testbed (started if not running).
# Never run it while kruise-manager or the e2e tests use the testbed: both own the same webhook
# configurations and CRD conversion settings.
# Environment (defaults in brackets): KRUISE_TESTBED_DIR, KRUISE_TESTBED_PORT_BASE (which testbed,
# see hack/testbed/testbed.sh), WEBHOOK_PORT [9876], METRICS_PORT [18180] and HEALTH_PORT [18100]
# (the Go manager's listeners), CORPUS_WORK (work directory, reused: keeps the built manager),
# CARGO_TARGET_DIR [target].
set -euo pipefail
cd "$(dirname "$0")/../.."
log() { echo "[corpus] $*" >&2; }
die() { log "error: $*"; exit 1; }

SRC="" ; ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --src) SRC="$2"; shift 2 ;;
    --only) ONLY+=(--only "$2"); shift 2 ;;
    *) die "unknown argument $1 (usage: $0 --src <dir> [--only <corpus>])" ;;
  esac
done
[ -n "$SRC" ] || die "--src <OpenKruise v1.9.0 source tree> is required (e.g. git clone --branch v1.9.0 https://github.com/openkruise/kruise)"
[ -f "$SRC/main.go" ] && grep -q openkruise/kruise "$SRC/go.mod" || die "$SRC is not an OpenKruise source tree"
command -v go >/dev/null || die "go is not installed"

WORK="${CORPUS_WORK:-$(mktemp -d /tmp/kruise-corpus.XXXXXX)}"
BIN="$WORK/openkruise-manager"
PORT="${WEBHOOK_PORT:-9876}"
METRICS_PORT="${METRICS_PORT:-18180}"
HEALTH_PORT="${HEALTH_PORT:-18100}"
URL="https://127.0.0.1:$PORT"

if [ ! -x "$BIN" ]; then
  log "building the OpenKruise manager from $SRC (a few minutes on 2 cores)"
  (cd "$SRC" && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -o "$BIN" .) || die "go build failed"
fi

log "testbed"
hack/testbed/testbed.sh up >&2 || die "testbed did not start"
eval "$(hack/testbed/testbed.sh env)"
command -v kubectl >/dev/null || die "kubectl not on PATH after testbed env"

log "building kruise-admission-corpus"
cargo build -q -p kruise-corpus --bin kruise-admission-corpus || die "cargo build failed"
REC="${CARGO_TARGET_DIR:-target}/debug/kruise-admission-corpus"

log "installing OpenKruise's CRDs and webhook configurations (called at $URL)"
kubectl kustomize "$SRC/config/default" > "$WORK/rendered.yaml" || die "kubectl kustomize failed"
"$REC" manifests --url "$URL" < "$WORK/rendered.yaml" > "$WORK/manifests.yaml"
kubectl apply --server-side --force-conflicts -f "$WORK/manifests.yaml" >/dev/null || die "applying manifests failed"

cleanup() {
  [ -n "${MPID:-}" ] && kill "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null || true
  kubectl delete mutatingwebhookconfiguration kruise-mutating-webhook-configuration --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete validatingwebhookconfiguration kruise-validating-webhook-configuration --ignore-not-found >/dev/null 2>&1 || true
  for crd in $(kubectl get crd -o name | grep kruise.io); do
    kubectl patch "$crd" --type=json -p '[{"op":"replace","path":"/spec/conversion","value":{"strategy":"None"}}]' >/dev/null 2>&1 || true
  done
  log "manager stopped, webhook configurations removed, CRD conversion reset; logs in $WORK"
}
trap cleanup EXIT

log "starting the OpenKruise manager (AllAlpha, AllBeta, as OpenKruise's e2e runs it)"
mkdir -p "$WORK/certs"
POD_NAMESPACE=kruise-system WEBHOOK_HOST=127.0.0.1 WEBHOOK_PORT="$PORT" WEBHOOK_CERT_DIR="$WORK/certs" WEBHOOK_CERT_WRITER=fs \
  "$BIN" --feature-gates=AllAlpha=true,AllBeta=true,EnableExternalCerts=false,TemplateNoDefaults=false \
  --enable-leader-election=false --metrics-addr="127.0.0.1:$METRICS_PORT" --health-probe-addr="127.0.0.1:$HEALTH_PORT" \
  --enable-pprof=false --logtostderr=true --v=2 --kubeconfig="$KUBECONFIG" > "$WORK/manager.log" 2>&1 &
MPID=$!
for i in $(seq 120); do
  curl -sf "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1 && [ -s "$WORK/certs/ca-cert.pem" ] && break
  kill -0 "$MPID" 2>/dev/null || die "the manager exited; see $WORK/manager.log"
  [ $((i % 10)) -eq 0 ] && log "waiting for the manager to be ready (${i}s)"
  sleep 1
done
curl -sf "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null || die "the manager is not ready after 120 s; see $WORK/manager.log"

kubectl create namespace corpus >/dev/null 2>&1 || true
"$REC" record --url "$URL" --ca "$WORK/certs/ca-cert.pem" --out tests/admission-corpus "${ONLY[@]}"
log "done: tests/admission-corpus/"
