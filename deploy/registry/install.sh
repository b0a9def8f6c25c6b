#!/usr/bin/env bash
# Build a runnable Apicurio Registry 2.1.5.Final (Confluent-compatible API under
# /apis/ccompat/v6) from Maven Central into the machine's cache (lib.sh's CACHE_ROOT)/registry/build.
# See deploy/registry/pom.xml for why a Quarkus build step is needed. Skips the build
# when the runner jar for the current pom is already there.
set -euo pipefail
LOG_TAG=registry
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

POM="$DEPLOY_DIR/registry/pom.xml"
BUILD="$CACHE_ROOT/registry/build"
STAMP="$BUILD/.pom.sha256"
want="$(sha256sum "$POM" | cut -d' ' -f1)"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] && compgen -G "$BUILD/*-runner.jar" >/dev/null; then
  log "already built: $(ls "$BUILD"/*-runner.jar)"
  exit 0
fi
command -v mvn >/dev/null || die "mvn not found"
if [[ -d "$BUILD" ]] && path_in_use "$BUILD/"; then
  die "a running registry uses $BUILD: stop it (deploy/registry/stop.sh) before re-building"
fi
pick_java 17
JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$JAVA")")")"
export JAVA_HOME
log "building Apicurio Registry with Maven (first run downloads ~200 MB of jars, ~3 min)"
t0=$(now_ms)
rm -rf "$BUILD"
mkdir -p "$STATE_ROOT/registry"
mvnlog="$STATE_ROOT/registry/mvn-build.log"
# -DskipDefault=true: turn off the Apicurio parent's profile that adds unreachable repos.
if ! (cd "$DEPLOY_DIR/registry" && mvn -B -Dstyle.color=never -DskipDefault=true \
        -Dregistry.build.dir="$BUILD" package >"$mvnlog" 2>&1); then
  grep -E '^\[ERROR\]' "$mvnlog" | head -n 10 >&2 || tail -n 30 "$mvnlog" >&2
  die "maven build failed (full log: $mvnlog)"
fi
compgen -G "$BUILD/*-runner.jar" >/dev/null || die "no runner jar in $BUILD (log: $mvnlog)"
echo "$want" >"$STAMP"
log "built $(basename "$(ls "$BUILD"/*-runner.jar)") in $(( ($(now_ms) - t0) / 1000 ))s"
