#!/usr/bin/env bash
# Every load scenario in one run, side by side on this machine, ending in one table.
#
# Usage: benches/load/run-all.sh [SCENARIO...]     (default: overhead floor isolation scale)
#   overhead   search_flights through faregate vs straight to a static nginx upstream (a
#              realistic Duffel offers body, benches/load/duffel_offers.json: 14 offers, 62 KB,
#              captured from the simulator's JFK-LHR search) vs nginx
#              proxy_pass in front of the same upstream vs node with opossum doing faregate's
#              job in front of it (benches/load/opossum/gateway.js: one node process, see its
#              header). Issue 18's targets: faregate >= 0.5x nginx proxy and >= 3x node
#              (closed loop, wrk), added p50 <= 0.3 ms over the upstream's own at 200/s (oha).
#              The throughput targets are judged on distinct searches (wrk_post_distinct: a
#              departure date of its own per call, so no two calls in flight share a provider
#              call; the row counts provider calls against calls); the same body on every
#              connection is reported beside them, as what coalescing makes of identical calls
#   floor      the fallback answer with both flight breakers forced open vs a minimal axum JSON
#              handler (benches/load/floor.rs) answering the same bytes. Issue 18's targets:
#              >= 0.8x its closed-loop throughput, p99 within 0.3 ms of its p99 at a fixed
#              500/s (oha, latency corrected). The closed-loop p99s are printed but not judged:
#              with a fixed number of connections a closed loop's latency is connections /
#              throughput (Little's law), so 0.8x the throughput is already 1.25x the latency,
#              and at saturation on 2 shared cores its tail is the scheduler's. The fixed rate
#              is a load both carry, which is the latency a caller sees.
#   isolation  fixed-rate hotels + flights; both flight providers go to 15 s latency
#              mid-run; then they heal and the recovery ramp is read off the simulator's
#              per-second arrival counts
#   scale      10,000 interactive calls held by a hanging provider (RSS per in-flight call),
#              and 10,000 breaker keys (benches/load/breaker_keys.rs)
#
# Needs wrk and nginx (apt-get install wrk nginx-light), oha (cargo install --locked
# oha@1.16.0) and, for `overhead`, node >= 20 and npm: opossum (pinned in
# benches/load/opossum/package-lock.json) is installed with `npm ci` into
# target/bench-opossum/ on first use and whenever the lock file changes. Builds the release binary and the two helper programs in this folder (cargo
# examples `floor` and `breaker_keys`), starts everything on 127.0.0.1 ports
# 18400-18499, stops everything it started (EXIT trap), and prints a table. Knobs (environment):
# WRK_SECS (8), WRK_THREADS (2), WRK_CONNS (32), OHA_SECS (10), ROUNDS (2), ISO_SECS (15),
# ISO_RPS (100), SCALE_CALLS (10000), SKIP_BUILD=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DIR=$(mktemp -d /tmp/faregate-bench.XXXXXX)
chmod 755 "$DIR"   # nginx workers (user nobody) read the static body from here
REPORT=$ROOT/benches/load/report.py
# shellcheck source=benches/load/lib.sh
source benches/load/lib.sh
trap 'stop_all; rm -rf "$DIR"' EXIT

