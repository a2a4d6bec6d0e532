# Shared by hack/image/build.sh and hack/swap/openkruise.sh (source it): single-layer OCI images
# assembled with umoci, no Docker engine, no base image pulled from anywhere.

# The shared libraries (and the ELF interpreter) a dynamically linked binary loads, as absolute
# paths; nothing for a static one.
shared_libs() {
  ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^[ \t]*\/[^ ]+ \(/ {print $1}' | sort -u
}

# Installs umoci, skopeo and the CA bundle from Debian's packages when missing (root only).
oci_ensure_tools() {
  local need=()
  command -v umoci >/dev/null || need+=(umoci)
  command -v skopeo >/dev/null || need+=(skopeo)
  [ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
  [ ${#need[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || { echo "missing ${need[*]}; install them (apt-get install ${need[*]})" >&2; return 1; }
  echo "installing Debian's ${need[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
}

# oci_image LAYOUT TAG USER ENTRYPOINT VERSION BINARY:PATH_IN_IMAGE...
# Adds image TAG to the OCI layout LAYOUT (created if absent): the binaries at the given paths,
# their shared libraries, the CA bundle, /etc/passwd + /etc/group with root, nonroot (65532) and
# nobody (65534), a world-writable /tmp; runs ENTRYPOINT as USER (uid:gid). Extra image labels:
# OCI_LABELS (an array of key=value), if set. Extra empty directories: OCI_DIRS (an array of
# PATH:UID:GID), if set.
oci_image() {
  local layout=$1 tag=$2 user=$3 entry=$4 version=$5
  shift 5
  [ -d "$layout" ] || { umoci init --layout "$layout" && umoci new --image "$layout:empty"; }
  local bundle
  bundle=$(mktemp -d "${TMPDIR:-/tmp}/oci-bundle.XXXXXX")
  rmdir "$bundle"
  umoci unpack --image "$layout:empty" "$bundle" >/dev/null
  local r="$bundle/rootfs" spec bin dest lib label labels=()
  for label in ${OCI_LABELS[@]+"${OCI_LABELS[@]}"}; do labels+=(--config.label "$label"); done
  mkdir -p "$r/etc/ssl/certs" "$r/tmp"
  chmod 1777 "$r/tmp"
  for spec in ${OCI_DIRS[@]+"${OCI_DIRS[@]}"}; do
    dest=${spec%%:*}
    mkdir -p "$r$dest"
    chown "${spec#*:}" "$r$dest"
  done
  for spec in "$@"; do
    bin=${spec%%:*}; dest=${spec#*:}
    mkdir -p "$r$(dirname "$dest")"
    install -m 0755 "$bin" "$r$dest"
    for lib in $(shared_libs "$bin"); do
      mkdir -p "$r$(dirname "$lib")"
      cp -L "$lib" "$r$lib"
    done
  done
  cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n' > "$r/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\nnobody:x:65534:\n' > "$r/etc/group"
  umoci repack --image "$layout:$tag-base" "$bundle" >/dev/null
  rm -rf "$bundle"
  umoci config --image "$layout:$tag-base" --tag "$tag" \
    --config.entrypoint "$entry" --config.user "$user" \
    --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    --config.label "org.opencontainers.image.title=$tag" \
    --config.label "org.opencontainers.image.version=$version" "${labels[@]}" >/dev/null
  umoci rm --image "$layout:$tag-base"
}

# oci_push LAYOUT TAG DEST (docker://HOST:PORT/REPO:TAG; plain HTTP)
oci_push() {
  skopeo copy --quiet --dest-tls-verify=false "oci:$1:$2" "$3"
}
