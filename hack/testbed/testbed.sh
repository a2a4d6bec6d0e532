#!/usr/bin/env bash
# kruise-rs local testbed: a real Kubernetes control plane on 127.0.0.1 with kwok fake nodes.
#
#   hack/testbed/testbed.sh up [--nodes N] [--real-nodes N] [--wipe]
#                                                     build (first time only) and start everything
#   hack/testbed/testbed.sh down [--wipe]             stop what `up` started; --wipe deletes the data
#   hack/testbed/testbed.sh status                    what runs, and where
#   hack/testbed/testbed.sh env                       print `export KUBECONFIG=...` for your shell
#
# Components: etcd, kube-apiserver (RBAC, service accounts, default admission plugins),
# kube-controller-manager (all default controllers), kube-scheduler, and kwok managing N fake
# nodes labelled with topology.kubernetes.io/zone over three zones. Pods on those nodes are
# simulated by the stages in kwok-stages.yaml. Beside them, real nodes (containerd + runc + a
# kubelet, see realnode.sh; default 1) and a local image registry with stand-in images
# (images.sh). With kwok nodes present the real nodes are tainted kruise-rs.io/real-node=true:
# NoSchedule (label type=real) so only pods that opt in run there; with --nodes 0 (alias
# --kwok-nodes 0) every schedulable node is real and untainted.
#
# In-cluster pods (on real nodes): with real nodes the API server also listens on the host's
# primary IPv4 (bind 0.0.0.0; its certificate names that address), which pods reach through
# their CNI bridge — set KUBERNETES_SERVICE_HOST/PORT to it, as there is no kube-proxy for the
# kubernetes Service. --enable-aggregator-routing makes the API server call webhooks (and
# aggregated APIs) at their Service's endpoints (pod IPs, routed to the bridges), not its
# ClusterIP. `testbed.sh env` prints both addresses.
#
# Environment:
#   KRUISE_TESTBED_DIR   state directory (pki, etcd data, logs, pid files, kubeconfig)
#                        default: ${XDG_STATE_HOME:-~/.local/state}/kruise-rs/testbed
#   KRUISE_TESTBED_NODES number of fake nodes (default 3; --nodes wins)
#   KRUISE_TESTBED_REAL_NODES number of real nodes (default 1; --real-nodes wins; needs root)
#   KRUISE_TESTBED_PORT_BASE  first port of the block used (default 16440)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.sh"

STATE_DIR="${KRUISE_TESTBED_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/kruise-rs/testbed}"
PKI="$STATE_DIR/pki"
LOGS="$STATE_DIR/logs"
RUN="$STATE_DIR/run"
KUBECONFIG_PATH="$STATE_DIR/kubeconfig"
NODES="${KRUISE_TESTBED_NODES:-3}"
REAL_NODES="${KRUISE_TESTBED_REAL_NODES:-1}"
BASE="${KRUISE_TESTBED_PORT_BASE:-16440}"
APISERVER_PORT=$((BASE + 3))       # 16443
ETCD_PORT=$((BASE + 0))            # 16440
ETCD_PEER_PORT=$((BASE + 1))       # 16441
KCM_PORT=$((BASE + 4))             # 16444
SCHED_PORT=$((BASE + 5))           # 16445
KWOK_PORT=$((BASE + 6))            # 16446
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

log() { printf '[testbed] %s\n' "$*"; }
die() { printf '[testbed] ERROR: %s\n' "$*" >&2; exit 1; }

