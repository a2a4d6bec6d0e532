#!/usr/bin/env bash
# Prints the -ldflags of Helm's own Makefile for the versions this module's go.mod requires:
# the Helm version (`helm version`) and the Kubernetes minor of its client-go (the default
# .Capabilities.KubeVersion of `helm template` and the API deprecation checks of `helm lint`).
# Used by hack/testbed/build.sh and hack/chart/check.sh.
set -euo pipefail
mod="$(cd "$(dirname "$0")" && pwd)/go.mod"
helm=$(sed -n 's|^[[:space:]]*helm.sh/helm/v3 \(v[0-9.]*\).*|\1|p' "$mod" | head -n1)
client=$(sed -n 's|^[[:space:]]*k8s.io/client-go v0\.\([0-9]*\)\..*|\1|p' "$mod" | head -n1)
[ -n "$helm" ] && [ -n "$client" ] || { echo "ldflags.sh: cannot read versions from $mod" >&2; exit 1; }
f="-s -w -X helm.sh/helm/v3/internal/version.version=$helm -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  f+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$client"
done
echo "$f"
