#!/usr/bin/env bash
# OpenKruise v1.9.0 on the testbed's real nodes, installed the way its own repository deploys it
# (config/default, rendered by kubectl's built-in kustomize): the other side of the live-swap
# e2e (crates/kruise-manager/tests/swap.rs, hack/swap/swap.sh).
#
#   hack/swap/openkruise.sh image    --src DIR   # go build manager + daemon, one OCI image (as
#                                                # OpenKruise's Dockerfile: /manager,
#                                                # /kruise-daemon, user nobody), pushed to the
#                                                # testbed registry as openkruise/kruise-manager:v1.9.0
#   hack/swap/openkruise.sh manifest --src DIR   # prints the manifests to apply
#
# DIR is an OpenKruise source tree at tag v1.9.0 (git clone -b v1.9.0
# https://github.com/openkruise/kruise). Not the Go module proxy's github.com/openkruise/kruise@v1.9.0:
# that zip is another commit (4c2bbcec, the tag was moved afterwards) whose CloneSet, Advanced
# StatefulSet, Advanced DaemonSet and SidecarSet CRDs store v1beta1 (webhook conversion), which the
# released v1.9.0 does not have (v1alpha1 storage).
#
# The manifest is config/default with what the testbed needs and OpenKruise's chart sets:
#   - the image from the testbed registry;
#   - the chart's default arguments (leader election, --v=4, no feature gates: config/default
#     enables AllAlpha/AllBeta for OpenKruise's own e2e), manager.replicas 2;
#   - manager and daemon on the real nodes (nodeSelector type=real, the taint tolerated), the
#     API server at the host's address (no kube-proxy on the testbed), the daemon's runtime
#     socket directory = the real node's containerd directory (one real node: hostPath cannot
#     name the node).
# Honours KRUISE_TESTBED_DIR / KRUISE_TESTBED_PORT_BASE like testbed.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
log() { echo "[openkruise] $*" >&2; }
die() { log "error: $*"; exit 1; }

cmd=${1:-}; shift || true
SRC=""
TAG=v1.9.0
while [ $# -gt 0 ]; do
  case "$1" in
    --src) SRC=$2; shift 2;;
    --tag) TAG=$2; shift 2;;
    *) die "unknown argument $1";;
  esac
done
[ -n "$SRC" ] || die "--src DIR (an OpenKruise v1.9.0 source tree) is required"
[ -f "$SRC/main.go" ] && [ -d "$SRC/config/default" ] || die "$SRC is not an OpenKruise source tree (no main.go, config/default)"
SRC=$(cd "$SRC" && pwd)
env_out=$("$root/hack/testbed/testbed.sh" env) || die "testbed.sh env failed"
eval "$env_out"
[ -n "${KRUISE_TESTBED_REGISTRY:-}" ] && [ -n "${KRUISE_TESTBED_APISERVER_HOST:-}" ] \
  || die "the testbed has no real node (hack/testbed/testbed.sh up --real-nodes 1)"
STATE_DIR="${KRUISE_TESTBED_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/kruise-rs/testbed}"
IMAGE="$KRUISE_TESTBED_REGISTRY/openkruise/kruise-manager:$TAG"

case "$cmd" in
  image)
    # shellcheck source=hack/image/oci.sh
    source "$root/hack/image/oci.sh"
    oci_ensure_tools || die "cannot install the image tools"
    out="$root/target/openkruise"
    mkdir -p "$out"
    t0=$(date +%s)
    log "go build OpenKruise's manager and daemon from $SRC (CGO_ENABLED=0, as its Dockerfile)"
    (cd "$SRC" && CGO_ENABLED=0 go build -o "$out/manager" main.go \
      && CGO_ENABLED=0 go build -o "$out/kruise-daemon" ./cmd/daemon/main.go) || die "go build failed"
    log "built in $(( $(date +%s) - t0 ))s"
    rm -rf "$out/layout"
    # As its Dockerfile: no USER (root; the manager's Deployment sets runAsUser 65534, the
    # daemon runs as root to reach the CRI socket), /log owned by nobody.
    OCI_DIRS=(/log:65534:65534)
    oci_image "$out/layout" kruise-manager 0:0 /manager "$TAG" \
      "$out/manager:/manager" "$out/kruise-daemon:/kruise-daemon"
    oci_push "$out/layout" kruise-manager "docker://$IMAGE" || die "push failed"
    log "pushed $IMAGE"
    ;;
  manifest)
    kubectl=kubectl   # on PATH from testbed.sh env
    nodes=$("$kubectl" get nodes -l type=real -o name | wc -l)
    [ "$nodes" = 1 ] || die "the OpenKruise daemon's socket hostPath needs exactly one real node (found $nodes)"
    node=$("$kubectl" get nodes -l type=real -o jsonpath='{.items[0].metadata.name}')
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    ln -s "$SRC/config" "$work/config"
    env_yaml="            - {name: KUBERNETES_SERVICE_HOST, value: \"$KRUISE_TESTBED_APISERVER_HOST\"}
            - {name: KUBERNETES_SERVICE_PORT, value: \"$KRUISE_TESTBED_APISERVER_PORT\"}"
    cat > "$work/kustomization.yaml" <<YAML
resources:
- config/default
images:
- {name: controller, newName: ${IMAGE%:*}, newTag: $TAG}
patches:
- target: {kind: Deployment, name: kruise-controller-manager}
  patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: kruise-controller-manager, namespace: kruise-system}
    spec:
      replicas: 2
      template:
        spec:
          nodeSelector: {type: real}
          tolerations: [{key: kruise-rs.io/real-node, operator: Exists}]
          containers:
          - name: manager
            args: [--enable-leader-election, --logtostderr=true, --v=4, --feature-gates=]
            env:
$env_yaml
- target: {kind: DaemonSet, name: kruise-daemon}
  patch: |-
    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: kruise-daemon, namespace: kruise-system}
    spec:
      template:
        spec:
          nodeSelector: {type: real}
          containers:
          - name: daemon
            args: [--logtostderr=true, -v=4, --feature-gates=, --socket-file=containerd/containerd.sock]
            env:
$env_yaml
          volumes:
          - name: runtime-socket
            hostPath: {path: "$STATE_DIR/realnode/$node", type: ""}
YAML
    "$kubectl" kustomize "$work" || die "kustomize failed"
    ;;
  *) die "usage: $0 image|manifest --src DIR";;
esac
