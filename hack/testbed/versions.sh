# Versions of every testbed component. Sourced by the testbed scripts.
# Changing a version changes the cache key, so the next `up` rebuilds.
KUBE_VERSION=v1.37.2          # k8s.io/kubernetes (kube-apiserver, -controller-manager, -scheduler, kubectl)
KWOK_VERSION=v0.8.0           # sigs.k8s.io/kwok
# etcd is built from the version hack/tools/go.mod resolves for go.etcd.io/etcd/server/v3.
ETCD_VERSION=$(sed -n 's|^[[:space:]]*go.etcd.io/etcd/server/v3 \(v[0-9.]*\).*|\1|p' "$(dirname "${BASH_SOURCE[0]}")/../tools/go.mod" | head -n1)
# containerd for the real nodes (containerd and containerd-shim-runc-v2), built from the version
# hack/testbed/containerd/go.mod requires, into its own directory of the cache (bin/containerd-<v>/),
# so changing it rebuilds only containerd.
CONTAINERD_VERSION=$(sed -n 's|^require github.com/containerd/containerd/v2 \(v[0-9.]*\).*|\1|p' "$(dirname "${BASH_SOURCE[0]}")/containerd/go.mod" | head -n1)
TESTBED_KEY="k8s-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
TESTBED_CACHE="${KRUISE_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruise-rs/testbed}/${TESTBED_KEY}"
TESTBED_BIN="${TESTBED_CACHE}/bin"
CONTAINERD_BIN="${TESTBED_BIN}/containerd-${CONTAINERD_VERSION}"
