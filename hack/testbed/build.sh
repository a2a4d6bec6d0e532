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

# build NAME PACKAGE [DIR] : go build PACKAGE into $TESTBED_BIN/NAME from module DIR.
build() {
  local name=$1 pkg=$2 dir=${3:-$tools} ldflags=${4:-"-s -w"}
  if [ -x "$TESTBED_BIN/$name" ]; then
    echo "build: $name: cached ($TESTBED_BIN/$name)"
    return
  fi
  local t0; t0=$(date +%s)
  echo "build: $name: building $pkg (first build only; this can take several minutes) ..."
  (cd "$dir" && go build -ldflags "$ldflags" -o "$TESTBED_BIN/$name.tmp" "$pkg")
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
