#!/usr/bin/env bash
# Benchmark (not a test), issue #38: kruise-daemon's footprint on a real node running PODS pods,
# beside the Go OpenKruise v1.9.0 kruise-daemon on the same node and pods, and a baseline.
#
#   [PODS=100] [IDLE_SECONDS=60] [SETTLE_SECONDS=30] [QPS=20] [BURST=30] \
#   [KRUISE_DAEMON_BIN=<kruise-daemon>] [OPENKRUISE=0] hack/bench/daemon-footprint.sh
#
# On one real node of the testbed (containerd + kubelet, hack/testbed/realnode.sh), PODS pause pods
# (a Deployment in namespace kruise-daemon-footprint, image registry.k8s.io/pause:3.10.2 from the
# testbed registry, the real-node nodeSelector/affinity/toleration of kruise-e2e's on_real_node)
# are made Running. Then, one after the other, each case runs for SETTLE_SECONDS and is measured
# over an idle window of IDLE_SECONDS: VmRSS, VmHWM and Threads from /proc/<pid>/status at the end
# of the window, CPU as utime+stime from /proc/<pid>/stat over the window, in % of one core:
#   - baseline: a bare `kubectl get pods --watch` of the node's pods (the daemon's identity), and
#     the node's kubelet and containerd measured over the same window;
#   - kruise-rs: this repo's kruise-daemon (KRUISE_DAEMON_BIN, else target/release/kruise-daemon,
#     built when missing);
#   - openkruise: the Go kruise-daemon of OpenKruise v1.9.0, built once from the Go module proxy
#     exactly as hack/conformance/conformance.sh builds it (hack/conformance/openkruise-module.sh)
#     and started as it starts it: a mount namespace of its own where the node's directory is
#     bind-mounted on the hard-coded /hostvarrun (created empty on the host when missing), without
#     conformance's KUBE_CACHE_MUTATION_DETECTOR (it deep-copies the cache and would inflate both
#     figures). OPENKRUISE=0 skips it.
# Both daemons: NODE_NAME of the node, the node's containerd socket, a kubeconfig of
# ServiceAccount kruise-system/kruise-daemon bound to ClusterRole kruise-daemon-role (this repo's
# config/rbac, then OpenKruise's for the Go daemon) and OpenKruise's config/daemonconfig Role, no --feature-gates (OpenKruise's
# defaults), default log verbosity, the same --rest-config-qps/--rest-config-burst. Before the
# daemons start, the node's NodeImage exists (as kruise-manager creates it); no manager runs.
# kruise-rs runs first with this repo's CRDs (config/crd/bases), then OpenKruise's module CRDs
# are applied for the Go daemon (it watches ContainerRecreateRequest v1beta1, which only they
# serve).
#
# The testbed: KRUISE_TESTBED_DIR / KRUISE_TESTBED_PORT_BASE (default
# ~/.local/state/kruise-rs/testbed-dfp, 17440). When it is not running it is started as
# `testbed.sh up --real-nodes 1 --nodes 0` and stopped at the end; a testbed that was already
# running is left running (the namespace, the NodeImage and the binding are removed; the CRDs stay).
# A testbed started here keeps its data in KRUISE_TESTBED_DIR (`testbed.sh down --wipe` removes it).
# The table is printed and written to target/kruise-bench/daemon-footprint.txt. Exits non-zero
# with a reason on failure. The machine's other load is not controlled: run it on a quiet host.
set -euo pipefail
cd "$(dirname "$0")/../.."
log() { echo "[daemon-footprint] $*" >&2; }
die() { log "error: $*"; exit 1; }

