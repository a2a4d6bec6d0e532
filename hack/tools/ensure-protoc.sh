#!/usr/bin/env bash
# Makes sure `protoc` (the Protocol Buffers compiler) is on PATH: kruise-daemon's CRI client is
# generated from the CRI protos at build time (crate k8s-cri, via tonic-prost-build), which
# needs it. Installs Debian's protobuf-compiler when missing (needs root), else explains.
set -euo pipefail
if command -v protoc >/dev/null 2>&1 || [ -n "${PROTOC:-}" ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's protobuf-compiler (protoc, needed to build kruise-daemon's CRI client)"
  log=$(mktemp)
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends protobuf-compiler >"$log" 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$log" 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends protobuf-compiler >>"$log" 2>&1 || {
      tail -n 20 "$log" >&2; rm -f "$log"
      echo "error: apt-get install protobuf-compiler failed" >&2; exit 1; }
  fi
  rm -f "$log"
  command -v protoc >/dev/null || { echo "error: protoc still not found after installing protobuf-compiler" >&2; exit 1; }
  exit 0
fi
echo "error: protoc not found: install the Protocol Buffers compiler (Debian/Ubuntu: apt-get install protobuf-compiler) or set PROTOC" >&2
exit 1
