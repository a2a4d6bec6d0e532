#!/usr/bin/env bash
# Chaos run (not part of `make test`): kill -9 and restart kruise-manager every 5 seconds while
# a CloneSet of N pods (default 1000) rolls in place with maxUnavailable 20%, then check that
# it converges within 2 minutes to N updated Ready pods with 0 pods created or deleted and never
# more not-Ready pods than maxUnavailable allows. `make test` runs the same test with 1000 pods
# and 10 kills (crates/kruise-manager/tests/restart.rs, chaos_kill_every_5s_during_inplace_rollout).
#
#   hack/chaos/chaos.sh [--pods N] [--kills K]     (defaults: 1000 pods, 24 kills = 2 minutes)
#
# Uses the running testbed (started if needed) and adds kwok nodes up to 10.
set -euo pipefail
cd "$(dirname "$0")/../.."
pods=1000 kills=24
while [ $# -gt 0 ]; do
  case $1 in
    --pods) pods=$2; shift 2;;
    --kills) kills=$2; shift 2;;
    *) echo "usage: $0 [--pods N] [--kills K]" >&2; exit 2;;
  esac
done
[[ "$pods" =~ ^[0-9]+$ && "$kills" =~ ^[0-9]+$ ]] || { echo "--pods and --kills take numbers" >&2; exit 2; }
echo "==> testbed"
hack/testbed/testbed.sh status >/dev/null 2>&1 || hack/testbed/testbed.sh up
hack/demo/demo.sh stop >/dev/null
echo "==> chaos: $pods pods, $kills kills 5 s apart (progress below; manager logs in target/e2e-logs/)"
KRUISE_CHAOS_PODS=$pods KRUISE_CHAOS_KILLS=$kills \
  exec cargo test -p kruise-manager --test restart -- --exact chaos_kill_every_5s_during_inplace_rollout --nocapture