PODS="${PODS:-100}"
IDLE_SECONDS="${IDLE_SECONDS:-60}"
SETTLE_SECONDS="${SETTLE_SECONDS:-30}"
QPS="${QPS:-20}"
BURST="${BURST:-30}"
OPENKRUISE="${OPENKRUISE:-1}"
for v in PODS IDLE_SECONDS SETTLE_SECONDS QPS BURST; do
  [[ "${!v}" =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || die "$v must be a positive integer, got '${!v}'"
done
export KRUISE_TESTBED_DIR="${KRUISE_TESTBED_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/kruise-rs/testbed-dfp}"
export KRUISE_TESTBED_PORT_BASE="${KRUISE_TESTBED_PORT_BASE:-17440}"
target="${CARGO_TARGET_DIR:-target}"
OUT_DIR="$target/kruise-bench"
NS=kruise-daemon-footprint
CLK_TCK=$(getconf CLK_TCK)

# --- binaries
DAEMON="${KRUISE_DAEMON_BIN:-}"
if [ -z "$DAEMON" ]; then
  DAEMON="$target/release/kruise-daemon"
  if [ ! -x "$DAEMON" ]; then
    log "building target/release/kruise-daemon"
    cargo build --release -q -p kruise-daemon --bin kruise-daemon || die "cargo build --release -p kruise-daemon failed"
  fi
fi
[ -x "$DAEMON" ] || die "kruise-daemon binary $DAEMON is not executable (KRUISE_DAEMON_BIN)"
DAEMON=$(realpath "$DAEMON")
source hack/testbed/versions.sh
source hack/conformance/daemon-kubeconfig.sh
KRUISE_MODULE_VERSION=v1.9.0
E2E_DIR="$TESTBED_CACHE/openkruise-e2e-$KRUISE_MODULE_VERSION"
OPENKRUISE_DAEMON_BIN="$E2E_DIR/openkruise-daemon"
if [ "$OPENKRUISE" = 1 ]; then
  source hack/conformance/openkruise-module.sh
  [ -x "$OPENKRUISE_DAEMON_BIN" ] || build_from_module "$OPENKRUISE_DAEMON_BIN" kruise-daemon ./cmd/daemon build
  OPENKRUISE_SRC=$(openkruise_module_dir) || exit 1
else
  log "the Go kruise-daemon is skipped (OPENKRUISE=0)"
fi

# --- cleanup: everything this run started
started_testbed=0
PIDS=()
created_hostvarrun=0
binding=0
cleanup() {
  local rc=$? p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  if [ "$created_hostvarrun" = 1 ] && ! grep -qx 'openkruise-daem' /proc/[0-9]*/comm 2>/dev/null; then
    rmdir /hostvarrun 2>/dev/null || true
  fi
  if [ "$started_testbed" = 1 ]; then
    log "stopping the testbed this run started"
    hack/testbed/testbed.sh down >&2 || rc=1
  elif [ -n "${KUBECONFIG:-}" ]; then
    kubectl delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    [ -z "${NODE:-}" ] || kubectl delete nodeimage "$NODE" --ignore-not-found >/dev/null 2>&1 || true
    [ "$binding" = 0 ] || kubectl delete clusterrolebinding kruise-daemon-footprint --ignore-not-found >/dev/null 2>&1 || true
  fi
  exit "$rc"
}
trap cleanup EXIT

# --- testbed
if ! hack/testbed/testbed.sh status >/dev/null 2>&1; then
  started_testbed=1
  log "starting the testbed in $KRUISE_TESTBED_DIR (1 real node, no kwok nodes)"
  hack/testbed/testbed.sh up --real-nodes 1 --nodes 0 >&2 || die "the testbed did not start"
fi
eval "$(hack/testbed/testbed.sh env)"
NODE=$(kubectl get nodes -l type=real -o jsonpath='{.items[0].metadata.name}')
[ -n "$NODE" ] || die "the testbed has no real node (kubectl get nodes -l type=real); start it with --real-nodes 1"
NODE_DIR="$KRUISE_TESTBED_DIR/realnode/$NODE"
[ -S "$NODE_DIR/containerd/containerd.sock" ] || die "no containerd socket at $NODE_DIR/containerd/containerd.sock"
RUN_DIR="$KRUISE_TESTBED_DIR/run"
KUBELET_PID=$(cat "$RUN_DIR/kubelet-$NODE.pid") && kill -0 "$KUBELET_PID" || die "the kubelet of $NODE is not running"
CONTAINERD_PID=$(cat "$RUN_DIR/containerd-$NODE.pid") && kill -0 "$CONTAINERD_PID" || die "the containerd of $NODE is not running"
allocatable=$(kubectl get node "$NODE" -o jsonpath='{.status.allocatable.pods}')
[ "$PODS" -le $((allocatable - 5)) ] || die "PODS=$PODS does not fit on $NODE (allocatable pods: $allocatable)"
mkdir -p "$OUT_DIR"
LOGS="$OUT_DIR/daemon-footprint-logs"
mkdir -p "$LOGS"

# --- CRDs, RBAC, the daemon's kubeconfig, the NodeImage
log "installing this repo's CRDs and ClusterRoles"
if ! kubectl apply --server-side --force-conflicts -f config/crd/bases >"$LOGS/setup.log" 2>&1; then
  # A testbed where OpenKruise's module CRDs (storing v1beta1) were applied before refuses these;
  # those serve every version kruise-daemon reads.
  log "config/crd/bases not applied (see $LOGS/setup.log); using the Kruise CRDs already installed"
fi
kubectl apply --server-side --force-conflicts -f config/rbac >>"$LOGS/setup.log" 2>&1 || die "applying config/rbac failed; see $LOGS/setup.log"
kubectl create namespace kruise-system >/dev/null 2>&1 || true
kubectl create namespace kruise-daemon-config >/dev/null 2>&1 || true
if [ "$OPENKRUISE" = 1 ]; then
  kubectl kustomize "$OPENKRUISE_SRC/config/daemonconfig" 2>>"$LOGS/setup.log" \
    | kubectl apply --server-side --force-conflicts -f - >>"$LOGS/setup.log" 2>&1 \
    || die "applying OpenKruise's config/daemonconfig failed; see $LOGS/setup.log"
fi
binding=1
DKC="$OUT_DIR/daemon-footprint-kubeconfig"
daemon_kubeconfig kruise-daemon-footprint "$DKC"
kubectl apply -f - >/dev/null <<YAML || die "creating NodeImage $NODE failed"
apiVersion: apps.kruise.io/v1alpha1
kind: NodeImage
metadata: {name: $NODE}
spec: {}
YAML

# --- the pods
log "creating $PODS pause pods on $NODE (namespace $NS)"
kubectl create namespace "$NS" >/dev/null 2>&1 || true
kubectl apply -f - >/dev/null <<YAML || die "creating the Deployment failed"
apiVersion: apps/v1
kind: Deployment
metadata: {name: pause, namespace: $NS}
spec:
  replicas: $PODS
  selector: {matchLabels: {app: daemon-footprint}}
  template:
    metadata: {labels: {app: daemon-footprint}}
    spec:
      nodeSelector: {type: real}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [$NODE]}]}]
      tolerations: [{key: kruise-rs.io/real-node, operator: Exists}]
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers: [{name: pause, image: registry.k8s.io/pause:3.10.2}]
YAML
t0=$(date +%s)
while true; do
  running=$(kubectl -n "$NS" get pods --field-selector "spec.nodeName=$NODE,status.phase=Running" -o name | wc -l)
  [ "$running" -ge "$PODS" ] && break
  [ $(( $(date +%s) - t0 )) -lt 900 ] || die "only $running of $PODS pods Running on $NODE after 900 s (kubectl -n $NS get pods)"
  [ $(( ($(date +%s) - t0) % 30 )) -ne 0 ] || log "$running/$PODS pods Running ($(( $(date +%s) - t0 )) s)"
  sleep 2
