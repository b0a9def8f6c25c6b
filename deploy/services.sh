#!/usr/bin/env bash
# Bring the loopback test services up or down.
#   deploy/services.sh up   [kafka] [clickhouse] [registry]   install (cached) + start
#   deploy/services.sh down [kafka] [clickhouse] [registry]   stop
#   deploy/services.sh env                                    print the env vars only
# No service names = all. Default ports/data dirs only (use the per-service scripts
# for others). Prints the env vars the tests read at the end of "up".
set -euo pipefail
LOG_TAG=services
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

ORDER=(kafka clickhouse registry)   # start order; stop runs in reverse

print_env() {
  cat <<ENV
BIOALCHEMY_KAFKA=127.0.0.1:19092
BIOALCHEMY_CLICKHOUSE_URL=http://127.0.0.1:18123
BIOALCHEMY_SCHEMA_REGISTRY=http://127.0.0.1:18081/apis/ccompat/v6
ENV
}

action="${1:-}"; shift || true
case "$action" in
  up|down) ;;
  env) print_env; exit 0 ;;
  *) echo "usage: $0 up|down|env [kafka clickhouse registry]" >&2; exit 2 ;;
esac
want=("$@")
(( ${#want[@]} )) || want=("${ORDER[@]}")
for s in "${want[@]}"; do
  [[ " ${ORDER[*]} " == *" $s "* ]] || die "unknown service '$s' (known: ${ORDER[*]})"
done
selected=()
for s in "${ORDER[@]}"; do
  [[ " ${want[*]} " == *" $s "* ]] && selected+=("$s")
done

if [[ "$action" == up ]]; then
  for s in "${selected[@]}"; do
    t0=$(now_ms)
    "$DEPLOY_DIR/$s/install.sh"
    "$DEPLOY_DIR/$s/start.sh"
    log "$s up in $(( ($(now_ms) - t0) / 1000 ))s"
  done
  log "all up: ${selected[*]}"
  print_env
else
  for (( i=${#selected[@]}-1; i>=0; i-- )); do
    "$DEPLOY_DIR/${selected[i]}/stop.sh"
  done
  log "all down: ${selected[*]}"
fi
