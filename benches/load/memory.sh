#!/usr/bin/env bash
# Memory per held call, three ways in one run: the gateway's RSS per interactive call held in
# flight by a hanging provider, over
#   h1-h1   HTTP/1.1 from the callers (one connection per call, benches/load/hold.py) and to
#           the provider (one connection per call): scenario 5 of run-all.sh (`scale`);
#   h1-h2   HTTP/1.1 from the callers, HTTP/2 to the provider (`[providers.duffel]
#           http2_prior_knowledge = true`: every held call a stream of one connection);
#   h2-h2   HTTP/2 both sides: CONNS (10) caller connections with CALLS / CONNS streams each
#           (benches/load/hold_h2.rs), HTTP/2 to the provider.
#
# Usage: benches/load/memory.sh [CONFIG...]      (default: h1-h1 h1-h2 h2-h2)
# Knobs: BIN (a release faregate, else it builds one), EXAMPLES (where hold_h2 is), CALLS
# (10000; capped by the open-file limit where a configuration needs a descriptor per call),
# CONNS (10), WRAP (runs the gateway under another program, e.g. "heaptrack -o FILE"),
# HOLD_ROUTE (h2-h2 only: native, the default, or openai, anthropic, mcp or mcp-session, the agent protocols'
# routes, one call per request; see hold_h2.rs).
# Each configuration gets a fresh `faregate sim` and `faregate serve` (one provider, bulkhead
# and timeouts raised, breaker forced closed, 200 calls to warm up, then the flight search
# hangs), as scale() in scenarios.sh sets them up. Each call is a search of its own (origin and
# date), so no two calls share one provider call, and every answer after the hang is a real
# `ok`. Ports 18490-18495 on 127.0.0.1; stops everything it started. One key=value line per
# configuration, then a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
CALLS=${CALLS:-10000}
CONNS=${CONNS:-10}
CONFIGS=("$@")
[[ ${#CONFIGS[@]} -eq 0 ]] && CONFIGS=(h1-h1 h1-h2 h2-h2)
if [[ -z "${BIN:-}" ]]; then
  nice cargo build --release --quiet --bin faregate --example hold_h2
  BIN=target/release/faregate
  EXAMPLES=target/release/examples
fi
EXAMPLES=${EXAMPLES:-target/release/examples}
DIR=$(mktemp -d)
# shellcheck source=benches/load/lib.sh
source benches/load/lib.sh
trap 'stop_all; rm -rf "$DIR"' EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fds=$(ulimit -n)

val() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

# measure config port-offset: one configuration on a fresh simulator and gateway.
measure() {
  local config=$1 sim=127.0.0.1:$((18490 + $2)) gw=127.0.0.1:$((18491 + $2)) d=$DIR/$1 n=$CALLS
  # Descriptors the gateway needs per held call: the caller's connection over HTTP/1.1, and
  # the provider's over HTTP/1.1 (HTTP/2 streams share a handful).
  local per=0
  [[ $config == h1-* ]] && per=$((per + 1))
  [[ $config == *-h1 ]] && per=$((per + 1))
  if ((per > 0 && n * per + 200 > fds)); then
    n=$(((fds - 200) / per))
    echo "($config: open-file limit $fds, holding $n calls instead of $CALLS)" >&2
  fi
  spawn "sim-$config" "$BIN" sim --listen "$sim"
  local sim_pid=$LAST_PID
  wait_http "http://$sim/_sim/stats"
  write_config "$d" "$gw" "http://$sim" "http://$sim"
  if [[ $config == *-h2 ]]; then
    sed -i -e 's|^# http2_prior_knowledge = false.*|http2_prior_knowledge = true|' "$d/faregate.toml"
    grep -q '^http2_prior_knowledge = true' "$d/faregate.toml"
  fi
  tool_set "$d" search_flights providers '["duffel"]'
  tool_set "$d" search_flights max_concurrent $((n * 2))
  tool_set "$d" search_flights timeout '"300s"'
  tool_set "$d" search_flights deadline '"300s"'
  tool_set "$d" search_flights stale_for '"0s"'
  RUST_LOG=warn start_gateway "gw-$config" "$d"
  echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}" > "$DIR/flights.json"
  # Warm up as scale() does: 200 calls, 8 at a time.
  seq 200 | xargs -P 8 -I{} curl -s -o /dev/null -X POST -H 'content-type: application/json' \
    --data-binary "@$DIR/flights.json" "http://$gw/v1/tools/search_flights/call"
  force "$gw" search_flights.duffel closed
  fault "$sim" duffel_air_search '{"hang":true}'
  local out
  if [[ $config == h2-* ]]; then
    out=$("$EXAMPLES/hold_h2" "$gw" "$sim" "$GW_PID" "$n" "$CONNS" "$DIR/flights.json")
  else
    out=$(python3 benches/load/hold.py "$gw" "$sim" "$GW_PID" "$n" "$DIR/flights.json")
  fi
  local label=$config
  [[ $config == h2-* && ${HOLD_ROUTE:-native} != native ]] && label="$config ($HOLD_ROUTE)"
  echo "config=$label $out"
  ROWS+=("| $label | $(val held "$out") of $n | $(val at_provider "$out") | $(val rss_idle_mib "$out") → $(val rss_held_mib "$out") MiB | $(python3 -c "print(f'{$(val bytes_per_call "$out") / 1024:.1f}')") KB | $(val answered "$out") |")
  stop_pid "$GW_PID"
  stop_pid "$sim_pid"
}

ROWS=()
i=0
for config in "${CONFIGS[@]}"; do
  case $config in
    h1-h1 | h1-h2 | h2-h2) measure "$config" $((i * 2)) ;;
    *) echo "unknown configuration $config (h1-h1, h1-h2, h2-h2)" >&2; exit 2 ;;
  esac
  i=$((i + 1))
done
echo
echo "| callers - provider | held | at the provider | gateway RSS idle → held | per held call | answered after the hang |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
