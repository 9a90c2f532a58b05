#!/usr/bin/env bash
# Builds the engine image offline (no registry), like deploy/sandbox/build-offline.sh builds
# the sandbox images: a Debian minbase root filesystem from debootstrap with Debian's
# docker.io and runsc, gVisor registered as the runtime `runsc` (the daemon.json lines of
# docs/isolation.md, with experimental features), loaded with `docker import` as
# sandpool/engine:dev. It is the Helm chart's DinD sidecar image: a DinD node then offers
# gVisor (pools with `isolation: gvisor`) without touching the cluster's nodes.
#
#   docker run -d --privileged --name engine sandpool/engine:dev
#
# The Debian release and mirror come from the host's apt configuration
# (/etc/apt/sources.list.d/debian.sources), never from this file. Rebuilt only when its
# inputs (release, architecture, packages, recipe) change; --rebuild forces it.
set -euo pipefail

readonly RECIPE_VERSION=2
readonly PACKAGES=(docker.io runsc iptables ca-certificates procps tini)
readonly RUNSC_ARGS='["--platform=ptrace", "--network=none", "--host-uds=create"]'
SOURCES_FILE="${SANDPOOL_DEBIAN_SOURCES:-/etc/apt/sources.list.d/debian.sources}"
DEBOOTSTRAP_CACHE="${SANDPOOL_DEBOOTSTRAP_CACHE:-/var/cache/sandpool/debootstrap}"
IMAGE_TAG="sandpool/engine:dev"
REBUILD=0

usage() {
  cat <<USAGE
Usage: bash deploy/engine/build-offline.sh [--rebuild] [--tag TAG]

Builds $IMAGE_TAG offline: Debian minbase + ${PACKAGES[*]}, gVisor's runsc registered
in /etc/docker/daemon.json, dockerd as its command (under tini). Needs root (debootstrap,
chroot), a running Docker engine and Debian's package mirror ($SOURCES_FILE).
USAGE
}

