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
# (the manager's webhook port, default 9876: give each testbed sharing a host its own),
# KRUISE_CONFORMANCE_DIR (logs and reports; default ~/.local/state/kruise-rs/conformance).
#
# Node-agent areas (ContainerRecreateRequest, PodProbeMarker, SidecarTerminator, PullImage,
# PullImages, InplaceVPA, ContainerMeta) need real nodes with a kruise-daemon on each: the
# testbed's schedulable nodes must all be real (started here as `up --real-nodes ${REAL_NODES:-2}
# --nodes 0` when no testbed runs), and one daemon per real node (`kubectl get nodes -l
# type=real`) is started with NODE_NAME=<node>, the node's containerd under
# <testbed state dir>/realnode/<node> and a kubeconfig of ServiceAccount kruise-system/kruise-daemon
# bound to the daemon's ClusterRole only; they are stopped on exit (logs beside the manager's).
#
# IMPLEMENTATION=kruise-rs (default): kruise-manager and kruise-daemon of this repo, built with
# cargo unless KRUISE_MANAGER_BIN / KRUISE_DAEMON_BIN name binaries.
# IMPLEMENTATION=openkruise: the Go OpenKruise v1.9.0 manager (out of cluster, through
# hack/bench/openkruise-manager.sh, which needs kruise-admission-corpus: KRUISE_ADMISSION_CORPUS
# or target/{release,debug}/) and the Go kruise-daemon, both built once from the Go module proxy
# beside the e2e binary: the baseline the same specs are compared against. The Go daemon reads
# the runtime socket under the hard-coded /hostvarrun, so each runs in a mount namespace of its
# own (unshare) where its node's directory is bind-mounted there (/hostvarrun is created empty
# on the host as the mount point).
#
# The e2e binary is built once from the Go module proxy (`go test -c` of
# github.com/openkruise/kruise/test/e2e at the module version of tag v1.9.0) and cached beside
# the testbed binaries. Needs Go and the module proxy on first use (about 5 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
log() { echo "[conformance] $*" >&2; }
die() { log "error: $*"; exit 1; }

AREA="${1:-${AREA:-}}"
[ -n "$AREA" ] || die "usage: $0 <area> (CloneSet, StatefulSet, DaemonSet, SidecarSet, SidecarResourcesPolicy, BroadcastJob, ContainerRecreateRequest, PullImage, ..., or a ginkgo label filter)"
KRUISE_MODULE_VERSION=v1.9.0
IMPLEMENTATION="${IMPLEMENTATION:-kruise-rs}"
case "$IMPLEMENTATION" in
  kruise-rs|openkruise) ;;
  *) die "IMPLEMENTATION must be kruise-rs or openkruise, not '$IMPLEMENTATION'" ;;
