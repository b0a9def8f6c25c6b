# Shared helpers for deploy/*/*.sh. Sourced, not executed.
# shellcheck shell=bash

# pwd -P: the CLI runs these through dist/deploy, a link to deploy/; the repository root is the
# link's target's parent, not dist/ (state under dist/ would go with a clean build).
DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd "$DEPLOY_DIR/.." && pwd)"
# Runtime state (downloads, builds, data dirs, logs, pid files). Override with
# BIOALCHEMY_DEPLOY_STATE to keep a second, independent set (e.g. a cold-install test).
STATE_ROOT="${BIOALCHEMY_DEPLOY_STATE:-$REPO_ROOT/.deploy}"
# What is built from pinned inputs and the same for every clone (venvs' packages, tools, the
# image's layers and base): one cache per machine, so a second clone (CI's, a worktree) finds it
# instead of spending minutes again. Each entry is named by its inputs. Override with BIOALCHEMY_CACHE.
CACHE_ROOT="${BIOALCHEMY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bioalchemy}"

log() { printf '[%s] %s\n' "${LOG_TAG:-deploy}" "$*"; }
die() { printf '[%s] ERROR: %s\n' "${LOG_TAG:-deploy}" "$*" >&2; exit 1; }

now_ms() { date +%s%3N; }

