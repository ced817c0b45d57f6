#!/usr/bin/env bash
# The popular-routes workload (issue 18): many agents search the same popular routes at the same
# moment, and each provider search takes about a second. How many provider calls do the agents'
# calls cost, with coalescing alone and with `fresh_for`, and how old is the oldest answer?
#
# Usage: benches/load/popular.sh          (one command; knobs below, from the environment)
# Starts `faregate sim` with Duffel's flight search answering after LATENCY_MS (1000), then for
# each mode a fresh `faregate serve` whose search_flights is served by Duffel alone (no
# failover, so every provider call is counted in one simulator group): `fresh_for = "60s"`, then
# no fresh_for (coalescing alone). Each mode sends CALLS (1000) searches at RATE (100) per second
# over ROUTES (50) routes, Zipf-distributed (benches/load/popular_load.py, seed SEED), and reads
# the provider calls off the simulator's per-group request count. Prints one table; stops
# everything it started. Ports 18190-18191 on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
CALLS=${CALLS:-1000}
RATE=${RATE:-100}
ROUTES=${ROUTES:-50}
SEED=${SEED:-18}
LATENCY_MS=${LATENCY_MS:-1000}
FRESH_FOR=${FRESH_FOR:-60s}
SIM=127.0.0.1:18191
GW=127.0.0.1:18190
DIR=$(mktemp -d)
if [[ -z "${BIN:-}" ]]; then
  nice cargo build --release --quiet
  BIN=target/release/faregate
fi

SIM_PID= GW_PID=
trap 'kill $SIM_PID $GW_PID 2>/dev/null; rm -rf "$DIR"' EXIT
$BIN sim --listen "$SIM" >"$DIR/sim.log" 2>&1 & SIM_PID=$!
for _ in $(seq 50); do curl -sf "http://$SIM/_sim/stats" >/dev/null && break; sleep 0.1; done
curl -sf -X PUT "http://$SIM/_sim/faults/duffel_air_search" -H 'content-type: application/json' \
  -d "{\"latency_ms\": $LATENCY_MS}" >/dev/null

searches() { curl -sf "http://$SIM/_sim/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["groups"]["duffel_air_search"]["requests"])'; }

# mode fresh_for: one run against a fresh gateway; prints the driver's JSON with the provider calls
run_mode() {
  local fresh=$1 d=$DIR/$1
  mkdir -p "$d"
  cp -r tools "$d/tools"
  sed -i -e 's|^providers = \["duffel", "amadeus"\]|providers = ["duffel"]|' \
      -e '/^# fresh_for = /d' "$d/tools/search_flights.toml"
  if [[ $fresh != off ]]; then
    sed -i -e "s|^stale_for = .*|&\nfresh_for = \"$fresh\"|" "$d/tools/search_flights.toml"
  fi
  sed -e "s|^listen = .*|listen = \"$GW\"|" \
      -e "s|^tools_dir = .*|tools_dir = \"$d/tools\"|" \
      -e "s|^prompts_dir = .*|prompts_dir = \"$PWD/prompts\"|" \
      -e "s|^url = \"sqlite://faregate.db\"|url = \"sqlite://$d/jobs.db\"|" \
      -e "s|http://127.0.0.1:8081|http://$SIM|" \
      -e 's|^client_rate = .*|client_rate = "off"|' \
      -e 's|^client_max_concurrent_calls = .*|client_max_concurrent_calls = 0|' \
      faregate.toml > "$d/faregate.toml"
  RUST_LOG=warn $BIN serve --config "$d/faregate.toml" 2>"$d/gateway.log" & GW_PID=$!
  for _ in $(seq 100); do curl -sf "http://$GW/healthz" >/dev/null && break; sleep 0.1; done
  local before after out
  before=$(searches)
  out=$(python3 benches/load/popular_load.py "http://$GW/v1/tools/search_flights/call" \
    "$RATE" "$CALLS" "$ROUTES" "$SEED" "$(date -u -d '+30 days' +%F)")
  after=$(searches)
  kill "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; GW_PID=
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["provider_calls"]=int(sys.argv[2]); r["fresh_for"]=sys.argv[3]; print(json.dumps(r))' \
    "$out" "$((after - before))" "$fresh"
}

results=$(run_mode "$FRESH_FOR"; run_mode off)
python3 - "$CALLS" "$RATE" "$ROUTES" "$LATENCY_MS" <<PY
import json, sys
calls, rate, routes, latency = sys.argv[1:5]
rows = [json.loads(line) for line in """$results""".splitlines() if line.strip()]
print(f"popular routes: {calls} searches at {rate}/s over {routes} routes (Zipf s=1), provider answers after {latency} ms")
print(f"{'mode':<24} {'provider calls':>14} {'share':>7} {'target':>7} {'from memory':>11} {'oldest answer':>22} {'statuses'}")
for r in rows:
    fresh = r["fresh_for"] != "off"
    mode = f"fresh_for = {r['fresh_for']}" if fresh else "coalescing alone"
    target = 0.25 if fresh else 0.60
    share = r["provider_calls"] / r["sent"]
    mark = "✅" if share <= target else "❌"
    oldest = f"{r['oldest_repeat_s']} s" if r["oldest_repeat_s"] is not None else "-"
    if fresh:
        oldest += f" (≤ {r['fresh_for']}; max cached_age_s {r['max_cached_age_s']})"
    print(f"{mode:<24} {r['provider_calls']:>14} {share:>6.1%} {'≤ ' + format(target, '.0%'):>7} {mark} {r['from_memory']:>9} {oldest:>22}  {r['statuses']}")
print(f"routes asked {rows[0]['routes_asked']}, top route {rows[0]['top_route_share']:.1%} of calls")
PY