esac
# Areas whose specs need a kubelet, a container runtime and kruise-daemon on every node.
REAL_NODE_DAEMON=0

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
    # The module proxy's v1.9.0 spec posts an apps.kruise.io/v1beta1 ContainerRecreateRequest, a
    # version the v1.9.0 tag's API (and so kruise-rs' CRDs) lacks: 404 before anything of
    # kruise-rs runs (the tag's spec, v1alpha1, is what the ContainerRecreateRequest area covers).
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
  ContainerRecreateRequest)
    # kruise-daemon stops the containers over CRI (and runs their hooks); the kubelet restarts them.
    LABEL='ContainerRecreateRequest'
    REAL_NODE_DAEMON=1
    DEFAULT_SKIP=''
    # The module proxy's v1.9.0 also holds the specs against a ContainerRecreateRequest v1beta1
    # API, which the v1.9.0 tag's CRDs (kruise-rs' target) do not serve.
    SKIP_FILE='apps/v1beta1/containerrecreaterequest.go' ;;
  PodProbeMarker)
    # kruise-daemon runs the probes of its node's NodePodProbe (exec/tcp/http) and reports them.
    LABEL='PodProbeMarker'
    REAL_NODE_DAEMON=1
    # Its pods run openkruise/minecraft-demo:probe-v0, whose ./probe.sh answers false, then true
    # with "data", then true with "gate" over time: not in the testbed's offline stand-in images
    # (no internet), and what the script does is only known from the spec's expectations.
    DEFAULT_SKIP='pod probe marker test2' ;;
  SidecarTerminator)
    # Job pods whose main container completed: their sidecars are stopped through a
    # ContainerRecreateRequest (kruise-daemon) or an in-place image update (the kubelet).
    LABEL='SidecarTerminator'
    REAL_NODE_DAEMON=1
    DEFAULT_SKIP='' ;;
  PullImage)
    # ImagePullJob: kruise-daemon pulls into its node's containerd and reports NodeImage status.
    # v1alpha1 and v1beta1 specs (the tag serves both versions of ImagePullJob and NodeImage).
    LABEL='PullImage'
    REAL_NODE_DAEMON=1
    DEFAULT_SKIP='' ;;
  PullImages)
    # ImageListPullJob (v1alpha1 and v1beta1): one ImagePullJob per image, as PullImage.
    LABEL='PullImages'
    REAL_NODE_DAEMON=1
    DEFAULT_SKIP='' ;;
  InplaceVPA)
    # In-place resource resize of CloneSet / Advanced StatefulSet / Advanced DaemonSet pods: the
    # kubelet resizes, kruise-daemon reports the containers' state.
    LABEL='InplaceVPA'
    REAL_NODE_DAEMON=1
    DEFAULT_SKIP='' ;;
  ContainerMeta)
    # Env from pod metadata updated in place: kruise-daemon restarts the container and reports
    # apps.kruise.io/runtime-containers-meta.
    LABEL='ContainerMeta'
    REAL_NODE_DAEMON=1
    DEFAULT_SKIP='' ;;
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
# IMPLEMENTATION=openkruise: the Go manager and kruise-daemon of the same module version.
OPENKRUISE_MANAGER_BIN="$E2E_DIR/openkruise-manager"
OPENKRUISE_DAEMON_BIN="$E2E_DIR/openkruise-daemon"

# openkruise_module_dir and build_from_module (shared with hack/bench/daemon-footprint.sh).
source hack/conformance/openkruise-module.sh
# daemon_kubeconfig (shared with hack/bench/daemon-footprint.sh).
source hack/conformance/daemon-kubeconfig.sh
[ -x "$E2E_BIN" ] || build_from_module "$E2E_BIN" "e2e binary" ./test/e2e test -c
if [ "$IMPLEMENTATION" = openkruise ]; then
  [ -x "$OPENKRUISE_MANAGER_BIN" ] || build_from_module "$OPENKRUISE_MANAGER_BIN" manager . build
  if [ "$REAL_NODE_DAEMON" = 1 ] && [ ! -x "$OPENKRUISE_DAEMON_BIN" ]; then
    build_from_module "$OPENKRUISE_DAEMON_BIN" kruise-daemon ./cmd/daemon build
  fi
  # Its config/default (CRDs, webhook configurations, ClusterRoles) and config/daemonconfig.
  OPENKRUISE_SRC=$(openkruise_module_dir) || exit 1
  # hack/bench/openkruise-manager.sh points the webhook configurations at the manager's URL with
  # kruise-admission-corpus; checked here, before a testbed is started.
  CORPUS="${KRUISE_ADMISSION_CORPUS:-}"
  if [ -z "$CORPUS" ]; then
    for c in "${CARGO_TARGET_DIR:-target}/release/kruise-admission-corpus" "${CARGO_TARGET_DIR:-target}/debug/kruise-admission-corpus"; do
      [ -x "$c" ] && CORPUS=$c && break
    done
  fi
  [ -n "$CORPUS" ] && [ -x "$CORPUS" ] \
    || die "IMPLEMENTATION=openkruise needs kruise-admission-corpus${CORPUS:+ ($CORPUS is not executable)}: build it with 'cargo build -p kruise-corpus --bin kruise-admission-corpus', or name a built one with KRUISE_ADMISSION_CORPUS=<path>"
  CORPUS=$(realpath "$CORPUS")