while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild) REBUILD=1 ;;
    --tag) [ $# -ge 2 ] || { echo "build-engine: --tag needs a value" >&2; exit 2; }; IMAGE_TAG="$2"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build-engine: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "build-engine: $*"; }
die() { echo "build-engine: error: $*" >&2; exit 1; }

WORK=""
cleanup() {
  [ -n "$WORK" ] && [ -d "$WORK" ] || return 0
  local mounts
  mounts="$(awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r)"
  if [ -n "$mounts" ]; then
    while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done <<<"$mounts"
  fi
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

docker info >/dev/null 2>&1 || die "Docker engine not answering; run scripts/start-docker.sh"
ARCH="$(dpkg --print-architecture 2>/dev/null)" || die "dpkg not found: this script needs a Debian-family host"
[ -r "$SOURCES_FILE" ] || die "cannot read $SOURCES_FILE (set SANDPOOL_DEBIAN_SOURCES)"
# The first deb stanza's plain release suite and its mirror (as deploy/sandbox/build-offline.sh).
read -r RELEASE MIRROR <<<"$(awk '
  function flush() {
    if (types ~ /(^| )deb( |$)/ && uris != "" && release == "") {
      n = split(suites, s, " ")
      for (i = 1; i <= n; i++) if (s[i] !~ /-/) { release = s[i]; break }
      if (release != "") { split(uris, u, " "); mirror = u[1] }
    }
    types = ""; uris = ""; suites = ""
  }
  /^[ \t]*$/ { flush(); next }
  /^#/ { next }
  /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
  /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
  /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
  END { flush(); if (release != "") print release, mirror }
' "$SOURCES_FILE")" || true
[ -n "${RELEASE:-}" ] && [ -n "${MIRROR:-}" ] || die "no 'Types: deb' stanza with a release suite in $SOURCES_FILE"

INPUTS="recipe=$RECIPE_VERSION release=$RELEASE arch=$ARCH packages=${PACKAGES[*]} runsc=$RUNSC_ARGS"
if [ "$REBUILD" -eq 0 ] && [ "$(docker image inspect --format '{{index .Config.Labels "org.sandpool.engine-inputs"}}' "$IMAGE_TAG" 2>/dev/null || true)" = "$INPUTS" ]; then
  say "$IMAGE_TAG is up to date (--rebuild to force)"
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "building the engine image needs root (debootstrap, chroot)"
if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1; } \
    || die "could not install debootstrap with apt-get"
fi
exec 9>"${TMPDIR:-/tmp}/sandpool-engine-build.lock"
flock 9

WORK="$(mktemp -d "${TMPDIR:-/var/tmp}/sandpool-engine.XXXXXX")"
ROOTFS="$WORK/rootfs"
mkdir -p "$ROOTFS" "$DEBOOTSTRAP_CACHE"
say "debootstrap $RELEASE/$ARCH minbase + ${PACKAGES[*]} (a few minutes)"
if ! debootstrap --variant=minbase --arch="$ARCH" --components=main \
  --include="$(IFS=,; echo "${PACKAGES[*]}")" --cache-dir="$DEBOOTSTRAP_CACHE" \
  "$RELEASE" "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
  failed_log="${TMPDIR:-/tmp}/sandpool-engine-debootstrap-failed.log"
  cat "$WORK/debootstrap.log" "$ROOTFS/debootstrap/debootstrap.log" >"$failed_log" 2>/dev/null || true
  echo "build-engine: error: debootstrap failed (full log: $failed_log); last lines:" >&2
  tail -n 25 "$WORK/debootstrap.log" >&2
  exit 1
fi
[ -x "$ROOTFS/usr/sbin/dockerd" ] && [ -x "$ROOTFS/usr/bin/runsc" ] || die "dockerd or runsc missing from the rootfs"

mkdir -p "$ROOTFS/etc/docker"
cat >"$ROOTFS/etc/docker/daemon.json" <<JSON
{
  "runtimes": {
    "runsc": {
      "path": "/usr/bin/runsc",
      "runtimeArgs": $RUNSC_ARGS
    }
  },
  "experimental": true
}
JSON
# `dind` prepares a container for an engine of its own (the chart's sidecar runs
# `dind dockerd ...`, as with the docker:dind image): securityfs, a tmpfs /tmp, and on
# cgroup v2 its processes moved to a child group so the root group can delegate controllers.
cat >"$ROOTFS/usr/local/bin/dind" <<'DIND'
#!/bin/sh
set -e
export container=docker
if [ -d /sys/kernel/security ] && ! mountpoint -q /sys/kernel/security; then
  mount -t securityfs none /sys/kernel/security || echo "dind: could not mount securityfs; AppArmor may not work" >&2
fi
mountpoint -q /tmp || mount -t tmpfs none /tmp
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  mkdir -p /sys/fs/cgroup/init
  # Every process of this group moves out, or the group cannot enable controllers for children.
  while read -r pid; do echo "$pid" >/sys/fs/cgroup/init/cgroup.procs 2>/dev/null || true; done </sys/fs/cgroup/cgroup.procs
  sed -e 's/ / +/g' -e 's/^/+/' </sys/fs/cgroup/cgroup.controllers >/sys/fs/cgroup/cgroup.subtree_control
fi
[ $# -gt 0 ] && exec "$@"
DIND
chmod 0755 "$ROOTFS/usr/local/bin/dind"

rm -rf "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/archives/*.deb \
  "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
  "$ROOTFS"/var/log/*.log "$ROOTFS"/var/log/apt/* "$ROOTFS"/debootstrap "$ROOTFS"/tmp/* "$ROOTFS"/var/tmp/*
: >"$ROOTFS/etc/resolv.conf"

# dockerd listens on its socket, which the gateway's pod shares (/var/run in an emptyDir).
tar --numeric-owner -C "$ROOTFS" -cf - . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change "LABEL org.sandpool.engine-inputs=\"$INPUTS\"" \
  --change 'VOLUME /var/lib/docker' \
  --change 'ENTRYPOINT ["/usr/bin/tini", "--", "dind", "dockerd"]' \
  --change 'CMD ["--host=unix:///var/run/docker.sock"]' \
  - "$IMAGE_TAG" >/dev/null || die "docker import of the rootfs failed"
say "built $IMAGE_TAG ($(docker image inspect --format '{{.Size}}' "$IMAGE_TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
