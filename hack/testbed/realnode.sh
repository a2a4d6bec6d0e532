# Real nodes for the testbed: containerd + runc + kubelet beside the kwok nodes, and a local image
# registry with offline-built stand-in images. containerd (2.x, with its runc shim) is built from
# Go modules by build.sh (CONTAINERD_BIN); runc and the CNI plugins are Debian's. Sourced by
# testbed.sh (uses its STATE_DIR, PKI, RUN, LOGS, BASE, TESTBED_BIN, CONTAINERD_BIN, log, die, start,
# is_running, pid_of, kctl, fail_component).
#
# Per real node i (name real-node-<i>), everything private to this testbed instance:
#   state      $STATE_DIR/realnode/real-node-<i>/ (containerd root/state/socket, runc root, CNI
#              config and IPAM, kubelet root, pod logs); pid files run/{containerd,kubelet}-real-node-<i>.pid
#   shims      sockets in /run/krs-shim-<BASE>-<i> (containerd's socket_dir; a unix socket path
#              must stay short, so not under the state directory), removed with the node
#   ports      kubelet BASE+10+2i, kubelet healthz BASE+11+2i (127.0.0.1); containerd's streaming
#              server takes a free port on 127.0.0.1; registry BASE+7 (127.0.0.1, one per instance)
#   network    CNI bridge krs<BASE>-<i> with subnet 10.<200+(k/256)%50>.<k%256>.0/24, k=BASE+i
#              (no masquerade, no iptables rules); the kubelet listens on the host's primary IPv4
#              (it refuses loopback)
#   cgroups    cgroupfs under /kruise-rs-<BASE>-real-node-<i> in every hierarchy (the kubelet's
#              cgroupRoot; two kubelets must not share "kubepods": each removes pod cgroups it
#              does not know)
#
# Host-global things and how two instances share them (all under flock $RN_HOST/lock):
#   $RN_HOST/nodes/<BASE>-real-node-<i>  one file per running real node (its containerd pid file);
#                                        stale entries (pid gone) are pruned
#   $RN_HOST/saved                       taken when the first real node of any instance starts:
#                                        the sysctls the kubelet and the CNI bridge rewrite, and
#                                        whether /var/lib/kubelet, /var/lib/cni and /run/containerd
#                                        (containerd 1.6's shim sockets, used by instances of older
#                                        checkouts) existed; restored (and removed) when the last
#                                        one stops
#   /var/lib/kubelet/device-plugins      hard-coded in the kubelet (ignores --root-dir)
#   /var/lib/cni/results                 libcni's cache of attachment results (not configurable)
# containerd 2.x is configured to use none of its host-global defaults (/run/containerd,
# /var/lib/containerd, /etc/containerd, /opt/containerd, NRI's /var/run/nri, CDI's /etc/cdi).

RN_HOST=/run/kruise-rs-testbed
RN_DIR="$STATE_DIR/realnode"
REGISTRY_PORT=$((BASE + 7))
REGISTRY_ADDR="127.0.0.1:$REGISTRY_PORT"
REAL_NODE_LABEL_KEY=type
REAL_NODE_LABEL_VALUE=real
REAL_NODE_TAINT=kruise-rs.io/real-node
# The sysctls a kubelet sets at start (protectKernelDefaults=false; see setupKernelTunables) and
# the one the CNI bridge plugin sets (isGateway).
RN_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)
RN_PACKAGES=(runc containernetworking-plugins docker-registry skopeo umoci busybox-static iptables)

source "$here/images.sh"

rn_name() { echo "real-node-$1"; }
rn_dir() { echo "$RN_DIR/real-node-$1"; }
rn_sock() { echo "$(rn_dir "$1")/containerd/containerd.sock"; }
rn_shim_dir() { echo "/run/krs-shim-$BASE-$1"; }
rn_bridge() { echo "krs$BASE-$1"; }
rn_kubelet_port() { echo $((BASE + 10 + 2 * $1)); }
rn_healthz_port() { echo $((BASE + 11 + 2 * $1)); }
rn_cgroup_root() { echo "/kruise-rs-$BASE-real-node-$1"; }
rn_subnet() { local k=$((BASE + $1)); echo "10.$((200 + (k / 256) % 50)).$((k % 256))"; }   # prefix of a /24
rn_crictl() { "$TESTBED_BIN/crictl" --config "$(rn_dir "$1")/crictl.yaml" "${@:2}"; }