# port_open PORT -> 0 when something accepts TCP connections on 127.0.0.1:PORT
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pid_alive PIDFILE [CMDLINE_PATTERN] -> 0 when the pid in PIDFILE runs (and its
# command line contains PATTERN, which guards against a recycled pid)
pid_alive() {
  local pidfile="$1" pattern="${2:-}" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  if [[ -n "$pattern" ]]; then
    grep -qF -- "$pattern" < <(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  fi
  return 0
}

# stop_pidfile PIDFILE PATTERN NAME [TIMEOUT_S]: SIGTERM, wait, then SIGKILL.
stop_pidfile() {
  local pidfile="$1" pattern="$2" name="$3" timeout="${4:-60}" pid deadline
  if ! pid_alive "$pidfile" "$pattern"; then
    log "$name is not running"
    rm -f "$pidfile"
    return 0
  fi
  pid="$(cat "$pidfile")"
  log "stopping $name (pid $pid, SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + timeout ))
  while kill -0 "$pid" 2>/dev/null; do
    if (( $(date +%s) >= deadline )); then
      log "$name did not exit within ${timeout}s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.2
  done
  rm -f "$pidfile"
  log "$name stopped"
}

# pick_java: sets JAVA to a java binary of version >= $1 (default 17).
pick_java() {
  local need="${1:-17}" cand v
  for cand in ${JAVA_HOME:+"$JAVA_HOME/bin/java"} "$(command -v java || true)" \
              /usr/lib/jvm/java-17-openjdk-amd64/bin/java /usr/lib/jvm/temurin-25-jdk-amd64/bin/java; do
    [[ -n "$cand" && -x "$cand" ]] || continue
    v="$("$cand" -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.specification.version/{print $2}')"
    v="${v%%.*}"
    if [[ "$v" =~ ^[0-9]+$ ]] && (( v >= need )); then JAVA="$cand"; return 0; fi
  done
  die "no Java >= $need found (set JAVA_HOME)"
}

# path_in_use PATH -> 0 when a running process has PATH in its command line
# (install scripts use it to avoid replacing jars under a running server).
path_in_use() {
  local f
  for f in /proc/[0-9]*/cmdline; do
    grep -qF -- "$1" < <(tr '\0' ' ' <"$f" 2>/dev/null) && return 0
  done
  return 1
}

# A start script's server, from its launch until start_succeeded. Between the two, leaving the
# script by any path (die, an error under set -e, Ctrl-C, SIGTERM) stops that process and removes
# its pid file: a failed start leaves nothing running that `down` does not know of.
GUARDED_PID=""
GUARDED_PIDFILE=""
GUARDED_NAME=""

# guard_started PID PIDFILE NAME: records PID (the background process just launched, which execs
# the server) in PIDFILE and guards it until start_succeeded.
guard_started() {
  GUARDED_PID="$1" GUARDED_PIDFILE="$2" GUARDED_NAME="$3"
  echo "$GUARDED_PID" >"$GUARDED_PIDFILE"
  trap _stop_guarded EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# started_alive -> 0 while the guarded process exists (a zombie does not count). Not pid_alive
# with a pattern: until the launched subshell has exec'd the server, its command line is the
# start script's own, and under load the first check can come before the exec ("exited during
# start-up" was reported for a server that went on running).
started_alive() {
  local stat
  stat="$(cat "/proc/$GUARDED_PID/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat%% *}" != Z && "${stat%% *}" != X ]]
}

# start_succeeded: the server is up; from now on stop.sh (services.sh down) owns it.
start_succeeded() {
  GUARDED_PID=""
  trap - EXIT INT TERM
}

_stop_guarded() {
  local status=$? deadline
  [[ -n "$GUARDED_PID" ]] || return 0
  if started_alive; then
    log "start failed: stopping the $GUARDED_NAME it started (pid $GUARDED_PID)"
    kill -TERM "$GUARDED_PID" 2>/dev/null || true
    deadline=$(( $(date +%s) + ${GUARD_STOP_TIMEOUT_S:-30} ))
    while started_alive && (( $(date +%s) < deadline )); do sleep 0.2; done
    if started_alive; then
      log "$GUARDED_NAME (pid $GUARDED_PID) did not exit, sending SIGKILL"
      kill -KILL "$GUARDED_PID" 2>/dev/null || true
      # The kernel reaps it shortly; keep the pid file until it is gone for sure.
      deadline=$(( $(date +%s) + 10 ))
      while started_alive && (( $(date +%s) < deadline )); do sleep 0.1; done
    fi
  fi
  if started_alive; then
    log "$GUARDED_NAME (pid $GUARDED_PID) still runs: its pid file $GUARDED_PIDFILE stays, for stop.sh"
  else
    rm -f "$GUARDED_PIDFILE"
  fi
  GUARDED_PID=""
  exit "$status"
}

# cached_venv VENV INSTALL REQUIREMENT...: a Python venv at VENV with REQUIREMENTS. The packages
# are installed once per machine, by the function INSTALL (called with the python of a venv under
# $CACHE_ROOT/venvs named by the hash of the requirements and the Python version, then the
# requirements); a shared venv without its marker (a half-finished install) is rebuilt from scratch.
# VENV itself is this clone's: a venv without pip whose .pth adds the shared site-packages and the
# paths in VENV_PATHS (this clone's own packages, which differ between clones: never installed in
# the shared venv). Making it takes a second. Sets PY to VENV's python.
cached_venv() {
  local venv="$1" install="$2" want shared lock t0 pth p
  shift 2
  command -v python3 >/dev/null || die "python3 not found"
  want="$( { printf '%s\n' "$@"; python3 --version; } | sha256sum | cut -c1-16)"
  shared="$CACHE_ROOT/venvs/$(basename "$venv")-$want"
  mkdir -p "$CACHE_ROOT/venvs"
  # Two clones on one machine build it once: the second waits for the first.
  exec {lock}>"$shared.lock"
  flock "$lock"
  if [[ -f "$shared/.complete" && -x "$shared/bin/python" ]]; then
    log "cached: $shared"
  else
    t0=$(now_ms)
    rm -rf "$shared"
    python3 -m venv "$shared" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$install" "$shared/bin/python" "$@"
    touch "$shared/.complete"
    log "installed in $(( ($(now_ms) - t0) / 1000 ))s, $(du -sh "$shared" | cut -f1)"
  fi
  exec {lock}>&-
  pth="$(echo "$shared"; for p in "${VENV_PATHS[@]}"; do echo "$p"; done)"
  PY="$venv/bin/python"
  if [[ -x "$PY" && "$(cat "$venv/.shared" 2>/dev/null)" == "$pth" ]]; then return 0; fi
  rm -rf "$venv"
  python3 -m venv --without-pip "$venv" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  {
    # Lines starting with "import" run: addsitedir also reads the shared venv's own .pth files.
    echo "import site; site.addsitedir('$(venv_site "$shared")')"
    for p in "${VENV_PATHS[@]}"; do echo "$p"; done
  } >"$(venv_site "$venv")/bioalchemy-shared.pth"
  # The shared venv's commands (schemathesis, pytest, ...), where the clone's venv has none of its own.
  for p in "$shared/bin/"*; do [[ -e "$venv/bin/${p##*/}" ]] || ln -s "$p" "$venv/bin/"; done
  echo "$pth" >"$venv/.shared"
}

# pip_install PY REQUIREMENT...: cached_venv's INSTALL where plain pip does.
pip_install() {
  local py="$1"
  shift
  log "pip install $*"
  "$py" -m pip install -q --disable-pip-version-check "$@"
}

# venv_site VENV: the venv's site-packages folder.
venv_site() {
  local site
  site="$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  [[ -d "$site" ]] || die "$1: no site-packages ('$site')"
  echo "$site"
}
