#!/usr/bin/env bash
# OpenKruise v1.9.0's own e2e specs of one area, against kruise-manager on the local testbed, run
# the way users run the manager (webhooks on, OpenKruise's e2e feature gates, the CRDs, the
# generated ClusterRole and the conversion patches of config/ installed).
#
#   hack/conformance/conformance.sh AREA          # make conformance AREA=<area>
#
# AREA is one of the rows of README's conformance table (CloneSet, StatefulSet, DaemonSet,
# SidecarSet, SidecarResourcesPolicy, PodUnavailableBudget, DeletionProtection, BroadcastJob, AdvancedCronJob, EphemeralJob,
# PersistentPodState, ResourceDistribution, WorkloadSpread, UnitedDeployment), which carry the label filter and the specs this testbed
# cannot run (real kubelet, kruise-daemon, storage; EphemeralJob runs its pods on the real node); any other value is used as a ginkgo label
# filter as it is. Environment: SKIP (overrides the skip regex), FOCUS (a ginkgo focus regex),
# KEEP_TESTBED=1 (leave a testbed this script started running), NODES (kwok nodes when the
# testbed is started here; default 10), E2E_FLAGS (more flags for the e2e binary), WEBHOOK_PORT
# (kruise-manager's webhook port, default 9876: give each testbed sharing a host its own).
#
# The e2e binary is built once from the Go module proxy (`go test -c` of
# github.com/openkruise/kruise/test/e2e at the module version of tag v1.9.0) and cached beside
# the testbed binaries. Needs Go and the module proxy on first use (about 5 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
log() { echo "[conformance] $*" >&2; }
die() { log "error: $*"; exit 1; }

AREA="${1:-${AREA:-}}"
[ -n "$AREA" ] || die "usage: $0 <area> (CloneSet, StatefulSet, DaemonSet, SidecarSet, SidecarResourcesPolicy, BroadcastJob, or a ginkgo label filter)"
KRUISE_MODULE_VERSION=v1.9.0