pid_of() { local f="$RUN/$1.pid"; [ -f "$f" ] && cat "$f"; }
is_running() { local p; p=$(pid_of "$1") && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

fail_component() {
  local name=$1 why=$2
  echo "[testbed] ERROR: $name $why. Last lines of $LOGS/$name.log:" >&2
  tail -n 40 "$LOGS/$name.log" >&2 || true
  exit 1
}

# wait_until NAME TIMEOUT_SECONDS CHECK_COMMAND...
wait_until() {
  local name=$1 timeout=$2; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  while ! "$@" >/dev/null 2>&1; do
    is_running "$name" || fail_component "$name" "exited during start-up"
    [ "$(date +%s)" -lt "$deadline" ] || fail_component "$name" "was not healthy within ${timeout}s"
    sleep 0.3
  done
}

start() {
  local name=$1; shift
  if is_running "$name"; then log "$name already running (pid $(pid_of "$name"))"; return; fi
  # setsid: the component outlives this script and is not hit by the caller's Ctrl-C.
  setsid "$@" >>"$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! > "$RUN/$name.pid"
}

kctl() { "$TESTBED_BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

source "$here/realnode.sh"

# issue_cert NAME CN O [SANs]: NAME.{crt,key} in $PKI signed by the testbed CA (a serving and
# client certificate when SANs are given, else a client certificate).
issue_cert() {
  local name=$1 cn=$2 org=$3 san=${4:-}
  local subj="/CN=$cn"; [ -n "$org" ] && subj="/O=$org$subj"
  (
    cd "$PKI"
    openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
    {
      echo "basicConstraints=CA:FALSE"
      echo "keyUsage=critical,digitalSignature,keyEncipherment"
      if [ -n "$san" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san";
      else echo "extendedKeyUsage=clientAuth"; fi
    } > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" \
      -days 3650 -extfile "$name.ext" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
  )
}

# The kube-apiserver's SANs: loopback, the kubernetes Service, and the host's primary IPv4 — the
# address pods on real nodes reach the API server at (KUBERNETES_SERVICE_HOST; there is no
# kube-proxy for the Service's ClusterIP).
apiserver_sans() {
  local sans="IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  local ip; ip=$(rn_node_ip)
  [ -z "$ip" ] || sans+=",IP:$ip"
  echo "$sans"
}

gen_pki() {
  if [ ! -f "$PKI/ca.crt" ]; then
    log "generating a self-signed CA and component certificates in $PKI"
    mkdir -p "$PKI"
    (
      cd "$PKI"
      openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
        -subj "/CN=kruise-rs-testbed-ca" 2>/dev/null
      openssl genrsa -out sa.key 2048 2>/dev/null
      openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    )
    issue_cert apiserver kube-apiserver "" "$(apiserver_sans)"
    issue_cert admin kubernetes-admin system:masters
    issue_cert kube-controller-manager system:kube-controller-manager ""
    issue_cert kube-scheduler system:kube-scheduler ""
    issue_cert kwok kwok-controller system:masters
    issue_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
    return
  fi
  # A PKI from before in-cluster pods (or from another host IP): reissue only the serving
  # certificate (the API server reloads it; clients keep trusting the same CA).
  local ip; ip=$(rn_node_ip)
  if [ -n "$ip" ] && ! openssl x509 -in "$PKI/apiserver.crt" -noout -ext subjectAltName 2>/dev/null | grep -qw "IP Address:$ip"; then
    log "reissuing the kube-apiserver certificate with the host's address $ip"
    issue_cert apiserver kube-apiserver "" "$(apiserver_sans)"
  fi
}

write_kubeconfig() { # path user
  local path=$1 user=$2
  cat > "$path" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kruise-testbed
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $user
  user:
    client-certificate: $PKI/$user.crt
    client-key: $PKI/$user.key
contexts:
- name: kruise-testbed
  context: {cluster: kruise-testbed, user: $user}
current-context: kruise-testbed
EOF
}

create_nodes() {
  local zones=(zone-a zone-b zone-c) i name
  for ((i = 0; i < NODES; i++)); do
    name="kwok-node-$i"
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: $name
    node-role.kubernetes.io/worker: ""
    topology.kubernetes.io/zone: ${zones[$((i % 3))]}
    topology.kubernetes.io/region: local
spec: {}
EOF
  done
}

cmd_up() {
  local wipe=false
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes|--kwok-nodes) NODES=$2; shift 2;;
      --nodes=*|--kwok-nodes=*) NODES=${1#*=}; shift;;
      --real-nodes) REAL_NODES=$2; shift 2;;
      --real-nodes=*) REAL_NODES=${1#*=}; shift;;
      --wipe) wipe=true; shift;;
      *) die "unknown flag for up: $1";;
    esac
  done
  [[ "$NODES" =~ ^[0-9]+$ ]] || die "--nodes must be a non-negative integer, got '$NODES'"
  [[ "$REAL_NODES" =~ ^[0-9]+$ ]] || die "--real-nodes must be a non-negative integer, got '$REAL_NODES'"
  [ $((NODES + REAL_NODES)) -ge 1 ] || die "the testbed needs at least one node (--nodes or --real-nodes)"
  # Real nodes are tainted while kwok nodes are there; alone, every schedulable node is real.
  REAL_TAINTED=1; [ "$NODES" -gt 0 ] || REAL_TAINTED=0
  # Pods on real nodes reach the API server at the host's address (0.0.0.0 binds that too).
  APISERVER_BIND=127.0.0.1; [ "$REAL_NODES" -eq 0 ] || APISERVER_BIND=0.0.0.0
  local t0; t0=$(date +%s%N)
  [ "$REAL_NODES" -eq 0 ] || rn_install_packages
  "$here/build.sh"
  if $wipe; then cmd_down --wipe; fi
  mkdir -p "$LOGS" "$RUN" "$STATE_DIR/etcd"
  gen_pki
  write_kubeconfig "$KUBECONFIG_PATH" admin
  write_kubeconfig "$STATE_DIR/kube-controller-manager.kubeconfig" kube-controller-manager
  write_kubeconfig "$STATE_DIR/kube-scheduler.kubeconfig" kube-scheduler
  write_kubeconfig "$STATE_DIR/kwok.kubeconfig" kwok

  log "starting etcd on 127.0.0.1:$ETCD_PORT"
  start etcd "$TESTBED_BIN/etcd" --name testbed --data-dir "$STATE_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "testbed=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --quota-backend-bytes 4294967296 --log-level warn
  wait_until etcd 60 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

  log "starting kube-apiserver on https://127.0.0.1:$APISERVER_PORT"
  start kube-apiserver "$TESTBED_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$APISERVER_BIND" --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --enable-aggregator-routing=true \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
    --enable-admission-plugins NodeRestriction \
    --allow-privileged=true \
    --profiling=false \
    --v=1
  wait_until kube-apiserver 120 kctl get --raw /readyz
  if [ "$REAL_NODES" -gt 0 ] && ! tr '\0' ' ' < "/proc/$(pid_of kube-apiserver)/cmdline" | grep -q kubelet-preferred-address-types; then
    die "the running kube-apiserver predates real nodes (no --kubelet-preferred-address-types): run 'testbed.sh down' then 'up'"
  fi
  if [ "$REAL_NODES" -gt 0 ] && ! tr '\0' ' ' < "/proc/$(pid_of kube-apiserver)/cmdline" | grep -q enable-aggregator-routing; then
    die "the running kube-apiserver predates in-cluster pods (no --enable-aggregator-routing): run 'testbed.sh down' then 'up'"
  fi

  log "starting kube-controller-manager and kube-scheduler"
  start kube-controller-manager "$TESTBED_BIN/kube-controller-manager" \
    --kubeconfig "$STATE_DIR/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE_DIR/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE_DIR/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --controllers '*,bootstrapsigner,tokencleaner' \
    --use-service-account-credentials \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --leader-elect=false --profiling=false \
    --concurrent-deployment-syncs 10 --concurrent-replicaset-syncs 10 --concurrent-gc-syncs 30 \
    --kube-api-qps 200 --kube-api-burst 400 \
    --enable-hostpath-provisioner=true \
    --v=1
  start kube-scheduler "$TESTBED_BIN/kube-scheduler" \
    --kubeconfig "$STATE_DIR/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$STATE_DIR/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$STATE_DIR/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" \
    --leader-elect=false --profiling=false --v=1
  log "starting kwok ($NODES fake nodes)"
  start kwok "$TESTBED_BIN/kwok" \
    --kubeconfig "$STATE_DIR/kwok.kubeconfig" \
    --config "$here/kwok-stages.yaml" \
    --manage-nodes-with-label-selector type=kwok \
    --node-lease-duration-seconds 40 \
    --cidr 10.244.0.1/16 --node-ip 127.0.0.1 \
    --server-address "127.0.0.1:$KWOK_PORT"
  wait_until kube-controller-manager 90 curl -fsSk "https://127.0.0.1:$KCM_PORT/healthz"
  wait_until kube-scheduler 90 curl -fsSk "https://127.0.0.1:$SCHED_PORT/healthz"
  wait_until kwok 60 curl -fsS "http://127.0.0.1:$KWOK_PORT/healthz"

  [ "$NODES" -eq 0 ] || create_nodes | kctl apply -f - >/dev/null
  # Nodes beyond NODES from an earlier `up --nodes` are removed so the count is exact; with no
  # kwok nodes asked for, every kwok node goes (also ones tests created).
  kctl get nodes -l type=kwok -o name | while read -r n; do
    local idx=${n#node/kwok-node-}
    if [ "$NODES" -eq 0 ] || [ "$idx" -ge "$NODES" ] 2>/dev/null; then kctl delete "$n" --wait=false >/dev/null; fi
  done
  log "waiting for $NODES nodes to be Ready"
  local deadline=$(( $(date +%s) + 90 ))
  while true; do
    local ready
    ready=$(kctl get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)
    [ "$ready" -ge "$NODES" ] && break
    is_running kwok || fail_component kwok "exited"
    [ "$(date +%s)" -lt "$deadline" ] || fail_component kwok "did not make all $NODES nodes Ready within 90s ($ready Ready)"
    sleep 0.5
  done
  # The default StorageClass `standard` (the name OpenKruise's e2e uses): kube-controller-manager's
  # host-path provisioner creates and binds a PersistentVolume for every claim, so pods with
  # volumeClaimTemplates get scheduled (kwok never mounts anything).
  kctl apply -f - >/dev/null <<'SC'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
SC
  # The default ServiceAccount of the default namespace is created asynchronously by the
  # controller-manager; pods cannot be created before it exists.
  wait_until kube-controller-manager 60 kctl -n default get serviceaccount default

  rn_up "$REAL_NODES"

  local took_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local what="$NODES kwok nodes"
  [ "$REAL_NODES" -eq 0 ] || what+=" and $REAL_NODES real node(s) ($([ "$REAL_TAINTED" = 1 ] && echo "tainted $REAL_NODE_TAINT" || echo untainted), registry $REGISTRY_ADDR)"
  log "testbed is up in $((took_ms / 1000)).$(printf %03d $((took_ms % 1000)))s: $what Ready (kubernetes $KUBE_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION)"
  log "kubeconfig: $KUBECONFIG_PATH"
  log "try: export KUBECONFIG=$KUBECONFIG_PATH; $TESTBED_BIN/kubectl get nodes -L topology.kubernetes.io/zone"
}

