#!/usr/bin/env bash
# A backlog against a rate-limited provider, scaled down: the provider allows N requests per
# minute and answers 429 with Retry-After beyond that; a backlog of background jobs must drain at
# close to the allowed rate, with few 429s and no job lost.
#
# Usage: benches/load/backlog.sh [RPM] [JOBS] [PROVIDER]
#        (defaults: 60 per minute, 150 jobs, amadeus)
# Starts `faregate sim` and `faregate serve` (SQLite store in a temp dir) on loopback, submits
# the backlog of background jobs, waits until every job has ended, prints a table, and stops
# everything it started. PROVIDER amadeus: get_flight_status jobs (Amadeus flight status, which
# documents no rate-limit headers); duffel: search_flights jobs served by Duffel alone (which
# announces its limit on every answer in `ratelimit-*` headers).
set -euo pipefail
cd "$(dirname "$0")/../.."
RPM=${1:-60}
JOBS=${2:-150}
PROVIDER=${3:-amadeus}
case "$PROVIDER" in
  amadeus) TOOL=get_flight_status GROUP=amadeus_status ;;
  duffel) TOOL=search_flights GROUP=duffel_air_search ;;
  *) echo "PROVIDER must be amadeus or duffel, got $PROVIDER" >&2; exit 2 ;;
esac
SIM=127.0.0.1:18181
GW=127.0.0.1:18180
DIR=$(mktemp -d)
# The drain is paced by the provider's limit, not by CPU: a debug build measures the same.
if [[ -z "${BIN:-}" ]]; then
  cargo build --release --quiet
  BIN=target/release/faregate
fi

cp -r tools "$DIR/tools"
# Duffel alone serves the flight search, so that a 429 is not hidden by a failover to Amadeus.
sed -i -e 's|^providers = \["duffel", "amadeus"\]|providers = ["duffel"]|' "$DIR/tools/search_flights.toml"
# Amadeus alone serves flight status, so that its 429s are not answered by flightaware behind it.
sed -i -e 's|^providers = \["amadeus", "flightaware"\]|providers = ["amadeus"]|' "$DIR/tools/get_flight_status.toml"
sed -e "s|^listen = .*|listen = \"$GW\"|" \
    -e "s|^tools_dir = .*|tools_dir = \"$DIR/tools\"|" \
    -e "s|^prompts_dir = .*|prompts_dir = \"$PWD/prompts\"|" \
    -e "s|^url = \"sqlite://faregate.db\"|url = \"sqlite://$DIR/jobs.db\"|" \
    -e "s|http://127.0.0.1:8081|http://$SIM|" \
    -e 's|^client_rate = .*|client_rate = "off"|' faregate.toml > "$DIR/faregate.toml"

$BIN sim --listen "$SIM" >/dev/null 2>&1 & SIM_PID=$!
trap 'kill $SIM_PID $GW_PID 2>/dev/null; rm -rf "$DIR"' EXIT
GW_PID=
for _ in $(seq 50); do curl -sf "http://$SIM/_sim/stats" >/dev/null && break; sleep 0.1; done
curl -sf -X PUT "http://$SIM/_sim/faults/$GROUP" -H 'content-type: application/json' \
  -d "{\"requests_per_minute\": $RPM}" >/dev/null
RUST_LOG=warn $BIN serve --config "$DIR/faregate.toml" 2>"$DIR/gateway.log" & GW_PID=$!
for _ in $(seq 100); do curl -sf "http://$GW/healthz" >/dev/null && break; sleep 0.1; done

day=$(date -u -d '+3 days' +%F)
start=$(date +%s.%N)
for i in $(seq "$JOBS"); do
  n=$((100 + i))
  if [ "$PROVIDER" = duffel ]; then
    args="{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(date -u -d "+$((i % 300 + 1)) days" +%F)\"}"
  else
    args="{\"carrier_code\":\"BA\",\"flight_number\":\"$n\",\"departure_date\":\"$day\"}"
  fi
  curl -sf "http://$GW/v1/tools/$TOOL/call" -H 'content-type: application/json' \
    -d "{\"arguments\":$args,\"mode\":\"background\"}" >/dev/null
done
echo "submitted $JOBS jobs; draining against a limit of $RPM requests per minute …"
while :; do
  left=$(curl -sf "http://$GW/v1/jobs?tool=$TOOL&limit=1000" \
    | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"]; print(sum(1 for x in j if x["status"] not in ("succeeded","dead")))')
  [ "$left" = 0 ] && break
  sleep 1
done
end=$(date +%s.%N)
python3 - "$start" "$end" "$RPM" "$JOBS" "http://$GW" "http://$SIM" "$TOOL" "$GROUP" <<'PY'
import json, sys, urllib.request
start, end, rpm, jobs, gw, sim = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
tool, group = sys.argv[7], sys.argv[8]
get = lambda u: json.load(urllib.request.urlopen(u))
listed = get(f"{gw}/v1/jobs?tool={tool}&limit=1000")["jobs"]
ok = sum(1 for j in listed if j["status"] == "succeeded")
dead = sum(1 for j in listed if j["status"] == "dead")
attempts = sum(j["attempts"] for j in listed)
stats = get(f"{sim}/_sim/stats")["groups"][group]
statuses = {int(k): v for k, v in stats["statuses"].items()}
calls = stats["requests"]
secs = end - start
allowed = rpm / 60.0
# The first window's N requests are free; the rate that matters is after it.
print(f"| jobs | {jobs} submitted, {ok} succeeded, {dead} dead, {jobs - ok - dead} lost |")
print(f"| time to drain | {secs:.1f} s |")
print(f"| drain rate | {ok / secs:.3f} jobs/s vs allowed {allowed:.3f}/s = {100 * ok / secs / allowed:.0f} % of the allowed rate |")
good = sum(v for k, v in statuses.items() if 200 <= k < 300)
print(f"| provider calls | {calls} ({good} answered 2xx, {statuses.get(429, 0)} answered 429 = {100 * statuses.get(429, 0) / max(calls, 1):.1f} %) |")
print(f"| attempts recorded on jobs | {attempts} |")
PY
