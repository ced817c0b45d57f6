#!/usr/bin/env bash
# The healthy call at fixed rates: what faregate adds to the upstream's own p50, and the CPU
# and context switches it spends per request, at a light rate (where issue 18's added-p50
# target is judged) and a heavier one. At a light rate every request finds the process idle
# and its caches cold, so a request costs several times the CPU it costs under load; this
# script shows how much, and (with BASE_BIN) whether a change moved it.
#
# Usage: benches/load/light.sh [ROUNDS]      (default 3)
# Knobs: BIN (a release faregate, else it builds one), BASE_BIN (another faregate to compare,
# alternated with BIN round by round), LIGHT_RATES ("200 3000": requests per second),
# LIGHT_SECS (8), LIGHT_PATH (healthy, the default; or fallback: both flight breakers forced
# open after the first call, so every call is the fast-fail answer), SKIP_BUILD=1.
#
# Setup as `run-all.sh overhead`: a static nginx upstream answering the captured 62 KB Duffel
# offers body, each gateway pointed at it, search_flights with one body (sequential calls at
# these rates rarely overlap, so nearly every call is a provider call). Per round and rate:
# nginx straight to the upstream, then each gateway, with `oha -c 8 --latency-correction`.
# CPU is each process's on-CPU time from /proc/PID/task/*/schedstat (nanoseconds, so a light
# run's few hundred milliseconds are exact), switches from /proc/PID/task/*/status.
# Ports 18480-18489 on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
LIGHT_RATES=${LIGHT_RATES:-200 3000}
LIGHT_SECS=${LIGHT_SECS:-8}
LIGHT_PATH=${LIGHT_PATH:-healthy}
[[ $LIGHT_PATH == healthy || $LIGHT_PATH == fallback ]] ||
  { echo "LIGHT_PATH is healthy or fallback, not $LIGHT_PATH"; exit 1; }
DIR=$(mktemp -d /tmp/faregate-light.XXXXXX)
chmod 755 "$DIR"
# shellcheck source=benches/load/lib.sh
source benches/load/lib.sh
trap 'stop_all; rm -rf "$DIR"' EXIT
for tool in oha nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is required (see run-all.sh's header)"; exit 1; }
done
if [[ -z ${SKIP_BUILD:-} ]]; then
  cargo build --release --quiet --bin faregate
fi

# sample pid: "on-CPU ns, context switches" of the process, all its threads.
sample() {
  local ns switches
  ns=$(on_cpu_ns "$1")
  switches=$(cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/ctxt_switches/ {s += $2} END {print s + 0}')
  echo "$ns $switches"
}

# measure label pid url body rate: one fixed-rate run; one key=value line.
measure() {
  local before after
  before=$(sample "$2")
  oha --no-tui --output-format json -z "${LIGHT_SECS}s" -q "$5" -c 8 --latency-correction \
    -m POST -T application/json -D "$4" "$3" > "$DIR/oha.json" 2>/dev/null || true
  after=$(sample "$2")
  python3 - "$1" "$5" "$before" "$after" "$DIR/oha.json" <<'PY'
import json, sys
label, rate, before, after, path = sys.argv[1:]
b = [int(x) for x in before.split()]
a = [int(x) for x in after.split()]
o = json.load(open(path))
n = sum(o["statusCodeDistribution"].values())
ok = o["statusCodeDistribution"].get("200", 0)
p = o["latencyPercentiles"]
print(
    f"label={label} rate={rate} n={n} ok={ok} p50_ms={p['p50'] * 1e3:.3f} p99_ms={p['p99'] * 1e3:.3f}"
    f" cpu_us={(a[0] - b[0]) / n / 1e3:.0f} switches={(a[1] - b[1]) / n:.2f}"
)
PY
}

UP=127.0.0.1:18480 PX=127.0.0.1:18481 GW=127.0.0.1:18482 GB=127.0.0.1:18483
start_nginx "$DIR/nginx" "$UP" "$PX"
NGINX_PID=$LAST_PID
q="air/offer_requests?return_offers=true&supplier_timeout=7000"
echo "{\"data\":{\"slices\":[{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}],\"passengers\":[{\"type\":\"adult\"}]}}" > "$DIR/duffel-req.json"
echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}" > "$DIR/flights.json"

write_config "$DIR/gw" "$GW" "http://$UP" "http://$UP"
start_gateway gw "$DIR/gw"
GW_MAIN=$GW_PID
targets=("nginx" "faregate")
if [[ -n ${BASE_BIN:-} ]]; then
  write_config "$DIR/base" "$GB" "http://$UP" "http://$UP"
  BIN=$BASE_BIN start_gateway base "$DIR/base"
  GW_BASE=$GW_PID
  targets+=("base")
fi
for gw in "$GW" ${BASE_BIN:+"$GB"}; do
  status=$(curl -s "http://$gw/v1/tools/search_flights/call" -H 'content-type: application/json' \
    -d @"$DIR/flights.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
  [[ $status == ok ]] || { echo "the gateway on $gw answers $status, not ok"; exit 1; }
  if [[ $LIGHT_PATH == fallback ]]; then
    fast_fail "$gw" "$DIR/flights.json" "$DIR/fallback.json"
  fi
done

URL=/v1/tools/search_flights/call
lines=()
for r in $(seq "$ROUNDS"); do
  for rate in $LIGHT_RATES; do
    for t in "${targets[@]}"; do
      case $t in
        # nginx's own CPU is its master's only (the workers are children): p50 alone is read.
        nginx) lines+=("round=$r $(measure nginx "$NGINX_PID" "http://$UP/$q" "$DIR/duffel-req.json" "$rate")") ;;
        faregate) lines+=("round=$r $(measure faregate "$GW_MAIN" "http://$GW$URL" "$DIR/flights.json" "$rate")") ;;
        base) lines+=("round=$r $(measure base "$GW_BASE" "http://$GB$URL" "$DIR/flights.json" "$rate")") ;;
      esac
    done
  done
done
echo "# the $LIGHT_PATH call at fixed rates, oha -c 8 ${LIGHT_SECS}s each, $(date -u '+%F %H:%M UTC'), load average $(busy)"
echo "| round | rate/s | target | p50 ms | added to nginx's p50 | p99 ms | on-CPU µs per request | switches per request |"
echo "|---|---|---|---|---|---|---|---|"
python3 - "${lines[@]}" <<'PY'
import sys
rows = [dict(kv.split("=", 1) for kv in line.split()) for line in sys.argv[1:]]
direct = {(r["round"], r["rate"]): float(r["p50_ms"]) for r in rows if r["label"] == "nginx"}
for r in rows:
    gw = r["label"] != "nginx"
    added = f"{float(r['p50_ms']) - direct[(r['round'], r['rate'])]:.3f}" if gw else "-"
    cpu = r["cpu_us"] if gw else "-"
    switches = r["switches"] if gw else "-"
    bad = "" if r["ok"] == r["n"] else f" ({int(r['n']) - int(r['ok'])} not 200)"
    print(f"| {r['round']} | {r['rate']} | {r['label']}{bad} | {r['p50_ms']} | {added} | {r['p99_ms']} | {cpu} | {switches} |")
PY
