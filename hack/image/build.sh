#!/usr/bin/env bash
# Container images of kruise-manager and kruise-daemon, built offline and pushed to the
# testbed's local registry (make image). No Docker engine, no registry but the testbed's:
#   1. static release binaries (glibc, `-C target-feature=+crt-static`, x86_64-unknown-linux-gnu);
#   2. an OCI image per binary with umoci: the binary, CA certificates, /etc/passwd with the
#      non-root user 65532 (`nonroot`), nothing else (no shell: the root filesystem can be
#      mounted read-only, nothing is written to it);
#   3. skopeo copies them to <registry>/kruise-rs/kruise-manager:<version> and
#      .../kruise-daemon:<version> (the chart's default image values).
#
#   hack/image/build.sh [--registry HOST:PORT] [--tag TAG] [--no-push] [--dev]
#
# Defaults: the testbed's registry (127.0.0.1:<port base + 7>, 16447), the workspace version.
# --dev packages the debug binaries the test suite already builds (target/debug, dynamically
# linked: their shared libraries from ldd go into the image beside them) under tag <version>-dev
# instead of spending minutes on an optimized static build; the in-cluster e2e uses it. Same
# image layout, user and entrypoint; only the binaries differ.
# The OCI layout stays in target/image/layout (tags kruise-manager, kruise-daemon).
set -euo pipefail
cd "$(dirname "$0")/../.."
log() { echo "[image] $*" >&2; }
die() { log "error: $*"; exit 1; }

REGISTRY="127.0.0.1:$(( ${KRUISE_TESTBED_PORT_BASE:-16440} + 7 ))"
TAG=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
PUSH=1
DEV=0
TAG_SET=0
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) REGISTRY=$2; shift 2;;
    --tag) TAG=$2; TAG_SET=1; shift 2;;
    --no-push) PUSH=0; shift;;
    --dev) DEV=1; shift;;
    *) die "unknown argument $1 (usage: $0 [--registry HOST:PORT] [--tag TAG] [--no-push] [--dev])";;
  esac
done
[ -n "$TAG" ] || die "no version found in Cargo.toml"
[ "$DEV" = 0 ] || [ "$TAG_SET" = 1 ] || TAG="$TAG-dev"

# shellcheck source=hack/image/oci.sh
source hack/image/oci.sh
oci_ensure_tools || die "cannot install the image tools"
hack/tools/ensure-protoc.sh >/dev/null

t0=$(date +%s)
if [ "$DEV" = 1 ]; then
  log "building debug binaries (kruise-manager, kruise-daemon)"
  cargo build -q -p kruise-manager -p kruise-daemon --bin kruise-manager --bin kruise-daemon \
    || die "cargo build failed"
  BIN="${CARGO_TARGET_DIR:-target}/debug"
else
  TARGET=x86_64-unknown-linux-gnu
  log "building static release binaries (kruise-manager, kruise-daemon; minutes on 2 cores)"
  RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    cargo build --release -q --target "$TARGET" -p kruise-manager -p kruise-daemon \
    --bin kruise-manager --bin kruise-daemon || die "cargo build failed"
  BIN="${CARGO_TARGET_DIR:-target}/$TARGET/release"
  for b in kruise-manager kruise-daemon; do
    [ -z "$(shared_libs "$BIN/$b")" ] || die "$BIN/$b is not static: $(shared_libs "$BIN/$b" | tr '\n' ' ')"
  done
fi
log "binaries built in $(( $(date +%s) - t0 ))s ($(du -h "$BIN/kruise-manager" | cut -f1) manager, $(du -h "$BIN/kruise-daemon" | cut -f1) daemon)"

WORK=target/image
L="$WORK/layout"
rm -rf "$WORK"; mkdir -p "$WORK"
OCI_LABELS=("org.opencontainers.image.source=https://github.com/kruise-rs/kruise-rs"
  "org.opencontainers.image.revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)")
for b in kruise-manager kruise-daemon; do
  oci_image "$L" "$b" 65532:65532 "/$b" "$TAG" "$BIN/$b:/$b"
done
umoci gc --layout "$L"
log "OCI layout: $L (tags kruise-manager, kruise-daemon)"

if [ "$PUSH" = 1 ]; then
  curl -sf "http://$REGISTRY/v2/" >/dev/null || die "no registry at $REGISTRY (start the testbed: make testbed-up)"
  for b in kruise-manager kruise-daemon; do
    oci_push "$L" "$b" "docker://$REGISTRY/kruise-rs/$b:$TAG" || die "pushing $b failed"
    log "pushed $REGISTRY/kruise-rs/$b:$TAG"
  done
fi
