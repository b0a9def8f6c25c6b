#!/usr/bin/env bash
# Start a private ClickHouse server (Debian 18.16) on 127.0.0.1 and apply migrations.
#   start.sh [--data-dir DIR] [--http-port 18123] [--tcp-port 19000]
# config.xml/users.xml, the pid file and the logs live in DIR (default
# <repo>/.deploy/clickhouse/data); the database files in DIR/db/. The system
# instance (/etc/clickhouse-server, /var/lib/clickhouse) is not used or touched.
# Then every deploy/clickhouse/migrations/*.sql not yet in default.schema_migrations
# is applied in name order (several statements per file, each ending with ';' at end of line).
set -euo pipefail
LOG_TAG=clickhouse
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

DATA_DIR="$STATE_ROOT/clickhouse/data"
HTTP_PORT=18123
TCP_PORT=19000
TIMEOUT_S="${CLICKHOUSE_START_TIMEOUT_S:-60}"
while (( $# )); do
  case "$1" in
    --data-dir) DATA_DIR="$2"; shift 2 ;;
    --data-dir=*) DATA_DIR="${1#*=}"; shift ;;
    --http-port) HTTP_PORT="$2"; shift 2 ;;
    --http-port=*) HTTP_PORT="${1#*=}"; shift ;;
    --tcp-port) TCP_PORT="$2"; shift 2 ;;
    --tcp-port=*) TCP_PORT="${1#*=}"; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ "$HTTP_PORT" =~ ^[0-9]+$ && "$TCP_PORT" =~ ^[0-9]+$ ]] || die "bad port"
command -v clickhouse-server >/dev/null || die "clickhouse-server not found: run deploy/clickhouse/install.sh"
command -v curl >/dev/null || die "curl not found"
mkdir -p "$DATA_DIR"
DATA_DIR="$(cd "$DATA_DIR" && pwd)"
PIDFILE="$DATA_DIR/clickhouse.pid"
URL="http://127.0.0.1:$HTTP_PORT/"

# q SQL -> runs one statement over HTTP, prints the result; non-zero on error
q() { curl -sS --fail-with-body --max-time 60 "$URL" --data-binary @- <<<"$1"; }

if pid_alive "$PIDFILE" clickhouse-server; then
  if [[ "$(curl -s --max-time 2 "${URL}ping" || true)" == "Ok." ]]; then
    log "already running (pid $(cat "$PIDFILE")) on $URL"
  else
    die "pid $(cat "$PIDFILE") from $PIDFILE runs but ${URL}ping does not answer (other port?); run stop.sh first"
  fi
else
  rm -f "$PIDFILE"
  for p in "$HTTP_PORT" "$TCP_PORT"; do
    port_open "$p" && die "port $p is already in use by another process"
  done
  mkdir -p "$DATA_DIR/db/tmp" "$DATA_DIR/db/user_files" "$DATA_DIR/db/format_schemas"
  cat >"$DATA_DIR/config.xml" <<XML
<?xml version="1.0"?>
<!-- written by deploy/clickhouse/start.sh: private loopback-only instance for tests -->
<yandex>
    <logger>
        <level>information</level>
        <log>$DATA_DIR/clickhouse-server.log</log>
        <errorlog>$DATA_DIR/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>3</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>$HTTP_PORT</http_port>
    <tcp_port>$TCP_PORT</tcp_port>
    <max_connections>1024</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>$DATA_DIR/db/</path>
    <tmp_path>$DATA_DIR/db/tmp/</tmp_path>
    <user_files_path>$DATA_DIR/db/user_files/</user_files_path>
    <format_schema_path>$DATA_DIR/db/format_schemas/</format_schema_path>
    <users_config>$DATA_DIR/users.xml</users_config>
    <include_from>$DATA_DIR/metrika.xml</include_from>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <umask>022</umask>
    <mlock_executable>false</mlock_executable>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
    <query_log>
        <database>system</database>
        <table>query_log</table>
        <partition_by>toYYYYMM(event_date)</partition_by>
        <flush_interval_milliseconds>7500</flush_interval_milliseconds>
    </query_log>
    <max_table_size_to_drop>0</max_table_size_to_drop>
    <max_partition_size_to_drop>0</max_partition_size_to_drop>
</yandex>
XML
  cat >"$DATA_DIR/users.xml" <<'XML'
<?xml version="1.0"?>
<!-- written by deploy/clickhouse/start.sh: user "default", no password, loopback only -->
<yandex>
    <profiles>
        <default>
            <max_memory_usage>4000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <load_balancing>random</load_balancing>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>::1</ip>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
XML
  echo '<?xml version="1.0"?><yandex></yandex>' >"$DATA_DIR/metrika.xml"

  t0=$(now_ms)
  log "starting clickhouse-server on $URL (tcp :$TCP_PORT), data $DATA_DIR"
  # Runs in the foreground (no --daemon) under nohup, so $! is the server's pid.
  # Its stdout/stderr (start-up errors before the logger is up) go to clickhouse-server.out.
  ( cd "$DATA_DIR" && exec nohup clickhouse-server --config-file="$DATA_DIR/config.xml" \
      >>"$DATA_DIR/clickhouse-server.out" 2>&1 </dev/null ) &
  guard_started $! "$PIDFILE" clickhouse-server
  deadline=$(( $(date +%s) + TIMEOUT_S ))
  until [[ "$(curl -s --max-time 2 "${URL}ping" || true)" == "Ok." ]]; do
    if ! started_alive; then
      tail -n 20 "$DATA_DIR/clickhouse-server.out" "$DATA_DIR/clickhouse-server.err.log" 2>/dev/null >&2 || true
      die "clickhouse-server exited during start-up"
    fi
    (( $(date +%s) < deadline )) || die "no Ok from ${URL}ping within ${TIMEOUT_S}s"
    sleep 0.2
  done
  log "up after $(( $(now_ms) - t0 ))ms: $(q 'SELECT version()')"
  # A migration that fails below leaves the server running, and its pid file for stop.sh.
  start_succeeded
fi

# ---- migrations -------------------------------------------------------------
q "CREATE TABLE IF NOT EXISTS default.schema_migrations (version String, applied_at DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY version" >/dev/null
applied="$(q 'SELECT version FROM default.schema_migrations ORDER BY version')"
n=0
shopt -s nullglob
for f in "$DEPLOY_DIR"/clickhouse/migrations/*.sql; do
  v="$(basename "$f" .sql)"
  grep -qxF -- "$v" <<<"$applied" && continue
  log "applying migration $v"
  # Split on ';' at end of line; drop '--' comment lines. (Keep ';' out of string literals.)
  stmt=""
  while IFS= read -r line || [[ -n "$line" ]]; do
    [[ "$line" =~ ^[[:space:]]*-- ]] && continue
    stmt+="$line"$'\n'
    if [[ "$line" =~ \;[[:space:]]*$ ]]; then
      body="$(sed -e 's/;[[:space:]]*$//' <<<"$stmt")"
      if [[ -n "${body//[[:space:]]/}" ]]; then
        q "$body" >/dev/null || die "migration $v failed on: $body"
      fi
      stmt=""
    fi
  done <"$f"
  if [[ -n "${stmt//[[:space:]]/}" ]]; then q "$stmt" >/dev/null || die "migration $v failed on: $stmt"; fi
  q "INSERT INTO default.schema_migrations (version) VALUES ('$v')" >/dev/null
  n=$((n + 1))
done
log "migrations: $n applied now, $(q 'SELECT count() FROM default.schema_migrations') in total; ready on $URL"