case "$AREA" in
  CloneSet)
    LABEL='CloneSet && !InplaceVPA && !ContainerMeta'
    DEFAULT_SKIP='same imageID|env from label|with priorities|DisablePVCReuse|VolumeClaimTemplate changes|env from metadata'
    # The module proxy's v1.9.0 is not the git tag's tree: it also holds specs of a CloneSet
    # v1beta1 API, which the tag's CRDs (kruise-rs' target) do not serve.
    SKIP_FILE='apps/v1beta1/cloneset.go' ;;
  StatefulSet)
    LABEL='StatefulSet && !InplaceVPA && !VolumeExpansion'
    DEFAULT_SKIP='should provide basic identity|should adopt matching orphans|predecessor fails|roll backs of template modifications|in-place update env from label|Scaling should happen in predictable order|Burst scaling should run to completion|Should recreate evicted statefulset|scale strategy is set|StatefulSetAutoDeletePVC|PVC should be recreated when pod is pending' ;;
  DaemonSet)
    LABEL='DaemonSet && !InplaceVPA'
    DEFAULT_SKIP='surging update daemonset with minReadySeconds' ;;
  SidecarSet)
    LABEL='SidecarSet'
    # "canary sidecarSet" is not in the v1.9.0 tag's tree (b1e001a): only the module proxy's
    # v1.9.0 (4c2bbce, from before the tag moved) has it, for a canary SidecarSet feature the
    # released v1.9.0 does not ship.
    DEFAULT_SKIP='failed image|image, and maxUnavailable|image, and paused|with canary sidecarSet' ;;
  SidecarResourcesPolicy)
    LABEL='SidecarResourcesPolicy'
    DEFAULT_SKIP='' ;;
  DeletionProtection)
    LABEL='DeletionProtection'
    # Needs a PVC of StorageClass "standard" to become Bound (no provisioner on the testbed).
    DEFAULT_SKIP='ns should be protected' ;;
  PodUnavailableBudget)
    LABEL='PodUnavailableBudget'
    # These expect an unpullable image to leave a container NotReady; kwok marks it Ready, so
    # the budget never blocks (they need a real kubelet).
    DEFAULT_SKIP='update failed image and block|update failed sidecar image, block|two cloneSets, strategy.type=in-place, update success image' ;;
  BroadcastJob)
    # All three specs run on kwok: the testbed's pod-complete stage completes their
    # restartPolicy Never pods, and they create (and heartbeat) their own fake node.
    LABEL='BroadcastJob'
    DEFAULT_SKIP='' ;;
  AdvancedCronJob)
    LABEL='AdvancedCronJob'
    DEFAULT_SKIP='' ;;
  EphemeralJob)
    LABEL='EphemeralJob'
    # Recreates the target container through a ContainerRecreateRequest, which needs
    # kruise-daemon on the node (not run here).
    DEFAULT_SKIP='test ephemeral container in crr'
    # The other specs need a kubelet that starts ephemeral containers and reports
    # ephemeralContainerStatuses; their pods carry no toleration, so during the run every pod
    # goes to the testbed's real node (kwok nodes cordoned, the real-node taint lifted).
    REAL_NODE_PODS=1
    REAL_KUBELET_SPECS='succeed job|err command job|error exit job|two ephemeral running job|two job, but to one target|in-place-update|impact main container' ;;
  PersistentPodState)
    # "statefulsetlike node topology" runs only when CRD statefulsetliketests.apps.kruise.io
    # exists; hack/conformance/persistentpodstate/ provides it and the whitelist naming it.
    LABEL='PersistentPodState'
    DEFAULT_SKIP=''
    # The module proxy's tree also holds specs of a PersistentPodState v1beta1 API the tag's CRDs
    # do not serve.
    SKIP_FILE='apps/v1beta1/persistent_pod_state.go'
    AREA_SETUP=hack/conformance/persistentpodstate ;;
  ResourceDistribution)
    # The three specs are pure API (Secrets into namespaces); nothing is skipped. They are
    # Serial and create cluster-wide objects (namespaces resourcedistribution-e2e-test*).
    LABEL='ResourceDistribution'
    DEFAULT_SKIP=''
    # The module proxy's v1.9.0 also holds specs of a v1beta1 ResourceDistribution API, which
    # the v1.9.0 tag's CRDs (kruise-rs' target) do not serve; left to fail, they also leave
    # labelled namespaces behind that the v1alpha1 specs count as targets.
    SKIP_FILE='apps/v1beta1/resourcedistribution.go' ;;
  WorkloadSpread)
    # All ten specs run on kwok (they need more than two untainted worker nodes); the job-like
    # one needs the TFJob CRD and the kruise-configuration whitelist of
    # hack/conformance/workloadspread/ (AREA_SETUP), and exactly three schedulable nodes (its
    # Advanced DaemonSet must report numberReady 3).
    LABEL='WorkloadSpread'
    SCHEDULABLE_NODES=3
    DEFAULT_SKIP=''
    # As for CloneSet: the module proxy's v1.9.0 also holds specs of a WorkloadSpread v1beta1
    # API, which the tag's CRDs (kruise-rs' target) do not serve.
    SKIP_FILE='apps/v1beta1/workloadspread.go'
    AREA_SETUP=hack/conformance/workloadspread ;;
  UnitedDeployment)
    LABEL='UnitedDeployment'
    # The four adaptive specs label the node named `ci-testing-worker` (OpenKruise's CI node):
    # it is provided below as one more kwok node (Ready, untainted).
    CI_TESTING_WORKER=1
    DEFAULT_SKIP=''
    # The module proxy's v1.9.0 also holds the same specs against a UnitedDeployment v1beta1
    # API, which the tag's CRDs (kruise-rs' target) do not serve.
    SKIP_FILE='apps/v1beta1/uniteddeployment.go' ;;
  *)
    LABEL="$AREA"
    DEFAULT_SKIP='' ;;
esac
REAL_NODE_PODS="${REAL_NODE_PODS:-0}"
CI_TESTING_WORKER="${CI_TESTING_WORKER:-0}"
SKIP="${SKIP-$DEFAULT_SKIP}"
SKIP_FILE="${SKIP_FILE:-}"

source hack/testbed/versions.sh
E2E_DIR="$TESTBED_CACHE/openkruise-e2e-$KRUISE_MODULE_VERSION"
E2E_BIN="$E2E_DIR/openkruise-e2e.test"

