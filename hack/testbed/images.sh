#!/usr/bin/env bash
# Stand-in container images for the testbed's real nodes, built offline (no internet here) from
# Debian's busybox-static with umoci, into an OCI layout in the versioned cache. Sourced by
# realnode.sh; `images_build` builds once, `images_push REGISTRY` pushes every name below.
#
# Each line of IMAGE_CATALOGUE is one image (one digest): KIND VARIANT NAME...; every NAME listed
# on a line gets the same digest (nginx:alpine and nginx:mainline-alpine: OpenKruise's "same
# imageID" spec needs two tags of one image), different lines differ (the variant is written
# into the config as the label org.opencontainers.image.version), so an image change is a real
# pull of a new digest. Names are what pod specs say; containerd maps every registry to the
# local one, keeping the repository path (docker.io/library/nginx -> library/nginx,
# registry.k8s.io/e2e-test-images/agnhost -> e2e-test-images/agnhost). Anything not listed
# fails to pull (manifest unknown), as a missing image does for real.
#
# What the kinds do (all run busybox; long-running ones exit on SIGTERM/SIGINT/SIGQUIT):
#   busybox  sh (the busybox applets: sleep, wget, nc, httpd, dd, ...)
#            (also centos:7, the main container of OpenKruise's PodProbeMarker specs: `sleep 999d`,
#            probed with `ps -ef`)
#   nginx    HTTP on :80 serving /usr/share/nginx/html (index.html), `nginx` on PATH
#   httpd    HTTP on :80 serving /usr/local/apache2/htdocs (index.html), httpd-foreground
#   redis    TCP on :6379 (redis-server), no protocol
#   agnhost  /agnhost pause | netexec [--http-port N] | serve-hostname [--port N] | test-webserver
#   pause    the sandbox image: a static Go pause (hack/testbed/images/pause), user 65535

IMAGE_CATALOGUE='
busybox latest     docker.io/library/busybox:latest docker.io/library/busybox:stable
busybox 1.28       docker.io/library/busybox:1.28
busybox 1.29       docker.io/library/busybox:1.29
busybox 1.32       docker.io/library/busybox:1.32
busybox 1.33       docker.io/library/busybox:1.33
busybox 1.34       docker.io/library/busybox:1.34
busybox 1.35       docker.io/library/busybox:1.35
busybox 1.36       docker.io/library/busybox:1.36 docker.io/library/busybox:1.36.1
busybox 1.37       docker.io/library/busybox:1.37
busybox e2e-1.29-4 registry.k8s.io/e2e-test-images/busybox:1.29-4
busybox e2e-1.36.1-1 registry.k8s.io/e2e-test-images/busybox:1.36.1-1
busybox e2e-1.37.0-2 registry.k8s.io/e2e-test-images/busybox:1.37.0-2
busybox centos-7   docker.io/library/centos:7
nginx   alpine     docker.io/library/nginx:alpine docker.io/library/nginx:mainline-alpine
nginx   latest     docker.io/library/nginx:latest docker.io/library/nginx:mainline
nginx   stable     docker.io/library/nginx:stable docker.io/library/nginx:stable-alpine
nginx   1.14.2     docker.io/library/nginx:1.14.2
nginx   1.15.1     docker.io/library/nginx:1.15.1
nginx   1.23.1     docker.io/library/nginx:1.23.1
nginx   1.24       docker.io/library/nginx:1.24
nginx   1.25       docker.io/library/nginx:1.25
nginx   1.26       docker.io/library/nginx:1.26
nginx   1.27       docker.io/library/nginx:1.27
nginx   1.28       docker.io/library/nginx:1.28
nginx   e2e-1.14-4 registry.k8s.io/e2e-test-images/nginx:1.14-4
nginx   e2e-1.15-4 registry.k8s.io/e2e-test-images/nginx:1.15-4
nginx   e2e-1.27.0-2 registry.k8s.io/e2e-test-images/nginx:1.27.0-2
nginx   e2e-1.28.0-2 registry.k8s.io/e2e-test-images/nginx:1.28.0-2
httpd   latest     docker.io/library/httpd:latest docker.io/library/httpd:2.4
httpd   alpine     docker.io/library/httpd:alpine
httpd   e2e-2.4.38-4 registry.k8s.io/e2e-test-images/httpd:2.4.38-4
httpd   e2e-2.4.39-4 registry.k8s.io/e2e-test-images/httpd:2.4.39-4
redis   latest     docker.io/library/redis:latest
redis   alpine     docker.io/library/redis:alpine
redis   e2e-5.0.5-3 registry.k8s.io/e2e-test-images/redis:5.0.5-3
agnhost 2.53       registry.k8s.io/e2e-test-images/agnhost:2.53
agnhost 2.55       registry.k8s.io/e2e-test-images/agnhost:2.55
agnhost 2.66.1     registry.k8s.io/e2e-test-images/agnhost:2.66.1
pause   3.10.2     registry.k8s.io/pause:3.10.2 registry.k8s.io/pause:latest
pause   3.10.1     registry.k8s.io/pause:3.10.1
pause   3.10       registry.k8s.io/pause:3.10
pause   3.9        registry.k8s.io/pause:3.9
'

