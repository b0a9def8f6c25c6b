#!/usr/bin/env bash
# Start a single-node KRaft Kafka (broker+controller) on 127.0.0.1.
#   start.sh [--data-dir DIR] [--port PORT]   (defaults: <repo>/.deploy/kafka/data, 19092)
# Controller listener: PORT+1. server.properties, log4j2.properties, kafka.pid and
# kafka.log live in the data dir's parent. An already formatted data dir is reused
# (stop.sh + start.sh on the same dir keeps the topics and offsets).
set -euo pipefail
LOG_TAG=kafka
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

DATA_DIR="$STATE_ROOT/kafka/data"
PORT=19092
TIMEOUT_S="${KAFKA_START_TIMEOUT_S:-60}"
HEAP="${KAFKA_HEAP:--Xmx768m -Xms256m}"
while (( $# )); do
  case "$1" in
    --data-dir) DATA_DIR="$2"; shift 2 ;;
    --data-dir=*) DATA_DIR="${1#*=}"; shift ;;
    --port) PORT="$2"; shift 2 ;;
    --port=*) PORT="${1#*=}"; shift ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ "$PORT" =~ ^[0-9]+$ ]] || die "bad --port: $PORT"
CPORT=$(( PORT + 1 ))
mkdir -p "$DATA_DIR"
DATA_DIR="$(cd "$DATA_DIR" && pwd)"
RUN_DIR="$(dirname "$DATA_DIR")"
PIDFILE="$RUN_DIR/kafka.pid"
LOGFILE="$RUN_DIR/kafka.log"
PROPS="$RUN_DIR/server.properties"
LOG4J="$RUN_DIR/log4j2.properties"
TOOLS_LOG4J="$RUN_DIR/tools-log4j2.properties"
LIBS="$CACHE_ROOT/kafka/libs"
compgen -G "$LIBS/kafka_2.13-*.jar" >/dev/null || die "no jars in $LIBS: run deploy/kafka/install.sh first"
pick_java 17
CP="$LIBS/*"

if pid_alive "$PIDFILE" kafka.Kafka; then
  if port_open "$PORT"; then
    log "already running (pid $(cat "$PIDFILE")) on 127.0.0.1:$PORT"
    exit 0
  fi
  die "pid $(cat "$PIDFILE") from $PIDFILE runs but port $PORT is closed (other --port?); run stop.sh first"
fi
rm -f "$PIDFILE"
for p in "$PORT" "$CPORT"; do
  port_open "$p" && die "port $p is already in use by another process"
done

cat >"$PROPS" <<PROPS
# written by deploy/kafka/start.sh -- single-node KRaft for tests, loopback only
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$DATA_DIR
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=false
delete.topic.enable=true
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=168
log.segment.bytes=67108864
PROPS

cat >"$LOG4J" <<'L4J'
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
L4J
cat >"$TOOLS_LOG4J" <<'L4J'
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
L4J

read -r -a heap_opts <<<"$HEAP"
JAVA_OPTS=("${heap_opts[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
           -Dlog4j2.configurationFile="$LOG4J")

fresh=0
if [[ ! -f "$DATA_DIR/meta.properties" ]]; then
  fresh=1
  cluster_id="$("$JAVA" -cp "$CP" -Dlog4j2.configurationFile="$TOOLS_LOG4J" kafka.tools.StorageTool random-uuid | tail -n1)"
  log "formatting $DATA_DIR (cluster id $cluster_id)"
  "$JAVA" -cp "$CP" -Dlog4j2.configurationFile="$LOG4J" kafka.tools.StorageTool format \
    -t "$cluster_id" -c "$PROPS" >>"$LOGFILE" 2>&1 || { tail -n 20 "$LOGFILE" >&2; die "storage format failed"; }
else
  log "reusing formatted data dir $DATA_DIR"
fi

offset=$(( $(stat -c %s "$LOGFILE" 2>/dev/null || echo 0) + 1 ))
t0=$(now_ms)
log "starting broker on 127.0.0.1:$PORT (controller :$CPORT), log $LOGFILE"
nohup "$JAVA" "${JAVA_OPTS[@]}" -cp "$CP" kafka.Kafka "$PROPS" >>"$LOGFILE" 2>&1 </dev/null &
guard_started $! "$PIDFILE" broker

deadline=$(( $(date +%s) + TIMEOUT_S ))
# (process substitution, not a pipe: with pipefail an early-exiting grep -q would fail the test)
until port_open "$PORT" && grep -q 'Kafka Server started' < <(tail -c "+$offset" "$LOGFILE"); do
  started_alive || { tail -n 30 "$LOGFILE" >&2; die "broker exited during start-up"; }
  (( $(date +%s) < deadline )) || { tail -n 30 "$LOGFILE" >&2; die "broker not up within ${TIMEOUT_S}s"; }
  sleep 0.3
done
log "broker process up after $(( ($(now_ms) - t0) ))ms, checking it answers admin requests"
# One real request round trip (metadata + ListTopics) through the admin client.
until out="$(timeout 30 "$JAVA" -Xmx128m -XX:TieredStopAtLevel=1 -cp "$CP" \
             -Dlog4j2.configurationFile="$TOOLS_LOG4J" org.apache.kafka.tools.TopicCommand \
             --bootstrap-server "127.0.0.1:$PORT" --list 2>/dev/null)"; do
  (( $(date +%s) < deadline )) || { die "broker does not answer admin requests"; }
  sleep 0.5
done
log "ready on 127.0.0.1:$PORT after $(( ($(now_ms) - t0) ))ms ($(echo "$out" | grep -c . || true) topics)"
start_succeeded

# On a freshly formatted dir, create __consumer_offsets and __transaction_state now
# (a FindCoordinator for a group and for a transactional id does that), so the first
# consumer group / transactional producer of a test does not wait on "coordinator loading".
if (( fresh )) && [[ "${KAFKA_WARMUP:-1}" == 1 ]]; then
  tool() { timeout 30 "$JAVA" -Xmx128m -XX:TieredStopAtLevel=1 -cp "$CP" -Dlog4j2.configurationFile="$TOOLS_LOG4J" "$@" >/dev/null 2>&1 || true; }
  tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "127.0.0.1:$PORT" --describe --group deploy-warmup
  tool org.apache.kafka.tools.TransactionsCommand --bootstrap-server "127.0.0.1:$PORT" describe --transactional-id deploy-warmup
  log "created internal topics (__consumer_offsets, __transaction_state) after $(( ($(now_ms) - t0) ))ms"
fi
