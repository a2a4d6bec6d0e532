#!/usr/bin/env bash
# Runs the testbed's Helm (built from its Go module, hack/testbed/helm, into the testbed cache;
# built here on first use, which needs Go and the Go module proxy once):
#
#   hack/chart/helm.sh install kruise charts/kruise-rs -f VALUES --wait   # any helm arguments
#   hack/chart/helm.sh --path                                             # print the binary's path
#
# HELM=/path/to/helm runs another binary instead. Without KUBECONFIG it talks to the testbed
# (its admin kubeconfig; KRUISE_TESTBED_DIR honoured as by testbed.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

helm_bin() {
  if [ -n "${HELM:-}" ]; then echo "$HELM"; return; fi
  local here=$root/hack/testbed
  # shellcheck source=../testbed/versions.sh
  source "$here/versions.sh"
  local v bin
  v=$(sed -n 's|^[[:space:]]*helm.sh/helm/v3 \(v[0-9.]*\).*|\1|p' "$here/helm/go.mod" | head -n1)
  bin="$TESTBED_BIN/helm-$v/helm"
  if [ ! -x "$bin" ]; then
    command -v go >/dev/null || { echo "helm: Helm is not built ($bin) and Go is not on PATH" >&2; exit 1; }
    echo "helm: building Helm $v from its Go module (first use only; takes a minute or more) ..." >&2
    mkdir -p "$(dirname "$bin")"
    (cd "$here/helm" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false} -trimpath" \
      go build -ldflags "$(./ldflags.sh)" -o "$bin.tmp" helm.sh/helm/v3/cmd/helm)
    mv "$bin.tmp" "$bin"
  fi
  echo "$bin"
}

bin=$(helm_bin)
if [ "${1:-}" = --path ]; then echo "$bin"; exit 0; fi
if [ -z "${KUBECONFIG:-}" ]; then
  KUBECONFIG=$("$root/hack/testbed/testbed.sh" env | sed -n 's/^export KUBECONFIG=//p')
  export KUBECONFIG
fi
exec "$bin" "$@"