done
log "$PODS pods Running on $NODE after $(( $(date +%s) - t0 )) s"

# --- measuring
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# utime+stime in clock ticks (fields 14 and 15; the fields after the command name's ')').
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
RESULTS="$OUT_DIR/daemon-footprint.tsv"
: > "$RESULTS"
# window CASE NAME:PID...: settle, then CPU over IDLE_SECONDS and the memory at its end.
window() {
  local case=$1; shift
  local item name pid t0 t1 start_ticks=() i=0
  log "$case: settling ${SETTLE_SECONDS}s, then measuring ${IDLE_SECONDS}s idle"
  sleep "$SETTLE_SECONDS"
  for item in "$@"; do
    pid=${item#*:}
    kill -0 "$pid" 2>/dev/null || die "$case: ${item%%:*} (pid $pid) is not running"
    start_ticks+=("$(cpu_ticks "$pid")")
  done
  t0=$(date +%s%N)
  sleep "$IDLE_SECONDS"
  t1=$(date +%s%N)
  for item in "$@"; do
    name=${item%%:*}; pid=${item#*:}
    kill -0 "$pid" 2>/dev/null || die "$case: $name (pid $pid) exited during the window"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$name" "$(status_kb "$pid" VmRSS)" "$(status_kb "$pid" VmHWM)" \
      "$(status_kb "$pid" Threads)" \
      "$(awk -v a="${start_ticks[$i]}" -v b="$(cpu_ticks "$pid")" -v hz="$CLK_TCK" -v ns=$((t1 - t0)) \
         'BEGIN {printf "%.3f", (b - a) / hz / (ns / 1e9) * 100}')" >> "$RESULTS"
    i=$((i + 1))
  done
}
wait_healthy() { # NAME PID URL LOG
  local i
  for i in $(seq 60); do
    curl -sf "$3" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || die "$1 exited; see $4"
    sleep 1
  done
  die "$1 not healthy after 60 s ($3); see $4"
}
stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# Baseline: a bare watch of the node's pods, beside the node's kubelet and containerd.
kubectl --kubeconfig "$DKC" get pods --all-namespaces --field-selector "spec.nodeName=$NODE" --watch -o name \
  > /dev/null 2> "$LOGS/kubectl-watch.log" &
WPID=$!; PIDS+=("$WPID")
window baseline "kubectl get --watch:$WPID" "kubelet:$KUBELET_PID" "containerd:$CONTAINERD_PID"
stop_pid "$WPID"

# kruise-rs
dport=$(port)
NODE_NAME="$NODE" "$DAEMON" --kubeconfig "$DKC" --var-run-path "$NODE_DIR" --socket-file containerd/containerd.sock \
  --addr "127.0.0.1:$dport" --rest-config-qps "$QPS" --rest-config-burst "$BURST" > "$LOGS/kruise-rs.log" 2>&1 &
RPID=$!; PIDS+=("$RPID")
wait_healthy "kruise-daemon (kruise-rs)" "$RPID" "http://127.0.0.1:$dport/readyz" "$LOGS/kruise-rs.log"
log "kruise-daemon (kruise-rs, $DAEMON) pid $RPID on $NODE"
window kruise-rs "kruise-daemon (kruise-rs):$RPID" "kubelet:$KUBELET_PID" "containerd:$CONTAINERD_PID"
stop_pid "$RPID"

# OpenKruise v1.9.0
if [ "$OPENKRUISE" = 1 ]; then
  log "applying OpenKruise $KRUISE_MODULE_VERSION's CRDs (the Go daemon reads ContainerRecreateRequest v1beta1)"
  kubectl apply --server-side --force-conflicts -f "$OPENKRUISE_SRC/config/crd/bases" >>"$LOGS/setup.log" 2>&1 \
    || die "applying OpenKruise's CRDs failed; see $LOGS/setup.log"
  kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
  # Its own ClusterRole (config/rbac/daemon_role.yaml, named as config/default's namePrefix
  # names it): it also lists and watches NodeImages (image pulling), which kruise-rs' daemon
  # does not implement yet, so this repo's role lacks them.
  sed 's/^  name: daemon-role$/  name: kruise-daemon-role/' "$OPENKRUISE_SRC/config/rbac/daemon_role.yaml" \
    | kubectl apply --server-side --force-conflicts -f - >>"$LOGS/setup.log" 2>&1 \
    || die "applying OpenKruise's daemon ClusterRole failed; see $LOGS/setup.log"
  for _ in $(seq 60); do
    [ "$(kubectl --kubeconfig "$DKC" auth can-i watch nodeimages.apps.kruise.io 2>/dev/null)" = yes ] && break
    sleep 1
  done
  if [ ! -d /hostvarrun ]; then
    mkdir /hostvarrun || die "cannot create /hostvarrun (the Go kruise-daemon's mount point; needs root)"
    created_hostvarrun=1
  fi
  dport=$(port)
  # unshare and sh exec: the pid is the daemon's.
  NODE_NAME="$NODE" unshare --mount --propagation private sh -c 'mount --bind "$0" /hostvarrun && exec "$@"' "$NODE_DIR" \
    "$OPENKRUISE_DAEMON_BIN" --kubeconfig="$DKC" --socket-file=containerd/containerd.sock \
    --addr="127.0.0.1:$dport" --enable-pprof=false --rest-config-qps="$QPS" --rest-config-burst="$BURST" \
    --logtostderr=true > "$LOGS/openkruise.log" 2>&1 &
  GPID=$!; PIDS+=("$GPID")
  wait_healthy "kruise-daemon (OpenKruise)" "$GPID" "http://127.0.0.1:$dport/healthz" "$LOGS/openkruise.log"
  [ "$(cat "/proc/$GPID/comm")" = openkruise-daem ] || die "pid $GPID is $(cat "/proc/$GPID/comm"), not the Go daemon"
  log "kruise-daemon (OpenKruise $KRUISE_MODULE_VERSION) pid $GPID on $NODE"
  window openkruise "kruise-daemon (OpenKruise v1.9.0):$GPID" "kubelet:$KUBELET_PID" "containerd:$CONTAINERD_PID"
  stop_pid "$GPID"
  forbidden=$(grep -ci forbidden "$LOGS/openkruise.log" || true)
  [ "$forbidden" = 0 ] || log "note: the Go daemon logged $forbidden 'forbidden' lines ($LOGS/openkruise.log)"
fi
forbidden=$(grep -ci forbidden "$LOGS/kruise-rs.log" || true)
[ "$forbidden" = 0 ] || log "note: kruise-rs' daemon logged $forbidden 'forbidden' lines ($LOGS/kruise-rs.log)"

# --- the table
TABLE="$OUT_DIR/daemon-footprint.txt"
python3 - "$RESULTS" "$PODS" "$NODE" "$IDLE_SECONDS" "$QPS" "$BURST" > "$TABLE" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
pods, node, idle, qps, burst = sys.argv[2:7]
mb = lambda kb: int(kb) / 1024
by = {(r[0], r[1].split(" ")[0]): r for r in rows}
watch = next((r for r in rows if r[0] == "baseline" and r[1].startswith("kubectl")), None)
kubelet = by.get(("baseline", "kubelet"))
print(f"{pods} pause pods on {node}; idle window {idle} s; client QPS {qps} / burst {burst}")
print(f"{'case':<12} {'process':<34} {'VmRSS MiB':>9} {'VmHWM MiB':>9} {'threads':>7} {'CPU % core':>10} {'RSS/watch':>9} {'RSS/kubelet':>11}")
for r in rows:
    ratio_w = f"{int(r[2]) / int(watch[2]):.2f}x" if watch else "-"
    ratio_k = f"{int(r[2]) / int(kubelet[2]):.2f}x" if kubelet else "-"
    print(f"{r[0]:<12} {r[1]:<34} {mb(r[2]):>9.1f} {mb(r[3]):>9.1f} {r[4]:>7} {float(r[5]):>10.3f} {ratio_w:>9} {ratio_k:>11}")
rs = next((r for r in rows if r[0] == "kruise-rs" and r[1].startswith("kruise-daemon")), None)
go = next((r for r in rows if r[0] == "openkruise" and r[1].startswith("kruise-daemon")), None)
if rs and go:
    # Idle CPU is a few clock ticks per minute at most: a ratio of two near-zero counts says
    # little, so both figures are printed when either is zero.
    a, b = float(rs[5]), float(go[5])
    cpu = f"{a / b:.2f}x" if a > 0 and b > 0 else f"{a:.3f} % vs {b:.3f} % of a core"
    print(f"kruise-rs / OpenKruise: VmRSS {int(rs[2]) / int(go[2]):.2f}x, VmHWM {int(rs[3]) / int(go[3]):.2f}x, idle CPU {cpu}")
PY
cat "$TABLE"
log "table: $TABLE (raw: $RESULTS, daemon logs: $LOGS)"
