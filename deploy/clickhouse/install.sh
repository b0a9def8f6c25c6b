#!/usr/bin/env bash
# Install Debian's clickhouse-server + clickhouse-client (18.16.1 on bookworm) when missing.
# The packaged system service is not started (and this script never starts it).
set -euo pipefail
LOG_TAG=clickhouse
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

if command -v clickhouse-server >/dev/null && command -v clickhouse-client >/dev/null; then
  log "already installed: $(clickhouse-client --version 2>/dev/null | head -n1)"
  exit 0
fi
command -v apt-get >/dev/null || die "apt-get not found: install clickhouse-server/clickhouse-client by hand"
SUDO=""; (( EUID == 0 )) || SUDO="sudo"
t0=$(now_ms)
if ! apt-cache show clickhouse-server >/dev/null 2>&1 || ! apt-cache show clickhouse-client >/dev/null 2>&1; then
  log "apt-get update (clickhouse-server not in the package lists yet)"
  $SUDO apt-get update -q >/dev/null
fi
log "apt-get install clickhouse-server clickhouse-client"
# policy-rc.d / no systemd here: the package's own service is never started.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  clickhouse-server clickhouse-client >/dev/null
log "installed $(clickhouse-client --version | head -n1) in $(( ($(now_ms) - t0) / 1000 ))s"
