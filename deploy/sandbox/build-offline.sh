#!/usr/bin/env bash
# Builds the sandbox image without any container registry, for machines (CI,
# dev boxes) that reach Debian's package mirror but no registry.
#
#   base  sandpool/sandbox-base:<hash>  debootstrap minbase rootfs + python3,
#         bash, procps, tini, the host's node binary and the `sandbox` user,
#         loaded with `docker import`. <hash> covers everything that shapes it
#         (release, architecture, package list, recipe version, node binary),
#         so an existing base is reused until one of those changes.
#   final sandpool/sandbox:dev          base + the bundled server, built with
#         the legacy builder from a generated Dockerfile (BuildKit would try
#         to resolve the FROM image against a registry). Rebuilt only when the
#         bundle's sha256 or the base image changed (both kept as labels).
#   ds    sandpool/sandbox-datascience-base:<hash>  base + Debian's numpy,
#         pandas, scipy, ... and curl, jq, ... (apt-get in a container of the
#         base, then `docker commit`: the base layers are shared). <hash>
#         covers the base image id, the package list and the recipe version.
#   final sandpool/sandbox-datascience:dev  ds + the bundled server, as above.
#
# The Debian release and mirror come from the host's own apt configuration
# (/etc/apt/sources.list.d/debian.sources), never from this file.
set -euo pipefail

# Bump whenever the base recipe below changes in a way the package list does
# not show (users, directories, cleanup, image config).
readonly BASE_RECIPE_VERSION=1
readonly PACKAGES=(python3 bash coreutils procps libstdc++6 tini)
readonly SANDBOX_UID=10001
# The data-science image: the lean base + these Debian packages (issue 11's parity set
# of modules and tools; python-pptx has no bookworm package). Bump DS_RECIPE_VERSION
# when the install recipe changes in a way the list does not show.
readonly DS_RECIPE_VERSION=2
readonly DS_PACKAGES=(python3-numpy python3-pandas python3-scipy python3-sklearn python3-matplotlib
  python3-seaborn python3-pil python3-sympy python3-requests python3-openpyxl python3-xlrd
  python3-xlsxwriter python3-dateutil python3-tz python3-bs4 python3-lxml python3-pypdf
  python3-docx curl file gawk grep jq sed ca-certificates)
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly REPO_ROOT

SOURCES_FILE="${SANDPOOL_DEBIAN_SOURCES:-/etc/apt/sources.list.d/debian.sources}"
DEBOOTSTRAP_CACHE="${SANDPOOL_DEBOOTSTRAP_CACHE:-/var/cache/sandpool/debootstrap}"
BUNDLE="$REPO_ROOT/deploy/sandbox/.build/sandbox.mjs"
IMAGE_TAG="sandpool/sandbox:dev"
BASE_REPO="sandpool/sandbox-base"
DS_IMAGE_TAG="sandpool/sandbox-datascience:dev"
DS_BASE_REPO="sandpool/sandbox-datascience-base"
APT_CACHE="${SANDPOOL_APT_CACHE:-/var/cache/sandpool/apt-archives}"
REBUILD=0
DATASCIENCE=1

usage() {
  cat <<EOF
Usage: bash deploy/sandbox/build-offline.sh [--rebuild] [--bundle FILE] [--tag TAG]
                                           [--datascience-tag TAG] [--lean-only]

Builds the sandbox images offline (no registry): a Debian minbase root
filesystem from debootstrap, loaded with 'docker import' as
$BASE_REPO:<hash>, then $IMAGE_TAG with the bundled server on top;
then $DS_BASE_REPO:<hash> (the base + Debian's data-science
packages, apt-get in a container of the base, 'docker commit') and
$DS_IMAGE_TAG with the same server on top.

Options:
  --rebuild      rebuild the base images (lean, then data-science) even if ones
                 with the same inputs exist
  --bundle FILE  bundled server (default: deploy/sandbox/.build/sandbox.mjs,
                 made by 'node deploy/sandbox/bundle.mjs')
  --tag TAG      final image tag (default: $IMAGE_TAG)
  --datascience-tag TAG
                 data-science image tag (default: $DS_IMAGE_TAG)
  --lean-only    build only the lean image
  -h, --help     show this help

Needs root (debootstrap, chroot) for the base image, a running Docker engine
(scripts/start-docker.sh starts one), and Debian's package mirror, read from
$SOURCES_FILE (override with SANDPOOL_DEBIAN_SOURCES).
Downloaded packages are cached in $DEBOOTSTRAP_CACHE
(SANDPOOL_DEBOOTSTRAP_CACHE), the data-science ones in $APT_CACHE
(SANDPOOL_APT_CACHE). Running it again with nothing changed does nothing.
EOF
}

