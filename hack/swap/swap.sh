#!/usr/bin/env bash
# The live swap between OpenKruise v1.9.0 and kruise-rs on a testbed of its own (3 kwok nodes,
# 1 real node, ports 25440+), both directions, with ≥ 300 pods: one command.
#
#   hack/swap/swap.sh --openkruise-src DIR   # DIR: git clone -b v1.9.0 https://github.com/openkruise/kruise
#   hack/swap/swap.sh                        # kruise-rs on both sides (what make test runs)
#
# Runs crates/kruise-manager/tests/swap.rs (read it for what is asserted) and prints its figures:
# pods created / deleted / restarted and revisions created by each swap, rollout times.
# KRUISE_E2E_RELEASE_IMAGES=1 uses the release images of `make image` instead of debug builds.
set -euo pipefail
cd "$(dirname "$0")/../.."
die() { echo "swap: $*" >&2; exit 1; }
src=""
while [ $# -gt 0 ]; do
  case "$1" in
    --openkruise-src) src=$(cd "$2" && pwd) || die "no directory $2"; shift 2;;
    *) die "unknown argument $1 (usage: $0 [--openkruise-src DIR])";;
  esac
done
if [ -n "$src" ]; then
  [ -f "$src/main.go" ] && [ -d "$src/config/default" ] || die "$src is not an OpenKruise source tree"
  export KRUISE_SWAP_OPENKRUISE_SRC=$src
  echo "swap: OpenKruise from $src <-> kruise-rs" >&2
else
  unset KRUISE_SWAP_OPENKRUISE_SRC
  echo "swap: kruise-rs <-> kruise-rs (pass --openkruise-src for OpenKruise v1.9.0)" >&2
fi
exec cargo test -p kruise-manager --test swap -- --nocapture
