# Shared by hack/conformance/conformance.sh and hack/bench/daemon-footprint.sh (sourced, from the
# repository root): OpenKruise's binaries built from the Go module proxy at one module version.
# The caller sets KRUISE_MODULE_VERSION and E2E_DIR (the cache directory) and defines log and die.

# The module's source tree in the Go module cache (read-only; downloaded once).
openkruise_module_dir() {
  command -v go >/dev/null || die "go is not installed (needed once to build OpenKruise's binaries)"
  local dir
  # The checksum database has no entry for this module version (the proxy serves it; its
  # dependencies are checked against its own go.sum when it is built).
  dir=$(GONOSUMDB=github.com/openkruise/kruise GOFLAGS=-mod=mod GOTOOLCHAIN=local \
        go mod download -json "github.com/openkruise/kruise@$KRUISE_MODULE_VERSION" \
        | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir","")); sys.exit(1 if d.get("Error") else 0)') \
    || die "go mod download github.com/openkruise/kruise@$KRUISE_MODULE_VERSION failed"
  [ -d "$dir/test/e2e" ] || die "$dir has no test/e2e"
  echo "$dir"
}

# build_from_module OUT WHAT PACKAGE GO-SUBCOMMAND...: one binary of the module version, cached.
build_from_module() {
  local out=$1 what=$2 pkg=$3; shift 3
  log "building OpenKruise $KRUISE_MODULE_VERSION's $what from the Go module proxy (once; a few minutes)"
  local dir work
  dir=$(openkruise_module_dir) || exit 1
  work=$(mktemp -d /tmp/openkruise-src.XXXXXX)
  # The module cache is read-only; build from a writable copy (as the main module, so its
  # replace directives apply).
  cp -r "$dir/." "$work/" && chmod -R u+w "$work"
  mkdir -p "$E2E_DIR"
  (cd "$work" && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0 go "$@" -o "$out.tmp" "$pkg") \
    || { rm -rf "$work"; die "go $* $pkg failed"; }
  mv "$out.tmp" "$out"
  rm -rf "$work"
  log "cached $out"
}