while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild) REBUILD=1 ;;
    --bundle) [ $# -ge 2 ] || { echo "build-offline: --bundle needs a file" >&2; exit 2; }; BUNDLE="$2"; shift ;;
    --bundle=*) BUNDLE="${1#*=}" ;;
    --tag) [ $# -ge 2 ] || { echo "build-offline: --tag needs a value" >&2; exit 2; }; IMAGE_TAG="$2"; shift ;;
    --tag=*) IMAGE_TAG="${1#*=}" ;;
    --datascience-tag) [ $# -ge 2 ] || { echo "build-offline: --datascience-tag needs a value" >&2; exit 2; }; DS_IMAGE_TAG="$2"; shift ;;
    --datascience-tag=*) DS_IMAGE_TAG="${1#*=}" ;;
    --lean-only) DATASCIENCE=0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build-offline: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

START_TIME=$SECONDS
STEP=0
STEPS=$((DATASCIENCE == 1 ? 7 : 4))
readonly STEPS
step() { STEP=$((STEP + 1)); echo "build-offline: [$STEP/$STEPS] $* (t+$((SECONDS - START_TIME))s)"; }
say() { echo "build-offline:       $*"; }
die() { echo "build-offline: error: $*" >&2; exit 1; }

WORK=""
cleanup() {
  [ -n "$WORK" ] && [ -d "$WORK" ] || return 0
  # debootstrap mounts proc/sys (and, inside containers, binds host device
  # nodes) into the target; a failed run can leave them mounted. Unmount
  # deepest first, and never let rm cross into another filesystem.
  local mounts
  mounts="$(awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r)"
  if [ -n "$mounts" ]; then
    while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done <<<"$mounts"
  fi
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 1. preconditions -------------------------------------------------------
step "checking prerequisites"
BUNDLE="$(cd "$(dirname "$BUNDLE")" 2>/dev/null && pwd)/$(basename "$BUNDLE")" \
  || die "bundle directory for $BUNDLE does not exist; run 'node deploy/sandbox/bundle.mjs' first"
[ -f "$BUNDLE" ] || die "bundle $BUNDLE not found; run 'node deploy/sandbox/bundle.mjs' first"
command -v docker >/dev/null 2>&1 || die "docker CLI not found; run scripts/start-docker.sh"
docker info >/dev/null 2>&1 || die "Docker engine not answering; run scripts/start-docker.sh"
NODE_BIN="$(realpath "$(command -v node)" 2>/dev/null)" || die "node not found on PATH"
ARCH="$(dpkg --print-architecture 2>/dev/null)" || die "dpkg not found: this script needs a Debian-family host"

# Parse the deb822 sources file: the first `deb` stanza whose suites include a
# plain release name (not -updates/-security) gives the mirror and release.
read_sources() {
  awk '
    function flush() {
      if (types ~ /(^| )deb( |$)/ && uris != "" && release == "") {
        n = split(suites, s, " ")
        for (i = 1; i <= n; i++) if (s[i] !~ /-/) { release = s[i]; break }
        if (release != "") { split(uris, u, " "); mirror = u[1]; keyring = signed }
      }
      types = ""; uris = ""; suites = ""; signed = ""
    }
    /^[ \t]*$/ { flush(); next }
    /^#/ { next }
    /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
    /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
    /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
    /^Signed-By:/ { sub(/^Signed-By:[ \t]*/, ""); signed = $0 }
    END { flush(); if (release != "") print release, mirror, keyring }
  ' "$1"
}
[ -r "$SOURCES_FILE" ] || die "cannot read $SOURCES_FILE (set SANDPOOL_DEBIAN_SOURCES to a deb822 sources file)"
read -r RELEASE MIRROR KEYRING <<<"$(read_sources "$SOURCES_FILE")" || true
if [ -z "${RELEASE:-}" ] || [ -z "${MIRROR:-}" ]; then
  die "no 'Types: deb' stanza with a release suite and URIs in $SOURCES_FILE"
fi
# Signed-By may also hold an inline key block; only a file path is usable here.
case "${KEYRING:-}" in /*) [ -r "$KEYRING" ] || KEYRING="" ;; *) KEYRING="" ;; esac

NODE_SHA="$(sha256sum "$NODE_BIN" | cut -d' ' -f1)"
INPUTS="recipe=$BASE_RECIPE_VERSION release=$RELEASE arch=$ARCH packages=${PACKAGES[*]} uid=$SANDBOX_UID node=$NODE_SHA"
BASE_HASH="$(printf '%s' "$INPUTS" | sha256sum | cut -c1-16)"
BASE_TAG="$BASE_REPO:$BASE_HASH"
BUNDLE_SHA="$(sha256sum "$BUNDLE" | cut -d' ' -f1)"
say "debian $RELEASE/$ARCH, node $("$NODE_BIN" --version) ($NODE_BIN), base $BASE_TAG"

# One build at a time per machine: parallel test workers may all call this.
exec 9>"${TMPDIR:-/tmp}/sandpool-sandbox-build.lock"
flock 9

image_id() { docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }
image_label() { docker image inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }

# Removes an image that lost its tag to a rebuild; ignored if still in use.
drop_if_dangling() {
  [ -n "$1" ] || return 0
  if [ -z "$(docker image inspect --format '{{join .RepoTags ","}}' "$1" 2>/dev/null)" ]; then
    docker image rm "$1" >/dev/null 2>&1 || true
  fi
}

# --- 2. base root filesystem ---------------------------------------------------
OLD_BASE_ID="$(image_id "$BASE_TAG")"
if [ -n "$OLD_BASE_ID" ] && [ "$REBUILD" -eq 0 ]; then
  step "base image $BASE_TAG exists, reusing it (--rebuild to force)"
  step "skipping rootfs configuration"
else
  [ "$(id -u)" -eq 0 ] || die "building the base image needs root (debootstrap, chroot)"
  if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1; } \
      || die "could not install debootstrap with apt-get"
  fi
  WORK="$(mktemp -d "${TMPDIR:-/var/tmp}/sandpool-rootfs.XXXXXX")"
  ROOTFS="$WORK/rootfs"
  mkdir -p "$ROOTFS" "$DEBOOTSTRAP_CACHE"
  step "debootstrap $RELEASE minbase + ${PACKAGES[*]} (about 1-2 minutes)"
  DEBOOTSTRAP_ARGS=(--variant=minbase --arch="$ARCH" --components=main
    --include="$(IFS=,; echo "${PACKAGES[*]}")" --cache-dir="$DEBOOTSTRAP_CACHE")
  [ -n "$KEYRING" ] && DEBOOTSTRAP_ARGS+=(--keyring="$KEYRING")
  if ! debootstrap "${DEBOOTSTRAP_ARGS[@]}" "$RELEASE" "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
    # The work dir is removed on exit; keep the logs where they can be read.
    failed_log="${TMPDIR:-/tmp}/sandpool-debootstrap-failed.log"
    cat "$WORK/debootstrap.log" "$ROOTFS/debootstrap/debootstrap.log" >"$failed_log" 2>/dev/null || true
    echo "build-offline: error: debootstrap failed (full log: $failed_log); last lines:" >&2
    tail -n 25 "$WORK/debootstrap.log" >&2
    exit 1
  fi

  step "configuring rootfs: node runtime, user $SANDBOX_UID, cleanup, docker import"
  install -D -m 0755 "$NODE_BIN" "$ROOTFS/usr/local/bin/node"
  # A clean environment: host variables (NODE_OPTIONS, NODE_EXTRA_CA_CERTS...)
  # name host paths that do not exist in the rootfs.
  in_rootfs() { chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
  missing="$(in_rootfs /usr/bin/ldd /usr/local/bin/node 2>&1 | grep 'not found' || true)"
  [ -z "$missing" ] || die "node needs libraries missing from the rootfs: $missing"
  in_rootfs /usr/local/bin/node -e 'process.exit(0)' || die "node does not run inside the rootfs"
  in_rootfs /usr/bin/python3 -c 'pass' || die "python3 does not run inside the rootfs"

  in_rootfs /usr/sbin/groupadd --gid "$SANDBOX_UID" sandbox
  in_rootfs /usr/sbin/useradd --uid "$SANDBOX_UID" --gid "$SANDBOX_UID" \
    --create-home --home-dir /home/sandbox --shell /bin/bash sandbox
  install -d -o "$SANDBOX_UID" -g "$SANDBOX_UID" -m 0700 "$ROOTFS/home/sandbox/sessions"
  install -d -m 0755 "$ROOTFS/opt/sandpool"

  # Nothing in the image talks to apt, and Docker bind-mounts its own
  # resolv.conf/hosts/hostname: drop the caches and the host's copies.
  rm -rf "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/archives/*.deb \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
    "$ROOTFS"/var/log/*.log "$ROOTFS"/var/log/apt/* "$ROOTFS"/debootstrap \
    "$ROOTFS"/tmp/* "$ROOTFS"/var/tmp/*
  : >"$ROOTFS/etc/resolv.conf"
  echo sandbox >"$ROOTFS/etc/hostname"

  tar --numeric-owner -C "$ROOTFS" -cf - . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL org.sandpool.base-inputs=\"$INPUTS\"" \
    --change 'CMD ["/bin/bash"]' \
    - "$BASE_TAG" >/dev/null || die "docker import of the rootfs failed"
  say "imported $BASE_TAG ($(docker image inspect --format '{{.Size}}' "$BASE_TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
  [ "$OLD_BASE_ID" != "$(image_id "$BASE_TAG")" ] && drop_if_dangling "$OLD_BASE_ID"
  cleanup
  WORK=""
fi
BASE_ID="$(image_id "$BASE_TAG")"

# --- 3. final images ------------------------------------------------------------
# build_final <tag> <from-tag>: <from-tag> + the bundled server, rebuilt only when
# the bundle or the image below changed (both kept as labels).
build_final() {
  local tag="$1" from="$2" from_id old_id
  from_id="$(image_id "$from")"
  old_id="$(image_id "$tag")"
  if [ -n "$old_id" ] \
    && [ "$(image_label "$tag" org.sandpool.bundle-sha256)" = "$BUNDLE_SHA" ] \
    && [ "$(image_label "$tag" org.sandpool.base-id)" = "$from_id" ]; then
    step "$tag is up to date (bundle ${BUNDLE_SHA:0:12}), nothing to do"
    return 0
  fi
  step "building $tag (bundle ${BUNDLE_SHA:0:12})"
  WORK="$(mktemp -d "${TMPDIR:-/var/tmp}/sandpool-image.XXXXXX")"
  cp "$BUNDLE" "$WORK/sandbox.mjs"
  cat >"$WORK/Dockerfile" <<EOF
FROM $from
COPY sandbox.mjs /opt/sandpool/sandbox.mjs
USER $SANDBOX_UID
WORKDIR /home/sandbox
ENV NODE_ENV=production
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \\
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini as PID 1 reaps what user code orphans and forwards SIGTERM to node.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "/opt/sandpool/sandbox.mjs", "sandbox", "--host", "0.0.0.0", "--port", "8080", "--root", "/home/sandbox/sessions"]
EOF
  # Legacy builder: it resolves FROM against local images only, never a registry.
  if ! DOCKER_BUILDKIT=0 docker build --quiet \
    --label "org.sandpool.bundle-sha256=$BUNDLE_SHA" \
    --label "org.sandpool.base-id=$from_id" \
    --label "org.sandpool.base-image=$from" \
    -t "$tag" "$WORK" >"$WORK/build.log" 2>&1; then
    echo "build-offline: error: docker build failed:" >&2
    cat "$WORK/build.log" >&2
    exit 1
  fi
  [ "$old_id" != "$(image_id "$tag")" ] && drop_if_dangling "$old_id"
  cleanup
  WORK=""
}

build_final "$IMAGE_TAG" "$BASE_TAG"

# --- 4. data-science layer ---------------------------------------------------------
# The lean base + Debian's scientific Python stack and the shell tools models expect
# (issue 11's parity list), installed by apt-get in a container of the base and kept
# with `docker commit`: one extra layer, the base's own layers shared. Reused while
# the base image, the package list and the recipe stay the same (the tag's hash).

# bookworm's python3-scipy depends on python3-pythran, a compiler for building extensions,
# which pulls g++, Boost's and OpenBLAS's headers and python3-dev: ~600 MB that nothing
# imports at run time (scipy's pythran modules are compiled when Debian builds it). An
# empty package of that name, held, satisfies the dependency instead. Shared with the
# registry-based deploy/sandbox/Dockerfile, which does the same.
pythran_placeholder_script() {
  cat <<'EOF'
mkdir -p /tmp/pythran-placeholder/DEBIAN
printf '%s\n' 'Package: python3-pythran' 'Version: 0.0+sandpool.placeholder' 'Architecture: all' \
  'Maintainer: sandpool' 'Description: placeholder: scipy needs no compiler at run time' \
  >/tmp/pythran-placeholder/DEBIAN/control
dpkg-deb --build /tmp/pythran-placeholder /tmp/pythran-placeholder.deb >/dev/null
dpkg -i /tmp/pythran-placeholder.deb >/dev/null
apt-mark hold python3-pythran >/dev/null
rm -rf /tmp/pythran-placeholder /tmp/pythran-placeholder.deb
EOF
}

# Runs as root inside the build container: install, check, drop apt's state.
ds_install_script() {
  cat <<EOF
set -euo pipefail
# Only the host's sources (copied in as sandpool-build.sources), not debootstrap's.
rm -f /etc/apt/sources.list
apt-get -q update >/dev/null
$(pythran_placeholder_script)
apt-get install -y -q --no-install-recommends ${DS_PACKAGES[*]} >/dev/null
# Every module must import and every tool be there, or the build fails here.
python3 -c 'import numpy, pandas, scipy, sklearn, matplotlib, seaborn, PIL, sympy, requests, openpyxl, xlrd, xlsxwriter, dateutil, pytz, bs4, lxml, pypdf, docx'
for tool in curl file gawk grep jq sed bash; do command -v "\$tool" >/dev/null || { echo "missing \$tool" >&2; exit 1; }; done
rm -rf /etc/apt/sources.list.d/sandpool-build.sources /var/lib/apt/lists/* /var/cache/apt/*.bin \
  /var/log/apt/* /var/log/*.log /usr/share/doc/* /usr/share/man/* /usr/share/info/* /tmp/* /var/tmp/*
echo "installed: \$(dpkg-query -W -f '\${Package} ' ${DS_PACKAGES[*]} | wc -w) packages, python3-pandas \$(dpkg-query -W -f '\${Version}' python3-pandas)"
EOF
}

if [ "$DATASCIENCE" -eq 1 ]; then
  DS_INPUTS="recipe=$DS_RECIPE_VERSION base=$BASE_ID packages=${DS_PACKAGES[*]}"
  DS_HASH="$(printf '%s' "$DS_INPUTS" | sha256sum | cut -c1-16)"
  DS_BASE_TAG="$DS_BASE_REPO:$DS_HASH"
  OLD_DS_BASE_ID="$(image_id "$DS_BASE_TAG")"
  if [ -n "$OLD_DS_BASE_ID" ] && [ "$REBUILD" -eq 0 ]; then
    step "data-science layer $DS_BASE_TAG exists, reusing it (--rebuild to force)"
    step "skipping the data-science install"
  else
    step "apt-get install ${#DS_PACKAGES[@]} data-science packages on $BASE_TAG (about 3 minutes from scratch)"
    mkdir -p "$APT_CACHE"
    DS_CONTAINER="sandpool-ds-build-$$"
    DS_LOG="${TMPDIR:-/tmp}/sandpool-datascience-build.log"
    ds_cleanup() { docker rm -f "$DS_CONTAINER" >/dev/null 2>&1 || true; }
    trap 'ds_cleanup; cleanup' EXIT
    ds_cleanup
    # The container reaches only the Debian mirror the host's apt uses, as debootstrap
    # does from the host: host network for this one build step, removed afterwards.
    # Downloaded .debs stay in $APT_CACHE for the next build.
    docker create --name "$DS_CONTAINER" --network host --user 0 \
      -v "$APT_CACHE:/var/cache/apt/archives" -e DEBIAN_FRONTEND=noninteractive \
      "$BASE_TAG" /bin/bash -c "$(ds_install_script)" >/dev/null \
      || die "could not create the build container from $BASE_TAG"
    docker cp "$SOURCES_FILE" "$DS_CONTAINER:/etc/apt/sources.list.d/sandpool-build.sources" \
      || die "could not copy $SOURCES_FILE into the build container"
    if ! docker start -a "$DS_CONTAINER" >"$DS_LOG" 2>&1; then
      echo "build-offline: error: apt-get install failed (full log: $DS_LOG); last lines:" >&2
      tail -n 25 "$DS_LOG" >&2
      exit 1
    fi
    say "$(tail -n 1 "$DS_LOG")"
    step "committing the data-science layer as $DS_BASE_TAG"
    docker commit \
      --change 'ENV MPLBACKEND=Agg' \
      --change "LABEL org.sandpool.datascience-inputs=\"$DS_INPUTS\"" \
      "$DS_CONTAINER" "$DS_BASE_TAG" >/dev/null || die "docker commit of the data-science layer failed"
    ds_cleanup
    trap cleanup EXIT
    say "committed $DS_BASE_TAG ($(docker image inspect --format '{{.Size}}' "$DS_BASE_TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
    if [ "$OLD_DS_BASE_ID" != "$(image_id "$DS_BASE_TAG")" ]; then drop_if_dangling "$OLD_DS_BASE_ID"; fi
  fi
  build_final "$DS_IMAGE_TAG" "$DS_BASE_TAG"
  # Layers from other inputs are ~600 MB each and nothing builds on them any more (one
  # still used by a container stays).
  for stale in $(docker image ls --format '{{.Repository}}:{{.Tag}}' "$DS_BASE_REPO"); do
    [ "$stale" = "$DS_BASE_TAG" ] || docker image rm "$stale" >/dev/null 2>&1 || true
  done
fi

built="$IMAGE_TAG ($(image_id "$IMAGE_TAG" | cut -c8-19))"
if [ "$DATASCIENCE" -eq 1 ]; then built="$built, $DS_IMAGE_TAG ($(image_id "$DS_IMAGE_TAG" | cut -c8-19))"; fi
echo "build-offline: done in $((SECONDS - START_TIME))s: $built on $BASE_TAG"
