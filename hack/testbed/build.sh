#!/usr/bin/env bash
# Builds the testbed binaries from Go modules into the versioned cache
# (~/.cache/kruise-rs/testbed/<versions>/bin). Binaries already there are not rebuilt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.sh"
tools="$here/../tools"

command -v go >/dev/null || { echo "build: Go is required (go not on PATH)" >&2; exit 1; }
mkdir -p "$TESTBED_BIN"
export GOFLAGS="${GOFLAGS:--buildvcs=false} -trimpath"
export CGO_ENABLED=0

start_all=$(date +%s)
built=0

ver_ldflags() {
  local major minor
  major=$(echo "$KUBE_VERSION" | sed 's/^v\([0-9]*\)\..*/\1/')
  minor=$(echo "$KUBE_VERSION" | sed 's/^v[0-9]*\.\([0-9]*\)\..*/\1/')
  local f=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    f+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "-s -w$f"
}

# build NAME PACKAGE [DIR [LDFLAGS [TAGS]]] : go build PACKAGE into $TESTBED_BIN/NAME from module DIR.
build() {
  local name=$1 pkg=$2 dir=${3:-$tools} ldflags=${4:-"-s -w"} tags=${5:-}
  if [ -x "$TESTBED_BIN/$name" ]; then
    echo "build: $name: cached ($TESTBED_BIN/$name)"
    return
  fi
  local t0; t0=$(date +%s)
  echo "build: $name: building $pkg (first build only; this can take several minutes) ..."
  mkdir -p "$(dirname "$TESTBED_BIN/$name")"
  (cd "$dir" && go build -tags "$tags" -ldflags "$ldflags" -o "$TESTBED_BIN/$name.tmp" "$pkg")
  mv "$TESTBED_BIN/$name.tmp" "$TESTBED_BIN/$name"
  echo "build: $name: done in $(( $(date +%s) - t0 ))s"
  built=$((built + 1))
}

kube_ldflags=$(ver_ldflags)
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$tools" "$kube_ldflags"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$tools" "$kube_ldflags"
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$tools" "$kube_ldflags"
build kubectl k8s.io/kubernetes/cmd/kubectl "$tools" "$kube_ldflags"
# Real nodes (see realnode.sh): the kubelet from the same module graph and version flags,
# crictl (cri-tools, own module: its go.mod pins a release, the proxy has no @latest),
# and the sandbox image's pause program.
build kubelet k8s.io/kubernetes/cmd/kubelet "$tools" "$kube_ldflags"
build crictl sigs.k8s.io/cri-tools/cmd/crictl "$here/crictl"
build pause . "$here/images/pause"
# containerd 2.x and its runc shim from their Go module (own go.mod: hack/testbed/containerd),
# static (CGO off: no btrfs snapshotter, which the testbed does not use), with the tags and
# version variables of containerd's Makefile. Debian's containerd 1.6 reports the first tag of
# an image with several tags in container statuses, which OpenKruise's same-imageID specs trip on.
ctrd_pkg=github.com/containerd/containerd/v2
ctrd_ldflags="-s -w -X $ctrd_pkg/version.Version=$CONTAINERD_VERSION -X $ctrd_pkg/version.Revision=$CONTAINERD_VERSION -X $ctrd_pkg/version.Package=$ctrd_pkg"
build "containerd-$CONTAINERD_VERSION/containerd" "$ctrd_pkg/cmd/containerd" "$here/containerd" \
  "$ctrd_ldflags" urfave_cli_no_docs
build "containerd-$CONTAINERD_VERSION/containerd-shim-runc-v2" "$ctrd_pkg/cmd/containerd-shim-runc-v2" \
  "$here/containerd" "$ctrd_ldflags" "urfave_cli_no_docs no_grpc"
# Helm (charts/kruise-rs: hack/chart/check.sh lints and renders it) from its Go module (own
# go.mod: hack/testbed/helm), with the version flags of Helm's Makefile, into its own directory
# of the cache (bin/helm-<v>/), so changing its version rebuilds only Helm.
HELM_VERSION=$(sed -n 's|^[[:space:]]*helm.sh/helm/v3 \(v[0-9.]*\).*|\1|p' "$here/helm/go.mod" | head -n1)
build "helm-$HELM_VERSION/helm" helm.sh/helm/v3/cmd/helm "$here/helm" "$("$here/helm/ldflags.sh")"

# kwok has no replace directives, so it builds as a plain module install with its own go.mod.
if [ ! -x "$TESTBED_BIN/kwok" ]; then
  t0=$(date +%s)
  echo "build: kwok: building sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION ..."
  GOBIN="$TESTBED_BIN" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  echo "build: kwok: done in $(( $(date +%s) - t0 ))s"
  built=$((built + 1))
else
  echo "build: kwok: cached ($TESTBED_BIN/kwok)"
fi

if [ "$built" -gt 0 ]; then
  echo "build: built $built binaries in $(( $(date +%s) - start_all ))s into $TESTBED_BIN"
fi
