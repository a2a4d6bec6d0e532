#!/usr/bin/env bash
# Lints the Helm chart charts/kruise-rs and compares its `helm template` output with the golden
# files in charts/kruise-rs/ci/golden/ (one per case below); exits non-zero with a diff when one
# differs. `--update` rewrites the goldens instead (`make chart-golden`).
#
#   hack/chart/check.sh            # `make chart-check`, a static step of `make test`
#   hack/chart/check.sh --update   # after changing the chart (or `make crds` changed it)
#
# Helm is the testbed's, built from its Go module (hack/testbed/helm) into the testbed cache by
# hack/testbed/build.sh; if it is not there yet, hack/chart/helm.sh builds just Helm the same way
# (needs Go and the Go module proxy once). HELM=/path/to/helm uses another binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
chart=charts/kruise-rs
golden=$chart/ci/golden
# Release name of every rendering (OpenKruise's docs install release "kruise").
release=kruise

update=0
case "${1:-}" in
  "") ;;
  --update) update=1 ;;
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

# Golden cases: NAME and the helm template arguments rendering it.
cases=(
  "default|"
  "cloneset|-f $chart/ci/cloneset-values.yaml"
  "openkruise|-f $chart/ci/openkruise-values.yaml"
)

helm=$(hack/chart/helm.sh --path)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Helm's own state (repositories, plugins, cache) stays out of $HOME.
export HELM_CACHE_HOME=$tmp/helm/cache HELM_CONFIG_HOME=$tmp/helm/config HELM_DATA_HOME=$tmp/helm/data
echo "chart: $("$helm" version --template '{{.Version}}') ($helm)"

status=0
for c in "${cases[@]}"; do
  name=${c%%|*}
  # shellcheck disable=SC2206 # the arguments are words
  args=(${c#*|})
  echo "chart: helm lint --strict $chart ${args[*]}"
  if ! "$helm" lint --strict "$chart" "${args[@]}" >"$tmp/lint.out" 2>&1; then
    cat "$tmp/lint.out"; status=1
  fi
  "$helm" template "$release" "$chart" "${args[@]}" >"$tmp/$name.yaml"
  "$helm" template "$release" "$chart" "${args[@]}" >"$tmp/$name.again.yaml"
  if ! cmp -s "$tmp/$name.yaml" "$tmp/$name.again.yaml"; then
    echo "chart: $name: two renderings differ (the templates are not deterministic):" >&2
    diff -u "$tmp/$name.yaml" "$tmp/$name.again.yaml" | head -40 >&2
    status=1
  fi
  if [ "$update" = 1 ]; then
    mkdir -p "$golden"
    cp "$tmp/$name.yaml" "$golden/$name.yaml"
    echo "chart: wrote $golden/$name.yaml"
  elif diff -u "$golden/$name.yaml" "$tmp/$name.yaml" >"$tmp/$name.diff" 2>&1; then
    echo "chart: $name: matches $golden/$name.yaml"
  else
    echo "chart: $name: STALE $golden/$name.yaml (review, then run 'make chart-golden'):" >&2
    head -200 "$tmp/$name.diff" >&2
    status=1
  fi
done
if [ "$status" != 0 ]; then echo "chart: FAILED" >&2; fi
exit "$status"
