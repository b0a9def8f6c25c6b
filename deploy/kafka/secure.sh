#!/usr/bin/env bash
# A secured single-node KRaft Kafka on loopback, as users run theirs: deny by default.
#   secure.sh up|down [--state-dir DIR]     (default <repo>/.deploy/kafka-secure)
# Listeners: SASL_SSL (SCRAM-SHA-512 only) on 29093, SSL with a required client certificate
# (mTLS) on 29094, the controller on 29095 (PLAINTEXT, loopback). Advertised as localhost: the
# broker certificate names localhost only, so a client that connects by 127.0.0.1 and checks
# host names refuses it (a hostname mismatch). StandardAuthorizer, allow.everyone.if.no.acl.found
# false; super users: User:admin (SCRAM) and ANONYMOUS, the principal of the PLAINTEXT
# controller listener (the broker registering with its own controller). SCRAM users made at
# storage format: admin/admin-secret, pipeline/pipeline-secret. In the state dir: ca.pem (the CA),
# client.pem and client.key (an mTLS client, CN=bioalchemy-mtls), other-ca.pem (a CA that signed
# nothing here), admin.properties (an admin's client config for kafka-acls.sh).
set -euo pipefail
LOG_TAG=kafka-secure
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

STATE="$STATE_ROOT/kafka-secure"
SASL_PORT=29093
MTLS_PORT=29094
CONTROLLER_PORT=29095
TIMEOUT_S="${KAFKA_START_TIMEOUT_S:-90}"
action="${1:-}"
shift || true
while (( $# )); do
  case "$1" in
    --state-dir) STATE="$2"; shift 2 ;;
    --state-dir=*) STATE="${1#*=}"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
PIDFILE="$STATE/kafka.pid"
LOGFILE="$STATE/kafka.log"

case "$action" in
  down) stop_pidfile "$PIDFILE" kafka.Kafka "secured kafka broker" "${KAFKA_STOP_TIMEOUT_S:-60}"; exit 0 ;;
  up) ;;
  *) die "usage: secure.sh up|down [--state-dir DIR]" ;;
esac

LIBS="$CACHE_ROOT/kafka/libs"
compgen -G "$LIBS/kafka_2.13-*.jar" >/dev/null || die "no jars in $LIBS: run deploy/kafka/install.sh first"
pick_java 17
CP="$LIBS/*"

if pid_alive "$PIDFILE" kafka.Kafka; then
  port_open "$SASL_PORT" && { log "already running (pid $(cat "$PIDFILE"))"; exit 0; }
  die "pid $(cat "$PIDFILE") runs but port $SASL_PORT is closed; run secure.sh down first"
fi
for p in "$SASL_PORT" "$MTLS_PORT" "$CONTROLLER_PORT"; do
  port_open "$p" && die "port $p is already in use by another process"
done

# Certificates: one CA signs the broker's (SAN localhost) and the mTLS client's.
pki() {
  local dir="$STATE/pki"
  [[ -f "$dir/done" ]] && return 0
  rm -rf "$dir" && mkdir -p "$dir"
  local ssl=(openssl)
  "${ssl[@]}" req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=bioalchemy-test-ca \
    -keyout "$dir/ca.key" -out "$STATE/ca.pem" 2>/dev/null
  "${ssl[@]}" req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=unrelated-ca \
    -keyout "$dir/other-ca.key" -out "$STATE/other-ca.pem" 2>/dev/null
  sign() { # sign NAME SUBJECT EXTENSIONS
    "${ssl[@]}" req -new -newkey rsa:2048 -nodes -subj "$2" -keyout "$dir/$1.key.pem" -out "$dir/$1.csr" 2>/dev/null
    "${ssl[@]}" x509 -req -in "$dir/$1.csr" -CA "$STATE/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
      -days 30 -extfile <(printf '%s\n' "$3") -out "$dir/$1.pem" 2>/dev/null
    # PKCS#8, as Kafka's PEM key store reads it.
    "${ssl[@]}" pkcs8 -topk8 -nocrypt -in "$dir/$1.key.pem" -out "$dir/$1.key" 2>/dev/null
  }
  sign broker /CN=localhost "subjectAltName=DNS:localhost"
  sign client /CN=bioalchemy-mtls "extendedKeyUsage=clientAuth"
  cat "$dir/broker.key" "$dir/broker.pem" >"$STATE/broker-keystore.pem"
  cp "$dir/client.pem" "$STATE/client.pem"
  cp "$dir/client.key" "$STATE/client.key"
  touch "$dir/done"
}
pki

DATA_DIR="$STATE/data"
PROPS="$STATE/server.properties"
LOG4J="$STATE/log4j2.properties"
mkdir -p "$DATA_DIR"
cat >"$PROPS" <<PROPS
# written by deploy/kafka/secure.sh -- secured single-node KRaft for tests, loopback only
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=SASL_SSL://127.0.0.1:$SASL_PORT,SSL://127.0.0.1:$MTLS_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=SASL_SSL://localhost:$SASL_PORT,SSL://localhost:$MTLS_PORT
listener.security.protocol.map=SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:PLAINTEXT
inter.broker.listener.name=SASL_SSL
controller.listener.names=CONTROLLER
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";
ssl.keystore.type=PEM
ssl.keystore.location=$STATE/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$STATE/ca.pem
listener.name.ssl.ssl.client.auth=required
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:admin;User:ANONYMOUS
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
PROPS
cat >"$LOG4J" <<'L4J'
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
L4J
cat >"$STATE/admin.properties" <<ADMIN
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";
ssl.truststore.type=PEM
ssl.truststore.location=$STATE/ca.pem
ADMIN

if [[ ! -f "$DATA_DIR/meta.properties" ]]; then
  cluster_id="$("$JAVA" -cp "$CP" -Dlog4j2.configurationFile="$LOG4J" kafka.tools.StorageTool random-uuid | tail -n1)"
  log "formatting $DATA_DIR with the SCRAM users admin and pipeline"
  "$JAVA" -cp "$CP" -Dlog4j2.configurationFile="$LOG4J" kafka.tools.StorageTool format -t "$cluster_id" -c "$PROPS" \
    --add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]' \
    --add-scram 'SCRAM-SHA-512=[name=pipeline,password=pipeline-secret]' >>"$LOGFILE" 2>&1 ||
    { tail -n 20 "$LOGFILE" >&2; die "storage format failed"; }
fi

offset=$(( $(stat -c %s "$LOGFILE" 2>/dev/null || echo 0) + 1 ))
t0=$(now_ms)
log "starting the secured broker: SASL_SSL :$SASL_PORT, mTLS :$MTLS_PORT, controller :$CONTROLLER_PORT"
nohup "$JAVA" -Xmx512m -Xms128m -XX:+UseG1GC -Djava.awt.headless=true -Dlog4j2.configurationFile="$LOG4J" \
  -cp "$CP" kafka.Kafka "$PROPS" >>"$LOGFILE" 2>&1 </dev/null &
guard_started $! "$PIDFILE" "secured broker"
deadline=$(( $(date +%s) + TIMEOUT_S ))
until port_open "$SASL_PORT" && grep -q 'Kafka Server started' < <(tail -c "+$offset" "$LOGFILE"); do
  started_alive || { tail -n 30 "$LOGFILE" >&2; die "broker exited during start-up"; }
  (( $(date +%s) < deadline )) || { tail -n 30 "$LOGFILE" >&2; die "broker not up within ${TIMEOUT_S}s"; }
  sleep 0.3
done
log "ready after $(( $(now_ms) - t0 ))ms (state $STATE)"
start_succeeded