fi
# Log and report names: kruise-rs' keep the area's name, the Go baseline's end in -openkruise.
SUFFIX=""; [ "$IMPLEMENTATION" = kruise-rs ] || SUFFIX="-$IMPLEMENTATION"

started_testbed=0
MPID=""
DAEMON_PIDS=()
daemon_binding=0
created_hostvarrun=0
cleanup() {
  local rc=$?
  local p
  for p in "${DAEMON_PIDS[@]}"; do
    kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
  done
  [ ${#DAEMON_PIDS[@]} -eq 0 ] || log "kruise-daemon stopped on ${#DAEMON_PIDS[@]} node(s)"
  if [ "$created_hostvarrun" = 1 ]; then
    # The Go daemons' mount point; kept while a Go kruise-daemon of another run still runs.
    if ! grep -qx 'openkruise-daem' /proc/[0-9]*/comm 2>/dev/null; then rmdir /hostvarrun 2>/dev/null || true; fi
  fi
  if [ "$daemon_binding" = 1 ]; then
    kubectl delete clusterrolebinding kruise-conformance-daemon --ignore-not-found >/dev/null 2>&1 || true
  fi
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
  started_testbed=1
  if [ "$REAL_NODE_DAEMON" = 1 ]; then
    log "starting the testbed (${REAL_NODES:-2} real nodes, no kwok nodes)"
    hack/testbed/testbed.sh up --real-nodes "${REAL_NODES:-2}" --nodes 0 >&2 || die "the testbed did not start"
  else
    NODES="${NODES:-${SCHEDULABLE_NODES:-10}}"
    log "starting the testbed ($NODES kwok nodes)"
    hack/testbed/testbed.sh up --nodes "$NODES" >&2 || die "the testbed did not start"
  fi
fi
eval "$(hack/testbed/testbed.sh env)"
if [ "$REAL_NODE_DAEMON" = 1 ]; then
  # The specs put their pods on any schedulable node and expect a kubelet, a runtime and
  # kruise-daemon there (and PullImage counts NodeImages of every node): a kwok node among them
  # would fail them, so every schedulable node must be a real one.
  bad=$(kubectl get nodes -o json | python3 -c 'import json,sys
items = json.load(sys.stdin)["items"]
sched = [n for n in items if not any(t.get("effect") in ("NoSchedule","NoExecute") for t in n["spec"].get("taints") or []) and not n["spec"].get("unschedulable")]
bad = [n["metadata"]["name"] for n in sched if n["metadata"].get("labels", {}).get("type") != "real"]
print(" ".join(bad) if bad or sched else "(no schedulable node)")')
  [ -z "$bad" ] || die "area $AREA needs a testbed whose schedulable nodes are all real, with kruise-daemon on each; not real: $bad (hack/testbed/testbed.sh down, then up --real-nodes 2 --nodes 0)"
fi
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

STATE="${KRUISE_CONFORMANCE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/kruise-rs/conformance}"
mkdir -p "$STATE"
if [ "$IMPLEMENTATION" = kruise-rs ]; then
  MANAGER="${KRUISE_MANAGER_BIN:-}"
  DAEMON="${KRUISE_DAEMON_BIN:-}"
  [ "$REAL_NODE_DAEMON" = 1 ] || DAEMON=unused
  if [ -z "$MANAGER" ] || [ -z "$DAEMON" ]; then
    pkgs=(); [ -n "$MANAGER" ] || pkgs+=(-p kruise-manager); [ -n "$DAEMON" ] || pkgs+=(-p kruise-daemon)
    log "building ${pkgs[*]//-p /}"
    cargo build -q "${pkgs[@]}" || die "cargo build ${pkgs[*]} failed"
    MANAGER="${MANAGER:-${CARGO_TARGET_DIR:-target}/debug/kruise-manager}"
    DAEMON="${DAEMON:-${CARGO_TARGET_DIR:-target}/debug/kruise-daemon}"
  fi
  [ -x "$MANAGER" ] || die "kruise-manager binary $MANAGER is not executable (KRUISE_MANAGER_BIN)"
  [ "$DAEMON" = unused ] || [ -x "$DAEMON" ] || die "kruise-daemon binary $DAEMON is not executable (KRUISE_DAEMON_BIN)"

  log "installing the CRDs, the ClusterRoles and the conversion patches of config/"
  # The Go baseline installs the module proxy's CRDs, which store v1beta1 of kinds (CloneSet,
  # ContainerRecreateRequest, ...) the tag serves as v1alpha1 only: the API server then refuses
  # CRDs without that version.
  kubectl apply --server-side --force-conflicts -f config/crd/bases >/dev/null \
    || die "applying config/crd/bases failed; if a Kruise CRD stores a version these CRDs lack (after IMPLEMENTATION=openkruise: kubectl get crd -o custom-columns=NAME:.metadata.name,STORED:.status.storedVersions), delete the Kruise CRDs (and with them their objects) or use a fresh testbed"
  kubectl apply --server-side --force-conflicts -f config/rbac >/dev/null
  # A field manager of its own: with the CRDs' one, server-side apply would drop the rest of them.
  kubectl apply --server-side --force-conflicts --field-manager=kruise-conversion -f config/webhook/crd-conversion >/dev/null
fi
kubectl create namespace kruise-system >/dev/null 2>&1 || true
if [ -n "${AREA_SETUP:-}" ]; then
  # The area's own fixtures (CRDs, ConfigMap keys), before the manager starts.
  log "applying the area's fixtures ($AREA_SETUP)"
  area_setup_applied=1
  kubectl apply --server-side --force-conflicts --field-manager="kruise-conformance-$AREA" -f "$AREA_SETUP" >/dev/null
  kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
fi

MLOG="$STATE/manager-$AREA$SUFFIX.log"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HEALTH=$(port); METRICS=$(port)
GATES=AllAlpha=true,AllBeta=true,EnableExternalCerts=false,TemplateNoDefaults=false
if [ "$IMPLEMENTATION" = kruise-rs ]; then
  MNAME=kruise-manager
  log "starting kruise-manager (log $MLOG)"
  POD_NAMESPACE=kruise-system "$MANAGER" --kubeconfig "$KUBECONFIG" --webhook-host 127.0.0.1 \
    --feature-gates "$GATES" \
    --metrics-addr "127.0.0.1:$METRICS" --health-probe-addr "127.0.0.1:$HEALTH" -v 1 > "$MLOG" 2>&1 &
else
  MNAME="OpenKruise $KRUISE_MODULE_VERSION's manager"
  # openkruise-manager.sh applies OpenKruise's CRDs, ClusterRoles and webhook configurations
  # (called by URL at 127.0.0.1:WEBHOOK_PORT), then execs the manager (same pid) with the
  # flags of OpenKruise's e2e.
  log "starting $MNAME out of cluster through hack/bench/openkruise-manager.sh (log $MLOG)"
  OPENKRUISE_MANAGER="$OPENKRUISE_MANAGER_BIN" OPENKRUISE_SRC="$OPENKRUISE_SRC" \
    OPENKRUISE_STATE_DIR="$STATE/openkruise-manager" OPENKRUISE_WEBHOOK_PORT="${WEBHOOK_PORT:-9876}" \
    KRUISE_ADMISSION_CORPUS="$CORPUS" \
    hack/bench/openkruise-manager.sh --enable-leader-election=false --feature-gates="$GATES" \
    --metrics-addr="127.0.0.1:$METRICS" --health-probe-addr="127.0.0.1:$HEALTH" --enable-pprof=false \
    --logtostderr=true --v=2 --kubeconfig="$KUBECONFIG" > "$MLOG" 2>&1 &
fi
MPID=$!
for i in $(seq 120); do
  curl -sf "http://127.0.0.1:$HEALTH/readyz" >/dev/null 2>&1 && break
  kill -0 "$MPID" 2>/dev/null || die "$MNAME exited; see $MLOG"
  [ $((i % 10)) -eq 0 ] && log "waiting for $MNAME /readyz (${i}s)"
  sleep 1
done
curl -sf "http://127.0.0.1:$HEALTH/readyz" >/dev/null || die "$MNAME not ready after 120 s; see $MLOG"

# One kruise-daemon per real node, as OpenKruise's DaemonSet runs it: NODE_NAME, the host's
# /var/run (here the node's directory, where its containerd socket is), the daemon's own
# identity (ServiceAccount kruise-system/kruise-daemon, bound to its ClusterRole only) and the
# gates of OpenKruise's e2e install (config/manager/manager.yaml: AllAlpha, AllBeta).
start_daemons() {
  local nodes n dir tb_state dkc dport dlog health pid ok i
  nodes=$(kubectl get nodes -l type=real -o jsonpath='{.items[*].metadata.name}')
  [ -n "$nodes" ] || die "no real node on the testbed (kubectl get nodes -l type=real)"
  tb_state=$(dirname "$KUBECONFIG")
  # Where the manager copies ImagePullJob secrets for the daemons (OpenKruise installs it).
  kubectl create namespace kruise-daemon-config >/dev/null 2>&1 || true
  if [ "$IMPLEMENTATION" = openkruise ]; then
    # The Go daemon reads those secrets: Role and RoleBinding of config/daemonconfig.
    # (kustomize warns that the file uses `bases`; messages go to the setup log.)
    kubectl kustomize "$OPENKRUISE_SRC/config/daemonconfig" 2>>"$STATE/daemon-setup.log" \
      | kubectl apply --server-side --force-conflicts -f - >>"$STATE/daemon-setup.log" 2>&1 \
      || die "applying OpenKruise's config/daemonconfig failed; see $STATE/daemon-setup.log"
  fi
  # kruise-rs: config/rbac/daemon_role.yaml; openkruise: its config/rbac (openkruise-manager.sh).
  daemon_binding=1
  dkc="$STATE/daemon-kubeconfig"
  daemon_kubeconfig kruise-conformance-daemon "$dkc"
  if [ "$IMPLEMENTATION" = openkruise ] && [ ! -d /hostvarrun ]; then
    mkdir /hostvarrun || die "cannot create /hostvarrun (the Go kruise-daemon's mount point; needs root)"
    created_hostvarrun=1
  fi
  for n in $nodes; do
    dir="$tb_state/realnode/$n"
    [ -S "$dir/containerd/containerd.sock" ] \
      || die "no containerd socket at $dir/containerd/containerd.sock (is $n a real node of this testbed?)"
    dport=$(port)
    dlog="$STATE/daemon-$AREA$SUFFIX-$n.log"
    if [ "$IMPLEMENTATION" = kruise-rs ]; then
      NODE_NAME="$n" "$DAEMON" --kubeconfig "$dkc" --var-run-path "$dir" --socket-file containerd/containerd.sock \
        --addr "127.0.0.1:$dport" --feature-gates AllAlpha=true,AllBeta=true -v 1 > "$dlog" 2>&1 &
      health=readyz
    else
      # /hostvarrun is hard-coded in the Go daemon: in a mount namespace of its own (private
      # propagation, so nothing reaches the host) the node's directory is mounted there;
      # unshare and sh exec, so the pid is the daemon's.
      NODE_NAME="$n" KUBE_CACHE_MUTATION_DETECTOR=true \
        unshare --mount --propagation private sh -c 'mount --bind "$0" /hostvarrun && exec "$@"' "$dir" \
        "$OPENKRUISE_DAEMON_BIN" --kubeconfig="$dkc" --socket-file=containerd/containerd.sock \
        --addr="127.0.0.1:$dport" --enable-pprof=false --feature-gates=AllAlpha=true,AllBeta=true \
        --max-workers-for-pull-image=2 --logtostderr=true --v=4 > "$dlog" 2>&1 &
      health=healthz
    fi
    pid=$!
    DAEMON_PIDS+=("$pid")
    ok=0
    for i in $(seq 60); do
      curl -sf "http://127.0.0.1:$dport/$health" >/dev/null 2>&1 && { ok=1; break; }
      kill -0 "$pid" 2>/dev/null || die "kruise-daemon on $n exited; see $dlog"
      sleep 1
    done
    [ "$ok" = 1 ] || die "kruise-daemon on $n not healthy after 60 s; see $dlog"
    log "kruise-daemon ($IMPLEMENTATION) on $n: pid $pid, 127.0.0.1:$dport, log $dlog"
  done
}
if [ "$REAL_NODE_DAEMON" = 1 ]; then start_daemons; fi

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

ELOG="$STATE/e2e-$AREA$SUFFIX.log"
REPORT="$STATE/e2e-$AREA$SUFFIX.json"
log "running OpenKruise $KRUISE_MODULE_VERSION's e2e against $IMPLEMENTATION: label '$LABEL'${SKIP:+, skipping '$SKIP'}"
start=$(date +%s)
set +e
args=(--ginkgo.label-filter="$LABEL" --ginkgo.v --ginkgo.no-color --ginkgo.timeout=3h
      --ginkgo.json-report="$REPORT")
[ -n "$SKIP" ] && args+=(--ginkgo.skip="$SKIP")
[ -n "$SKIP_FILE" ] && args+=(--ginkgo.skip-file="$SKIP_FILE")
[ -n "${FOCUS:-}" ] && args+=(--ginkgo.focus="$FOCUS")
# shellcheck disable=SC2086
"$E2E_BIN" "${args[@]}" ${E2E_FLAGS:-} > "$ELOG" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
# The ginkgo summary (the lines from "Ran N of M Specs" on).
sed -n '/^Ran [0-9]* of [0-9]* Specs/,$p' "$ELOG"
grep -E '^\s*\[FAIL\]' "$ELOG" | sort -u || true
# Each spec that ran: its state and duration, from the JSON report.
[ ! -f "$REPORT" ] || python3 - "$REPORT" <<'PY' || true
import json, sys
for suite in json.load(open(sys.argv[1])):
    for s in suite.get("SpecReports") or []:
        if s.get("LeafNodeType") != "It" or s.get("State") == "skipped":
            continue
        text = " ".join(s.get("ContainerHierarchyTexts") or []) + " " + s.get("LeafNodeText", "")
        loc = s.get("LeafNodeLocation") or {}
        where = "%s:%s" % (loc.get("FileName", "").split("/test/e2e/")[-1], loc.get("LineNumber", ""))
        print("%-8s %7.1fs  %s  (%s)" % (s["State"], s.get("RunTime", 0) / 1e9, text, where))
PY
log "area $AREA ($IMPLEMENTATION): exit $rc in ${elapsed}s (log $ELOG, report $REPORT, manager log $MLOG)"
if ! kill -0 "$MPID" 2>/dev/null; then
  log "$MNAME is no longer running (it must not exit during the run)"
  rc=1
fi
for p in "${DAEMON_PIDS[@]}"; do
  if ! kill -0 "$p" 2>/dev/null; then
    log "kruise-daemon pid $p is no longer running (it must not exit during the run; logs $STATE/daemon-$AREA$SUFFIX-*.log)"
    rc=1
  fi
done
exit "$rc"