# The real nodes `up` last started here (0 when none), so status/down know what to look at.
rn_count() { cat "$RN_DIR/count" 2>/dev/null || echo 0; }

rn_node_ip() {
  local ip
  ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i <= NF; i++) if ($i == "src") print $(i + 1)}')
  [ -n "$ip" ] || ip=$(ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')
  echo "$ip"
}

# Installs the Debian packages a real node needs when a command is missing.
rn_install_packages() {
  local missing=()
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  command -v skopeo >/dev/null || missing+=(skopeo)
  command -v umoci >/dev/null || missing+=(umoci)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  command -v iptables-save >/dev/null || missing+=(iptables)
  [ ${#missing[@]} -eq 0 ] && return
  [ "$(id -u)" = 0 ] || die "real nodes need root and the Debian packages ${missing[*]} (or use --real-nodes 0)"
  log "installing Debian packages: ${missing[*]}"
  mkdir -p "$LOGS"
  local t0; t0=$(date +%s)
  # Daemons from these packages must not start as services; ours run privately. Where no
  # policy-rc.d forbids it already, one does for the length of the install.
  local policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
    >"$LOGS/apt.log" 2>&1 || {
    DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$LOGS/apt.log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
      >>"$LOGS/apt.log" 2>&1
  } || { [ "$policy" = 0 ] || rm -f /usr/sbin/policy-rc.d; tail -n 20 "$LOGS/apt.log" >&2; die "apt-get install ${missing[*]} failed (log: $LOGS/apt.log)"; }
  [ "$policy" = 0 ] || rm -f /usr/sbin/policy-rc.d
  log "packages installed in $(( $(date +%s) - t0 ))s"
}

# ---------------------------------------------------------------- host-global bookkeeping
rn_lock() { mkdir -p "$RN_HOST/nodes"; exec {RN_LOCK_FD}>"$RN_HOST/lock"; flock "$RN_LOCK_FD"; }
rn_unlock() { flock -u "$RN_LOCK_FD"; exec {RN_LOCK_FD}>&-; }

# Drops entries whose containerd is gone (an instance killed without `down`).
rn_prune_holders() {
  local f pid
  for f in "$RN_HOST"/nodes/*; do
    [ -e "$f" ] || continue
    pid=$(cat "$(cat "$f")" 2>/dev/null || true)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then rm -f "$f"; fi
  done
}
rn_holders() { find "$RN_HOST/nodes" -type f 2>/dev/null | wc -l; }

rn_save_host_state() {
  [ -f "$RN_HOST/saved" ] && return   # an earlier first node saved the original values
  {
    local s
    for s in "${RN_SYSCTLS[@]}"; do echo "sysctl $s $(sysctl -n "$s")"; done
    [ -e /var/lib/kubelet ] && echo "existed /var/lib/kubelet"
    [ -e /run/containerd ] && echo "existed /run/containerd"
    [ -e /var/lib/cni ] && echo "existed /var/lib/cni"
  } > "$RN_HOST/saved.tmp"
  mv "$RN_HOST/saved.tmp" "$RN_HOST/saved"
}

# Restores what rn_save_host_state saved; only called when no real node of any instance runs.
rn_restore_host_state() {
  [ -f "$RN_HOST/saved" ] || return 0
  local kind name value
  while read -r kind name value; do
    [ "$kind" = sysctl ] || continue
    [ "$(sysctl -n "$name")" = "$value" ] || sysctl -q -w "$name=$value" >/dev/null
  done < "$RN_HOST/saved"
  if ! grep -q '^existed /var/lib/kubelet$' "$RN_HOST/saved"; then
    if ! awk '{print $5}' /proc/self/mountinfo | grep -q '^/var/lib/kubelet'; then
      rm -rf --one-file-system /var/lib/kubelet
    fi
  fi
  if ! grep -q '^existed /run/containerd$' "$RN_HOST/saved"; then
    rmdir /run/containerd/s /run/containerd 2>/dev/null || true
  fi
  if ! grep -q '^existed /var/lib/cni$' "$RN_HOST/saved"; then
    rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null || true
  fi
  # For rn_verify_host, then the bookkeeping goes too (the lock file last, still held).
  cp "$RN_HOST/saved" "$RN_DIR/host-restored"
  rm -f "$RN_HOST/saved"
  rmdir "$RN_HOST/nodes" 2>/dev/null || true
  rm -f "$RN_HOST/lock"
  rmdir "$RN_HOST" 2>/dev/null || true
}

# ---------------------------------------------------------------- registry
rn_registry_up() {
  local dir="$STATE_DIR/registry"
  mkdir -p "$dir/data"
  cat > "$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: $REGISTRY_ADDR
EOF
  echo "$REGISTRY_ADDR" > "$dir/address"
  if ! is_running registry; then
    log "starting the image registry on $REGISTRY_ADDR"
    start registry docker-registry serve "$dir/config.yml"
  fi
  wait_until registry 30 curl -fsS "http://$REGISTRY_ADDR/v2/"
  images_build "$TESTBED_BIN/pause"
  images_push "$REGISTRY_ADDR" "$dir/data/pushed"
}

# ---------------------------------------------------------------- one node: configuration
rn_write_config() {
  local i=$1 d sock name node_ip taints=""
  d=$(rn_dir "$i"); sock=$(rn_sock "$i"); name=$(rn_name "$i"); node_ip=$2
  mkdir -p "$d"/containerd/{root,state,runc,opt} "$d"/cni/{net.d,ipam} "$d"/kubelet-root "$d"/pod-logs "$d/certs.d/_default"
  printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 20\n' "$sock" "$sock" > "$d/crictl.yaml"
  local h
  # Every registry is served by the local one (same repository path): nothing leaves the host,
  # and a name the registry lacks fails to pull (manifest unknown) as a missing image does.
  for h in _default docker.io registry-1.docker.io registry.k8s.io k8s.gcr.io gcr.io quay.io ghcr.io \
           invalid.registry.k8s.io "$REGISTRY_ADDR"; do
    mkdir -p "$d/certs.d/$h"
    printf 'server = "http://%s"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' \
      "$REGISTRY_ADDR" "$REGISTRY_ADDR" > "$d/certs.d/$h/hosts.toml"
  done
  # containerd 2.x, config version 3 (the CRI plugin split into cri.v1.images and cri.v1.runtime;
  # containerd migrates it to its current version at start). Written in full rather than edited
  # from `containerd config default`: every path is private, nothing host-global is used.
  local ctrd="$d/containerd"
  mkdir -p "$(rn_shim_dir "$i")"
  cat > "$ctrd/config.toml" <<EOF
version = 3
root = '$ctrd/root'
state = '$ctrd/state'

[grpc]
  address = '$sock'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '$SANDBOX_IMAGE'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '$d/certs.d'

  [plugins.'io.containerd.cri.v1.runtime']
    # root lacks CAP_SYS_RESOURCE here: clamp oom_score_adj to containerd's own.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    cdi_spec_dirs = []
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        runtime_path = '$CONTAINERD_BIN/containerd-shim-runc-v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = '$ctrd/runc'
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '$d/cni/net.d'

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'

  [plugins.'io.containerd.internal.v1.opt']
    path = '$ctrd/opt'

  [plugins.'io.containerd.nri.v1.nri']
    disable = true

  [plugins.'io.containerd.shim.v1.manager']
    socket_dir = '$(rn_shim_dir "$i")'

  [plugins.'io.containerd.transfer.v1.local']
    config_path = '$d/certs.d'
EOF
  local net; net=$(rn_subnet "$i")
  cat > "$d/cni/net.d/10-testbed.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "testbed-$BASE-$i", "plugins": [{"type": "bridge", "bridge": "$(rn_bridge "$i")",
 "isGateway": true, "ipMasq": false, "hairpinMode": true,
 "ipam": {"type": "host-local", "ranges": [[{"subnet": "$net.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}],
          "dataDir": "$d/cni/ipam"}}]}
EOF
  # Client certificate from the testbed CA: the Node authorizer knows it as this node.
  if [ ! -f "$PKI/kubelet-$name.crt" ]; then
    openssl req -newkey rsa:2048 -nodes -keyout "$PKI/kubelet-$name.key" -out "$PKI/kubelet-$name.csr" \
      -subj "/O=system:nodes/CN=system:node:$name" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' > "$PKI/kubelet-$name.ext"
    openssl x509 -req -in "$PKI/kubelet-$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
      -out "$PKI/kubelet-$name.crt" -days 3650 -extfile "$PKI/kubelet-$name.ext" 2>/dev/null
    rm -f "$PKI/kubelet-$name.csr" "$PKI/kubelet-$name.ext"
  fi
  write_kubeconfig "$d/kubelet.kubeconfig" "kubelet-$name"
  if [ "$REAL_TAINTED" = 1 ]; then
    taints="registerWithTaints: [{key: $REAL_NODE_TAINT, value: \"true\", effect: NoSchedule}]"
  fi
  cat > "$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
port: $(rn_kubelet_port "$i")
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $(rn_healthz_port "$i")
cgroupDriver: cgroupfs
cgroupRoot: $(rn_cgroup_root "$i")
failCgroupV1: false
containerRuntimeEndpoint: unix://$sock
imageServiceEndpoint: unix://$sock
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $PKI/ca.crt}}
authorization: {mode: AlwaysAllow}
makeIPTablesUtilChains: false
oomScoreAdj: 0
podLogsDir: $d/pod-logs
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
$taints
EOF
  # The kubelet requires its cgroupRoot to exist in every hierarchy; runc on a hybrid host also
  # uses the cgroup2 one. cpuset needs cpus/mems before a child can join.
  local c root; root=$(rn_cgroup_root "$i")
  for c in /sys/fs/cgroup/*/; do
    [ -d "$c" ] || continue
    mkdir -p "$c${root#/}"
    if [ -f "$c/cpuset.cpus" ]; then
      [ -n "$(cat "$c${root#/}/cpuset.cpus")" ] || cat "$c/cpuset.cpus" > "$c${root#/}/cpuset.cpus"
      [ -n "$(cat "$c${root#/}/cpuset.mems")" ] || cat "$c/cpuset.mems" > "$c${root#/}/cpuset.mems"
    fi
  done
}

# ---------------------------------------------------------------- one node: start
rn_node_up() {
  local i=$1 node_ip=$2 d name sock
  d=$(rn_dir "$i"); name=$(rn_name "$i"); sock=$(rn_sock "$i")
  # The bridge subnet must not collide with a route this host already has (unless it is ours).
  local net; net=$(rn_subnet "$i")
  if ! ip link show "$(rn_bridge "$i")" >/dev/null 2>&1 && ip -4 route show | grep -q "^$net\."; then
    die "$name: subnet $net.0/24 is already routed on this host (choose another KRUISE_TESTBED_PORT_BASE)"
  fi
  rn_write_config "$i" "$node_ip"
  # Images cached by this node from an older image set would keep their old digests.
  local key; key=$(basename "$IMAGES_DIR")
  if [ "$(cat "$d/containerd/images-key" 2>/dev/null)" != "$key" ]; then
    if is_running "containerd-$name"; then
      rn_crictl "$i" rmi --all >/dev/null 2>&1 || true
    elif [ -z "$(rn_mounts "$i")" ]; then
      rm -rf --one-file-system "$d/containerd/root"; mkdir -p "$d/containerd/root"
    fi
    echo "$key" > "$d/containerd/images-key"
  fi
  if is_running "containerd-$name" && [ "$(readlink "/proc/$(pid_of "containerd-$name")/exe")" != "$CONTAINERD_BIN/containerd" ]; then
    die "$name runs another containerd ($(readlink "/proc/$(pid_of "containerd-$name")/exe")): run 'testbed.sh down' then 'up'"
  fi
  log "starting containerd for $name ($sock)"
  start "containerd-$name" "$CONTAINERD_BIN/containerd" --config "$d/containerd/config.toml"
  wait_until "containerd-$name" 30 rn_crictl "$i" info
  rn_lock
  rn_prune_holders
  [ "$(rn_holders)" -gt 0 ] || rn_save_host_state
  echo "$RUN/containerd-$name.pid" > "$RN_HOST/nodes/$BASE-$name"
  rn_unlock
  log "starting kubelet $name on $node_ip:$(rn_kubelet_port "$i")"
  is_running "kubelet-$name" || date +%s > "$RUN/kubelet-$name.started"
  start "kubelet-$name" "$TESTBED_BIN/kubelet" --config "$d/kubelet.yaml" \
    --kubeconfig "$d/kubelet.kubeconfig" --root-dir "$d/kubelet-root" --cert-dir "$d/kubelet-root/pki" \
    --hostname-override "$name" --node-ip "$node_ip" \
    --node-labels "$REAL_NODE_LABEL_KEY=$REAL_NODE_LABEL_VALUE,kruise-rs.io/real-node=true" --v=1
}

rn_ready_since() { # NODE EPOCH: Ready=True with a heartbeat at or after EPOCH
  local out status beat
  out=$(kctl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}' 2>/dev/null) || return 1
  read -r status beat <<< "$out"
  [ "$status" = True ] && [ -n "$beat" ] && [ "$(date -d "$beat" +%s)" -ge "$2" ]
}

# Waits until every real node is Ready, then applies the taint/label policy (admin side).
rn_wait_ready() {
  local n=$1 i name deadline=$(( $(date +%s) + 120 )) zones=(zone-a zone-b zone-c)
  for ((i = 0; i < n; i++)); do
    name=$(rn_name "$i")
    # Ready from a heartbeat of this kubelet (after its registration, which re-adds default
    # labels), not a status left in etcd by an earlier run.
    local started; started=$(cat "$RUN/kubelet-$name.started" 2>/dev/null || echo 0)
    while ! rn_ready_since "$name" "$started"; do
      is_running "containerd-$name" || fail_component "containerd-$name" "exited"
      is_running "kubelet-$name" || fail_component "kubelet-$name" "exited"
      [ "$(date +%s)" -lt "$deadline" ] || fail_component "kubelet-$name" "did not make node $name Ready within 120s"
      sleep 0.5
    done
    if [ "$REAL_TAINTED" = 1 ]; then
      # Beside kwok nodes a real node takes only pods that opt in: a NoSchedule taint, and no
      # kubernetes.io/hostname or zone label, so topology spread constraints (whose default
      # nodeTaintsPolicy Ignore counts tainted nodes) do not see it as an empty domain.
      kctl taint node "$name" "$REAL_NODE_TAINT=true:NoSchedule" --overwrite >/dev/null
      kctl label node "$name" kubernetes.io/hostname- topology.kubernetes.io/zone- \
        topology.kubernetes.io/region- node-role.kubernetes.io/worker- >/dev/null
    else
      # Every schedulable node is real: untainted, labelled like a worker in a zone.
      kctl taint node "$name" "$REAL_NODE_TAINT-" >/dev/null 2>&1 || true
      kctl label node "$name" --overwrite "kubernetes.io/hostname=$name" "node-role.kubernetes.io/worker=" \
        "topology.kubernetes.io/zone=${zones[$((i % 3))]}" topology.kubernetes.io/region=local >/dev/null
    fi
  done
}

rn_up() {
  local n=$1
  [ "$n" -le 10 ] || die "--real-nodes is at most 10 (ports BASE+10..BASE+29)"
  # Nodes beyond n from an earlier `up --real-nodes` are stopped.
  local old i; old=$(rn_count)
  for ((i = n; i < old; i++)); do rn_node_down "$i"; kctl delete node "$(rn_name "$i")" --ignore-not-found --wait=false >/dev/null 2>&1 || true; done
  mkdir -p "$RN_DIR"; echo "$n" > "$RN_DIR/count.tmp"
  mv "$RN_DIR/count.tmp" "$RN_DIR/count"
  [ "$n" -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || die "real nodes need root (or use --real-nodes 0)"
  local node_ip; node_ip=$(rn_node_ip)
  [ -n "$node_ip" ] || die "real nodes need a non-loopback IPv4 address for the kubelet (none found)"
  rn_registry_up
  for ((i = 0; i < n; i++)); do rn_node_up "$i" "$node_ip"; done
  log "waiting for $n real node(s) to be Ready"
  rn_wait_ready "$n"
}

# ---------------------------------------------------------------- one node: stop and clean
rn_stop_pid() { # NAME: TERM, wait up to 10 s, KILL
  local name=$1 pid
  is_running "$name" || { rm -f "$RUN/$name.pid"; return 0; }
  pid=$(pid_of "$name")
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$RUN/$name.pid"
}

# Pids of every process in this node's cgroups (containers, pause, anything left).
rn_cgroup_pids() {
  local root; root=$(rn_cgroup_root "$1")
  find /sys/fs/cgroup/*/"${root#/}" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u
}
# Pids of this node's daemons: containerd, shims, runc and kubelet processes whose command line
# names the node's directory.
rn_dir_pids() {
  local d p; d=$(rn_dir "$1")
  for p in /proc/[0-9]*; do
    case $(cat "$p/comm" 2>/dev/null) in containerd|containerd-shim*|kubelet|runc) ;; *) continue;; esac
    tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF -- "$d/" && echo "${p#/proc/}"
  done
  return 0
}
# Mount points under this node's directory, deepest first.
rn_mounts() {
  local d; d=$(rn_dir "$1")
  awk -v d="$d" '{ if ($5 == d || index($5, d "/") == 1) print $5 }' /proc/self/mountinfo | sort -r -u
}

rn_node_down() {
  local i=$1 name d p
  name=$(rn_name "$i"); d=$(rn_dir "$i")
  rn_stop_pid "kubelet-$name"; rm -f "$RUN/kubelet-$name.started"
  if is_running "containerd-$name"; then
    # Through CRI, so the CNI plugin releases addresses and veths and netns go away cleanly.
    local pods; pods=$(rn_crictl "$i" pods -q 2>/dev/null || true)
    if [ -n "$pods" ]; then
      log "removing $(echo "$pods" | wc -l) pod sandbox(es) of $name"
      # shellcheck disable=SC2086
      rn_crictl "$i" stopp $pods >/dev/null 2>&1 || true
      # shellcheck disable=SC2086
      rn_crictl "$i" rmp -f $pods >/dev/null 2>&1 || true
    fi
  fi
  rn_stop_pid "containerd-$name"
  # Whatever survived (a killed containerd leaves shims and containers running).
  for p in $(rn_cgroup_pids "$i") $(rn_dir_pids "$i"); do
    [ "$p" = $$ ] || kill -KILL "$p" 2>/dev/null || true
  done
  for _ in $(seq 1 30); do [ -z "$(rn_cgroup_pids "$i")$(rn_dir_pids "$i")" ] && break; sleep 0.1; done
  for p in $(rn_mounts "$i"); do umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null || true; done
  local br; br=$(rn_bridge "$i")
  if ip link show "$br" >/dev/null 2>&1; then
    for p in $(ip -o link show master "$br" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
      ip link del "$p" 2>/dev/null || true
    done
    ip link del "$br" 2>/dev/null || true
  fi
  # The shim socket directory (containerd removes each socket when its shim exits).
  local shims; shims=$(rn_shim_dir "$i")
  if [ -d "$shims" ]; then
    find "$shims" -mindepth 1 -maxdepth 1 -type s -delete 2>/dev/null || true
    rmdir "$shims" 2>/dev/null || true
  fi
  # libcni caches each attachment's result in /var/lib/cni/results (named after the network,
  # and the loopback one after the sandbox).
  rm -f /var/lib/cni/results/"testbed-$BASE-$i"-*
  for p in "$d"/containerd/root/io.containerd.grpc.v1.cri/sandboxes/*; do
    [ -e "$p" ] && rm -f "/var/lib/cni/results/cni-loopback-$(basename "$p")-lo"
  done
  local root c; root=$(rn_cgroup_root "$i")
  for c in /sys/fs/cgroup/*/"${root#/}"; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  # The kubelet's and the runtime's per-run state (images stay in containerd's root).
  if [ -z "$(rn_mounts "$i")" ]; then
    rm -rf --one-file-system "$d/kubelet-root" "$d/pod-logs" "$d/cni/ipam" "$d/containerd/state" "$d/containerd/runc"
  fi
  if [ -d "$RN_HOST" ]; then
    rn_lock
    rm -f "$RN_HOST/nodes/$BASE-$name"
    rn_prune_holders
    [ "$(rn_holders)" -gt 0 ] || rn_restore_host_state
    rn_unlock
  fi
}

# Checks that a stopped node left nothing behind; prints each leftover, returns 1 if any.
rn_verify_clean() {
  local i=$1 bad=0 name root c
  name=$(rn_name "$i"); root=$(rn_cgroup_root "$i")
  [ -z "$(rn_dir_pids "$i")$(rn_cgroup_pids "$i")" ] || { echo "leftover processes of $name: $(rn_dir_pids "$i") $(rn_cgroup_pids "$i")"; bad=1; }
  [ -z "$(rn_mounts "$i")" ] || { echo "leftover mounts of $name: $(rn_mounts "$i" | tr '\n' ' ')"; bad=1; }
  ! ip link show "$(rn_bridge "$i")" >/dev/null 2>&1 || { echo "leftover interface $(rn_bridge "$i")"; bad=1; }
  [ ! -e "$(rn_shim_dir "$i")" ] || { echo "leftover shim socket directory $(rn_shim_dir "$i")"; bad=1; }
  ! ls /var/lib/cni/results/"testbed-$BASE-$i"-* >/dev/null 2>&1 || { echo "leftover CNI results of $name"; bad=1; }
  for c in /sys/fs/cgroup/*/"${root#/}"; do
    [ -e "$c" ] && { echo "leftover cgroup $c"; bad=1; }
  done
  return $bad
}

# After the last real node of every instance stopped (this `down` restored the host state): the
# saved values are back and the host-global paths are gone.
rn_verify_host() {
  local bad=0 kind name value f="$RN_DIR/host-restored"
  if [ -f "$f" ]; then
    [ ! -e "$RN_HOST" ] || { echo "leftover $RN_HOST"; bad=1; }
    while read -r kind name value; do
      [ "$kind" = sysctl ] || continue
      [ "$(sysctl -n "$name")" = "$value" ] || { echo "sysctl $name is $(sysctl -n "$name"), was $value"; bad=1; }
    done < "$f"
    if ! grep -q '^existed /var/lib/kubelet$' "$f" && [ -e /var/lib/kubelet ]; then
      echo "leftover /var/lib/kubelet"; bad=1
    fi
    if ! grep -q '^existed /run/containerd$' "$f" && [ -e /run/containerd ]; then
      echo "leftover /run/containerd"; bad=1
    fi
    if ! grep -q '^existed /var/lib/cni$' "$f" && [ -e /var/lib/cni ]; then
      echo "leftover /var/lib/cni"; bad=1
    fi
    rm -f "$f"
  fi
  if command -v iptables-save >/dev/null && iptables-save 2>/dev/null | grep -q 'KUBE-'; then
    echo "iptables has KUBE- chains"; bad=1
  fi
  return $bad
}

rn_down() {
  local n i rc=0 out
  n=$(rn_count)
  for ((i = 0; i < n; i++)); do rn_node_down "$i"; done
  rn_stop_pid registry
  for ((i = 0; i < n; i++)); do
    out=$(rn_verify_clean "$i") || { printf '[testbed] NOT CLEAN: %s\n' "$out" >&2; rc=1; }
  done
  local last=0; [ -f "$RN_DIR/host-restored" ] && last=1
  out=$(rn_verify_host) || { printf '[testbed] NOT CLEAN: %s\n' "$out" >&2; rc=1; }
  if [ "$n" -gt 0 ] && [ "$rc" = 0 ]; then
    if [ "$last" = 1 ]; then
      log "real nodes stopped; host clean (processes, mounts, cgroups, interfaces; sysctls and host paths restored)"
    elif [ -n "$(ls "$RN_HOST/nodes" 2>/dev/null)" ]; then
      log "real nodes stopped; host clean of this instance (processes, mounts, cgroups, interfaces); sysctls stay with the real nodes of another testbed instance still running"
    else
      log "real nodes stopped; host clean (processes, mounts, cgroups, interfaces; no host-global state held)"
    fi
  fi
  return $rc
}

rn_status() {
  local n i name pid pods
  n=$(rn_count)
  rn_line() {
    if is_running "$1"; then
      printf '%-26s running  pid %-8s rss %s%s\n' "$1" "$(pid_of "$1")" \
        "$(awk '/VmRSS/ {printf "%d MB", $2/1024}' "/proc/$(pid_of "$1")/status" 2>/dev/null)" "${2:-}"
    else
      printf '%-26s stopped\n' "$1"; return 1
    fi
  }
  local rc=0
  [ "$n" -gt 0 ] || return 0
  rn_line registry "  http://$REGISTRY_ADDR" || rc=1
  for ((i = 0; i < n; i++)); do
    name=$(rn_name "$i")
    pods=$(rn_crictl "$i" pods -q 2>/dev/null | wc -l)
    rn_line "containerd-$name" "  $pods pod sandbox(es)" || rc=1
    rn_line "kubelet-$name" "  port $(rn_kubelet_port "$i")" || rc=1
    local shims=0
    for pid in $(rn_dir_pids "$i"); do
      grep -q containerd-shim "/proc/$pid/cmdline" 2>/dev/null && shims=$((shims + 1))
    done
    printf '%-26s %s shim(s), bridge %s %s.0/24, cgroups %s\n' "  $name" "$shims" "$(rn_bridge "$i")" "$(rn_subnet "$i")" "$(rn_cgroup_root "$i")"
  done
  return $rc
}
