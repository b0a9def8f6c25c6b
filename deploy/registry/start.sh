#!/usr/bin/env bash
# Start Apicurio Registry (Confluent-compatible Schema Registry API) on 127.0.0.1.
#   start.sh [--port 18081] [--data-dir DIR] [--in-memory] [--compatibility BACKWARD]
# Confluent API base URL: http://127.0.0.1:PORT/apis/ccompat/v6
# The registry's default compatibility is set to --compatibility (default BACKWARD, Confluent's
# default; env REGISTRY_COMPATIBILITY) at every start, also when it is already running. The
# pipeline sets its own policy on each subject it registers (the log URL's compatibility=).
# Storage: an H2 database file in DIR (default <repo>/.deploy/registry/data), so schema
# ids survive a restart like the Kafka topics that reference them; --in-memory keeps
# nothing. registry.pid and registry.log live in DIR's parent.
set -euo pipefail
LOG_TAG=registry
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

PORT=18081
DATA_DIR="$STATE_ROOT/registry/data"
IN_MEMORY=0
COMPATIBILITY="${REGISTRY_COMPATIBILITY:-BACKWARD}"
TIMEOUT_S="${REGISTRY_START_TIMEOUT_S:-60}"
while (( $# )); do
  case "$1" in
    --port) PORT="$2"; shift 2 ;;
    --port=*) PORT="${1#*=}"; shift ;;
    --data-dir) DATA_DIR="$2"; shift 2 ;;
    --data-dir=*) DATA_DIR="${1#*=}"; shift ;;
    --in-memory) IN_MEMORY=1; shift ;;
    --compatibility) COMPATIBILITY="$2"; shift 2 ;;
    --compatibility=*) COMPATIBILITY="${1#*=}"; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ "$PORT" =~ ^[0-9]+$ ]] || die "bad --port: $PORT"
case "$COMPATIBILITY" in
  NONE|BACKWARD|BACKWARD_TRANSITIVE|FORWARD|FORWARD_TRANSITIVE|FULL|FULL_TRANSITIVE) ;;
  *) die "bad --compatibility: $COMPATIBILITY" ;;
esac
command -v curl >/dev/null || die "curl not found"
BUILD="$CACHE_ROOT/registry/build"
RUNNER="$(ls "$BUILD"/*-runner.jar 2>/dev/null | head -n1 || true)"
[[ -n "$RUNNER" ]] || die "no runner jar in $BUILD: run deploy/registry/install.sh first"
mkdir -p "$DATA_DIR"
DATA_DIR="$(cd "$DATA_DIR" && pwd)"
RUN_DIR="$(dirname "$DATA_DIR")"
PIDFILE="$RUN_DIR/registry.pid"
LOGFILE="$RUN_DIR/registry.log"
API="http://127.0.0.1:$PORT/apis/ccompat/v6"

subjects_ok() {
  local body
  body="$(curl -s --max-time 3 -f "$API/subjects" 2>/dev/null)" || return 1
  [[ "$body" == \[* ]]
}

# The registry's default rule for subjects without their own (Apicurio keeps it in its storage).
set_compatibility() {
  curl -s --max-time 5 -f -X PUT -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
    -d "{\"compatibility\":\"$COMPATIBILITY\"}" "$API/config" >/dev/null \
    || die "PUT $API/config (compatibility $COMPATIBILITY) failed"
}

if pid_alive "$PIDFILE" "$(basename "$RUNNER")"; then
  subjects_ok || die "pid $(cat "$PIDFILE") from $PIDFILE runs but $API/subjects does not answer (other port?); run stop.sh first"
  set_compatibility
  log "already running (pid $(cat "$PIDFILE")); default compatibility $COMPATIBILITY; Confluent API at $API"
  exit 0
fi
rm -f "$PIDFILE"
port_open "$PORT" && die "port $PORT is already in use by another process"
pick_java 17

if (( IN_MEMORY )); then
  DB_URL="jdbc:h2:mem:registry_db"
  storage="in-memory"
else
  DB_URL="jdbc:h2:file:$DATA_DIR/registry;DB_CLOSE_ON_EXIT=FALSE"
  storage="H2 file $DATA_DIR/registry.mv.db"
fi

t0=$(now_ms)
log "starting Apicurio Registry on 127.0.0.1:$PORT ($storage), log $LOGFILE"
( cd "$RUN_DIR" && REGISTRY_DATASOURCE_URL="$DB_URL" exec nohup "$JAVA" -Xmx512m -Xms64m -XX:+UseSerialGC \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$PORT" \
    -Dquarkus.datasource.jdbc.initial-size=2 -Dquarkus.datasource.jdbc.min-size=2 \
    -Dquarkus.datasource.jdbc.max-size=20 \
    -jar "$RUNNER" >>"$LOGFILE" 2>&1 </dev/null ) &
guard_started $! "$PIDFILE" registry

deadline=$(( $(date +%s) + TIMEOUT_S ))
until subjects_ok; do
  if ! started_alive; then
    tail -n 30 "$LOGFILE" >&2; die "registry exited during start-up"
  fi
  (( $(date +%s) < deadline )) || { tail -n 20 "$LOGFILE" >&2; die "GET $API/subjects not 200 within ${TIMEOUT_S}s"; }
  sleep 0.3
done
start_succeeded
set_compatibility
log "default compatibility $COMPATIBILITY"
log "ready after $(( $(now_ms) - t0 ))ms: $(curl -s "http://127.0.0.1:$PORT/apis/registry/v2/system/info" | sed -n 's/.*"version":"\([^"]*\)".*/Apicurio Registry \1/p'); Confluent API at $API"