WRK_SECS=${WRK_SECS:-8}
WRK_THREADS=${WRK_THREADS:-2}
WRK_CONNS=${WRK_CONNS:-32}
OHA_SECS=${OHA_SECS:-10}
ROUNDS=${ROUNDS:-2}
ISO_SECS=${ISO_SECS:-15}
ISO_RPS=${ISO_RPS:-100}
SCALE_CALLS=${SCALE_CALLS:-10000}
SCENARIOS=("$@")
[[ ${#SCENARIOS[@]} -eq 0 ]] && SCENARIOS=(overhead floor isolation scale)
TOOLS=(wrk oha nginx curl python3)
[[ " ${SCENARIOS[*]} " == *" overhead "* ]] && TOOLS+=(node npm)
for tool in "${TOOLS[@]}"; do
  command -v "$tool" >/dev/null || { echo "$tool is required (see the header of $0)"; exit 1; }
done
if [[ -z ${SKIP_BUILD:-} ]]; then
  cargo build --release --quiet --bin faregate --example floor --example breaker_keys
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

TABLE=$DIR/table.txt
: > "$TABLE"
row() { echo "$*" | tee -a "$TABLE"; }
val() { # key line: the value of key=... in a report line
  sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"
}
ratio() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{a/b:.2f}' if b else 'nan')" "$1" "$2"; }
minus() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{a-b:.3f}')" "$1" "$2"; }
check() { python3 -c "import sys; print('met' if eval(sys.argv[1]) else 'MISSED')" "$1"; }
best() { # key lines...: the line with the highest rps (closed loop: the round least disturbed)
  local key=$1
  shift
  printf '%s\n' "$@" | sort -t= -k3 -n | awk -v k="$key" 'END {print}'
}

echo "# faregate load scenarios, $(date -u '+%F %H:%M UTC'); $(nproc) cores," \
  "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1); load average at start $(busy)"

# --------------------------------------------------------------------------------------------
overhead() {
  echo "== overhead: faregate vs nginx, search_flights with a $(wc -c < benches/load/duffel_offers.json)-byte Duffel body"
  local UP=127.0.0.1:18401 PX=127.0.0.1:18402 GW=127.0.0.1:18403 ND=127.0.0.1:18404 ng=$DIR/nginx
  start_nginx "$ng" "$UP" "$PX"
  write_config "$DIR/overhead" "$GW" "http://$UP" "http://$UP"
  start_gateway gw-overhead "$DIR/overhead"
  start_opossum node-opossum "$ND" "http://$UP"
  local d1
  d1=$(day 21)
  echo "{\"data\":{\"slices\":[{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$d1\"}],\"passengers\":[{\"type\":\"adult\"}]}}" > "$DIR/duffel-req.json"
  echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$d1\"}}" > "$DIR/flights.json"
  local status
  status=$(curl -s "http://$GW/v1/tools/search_flights/call" -H 'content-type: application/json' \
    -d @"$DIR/flights.json" | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["status"], e["provider"], len(e["data"]["offers"]), "offers")')
  echo "faregate answers: $status"
  curl -s "http://$GW/v1/tools/search_flights/call" -H 'content-type: application/json' \
    -d @"$DIR/flights.json" > "$DIR/faregate-answer.json"
  curl -s "http://$ND/v1/tools/search_flights/call" -H 'content-type: application/json' \
    -d @"$DIR/flights.json" > "$DIR/node-answer.json"
  # The comparison is only fair if node does the same job: the same offers, normalized the
  # same way, and the same text for a model.
  echo "node+opossum answers: $(python3 - "$DIR/faregate-answer.json" "$DIR/node-answer.json" <<'PY'
import json, sys
f, n = (json.load(open(p)) for p in sys.argv[1:])
same = [k for k in ("status", "content", "data", "provider", "breaker") if f.get(k) == n.get(k)]
print(n["status"], n["provider"], len(n["data"]["offers"]), "offers;",
      "the same", "/".join(same), "as faregate's" if len(same) == 5 else
      f"as faregate's, NOT {'/'.join(k for k in ('status', 'content', 'data', 'provider', 'breaker') if k not in same)}")
PY
)"
  local q="air/offer_requests?return_offers=true&supplier_timeout=7000"
  local n=() p=() g=() o=() gd=() od=() shared=() r
  for r in $(seq "$ROUNDS"); do
    n+=("$(wrk_post "nginx-direct-$r" "http://$UP/$q" "$DIR/duffel-req.json")")
    p+=("$(wrk_post "nginx-proxy-$r" "http://$PX/$q" "$DIR/duffel-req.json")")
    g+=("$(wrk_post "faregate-$r" "http://$GW/v1/tools/search_flights/call" "$DIR/flights.json")")
    o+=("$(wrk_post "node-opossum-$r" "http://$ND/v1/tools/search_flights/call" "$DIR/flights.json")")
    local before_calls before_attempts
    before_calls=$(metric_sum "$GW" faregate_tool_calls_total search_flights)
    before_attempts=$(metric_sum "$GW" faregate_upstream_attempts_total search_flights)
    gd+=("$(wrk_post_distinct "faregate-distinct-$r" "http://$GW/v1/tools/search_flights/call")")
    shared+=("$(($(metric_sum "$GW" faregate_upstream_attempts_total search_flights) - before_attempts))/$(($(metric_sum "$GW" faregate_tool_calls_total search_flights) - before_calls))")
    od+=("$(wrk_post_distinct "node-distinct-$r" "http://$ND/v1/tools/search_flights/call")")
  done
  printf '%s\n' "${n[@]}" "${p[@]}" "${g[@]}" "${o[@]}" "${gd[@]}" "${od[@]}"
  local N P G O GD OD
  N=$(best rps "${n[@]}"); P=$(best rps "${p[@]}"); G=$(best rps "${g[@]}"); O=$(best rps "${o[@]}")
  GD=$(best rps "${gd[@]}"); OD=$(best rps "${od[@]}")
  local rate=${OVERHEAD_RPS:-200}
  local on op og oo
  on=$(oha_post nginx-direct-rate "http://$UP/$q" "$DIR/duffel-req.json" "$rate" "$OHA_SECS")
  op=$(oha_post nginx-proxy-rate "http://$PX/$q" "$DIR/duffel-req.json" "$rate" "$OHA_SECS")
  og=$(oha_post faregate-rate "http://$GW/v1/tools/search_flights/call" "$DIR/flights.json" "$rate" "$OHA_SECS")
  oo=$(oha_post node-opossum-rate "http://$ND/v1/tools/search_flights/call" "$DIR/flights.json" "$rate" "$OHA_SECS")
  printf '%s\n' "$on" "$op" "$og" "$oo"
  local tr tn added_gw added_px added_node
  tr=$(ratio "$(val rps "$G")" "$(val rps "$P")")
  tn=$(ratio "$(val rps "$G")" "$(val rps "$O")")
  added_gw=$(minus "$(val p50_ms "$og")" "$(val p50_ms "$on")")
  added_px=$(minus "$(val p50_ms "$op")" "$(val p50_ms "$on")")
  added_node=$(minus "$(val p50_ms "$oo")" "$(val p50_ms "$on")")
  local trd tnd
  trd=$(ratio "$(val rps "$GD")" "$(val rps "$P")")
  tnd=$(ratio "$(val rps "$GD")" "$(val rps "$OD")")
  # Judged on distinct searches (each call its own provider call: the per-call cost); the same
  # body on every connection is reported beside it, as what coalescing makes of identical calls.
  row "| 1 overhead, distinct searches | wrk rps: nginx direct $(val rps "$N"), nginx proxy $(val rps "$P"), faregate $(val rps "$GD") (provider calls / calls per round: ${shared[*]}) | faregate/nginx-proxy = $trd | ≥ 0.5: $(check "$trd >= 0.5") |"
  row "| 1 overhead, distinct searches | wrk rps: node+opossum (1 process) $(val rps "$OD"), faregate $(val rps "$GD") | faregate/node = $tnd | ≥ 3: $(check "$tnd >= 3") |"
  row "| 1 overhead, one body (coalesced) | wrk rps: nginx proxy $(val rps "$P"), faregate $(val rps "$G"), node+opossum $(val rps "$O") | faregate/nginx-proxy = $tr, faregate/node = $tn | reported, not judged |"
  row "| 1 overhead | oha ${rate}/s p50: direct $(val p50_ms "$on") ms, proxy $(val p50_ms "$op") ms, faregate $(val p50_ms "$og") ms (p99 $(val p99_ms "$og") ms), node $(val p50_ms "$oo") ms (p99 $(val p99_ms "$oo") ms) | added p50: faregate $added_gw ms, nginx proxy $added_px ms, node $added_node ms | ≤ 0.3 ms: $(check "$added_gw <= 0.3") |"
  stop_pid "$GW_PID"
  stop_pid "$NODE_PID"
}

# --------------------------------------------------------------------------------------------
floor() {
  echo "== fast-fail floor: fallback (both flight breakers forced open) vs a minimal axum handler"
  local SIM=127.0.0.1:18411 GW=127.0.0.1:18412 FL=127.0.0.1:18413
  spawn sim-floor "$BIN" sim --listen "$SIM"
  wait_http "http://$SIM/_sim/stats"
  write_config "$DIR/floor" "$GW" "http://$SIM" "http://$SIM"
  start_gateway gw-floor "$DIR/floor"
  echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}" > "$DIR/flights.json"
  fast_fail "$GW" "$DIR/flights.json" "$DIR/fallback.json"
  echo "fallback answer: $(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print(e["status"], "breaker", e["breaker"], len(e["data"]["offers"]), "offers")' "$DIR/fallback.json"), $(wc -c < "$DIR/fallback.json") bytes"
  spawn floor "$EXAMPLES/floor" "$FL" "$DIR/fallback.json"
  wait_http "http://$FL/x" POST
  local f=() g=() r
  for r in $(seq "$ROUNDS"); do
    f+=("$(wrk_post "floor-$r" "http://$FL/v1/tools/search_flights/call" "$DIR/flights.json")")
    g+=("$(wrk_post "fallback-$r" "http://$GW/v1/tools/search_flights/call" "$DIR/flights.json")")
  done
  printf '%s\n' "${f[@]}" "${g[@]}"
  local F G
  F=$(best rps "${f[@]}"); G=$(best rps "${g[@]}")
  local rate=${FLOOR_RPS:-500} of og
  of=$(oha_post floor-rate "http://$FL/v1/tools/search_flights/call" "$DIR/flights.json" "$rate" "$OHA_SECS")
  og=$(oha_post fallback-rate "http://$GW/v1/tools/search_flights/call" "$DIR/flights.json" "$rate" "$OHA_SECS")
  printf '%s\n' "$of" "$og"
  # Issue 18's p99 target is judged on the fixed-rate rows (see the header); the closed-loop
  # p99s are printed for the record.
  local tr dp99 dp99_rate
  tr=$(ratio "$(val rps "$G")" "$(val rps "$F")")
  dp99=$(minus "$(val p99_ms "$G")" "$(val p99_ms "$F")")
  dp99_rate=$(minus "$(val p99_ms "$og")" "$(val p99_ms "$of")")
  row "| 2 floor | wrk rps: floor $(val rps "$F"), fallback $(val rps "$G") | fallback/floor = $tr | ≥ 0.8: $(check "$tr >= 0.8") |"
  row "| 2 floor (fixed rate) | oha ${rate}/s: fallback p50 $(val p50_ms "$og") ms, p99 $(val p99_ms "$og") ms; floor p50 $(val p50_ms "$of") ms, p99 $(val p99_ms "$of") ms | p99 +$dp99_rate ms | ≤ +0.3 ms: $(check "$dp99_rate <= 0.3"); p99 < 1 ms: $(check "$(val p99_ms "$og") < 1") |"
  row "| 2 floor (closed loop) | wrk p99: floor $(val p99_ms "$F") ms, fallback $(val p99_ms "$G") ms | p99 +$dp99 ms | reported, not judged |"
  stop_pid "$GW_PID"
}

source benches/load/scenarios.sh

for s in "${SCENARIOS[@]}"; do
  "$s"
  echo
done
echo "# results ($(date -u '+%F %H:%M UTC'), load average now $(busy))"
echo "| scenario | figures | ratio | target |"
echo "|---|---|---|---|"
cat "$TABLE"