# The image a sandbox runs (containerd's sandbox_image; also kubelet v1.37's default).
SANDBOX_IMAGE=registry.k8s.io/pause:3.10.2

images_script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Cache key: this file, the pause program and the busybox binary the images are made of.
images_key() {
  cat "$images_script_dir/images.sh" "$images_script_dir/images/pause/main.go" /bin/busybox \
    | sha256sum | cut -c1-16
}

# The repository path inside the local registry for an image name (registry host dropped).
image_repo_path() {
  local ref=$1 first=${1%%/*}
  case $first in
    *.*|*:*|localhost) echo "${ref#*/}";;   # first component is a registry host
    *) echo "library/$ref";;                # docker.io short form (not used in the catalogue)
  esac
}

# write_rootfs_common DIR: busybox with every applet, passwd/group, the usual directories.
images_rootfs_common() {
  local r=$1 a
  mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,root,tmp,var/run,var/log,proc,sys,dev,run}
  chmod 1777 "$r/tmp"
  cp /bin/busybox "$r/bin/busybox"
  for a in $(/bin/busybox --list-full); do
    [ "$a" = bin/busybox ] && continue
    mkdir -p "$r/$(dirname "$a")"
    ln -sf /bin/busybox "$r/$a"
  done
  cat > "$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
www-data:x:33:33:www-data:/var/www:/bin/false
nginx:x:101:101:nginx:/nonexistent:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
  cat > "$r/etc/group" <<'EOF'
root:x:0:
www-data:x:33:
nginx:x:101:
nogroup:x:65534:
EOF
  # serve PORT DIR: an HTTP server that stops on SIGTERM/SIGINT/SIGQUIT even as PID 1
  # (a process without handlers ignores them there, as busybox httpd does).
  cat > "$r/usr/local/bin/serve" <<'EOF'
#!/bin/sh
trap 'exit 0' TERM INT QUIT
httpd -f -p "$1" -h "$2" &
wait
EOF
  chmod 755 "$r/usr/local/bin/serve"
}

images_rootfs_kind() {
  local kind=$1 r=$2
  case $kind in
    busybox) ;;
    nginx)
      mkdir -p "$r/usr/share/nginx/html" "$r/etc/nginx"
      printf '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome to nginx!</h1></body></html>\n' \
        > "$r/usr/share/nginx/html/index.html"
      printf '#!/bin/sh\n# stand-in: arguments (-g "daemon off;") are ignored\nexec /usr/local/bin/serve 80 /usr/share/nginx/html\n' > "$r/usr/sbin/nginx"
      printf '#!/bin/sh\nexec "$@"\n' > "$r/docker-entrypoint.sh"
      chmod 755 "$r/usr/sbin/nginx" "$r/docker-entrypoint.sh";;
    httpd)
      mkdir -p "$r/usr/local/apache2/htdocs"
      printf '<html><body><h1>It works!</h1></body></html>\n' > "$r/usr/local/apache2/htdocs/index.html"
      printf '#!/bin/sh\nexec /usr/local/bin/serve 80 /usr/local/apache2/htdocs\n' > "$r/usr/local/bin/httpd-foreground"
      chmod 755 "$r/usr/local/bin/httpd-foreground";;
    redis)
      mkdir -p "$r/data" "$r/var/empty"
      printf '#!/bin/sh\n# stand-in: a TCP listener on 6379, no redis protocol\nexec /usr/local/bin/serve 6379 /var/empty\n' > "$r/usr/local/bin/redis-server"
      chmod 755 "$r/usr/local/bin/redis-server";;
    agnhost)
      cat > "$r/agnhost" <<'EOF'