build_e2e() {
  command -v go >/dev/null || die "go is not installed (needed once to build OpenKruise's e2e binary)"
  log "building OpenKruise $KRUISE_MODULE_VERSION's e2e binary from the Go module proxy (once; a few minutes)"
  local dir src work
  # The checksum database has no entry for this module version (the proxy serves it; its
  # dependencies are checked against its own go.sum when it is built).
  dir=$(GONOSUMDB=github.com/openkruise/kruise GOFLAGS=-mod=mod GOTOOLCHAIN=local \
        go mod download -json "github.com/openkruise/kruise@$KRUISE_MODULE_VERSION" \
        | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir","")); sys.exit(1 if d.get("Error") else 0)') \
    || die "go mod download github.com/openkruise/kruise@$KRUISE_MODULE_VERSION failed"
  [ -d "$dir/test/e2e" ] || die "$dir has no test/e2e"
  work=$(mktemp -d /tmp/openkruise-e2e-src.XXXXXX)
  # The module cache is read-only; build from a writable copy (as the main module, so its
  # replace directives apply).
  cp -r "$dir/." "$work/" && chmod -R u+w "$work"
  mkdir -p "$E2E_DIR"
  (cd "$work" && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0 go test -c -o "$E2E_BIN.tmp" ./test/e2e) \
    || { rm -rf "$work"; die "go test -c ./test/e2e failed"; }
  mv "$E2E_BIN.tmp" "$E2E_BIN"
  rm -rf "$work"
  log "cached $E2E_BIN"
}
[ -x "$E2E_BIN" ] || build_e2e

started_testbed=0
MPID=""
cleanup() {
  local rc=$?
  if [ -n "$MPID" ]; then
    kill "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null || true
    # The manager's cluster-wide webhooks (failurePolicy Fail) and the CRDs' conversion webhook
    # would keep pointing at a process that is gone: every later pod create and every request
    # for those kinds would fail. Remove them, as a manager that is uninstalled must be.
    kubectl delete mutatingwebhookconfiguration kruise-mutating-webhook-configuration --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete validatingwebhookconfiguration kruise-validating-webhook-configuration --ignore-not-found >/dev/null 2>&1 || true
    for crd in $(kubectl get crd -o name 2>/dev/null | grep kruise.io); do
      kubectl patch "$crd" --type=merge -p '{"spec":{"conversion":{"strategy":"None","webhook":null}}}' >/dev/null 2>&1 || true
    done
    log "manager stopped; its webhook configurations removed and CRD conversion reset"
  fi
  if [ "${ci_testing_worker_created:-0}" = 1 ]; then
    # One more schedulable node would change what other areas' specs count.
    kubectl delete node ci-testing-worker --ignore-not-found --wait=false >/dev/null 2>&1 || true
    log "node ci-testing-worker removed"
  fi
  if [ -n "${AREA_SETUP:-}" ] && [ "${area_setup_applied:-0}" = 1 ]; then
    # The area's fixtures are cluster-wide (CRDs, kruise-system/kruise-configuration): a later
    # run or test must not find them.
    kubectl delete --ignore-not-found --wait=false -f "$AREA_SETUP" >/dev/null 2>&1 || true
    log "the area's fixtures ($AREA_SETUP) removed"
  fi
  if [ "${real_node_pods_on:-0}" = 1 ]; then
    for n in $(kubectl get nodes -l type=kwok -o name 2>/dev/null); do kubectl uncordon "$n" >/dev/null 2>&1 || true; done
    kubectl taint node -l type=real kruise-rs.io/real-node=true:NoSchedule --overwrite >/dev/null 2>&1 || true
    log "kwok nodes uncordoned, real nodes tainted again"
  fi
  if [ "$started_testbed" = 1 ] && [ "${KEEP_TESTBED:-0}" != 1 ]; then
    log "stopping the testbed this run started"
    hack/testbed/testbed.sh down >&2 || rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT

if ! hack/testbed/testbed.sh status >/dev/null 2>&1; then
  NODES="${NODES:-${SCHEDULABLE_NODES:-10}}"
  log "starting the testbed ($NODES kwok nodes)"
  started_testbed=1
  hack/testbed/testbed.sh up --nodes "$NODES" >&2 || die "the testbed did not start"
fi
eval "$(hack/testbed/testbed.sh env)"
if [ -n "${SCHEDULABLE_NODES:-}" ] && [ "$CI_TESTING_WORKER" != 1 ]; then
  # Nodes without a NoSchedule/NoExecute taint (the real nodes are tainted); a node left by an
  # earlier run (e.g. ci-testing-worker) would change what the specs count.
  n=$(kubectl get nodes -o json | python3 -c 'import json,sys; print(sum(1 for n in json.load(sys.stdin)["items"] if not any(t.get("effect") in ("NoSchedule","NoExecute") for t in n["spec"].get("taints") or []) and not n["spec"].get("unschedulable")))')
  [ "$n" = "$SCHEDULABLE_NODES" ] || die "area $AREA needs exactly $SCHEDULABLE_NODES schedulable nodes, the testbed has $n (kubectl get nodes; a testbed started with --nodes $SCHEDULABLE_NODES has them)"
fi
if [ "$CI_TESTING_WORKER" = 1 ]; then
  # Created idempotently; kwok (nodes labelled type=kwok) keeps it Ready.
  kubectl apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: ci-testing-worker
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: ci-testing-worker
    node-role.kubernetes.io/worker: ""
spec: {}
EOF
  ci_testing_worker_created=1
  kubectl wait --for=condition=Ready node/ci-testing-worker --timeout=60s >/dev/null \
    || die "node ci-testing-worker did not become Ready"
  log "node ci-testing-worker (kwok) is Ready"
fi
# A manager left by `make demo` would fight with this one.
hack/demo/demo.sh stop >/dev/null 2>&1 || true

log "building kruise-manager"
cargo build -q -p kruise-manager || die "cargo build failed"
MANAGER="${CARGO_TARGET_DIR:-target}/debug/kruise-manager"

log "installing the CRDs, the ClusterRole and the conversion patches of config/"
kubectl apply --server-side --force-conflicts -f config/crd/bases >/dev/null
kubectl apply --server-side --force-conflicts -f config/rbac >/dev/null
# A field manager of its own: with the CRDs' one, server-side apply would drop the rest of them.
kubectl apply --server-side --force-conflicts --field-manager=kruise-conversion -f config/webhook/crd-conversion >/dev/null
kubectl create namespace kruise-system >/dev/null 2>&1 || true
if [ -n "${AREA_SETUP:-}" ]; then
  # The area's own fixtures (CRDs, ConfigMap keys), before the manager starts.
  log "applying the area's fixtures ($AREA_SETUP)"
  area_setup_applied=1
  kubectl apply --server-side --force-conflicts --field-manager="kruise-conformance-$AREA" -f "$AREA_SETUP" >/dev/null
  kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
fi

STATE="${XDG_STATE_HOME:-$HOME/.local/state}/kruise-rs/conformance"
mkdir -p "$STATE"
MLOG="$STATE/manager-$AREA.log"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HEALTH=$(port); METRICS=$(port)
log "starting kruise-manager (log $MLOG)"
POD_NAMESPACE=kruise-system "$MANAGER" --kubeconfig "$KUBECONFIG" --webhook-host 127.0.0.1 \
  --feature-gates AllAlpha=true,AllBeta=true,EnableExternalCerts=false,TemplateNoDefaults=false \
  --metrics-addr "127.0.0.1:$METRICS" --health-probe-addr "127.0.0.1:$HEALTH" -v 1 > "$MLOG" 2>&1 &
MPID=$!
for i in $(seq 120); do
  curl -sf "http://127.0.0.1:$HEALTH/readyz" >/dev/null 2>&1 && break
  kill -0 "$MPID" 2>/dev/null || die "kruise-manager exited; see $MLOG"
  [ $((i % 10)) -eq 0 ] && log "waiting for kruise-manager /readyz (${i}s)"
  sleep 1
done
curl -sf "http://127.0.0.1:$HEALTH/readyz" >/dev/null || die "kruise-manager not ready after 120 s; see $MLOG"

if [ "$REAL_NODE_PODS" = 1 ]; then
  if kubectl get nodes -l type=real -o name 2>/dev/null | grep -q .; then
    real_node_pods_on=1
    for n in $(kubectl get nodes -l type=kwok -o name); do kubectl cordon "$n" >/dev/null; done
    kubectl taint node -l type=real kruise-rs.io/real-node- >/dev/null 2>&1 || true
    log "pods of this area run on the real node(s): kwok nodes cordoned, real-node taint lifted"
  else
    log "no real node on the testbed (--real-nodes 0): skipping the specs that need a kubelet"
    SKIP="${SKIP:+$SKIP|}$REAL_KUBELET_SPECS"
  fi
fi

REPORT="$STATE/e2e-$AREA.json"
log "running OpenKruise $KRUISE_MODULE_VERSION's e2e: label '$LABEL'${SKIP:+, skipping '$SKIP'}"
start=$(date +%s)
set +e
args=(--ginkgo.label-filter="$LABEL" --ginkgo.v --ginkgo.no-color --ginkgo.timeout=3h
      --ginkgo.json-report="$REPORT")
[ -n "$SKIP" ] && args+=(--ginkgo.skip="$SKIP")
[ -n "$SKIP_FILE" ] && args+=(--ginkgo.skip-file="$SKIP_FILE")
[ -n "${FOCUS:-}" ] && args+=(--ginkgo.focus="$FOCUS")
# shellcheck disable=SC2086
"$E2E_BIN" "${args[@]}" ${E2E_FLAGS:-} > "$STATE/e2e-$AREA.log" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
# The ginkgo summary (the lines from "Ran N of M Specs" on).
sed -n '/^Ran [0-9]* of [0-9]* Specs/,$p' "$STATE/e2e-$AREA.log"
grep -E '^\s*\[FAIL\]' "$STATE/e2e-$AREA.log" | sort -u || true
log "area $AREA: exit $rc in ${elapsed}s (log $STATE/e2e-$AREA.log, report $REPORT, manager log $MLOG)"
if ! kill -0 "$MPID" 2>/dev/null; then
  log "kruise-manager is no longer running (it must not exit during the run)"
  rc=1
fi
exit "$rc"
