#!/usr/bin/env bash
# README command 1: brings up the local testbed, installs the CRDs, starts kruise-manager, creates
# a CloneSet and performs an in-place image rollout while printing live progress. Leaves the
# cluster and the manager running.
#
#   hack/demo/demo.sh          # or: make demo
#   hack/demo/demo.sh stop     # stop the manager started by the demo (the testbed stays)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
STATE_DIR="${KRUISE_TESTBED_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/kruise-rs/testbed}"
PIDFILE="$STATE_DIR/run/kruise-manager.pid"
LOG="$STATE_DIR/logs/kruise-manager.log"
step() { printf '\n==> %s\n' "$*"; }
die() { printf 'demo: ERROR: %s\n' "$*" >&2; exit 1; }

stop_manager() {
  local was_running=0
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    was_running=1
    kill -TERM "$(cat "$PIDFILE")"
    for _ in $(seq 1 50); do kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break; sleep 0.2; done
    echo "kruise-manager stopped"
  fi
  rm -f "$PIDFILE"
  # The demo's manager serves the webhooks, which fail closed: remove their configurations so
  # that pod creation does not depend on a manager that is gone.
  if [ "$was_running" = 1 ] && hack/testbed/testbed.sh status >/dev/null 2>&1; then
    eval "$(hack/testbed/testbed.sh env)"
    kubectl delete mutatingwebhookconfiguration kruise-mutating-webhook-configuration --ignore-not-found >/dev/null
    kubectl delete validatingwebhookconfiguration kruise-validating-webhook-configuration --ignore-not-found >/dev/null
    echo "webhook configurations removed"
  fi
}
if [ "${1:-}" = stop ]; then stop_manager; exit 0; fi

step "1/5 testbed (first run builds the control plane; later runs take seconds)"
hack/testbed/testbed.sh up
eval "$(hack/testbed/testbed.sh env)"
k() { kubectl "$@"; }

step "2/5 CRDs"
k apply --server-side --force-conflicts -f config/crd/bases >/dev/null
k wait --for condition=Established --timeout=60s -f config/crd/bases >/dev/null
echo "18 OpenKruise CRDs established"

step "3/5 kruise-manager"
cargo build -q -p kruise-manager
stop_manager
k create namespace kruise-system --dry-run=client -o yaml | k apply -f - >/dev/null
mkdir -p "$(dirname "$PIDFILE")" "$(dirname "$LOG")"
# As users run it: webhook server on by default (reached at https://127.0.0.1:9876 from the API
# server).
POD_NAMESPACE=kruise-system nohup "$root/target/debug/kruise-manager" --kubeconfig "$KUBECONFIG" \
  --webhook-host 127.0.0.1 \
  --metrics-addr 127.0.0.1:18080 --health-probe-addr 127.0.0.1:18000 >>"$LOG" 2>&1 &
echo $! >"$PIDFILE"
for i in $(seq 1 100); do
  curl -fsS http://127.0.0.1:18000/readyz >/dev/null 2>&1 && break
  kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -n 30 "$LOG" >&2; die "kruise-manager exited"; }
  sleep 0.2
  [ "$i" = 100 ] && { tail -n 30 "$LOG" >&2; die "kruise-manager not ready after 20s"; }
done
echo "kruise-manager running (pid $(cat "$PIDFILE"), log $LOG, metrics http://127.0.0.1:18080/metrics)"

progress() { # until <jsonpath-condition description> <predicate>
  local want_image=$1 deadline=$((SECONDS + 180))
  while :; do
    local line
    line=$(k get clone demo -o jsonpath='{.status.replicas} {.status.readyReplicas} {.status.updatedReplicas} {.status.updatedReadyReplicas} {.spec.replicas}' 2>/dev/null || true)
    read -r total ready updated updready desired <<<"$line"
    printf '  %s  desired=%s total=%s ready=%s updated=%s updatedReady=%s\n' "$(date +%T)" \
      "${desired:-?}" "${total:-0}" "${ready:-0}" "${updated:-0}" "${updready:-0}"
    if [ "${updready:-0}" = "${desired:-x}" ] && [ "${total:-0}" = "${desired:-x}" ] &&
       [ "$(k get clone demo -o jsonpath='{.spec.template.spec.containers[0].image}')" = "$want_image" ]; then
      break
    fi
    [ $SECONDS -lt $deadline ] || die "rollout did not finish within 180s (see $LOG)"
    sleep 1
  done
}

step "4/5 CloneSet default/demo (6 replicas, InPlaceIfPossible, maxUnavailable 2)"
# A demo CloneSet left by an earlier run may carry changes made since (e.g. the partition the
# commands below suggest), which an apply would keep: start from a fresh one.
if k get clone demo >/dev/null 2>&1; then
  echo "deleting CloneSet default/demo left by an earlier run"
  k delete clone demo --wait=true >/dev/null
  k wait --for=delete pod -l app=demo --timeout=120s >/dev/null 2>&1 || true
fi
k apply -f hack/demo/cloneset.yaml >/dev/null
progress nginx:1.25-alpine
k get pods -l app=demo -o custom-columns=NAME:.metadata.name,UID:.metadata.uid,IMAGE:.spec.containers[0].image,RESTARTS:.status.containerStatuses[0].restartCount

step "5/5 in-place rollout to nginx:1.26-alpine"
k patch clone demo --type merge -p '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.26-alpine"}]}}}}' >/dev/null
progress nginx:1.26-alpine
k get pods -l app=demo -o custom-columns=NAME:.metadata.name,UID:.metadata.uid,IMAGE:.spec.containers[0].image,RESTARTS:.status.containerStatuses[0].restartCount
echo
echo "Same pod names and UIDs, new image, restartCount 1: updated in place."
cat <<EOT

The cluster and the manager keep running. Try:
  eval "\$(hack/testbed/testbed.sh env)"
  kubectl get clone demo                      # OpenKruise's columns
  kubectl scale clone demo --replicas 3       # scale subresource
  kubectl patch clone demo --type merge -p '{"spec":{"updateStrategy":{"partition":"50%"}}}'
  tail -f $LOG
Stop: hack/demo/demo.sh stop; make testbed-down
EOT