cmd_down() {
  local wipe=false
  [ "${1:-}" = "--wipe" ] && wipe=true
  local i name pid rc=0
  # Real nodes first, while the API server still answers; fails if the host is not left clean.
  rn_down || rc=$?
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    name=${COMPONENTS[$i]}
    if is_running "$name"; then
      pid=$(pid_of "$name")
      log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$RUN/$name.pid"
  done
  if $wipe; then
    log "wiping $STATE_DIR"
    if awk '{print $5}' /proc/self/mountinfo | grep -qF "$STATE_DIR/"; then
      die "not wiping $STATE_DIR: something is still mounted under it"
    fi
    rm -rf --one-file-system "$STATE_DIR"
  fi
  return $rc
}

cmd_status() {
  local name rc=0
  for name in "${COMPONENTS[@]}"; do
    if is_running "$name"; then
      printf '%-26s running  pid %-8s rss %s\n' "$name" "$(pid_of "$name")" \
        "$(awk '/VmRSS/ {printf "%d MB", $2/1024}' "/proc/$(pid_of "$name")/status" 2>/dev/null)"
    else
      printf '%-26s stopped\n' "$name"; rc=1
    fi
  done
  rn_status || rc=1
  echo "state dir:  $STATE_DIR"
  echo "kubeconfig: $KUBECONFIG_PATH"
  echo "binaries:   $TESTBED_BIN"
  if is_running kube-apiserver; then kctl get nodes -L type,topology.kubernetes.io/zone 2>/dev/null || true; fi
  return $rc
}

case "${1:-}" in
  up) shift; cmd_up "$@";;
  down) shift; cmd_down "$@";;
  status) cmd_status;;
  env) echo "export KUBECONFIG=$KUBECONFIG_PATH"; echo "export PATH=$TESTBED_BIN:\$PATH"
       if [ "$(rn_count)" -gt 0 ]; then
         echo "export KRUISE_TESTBED_REGISTRY=$REGISTRY_ADDR"
         # Where pods on real nodes reach the API server (KUBERNETES_SERVICE_HOST/PORT).
         echo "export KRUISE_TESTBED_APISERVER_HOST=$(rn_node_ip)"
         echo "export KRUISE_TESTBED_APISERVER_PORT=$APISERVER_PORT"
       fi;;
  build) "$here/build.sh";;
  *) echo "usage: $0 up [--nodes N] [--real-nodes N] [--wipe] | down [--wipe] | status | env | build" >&2; exit 2;;
esac
