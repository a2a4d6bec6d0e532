#!/usr/bin/env bash
# Interleaved comparison of kruise-rs and the Go OpenKruise manager on the same testbed, with the
# same harness and flags (kruise-bench rollout): kruise-rs, Go, kruise-rs, Go, ... Each run's JSON
# goes to $OUT/<i>-<rs|go>.json; read the figures as ratios (the machine may be shared).
#
#   OPENKRUISE_MANAGER=<v1.9.0 binary> OPENKRUISE_SRC=<v1.9.0 source> \
#     hack/bench/compare.sh [--rounds N] [--out DIR] [-- kruise-bench rollout flags, e.g. --qps 30 --burst 50]
#
# Needs KUBECONFIG/KRUISE_TESTBED_* pointing at a running testbed and release builds of
# kruise-manager, kruise-bench and kruise-admission-corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=2; OUT=target/bench-compare
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
RS=${KRUISE_MANAGER:-target/release/kruise-manager}
mkdir -p "$OUT"
trap 'hack/bench/openkruise-manager.sh --cleanup' EXIT
for i in $(seq "$ROUNDS"); do
  echo "==> round $i: kruise-rs ($RS)"
  target/release/kruise-bench rollout --manager "$RS" --json "$OUT/$i-rs.json" "$@" > "$OUT/$i-rs.log" 2>&1 || true
  sed -n '/^== kruise-bench/,$p' "$OUT/$i-rs.log"
  echo "==> round $i: OpenKruise ($OPENKRUISE_MANAGER)"
  target/release/kruise-bench rollout --manager hack/bench/openkruise-manager.sh --json "$OUT/$i-go.json" "$@" \
    > "$OUT/$i-go.log" 2>&1 || true
  sed -n '/^== kruise-bench/,$p' "$OUT/$i-go.log"
  hack/bench/openkruise-manager.sh --cleanup
done
