#!/usr/bin/env bash
# Fetch the Kafka broker class path (deploy/kafka/pom.xml) into the machine's cache (lib.sh's CACHE_ROOT)/kafka/libs,
# shared by every clone.
# Skips the download when the jars for the current pom are already there.
set -euo pipefail
LOG_TAG=kafka
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

POM="$DEPLOY_DIR/kafka/pom.xml"
LIBS="$CACHE_ROOT/kafka/libs"
STAMP="$LIBS/.pom.sha256"
count_jars() { local n=0 f; for f in "$1"/*.jar; do [[ -e "$f" ]] && n=$((n + 1)); done; echo "$n"; }
want="$(sha256sum "$POM" | cut -d' ' -f1)"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] && compgen -G "$LIBS/kafka_2.13-*.jar" >/dev/null; then
  log "jars already in $LIBS ($(count_jars "$LIBS") jars), nothing to do"
  exit 0
fi

command -v mvn >/dev/null || die "mvn not found"
if [[ -d "$LIBS" ]] && path_in_use "$LIBS/"; then
  die "a running broker uses $LIBS: stop it (deploy/kafka/stop.sh) before re-installing"
fi
pick_java 17
log "downloading Kafka jars with Maven (pom: deploy/kafka/pom.xml)"
t0=$(now_ms)
mkdir -p "$STATE_ROOT/kafka" "$CACHE_ROOT/kafka"
tmp="$(mktemp -d "$CACHE_ROOT/kafka/libs.tmp.XXXXXX")"
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
mvnlog="$STATE_ROOT/kafka/mvn-install.log"
if ! (cd "$DEPLOY_DIR/kafka" && mvn -B -Dstyle.color=never dependency:copy-dependencies \
        -DoutputDirectory="$tmp" >"$mvnlog" 2>&1); then
  grep -E '^\[ERROR\]' "$mvnlog" | head -n 10 >&2 || tail -n 30 "$mvnlog" >&2
  die "maven failed (full log: $mvnlog)"
fi
compgen -G "$tmp/kafka_2.13-*.jar" >/dev/null || die "copy-dependencies produced no kafka_2.13 jar"
echo "$want" >"$tmp/.pom.sha256"
rm -rf "$LIBS"
mv "$tmp" "$LIBS"
trap - EXIT
log "installed $(count_jars "$LIBS") jars into $LIBS in $(( ($(now_ms) - t0) / 1000 ))s"
