#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine, for CI and local
# integration tests, and that it offers gVisor: Debian's runsc registered as
# the runtime `runsc` (pools with `isolation: gvisor`, docs/isolation.md), and
# `experimental: true` (docker checkpoint). Idempotent: an engine that already
# answers with both is not touched. Otherwise dockerd and runsc are installed
# from Debian's packages when missing, both are written into daemon.json, and
# dockerd is started, reloaded (runtimes) or restarted (experimental), whoever
# started it.
#
# No registry is reachable from CI machines, so nothing here pulls an image;
# the sandbox image is built offline by deploy/sandbox/build-offline.sh.
set -euo pipefail

LOG_FILE="${SANDPOOL_DOCKERD_LOG:-/var/log/sandpool-dockerd.log}"
WAIT_SECONDS="${SANDPOOL_DOCKERD_WAIT:-60}"
DAEMON_JSON="${SANDPOOL_DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}"
PID_FILE="${SANDPOOL_DOCKERD_PIDFILE:-/var/run/docker.pid}"
# 0 leaves gVisor out (an engine without runsc, as before).
GVISOR="${SANDPOOL_DOCKER_GVISOR:-1}"
readonly RUNSC_NAME=runsc
# No /dev/kvm on most CI machines: ptrace works everywhere. No network of gVisor's own (the
# sandboxes have none). --host-uds=create: a sandbox's server may create its Unix socket in
# its host directory for the gateway to connect to, and nothing more (no connecting out to
# host sockets: `open` or `all` would allow that). docs/isolation.md says why.
readonly RUNSC_ARGS=(--platform=ptrace --network=none --host-uds=create)

