#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine, for CI and local
# integration tests. Idempotent: if `docker info` already works nothing is
# touched. Otherwise dockerd is installed from Debian's packages when missing
# and started in the background as root, logging to a file.
#
# No registry is reachable from CI machines, so nothing here pulls an image;
# the sandbox image is built offline by deploy/sandbox/build-offline.sh.
set -euo pipefail

LOG_FILE="${SANDPOOL_DOCKERD_LOG:-/var/log/sandpool-dockerd.log}"
WAIT_SECONDS="${SANDPOOL_DOCKERD_WAIT:-60}"

usage() {
  cat <<EOF
Usage: scripts/start-docker.sh [--help]

Starts a Docker engine if none answers. Steps, each skipped when not needed:
  1. 'docker info' already works -> exit 0.
  2. dockerd missing -> 'apt-get install -y docker.io' (apt-get update only
     if the first install attempt fails).
  3. start dockerd in the background (logs: \$SANDPOOL_DOCKERD_LOG,
     default /var/log/sandpool-dockerd.log).
  4. wait up to \$SANDPOOL_DOCKERD_WAIT seconds (default 60) for 'docker info'.
Must run as root when it has to install or start anything.
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "start-docker: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

say() { echo "start-docker: $*"; }
die() { echo "start-docker: error: $*" >&2; exit 1; }

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  say "docker engine already running"
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "no docker engine answers and starting one needs root (run with sudo)"

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  say "installing docker.io from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends docker.io >/tmp/sandpool-apt-docker.log 2>&1; then
    say "install failed without a package index; running apt-get update and retrying"
    apt-get update >>/tmp/sandpool-apt-docker.log 2>&1 \
      || die "apt-get update failed (see /tmp/sandpool-apt-docker.log)"
    apt-get install -y --no-install-recommends docker.io >>/tmp/sandpool-apt-docker.log 2>&1 \
      || die "apt-get install docker.io failed (see /tmp/sandpool-apt-docker.log)"
  fi
  command -v dockerd >/dev/null 2>&1 || die "docker.io installed but dockerd is not on PATH"
fi

# A dockerd may already be starting (e.g. a concurrent run of this script);
# starting a second one would fail on the pid file, so only wait for it.
if pgrep -x dockerd >/dev/null 2>&1; then
  say "dockerd process found, waiting for it to answer"
else
  mkdir -p "$(dirname "$LOG_FILE")"
  say "starting dockerd (log: $LOG_FILE)"
  # setsid + nohup: the daemon must outlive this script and the shell or CI
  # step that ran it; stdin from /dev/null so it never holds a terminal.
  setsid nohup dockerd >>"$LOG_FILE" 2>&1 </dev/null &
fi

for ((i = 0; i < WAIT_SECONDS; i++)); do
  if docker info >/dev/null 2>&1; then
    driver="$(docker info --format '{{.Driver}}' 2>/dev/null || echo '?')"
    say "docker engine ready after ${i}s (storage driver: $driver)"
    exit 0
  fi
  if ! pgrep -x dockerd >/dev/null 2>&1; then
    echo "start-docker: error: dockerd exited during start-up; last log lines:" >&2
    tail -n 20 "$LOG_FILE" >&2 || true
    exit 1
  fi
  sleep 1
done

echo "start-docker: error: docker engine did not answer within ${WAIT_SECONDS}s; last log lines:" >&2
tail -n 20 "$LOG_FILE" >&2 || true
exit 1
