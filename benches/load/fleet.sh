#!/usr/bin/env bash
# A fleet on one PostgreSQL: `faregate serve` replicas sharing one database, in front of the
# provider simulator (crates/faregate-sim), compared with one replica or with fleet mode off.
#
# Usage: benches/load/fleet.sh [SCENARIO ...]      (default: outage latency propagation)
#   outage   a 20 s outage of the flight provider under the same total interactive load
#            (RATE calls/s, spread round-robin): provider requests from 3 replicas vs 1.
#   latency  healthy-call p50 (wrk, one connection, one replica of three): fleet mode on vs off
#            ([store] share_breakers), alternated ROUNDS times.
#   propagation  how long after a force on one replica (its answer) another replica shows it,
#            20 forces alternating open and auto, polled every millisecond.
#   backlog  seed 001 at fleet scale: JOBS background get_flight_status jobs submitted
#            round-robin to three replicas against Amadeus flight status allowing RPM
#            requests per minute: drain rate, 429s, jobs lost, provider calls per job.
# Environment: FAREGATE_BENCH_POSTGRES_URL (default: FAREGATE_TEST_POSTGRES_URL, else
# postgres://postgres@127.0.0.1:5432/test): a server where this script may create and drop
# databases named fg_bench_*; BIN, SIM_BIN: the binaries (default: built with --release);
# RATE (20), OUTAGE_SECS (20), WRK_SECS (10), ROUNDS (4), JOBS (240), RPM (120).
#
# Each run gets a fresh database (forced states and opens are kept in it, so a run must not
# inherit the previous one's), dropped at the end; every process started is stopped by pid.
set -euo pipefail
cd "$(dirname "$0")/../.."
PG=${FAREGATE_BENCH_POSTGRES_URL:-${FAREGATE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}}
RATE=${RATE:-20}
OUTAGE_SECS=${OUTAGE_SECS:-20}
WRK_SECS=${WRK_SECS:-10}
ROUNDS=${ROUNDS:-4}
JOBS=${JOBS:-240}
RPM=${RPM:-120}
SCENARIOS=("$@")
[[ ${#SCENARIOS[@]} -gt 0 ]] || SCENARIOS=(outage latency propagation)
if [[ -z "${BIN:-}" || -z "${SIM_BIN:-}" ]]; then
  cargo build --release --quiet --bin faregate --bin faregate-sim
  BIN=${BIN:-target/release/faregate}
  SIM_BIN=${SIM_BIN:-target/release/faregate-sim}
fi
DIR=$(mktemp -d)
SIM=127.0.0.1:18281
PIDS=()
DATABASES=()

stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
cleanup() {
  stop_all
  local db
  for db in "${DATABASES[@]}"; do psql -q "$PG" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT

wait_http() { # url [log]: up to 30 s for any answer (a loaded machine starts slowly)
  for _ in $(seq 300); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "no answer from $1" >&2
  [[ -n ${2:-} ]] && tail -20 "$2" >&2
  return 1
}

fresh_database() { # prints a URL of a new, empty database
  local name="fg_bench_$$_$RANDOM"
  psql -q "$PG" -c "CREATE DATABASE $name" >/dev/null
  DATABASES+=("$name")
  python3 - "$PG" "$name" <<'PY'
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + sys.argv[2], u.query, u.fragment)))
PY
}

# replica n store_url share_breakers: writes its config (Duffel alone serves flight search and
# Amadeus flight status, so one breaker's requests are counted; per-client limits off: the load is one client) and starts
# it on port 18290+n.
replica() {
  local n=$1 store=$2 share=$3 d="$DIR/replica$1"
  mkdir -p "$d"
  cp -r tools "$d/tools"
  sed -i -e 's|^providers = \["duffel", "amadeus"\]|providers = ["duffel"]|' "$d/tools/search_flights.toml"
  sed -i -e 's|^providers = \["amadeus", "flightaware"\]|providers = ["amadeus"]|' "$d/tools/get_flight_status.toml"
  sed -e "s|^listen = .*|listen = \"127.0.0.1:$((18290 + n))\"|" \
      -e "s|^tools_dir = .*|tools_dir = \"$d/tools\"|" \
      -e "s|^prompts_dir = .*|prompts_dir = \"$PWD/prompts\"|" \
      -e "s|^url = \"sqlite://faregate.db\"|url = \"$store\"|" \
      -e "s|^share_breakers = .*|share_breakers = $share|" \
      -e "s|http://127.0.0.1:8081|http://$SIM|" \
      -e 's|^client_rate = .*|client_rate = "off"|' \
      -e 's|^client_max_concurrent_calls = .*|client_max_concurrent_calls = 0|' \
      faregate.toml > "$d/faregate.toml"
  RUST_LOG=warn "$BIN" serve --config "$d/faregate.toml" 2>"$d/gateway.log" &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$((18290 + n))/healthz" "$d/gateway.log"
}

start_sim() {
  "$SIM_BIN" --listen "$SIM" >"$DIR/sim.log" 2>&1 &
  PIDS+=($!)
  wait_http "http://$SIM/_sim/stats"
}

flight_requests() { # requests the flight search provider has received
  curl -sf "http://$SIM/_sim/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["groups"]["duffel_air_search"]["requests"])'
}

fault() { # json
  curl -sf -X PUT "http://$SIM/_sim/faults/duffel_air_search" -H 'content-type: application/json' -d "$1" >/dev/null
}

BODY="$DIR/flights.json"
echo "{\"arguments\":{\"origin\":\"LHR\",\"destination\":\"JFK\",\"departure_date\":\"$(date -u -d '+30 days' +%F)\"}}" > "$BODY"

urls() { # count: the call URLs of replicas 0..count-1
  local i
  for i in $(seq 0 $(($1 - 1))); do echo "http://127.0.0.1:$((18290 + i))/v1/tools/search_flights/call"; done
}

# outage_run count share: provider requests during the outage with `count` replicas, fleet mode
# on (`true`) or off.
outage_run() {
  local count=$1 share=$2 store i
  start_sim
  store=$(fresh_database)
  for i in $(seq 0 $((count - 1))); do replica "$i" "$store" "$share"; done
  # Warm up: connections and the slow-call threshold see healthy traffic first.
  python3 benches/load/fleet_load.py "$RATE" 3 "$BODY" $(urls "$count") >/dev/null
  fault '{"outage": true}'
  local before after load
  before=$(flight_requests)
  load=$(python3 benches/load/fleet_load.py "$RATE" "$OUTAGE_SECS" "$BODY" $(urls "$count"))
  after=$(flight_requests)
  stop_all
  echo "replicas=$count share_breakers=$share outage_requests=$((after - before)) $load"
}

scenario_outage() {
  echo "== outage: ${OUTAGE_SECS}s outage of the flight provider at $RATE calls/s in total"
  local one three alone
  one=$(outage_run 1 true); echo "$one"
  three=$(outage_run 3 true); echo "$three"
  alone=$(outage_run 3 false); echo "$alone"
  python3 - "$one" "$three" "$alone" <<'PY'
import sys
def field(line, key):
    return int(dict(kv.split("=") for kv in line.split())[key])
one, three, alone = (field(l, "outage_requests") for l in sys.argv[1:4])
print(f"outage: provider requests 3 replicas / 1 replica = {three} / {one} = {three / max(one, 1):.2f}x (target <= 1.5x)")
print(f"outage: the same 3 replicas with fleet mode off = {alone} / {one} = {alone / max(one, 1):.2f}x")
PY
}

wrk_p50_ms() { # url: p50 latency in ms of one connection in a closed loop (service time, no queueing)
  local lua="$DIR/post.lua"
  python3 - "$BODY" > "$lua" <<'PY'
import json, sys
print("wrk.method = 'POST'")
print("wrk.headers['Content-Type'] = 'application/json'")
print("wrk.body = " + json.dumps(open(sys.argv[1]).read()))
PY
  wrk -t1 -c1 -d"${WRK_SECS}s" --latency -s "$lua" "$1" > "$DIR/wrk.txt" 2>&1
  python3 - "$DIR/wrk.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
if not m:
    sys.exit("no p50 in wrk output:\n" + text)
value, unit = float(m.group(1)), m.group(2)
print(f"{value / 1000 if unit == 'us' else value * 1000 if unit == 's' else value:.3f}")
PY
}

# latency_run share: p50 of healthy calls on replica 0 of three on one database.
latency_run() {
  local share=$1 store i
  start_sim
  store=$(fresh_database)
  for i in 0 1 2; do replica "$i" "$store" "$share"; done
  python3 benches/load/fleet_load.py 50 2 "$BODY" $(urls 3) >/dev/null
  wrk_p50_ms "$(urls 1)"
  stop_all
}

scenario_latency() {
  echo "== latency: healthy-call p50 on one of three replicas, wrk ${WRK_SECS}s, fleet mode on vs off"
  local on=() off=() r
  for r in $(seq "$ROUNDS"); do
    # Alternate which goes first, so that neither always follows the other's teardown.
    if (( r % 2 )); then
      on+=("$(latency_run true)"); off+=("$(latency_run false)")
    else
      off+=("$(latency_run false)"); on+=("$(latency_run true)")
    fi
    echo "round $r: p50_on_ms=${on[-1]} p50_off_ms=${off[-1]}"
  done
  python3 - "${on[*]}" "${off[*]}" <<'PY'
import statistics, sys
on = [float(x) for x in sys.argv[1].split()]
off = [float(x) for x in sys.argv[2].split()]
a, b = statistics.median(on), statistics.median(off)
print(f"latency: p50 fleet on / off = {a:.3f} / {b:.3f} ms, difference {a - b:+.3f} ms, ratio {a / b:.3f} (target: within 0.1 ms)")
PY
}

scenario_propagation() {
  echo "== propagation: a force on replica 0 until replica 2 shows it (20 forces)"
  local store i
  start_sim
  store=$(fresh_database)
  for i in 0 1 2; do replica "$i" "$store" true; done
  python3 - <<'PY'
import json, statistics, time, urllib.request
base = ["http://127.0.0.1:%d" % (18290 + i) for i in range(3)]
key = "search_hotels.duffel"
def state(url):
    with urllib.request.urlopen(f"{url}/v1/breakers/{key}") as res:
        return json.load(res)["state"]
delays = []
for n in range(20):
    mode, shown = ("open", "forced_open") if n % 2 == 0 else ("auto", "closed")
    req = urllib.request.Request(f"{base[0]}/v1/breakers/{key}/force", method="POST",
                                 data=json.dumps({"state": mode}).encode(),
                                 headers={"content-type": "application/json"})
    urllib.request.urlopen(req).read()
    start = time.monotonic()
    while state(base[2]) != shown:
        if time.monotonic() - start > 5:
            raise SystemExit(f"replica 2 did not show {shown} within 5 s")
        time.sleep(0.001)
    delays.append((time.monotonic() - start) * 1000)
delays.sort()
print(f"propagation: p50 {statistics.median(delays):.1f} ms, max {delays[-1]:.1f} ms over {len(delays)} forces (target: about 100 ms)")
PY
  stop_all
}

# backlog_run: seed 001 at fleet scale. JOBS get_flight_status background jobs, submitted
# round-robin to three replicas on one database, against Amadeus flight status allowing RPM
# requests per fixed minute (429 with Retry-After beyond it); waits until every job has ended.
backlog_run() {
  local store i n args day
  start_sim
  curl -sf -X PUT "http://$SIM/_sim/faults/amadeus_status" -H 'content-type: application/json' \
    -d "{\"requests_per_minute\": $RPM}" >/dev/null
  store=$(fresh_database)
  for i in 0 1 2; do replica "$i" "$store" true; done
  day=$(date -u -d '+3 days' +%F)
  local start end
  start=$(date +%s.%N)
  for n in $(seq "$JOBS"); do
    i=$((n % 3))
    args="{\"carrier_code\":\"BA\",\"flight_number\":\"$((100 + n))\",\"departure_date\":\"$day\"}"
    curl -sf "http://127.0.0.1:$((18290 + i))/v1/tools/get_flight_status/call" \
      -H 'content-type: application/json' -d "{\"arguments\":$args,\"mode\":\"background\"}" >/dev/null
  done
  while :; do
    left=$(curl -sf "http://127.0.0.1:18290/v1/jobs?tool=get_flight_status&limit=1000" \
      | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"]; print(sum(1 for x in j if x["status"] not in ("succeeded","dead")))')
    [ "$left" = 0 ] && break
    sleep 1
  done
  end=$(date +%s.%N)
  python3 - "$start" "$end" "$RPM" "$JOBS" "http://127.0.0.1:18290" "http://$SIM" <<'PY'
import json, sys, urllib.request
start, end, rpm, jobs, gw, sim = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
get = lambda u: json.load(urllib.request.urlopen(u))
listed = get(f"{gw}/v1/jobs?tool=get_flight_status&limit=1000")["jobs"]
ok = sum(1 for j in listed if j["status"] == "succeeded")
dead = sum(1 for j in listed if j["status"] == "dead")
stats = get(f"{sim}/_sim/stats")["groups"]["amadeus_status"]
statuses = {int(k): v for k, v in stats["statuses"].items()}
calls, good, limited = stats["requests"], statuses.get(200, 0), statuses.get(429, 0)
secs = end - start
allowed = rpm / 60.0
print(f"| jobs | {jobs} submitted to 3 replicas, {ok} succeeded, {dead} dead, {jobs - len(listed)} lost |")
print(f"| time to drain | {secs:.1f} s |")
print(f"| drain rate | {ok / secs:.3f} jobs/s vs allowed {allowed:.3f}/s = {100 * ok / secs / allowed:.0f} % (target >= 90 %) |")
print(f"| provider answers 429 | {limited} of {calls} = {100 * limited / max(calls, 1):.2f} % (target < 1 %) |")
print(f"| provider calls answered 200 | {good} for {ok} succeeded jobs ({'each exactly once' if good == ok == jobs else 'NOT once each'}) |")
PY
  stop_all
}

scenario_backlog() {
  echo "== backlog: $JOBS background jobs over 3 replicas against $RPM requests per minute"
  backlog_run
}

echo "fleet bench: $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
for s in "${SCENARIOS[@]}"; do
  "scenario_$s"
done