usage() {
  cat <<USAGE
Usage: scripts/start-docker.sh [--help]

Starts a Docker engine if none answers, and makes it offer gVisor. Steps, each
skipped when not needed:
  1. 'docker info' already works, with the runtime $RUNSC_NAME and experimental
     features -> exit 0.
  2. dockerd missing -> 'apt-get install -y docker.io'; runsc missing ->
     'apt-get install -y runsc' (apt-get update only if an install fails).
  3. $DAEMON_JSON gets (merged into what it holds):
       "runtimes": {"$RUNSC_NAME": {"path": "<runsc>", "runtimeArgs": [${RUNSC_ARGS[*]}]}},
       "experimental": true
  4. no dockerd -> start it in the background (logs: \$SANDPOOL_DOCKERD_LOG,
     default /var/log/sandpool-dockerd.log); a running one lacking the runtime
     is reloaded (SIGHUP), one lacking experimental features is restarted
     (systemctl when systemd runs it, else stopped and started again with its
     own command line).
  5. wait up to \$SANDPOOL_DOCKERD_WAIT seconds (default 60) for 'docker info'.
SANDPOOL_DOCKER_GVISOR=0 skips runsc and experimental. Must run as root when it
has to install, write or start anything.
USAGE
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "start-docker: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

say() { echo "start-docker: $*"; }
die() { echo "start-docker: error: $*" >&2; exit 1; }

engine_answers() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

# The engine has runsc registered with exactly RUNSC_ARGS, and experimental features on.
engine_has_gvisor() {
  local runtimes experimental
  runtimes="$(docker info --format '{{json .Runtimes}}' 2>/dev/null)" || return 1
  experimental="$(docker info --format '{{.ExperimentalBuild}}' 2>/dev/null)" || return 1
  [ "$experimental" = true ] && runtime_registered "$runtimes"
}

runtime_registered() {
  # shellcheck disable=SC2016 # the JS is single-quoted on purpose
  node -e '
    const runtime = JSON.parse(process.argv[1] || "{}")[process.argv[2]];
    const want = process.argv.slice(3);
    const args = runtime?.runtimeArgs ?? runtime?.args ?? [];
    process.exit(runtime && JSON.stringify(args) === JSON.stringify(want) ? 0 : 1);
  ' "$1" "$RUNSC_NAME" "${RUNSC_ARGS[@]}"
}

engine_experimental() { [ "$(docker info --format '{{.ExperimentalBuild}}' 2>/dev/null)" = true ]; }

apt_install() {
  local package="$1" log="/tmp/sandpool-apt-$1.log"
  say "installing $package from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "$package" >"$log" 2>&1; then
    say "install failed without a package index; running apt-get update and retrying"
    apt-get update >>"$log" 2>&1 || die "apt-get update failed (see $log)"
    apt-get install -y --no-install-recommends "$package" >>"$log" 2>&1 \
      || die "apt-get install $package failed (see $log)"
  fi
}

# Merges the runtime and experimental into daemon.json; prints "changed" when it wrote.
write_daemon_json() {
  command -v node >/dev/null 2>&1 \
    || die "node is needed to edit $DAEMON_JSON; add by hand: \"runtimes\": {\"$RUNSC_NAME\": {\"path\": \"$1\", \"runtimeArgs\": [${RUNSC_ARGS[*]}]}}, \"experimental\": true"
  mkdir -p "$(dirname "$DAEMON_JSON")"
  # shellcheck disable=SC2016 # the JS is single-quoted on purpose
  node -e '
    const fs = require("node:fs");
    const [file, name, path, experimental, ...runtimeArgs] = process.argv.slice(1);
    let text = "";
    try { text = fs.readFileSync(file, "utf8"); } catch (error) { if (error.code !== "ENOENT") throw error; }
    let config;
    try { config = text.trim() === "" ? {} : JSON.parse(text); }
    catch (error) { console.error(`${file} is not JSON (${error.message}): fix it by hand`); process.exit(3); }
    const before = JSON.stringify(config);
    config.runtimes = { ...config.runtimes, [name]: { path, runtimeArgs } };
    // dockerd refuses a key set both by a flag and in the file: --experimental on its command line wins.
    if (experimental === "file") config.experimental = true;
    if (JSON.stringify(config) === before) process.exit(0);
    fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(config, null, 2)}\n`);
    fs.renameSync(`${file}.tmp`, file);
    console.log("changed");
  ' "$DAEMON_JSON" "$RUNSC_NAME" "$1" "$2" "${RUNSC_ARGS[@]}" || die "could not update $DAEMON_JSON"
}

# The dockerd serving the default socket: its pid file's process, if it is a dockerd.
main_dockerd_pid() {
  local pid
  pid="$(cat "$PID_FILE" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] && echo "$pid"
}

start_dockerd() {
  mkdir -p "$(dirname "$LOG_FILE")"
  say "starting dockerd $* (log: $LOG_FILE)"
  # setsid + nohup: the daemon must outlive this script and the shell or CI
  # step that ran it; stdin from /dev/null so it never holds a terminal.
  setsid nohup dockerd "$@" >>"$LOG_FILE" 2>&1 </dev/null &
}

# Experimental features are read once, at start: stop dockerd and start it as it was.
restart_dockerd() {
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker 2>/dev/null; then
    say "restarting dockerd (systemd) for experimental features"
    systemctl restart docker
    return
  fi
  local pid
  pid="$(main_dockerd_pid)" || die "dockerd lacks experimental features and its pid file $PID_FILE names no dockerd to restart: restart it yourself"
  local -a cmdline=()
  mapfile -d '' -t cmdline <"/proc/$pid/cmdline"
  say "restarting dockerd (pid $pid) for experimental features; its containers stop"
  kill -TERM "$pid"
  for ((i = 0; i < WAIT_SECONDS; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  kill -0 "$pid" 2>/dev/null && die "dockerd (pid $pid) did not stop within ${WAIT_SECONDS}s"
  start_dockerd "${cmdline[@]:1}"
}

wait_for_engine() {
  for ((i = 0; i < WAIT_SECONDS; i++)); do
    if engine_answers; then
      driver="$(docker info --format '{{.Driver}}' 2>/dev/null || echo '?')"
      say "docker engine ready after ${i}s (storage driver: $driver)"
      return 0
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
}

if engine_answers && { [ "$GVISOR" = 0 ] || engine_has_gvisor; }; then
  if [ "$GVISOR" = 0 ]; then say "docker engine already running"
  else say "docker engine already running, with gVisor ($RUNSC_NAME) and experimental features"; fi
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  engine_answers || die "no docker engine answers and starting one needs root (run with sudo)"
  die "the docker engine lacks gVisor ($RUNSC_NAME) or experimental features, and adding them needs root (run with sudo, or SANDPOOL_DOCKER_GVISOR=0 to go without)"
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  apt_install docker.io
  command -v dockerd >/dev/null 2>&1 || die "docker.io installed but dockerd is not on PATH"
fi

config_changed=""
if [ "$GVISOR" != 0 ]; then
  command -v runsc >/dev/null 2>&1 || apt_install runsc
  runsc_path="$(command -v runsc)" || die "runsc installed but not on PATH"
  # A running dockerd with --experimental on its command line has it already.
  experimental_in=file
  if pid="$(main_dockerd_pid)" && tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qx -- '--experimental'; then
    experimental_in=flag
  fi
  config_changed="$(write_daemon_json "$runsc_path" "$experimental_in")"
  [ -n "$config_changed" ] && say "registered $RUNSC_NAME (${RUNSC_ARGS[*]}) and experimental features in $DAEMON_JSON"
fi

if engine_answers; then
  # Running, without gVisor or experimental features (the check above).
  if ! runtime_registered "$(docker info --format '{{json .Runtimes}}')"; then
    say "reloading dockerd's configuration (SIGHUP) for the runtime $RUNSC_NAME"
    pid="$(main_dockerd_pid)" || die "dockerd lacks the runtime $RUNSC_NAME and its pid file $PID_FILE names no dockerd to reload: send it SIGHUP yourself"
    kill -HUP "$pid"
    for ((i = 0; i < 10; i++)); do
      runtime_registered "$(docker info --format '{{json .Runtimes}}')" && break
      sleep 1
    done
  fi
  engine_experimental || restart_dockerd
elif pgrep -x dockerd >/dev/null 2>&1 && main_dockerd_pid >/dev/null; then
  # A dockerd may already be starting (e.g. a concurrent run of this script);
  # starting a second one would fail on the pid file, so only wait for it.
  say "dockerd process found, waiting for it to answer"
else
  start_dockerd
fi

wait_for_engine
if [ "$GVISOR" != 0 ] && ! engine_has_gvisor; then
  die "the docker engine answers but lacks the runtime $RUNSC_NAME (${RUNSC_ARGS[*]}) or experimental features; see $LOG_FILE and $DAEMON_JSON"
fi
[ "$GVISOR" != 0 ] && say "gVisor available as runtime $RUNSC_NAME; experimental features on"
exit 0