#!/bin/sh
# stand-in for agnhost: the subcommands e2e pods usually run
cmd=${1:-pause}; [ $# -gt 0 ] && shift
port=
for a in "$@"; do
  case $a in --http-port=*|--port=*) port=${a#*=};; esac
done
mkdir -p /tmp/www
case $cmd in
  pause) trap 'exit 0' TERM INT QUIT; while :; do sleep 3600 & wait; done;;
  netexec) hostname > /tmp/www/hostname; hostname > /tmp/www/index.html; exec /usr/local/bin/serve "${port:-8080}" /tmp/www;;
  serve-hostname) hostname > /tmp/www/index.html; exec /usr/local/bin/serve "${port:-9376}" /tmp/www;;
  test-webserver) echo ok > /tmp/www/index.html; exec /usr/local/bin/serve "${port:-80}" /tmp/www;;
  *) echo "agnhost stand-in: unsupported subcommand $cmd" >&2; exit 1;;
esac
EOF
      chmod 755 "$r/agnhost";;
  esac
}

# images_config KIND: sets the array CFG to the umoci config flags of a kind.
images_config() {
  case $1 in
    busybox) CFG=(--config.cmd sh);;
    nginx) CFG=(--config.entrypoint /docker-entrypoint.sh --config.cmd nginx --config.cmd -g
                --config.cmd 'daemon off;' --config.exposedports 80/tcp --config.stopsignal SIGQUIT);;
    httpd) CFG=(--config.cmd httpd-foreground --config.workingdir /usr/local/apache2
                --config.exposedports 80/tcp --config.stopsignal SIGWINCH);;
    redis) CFG=(--config.cmd redis-server --config.workingdir /data --config.exposedports 6379/tcp);;
    agnhost) CFG=(--config.entrypoint /agnhost --config.cmd pause);;
    pause) CFG=(--config.entrypoint /pause --config.user 65535:65535);;
  esac
}

# Builds the OCI layout (once per key) into $IMAGES_DIR/layout; prints nothing else.
images_build() {
  local pause_bin=$1
  IMAGES_DIR="$TESTBED_CACHE/images-$(images_key)"
  [ -f "$IMAGES_DIR/done" ] && return
  log "building the stand-in images offline (umoci + busybox-static) into $IMAGES_DIR"
  local t0; t0=$(date +%s)
  rm -rf "$IMAGES_DIR.tmp"; mkdir -p "$IMAGES_DIR.tmp"
  local L="$IMAGES_DIR.tmp/layout" kind variant refs b CFG
  umoci init --layout "$L"
  umoci new --image "$L:empty"
  for kind in busybox nginx httpd redis agnhost pause; do
    b="$IMAGES_DIR.tmp/bundle-$kind"
    umoci unpack --image "$L:empty" "$b" >/dev/null
    if [ "$kind" = pause ]; then
      cp "$pause_bin" "$b/rootfs/pause"
    else
      images_rootfs_common "$b/rootfs"
      images_rootfs_kind "$kind" "$b/rootfs"
    fi
    umoci repack --image "$L:$kind-base" "$b"
    rm -rf "$b"
    images_config "$kind"
    umoci config --image "$L:$kind-base" --tag "$kind" \
      --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${CFG[@]}"
  done
  while read -r kind variant refs; do
    [ -n "$kind" ] || continue
    umoci config --image "$L:$kind" --tag "$kind--$variant" --config.label "org.opencontainers.image.version=$variant"
  done <<< "$IMAGE_CATALOGUE"
  umoci gc --layout "$L"
  touch "$IMAGES_DIR.tmp/done"
  rm -rf "$IMAGES_DIR"; mv "$IMAGES_DIR.tmp" "$IMAGES_DIR"
  log "images built in $(( $(date +%s) - t0 ))s"
}

# images_push REGISTRY_ADDR STAMP_FILE: pushes every catalogue name (skipped when STAMP_FILE
# already names this image set).
images_push() {
  local reg=$1 stamp=$2 key kind variant refs ref n=0
  key=$(basename "$IMAGES_DIR")
  [ "$(cat "$stamp" 2>/dev/null)" = "$key" ] && return
  local t0 had_cache=0; t0=$(date +%s)
  [ -e /var/lib/containers ] && had_cache=1   # skopeo's blob-info cache (root's default place)
  while read -r kind variant refs; do
    [ -n "$kind" ] || continue
    for ref in $refs; do
      skopeo copy --quiet --dest-tls-verify=false \
        "oci:$IMAGES_DIR/layout:$kind--$variant" "docker://$reg/$(image_repo_path "$ref")"
      n=$((n + 1))
    done
  done <<< "$IMAGE_CATALOGUE"
  [ "$had_cache" = 1 ] || rm -rf /var/lib/containers
  echo "$key" > "$stamp"
  log "pushed $n image names to the registry in $(( $(date +%s) - t0 ))s"
}
