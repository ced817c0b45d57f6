#!/usr/bin/env bash
# Seed 000 isolation scenario (issue 4): hotel latency and errors with flights healthy versus
# flights at 15 s latency (breaker open), and the flight fallback latency once it is open.
#
# Usage: benches/load/isolation.sh [DURATION_S] [RPS_PER_TOOL]
# Needs hey (apt-get install hey): fixed-rate load, so latency is not hidden by a saturated
# closed loop. Starts `faregate demo` on 127.0.0.1:18080/18081, stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${1:-20}
RPS=${2:-100}
GW=127.0.0.1:18080
SIM=127.0.0.1:18081
WORKERS=4
command -v hey >/dev/null || { echo "hey is required (apt-get install hey)"; exit 1; }
cargo build --release --quiet
./target/release/faregate demo --listen "$GW" --sim-listen "$SIM" >/dev/null 2>/tmp/faregate-isolation.log &
PID=$!
OUT=$(mktemp -d)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true; rm -rf "$OUT"' EXIT
for _ in $(seq 50); do curl -sf "http://$GW/healthz" >/dev/null && break; sleep 0.1; done

day() { date -u -d "+$1 days" +%F; }
HOTELS="{\"arguments\":{\"city_code\":\"PAR\",\"check_in_date\":\"$(day 21)\",\"check_out_date\":\"$(day 23)\",\"adults\":2}}"
FLIGHTS="{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}"

load() { # tool body csv-file: fixed rate, per-request latencies as CSV
  hey -z "${DUR}s" -c "$WORKERS" -q $((RPS / WORKERS)) -m POST -T application/json -d "$2" \
    -o csv "http://$GW/v1/tools/$1/call" > "$3"
}
summary() { # label csv-file
  python3 - "$1" "$2" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[2])))[1:]
lat = sorted(float(r[0]) * 1000 for r in rows)
codes = {}
for r in rows:
    codes[r[6]] = codes.get(r[6], 0) + 1
p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
print(f"{sys.argv[1]:<34} n={len(lat):<6} p50={p(0.50):7.3f} ms  p99={p(0.99):7.3f} ms  max={lat[-1] if lat else 0:8.3f} ms  http={codes}")
PY
}
statuses() { # tool body: envelope statuses of 40 sequential calls
  for _ in $(seq 40); do
    curl -s -w '\n' "http://$GW/v1/tools/$1/call" -H 'content-type: application/json' -d "$2" \
      | sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p'
  done | sort | uniq -c | tr '\n' ' '
  echo
}

echo "== phase 1: flights healthy; ${RPS} rps to each tool for ${DUR}s"
load search_flights "$FLIGHTS" "$OUT/f1.csv" & F=$!
load search_hotels "$HOTELS" "$OUT/h1.csv"
wait $F
summary "search_hotels (flights healthy)" "$OUT/h1.csv"
summary "search_flights (healthy)" "$OUT/f1.csv"
echo "hotel envelopes: $(statuses search_hotels "$HOTELS")"

echo "== phase 2: flights at 15 s latency"
# Both providers of the flight chain (Duffel, then Amadeus) slow down.
for group in duffel_air_search amadeus_flights; do
  curl -sf -X PUT "http://$SIM/_sim/faults/$group" -H 'content-type: application/json' \
    -d '{"latency_ms": 15000}' >/dev/null
done
# Open the breaker: concurrent flight calls time out at the tool's 8 s timeout. Other
# arguments than the load's, so that these calls cannot be answered from the stale cache.
pids=()
for d in 40 41 42 43 44 45; do
  curl -s -o /dev/null "http://$GW/v1/tools/search_flights/call" \
    -d "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day $d)\"}}" & pids+=($!)
done
wait "${pids[@]}"
echo "flight envelopes once open: $(statuses search_flights "$FLIGHTS")"
load search_flights "$FLIGHTS" "$OUT/f2.csv" & F=$!
load search_hotels "$HOTELS" "$OUT/h2.csv"
wait $F
summary "search_hotels (flights at 15 s)" "$OUT/h2.csv"
summary "search_flights (breaker open)" "$OUT/f2.csv"
echo "hotel envelopes: $(statuses search_hotels "$HOTELS")"
curl -sf -X DELETE "http://$SIM/_sim/faults" >/dev/null
echo "flight upstream requests during the run: $(curl -s "http://$SIM/_sim/stats" | python3 -c 'import json,sys; g=json.load(sys.stdin)["groups"]; print(g["duffel_air_search"]["requests"], "Duffel,", g["amadeus_flights"]["requests"], "Amadeus")')"
