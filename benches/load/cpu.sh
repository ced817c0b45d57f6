#!/usr/bin/env bash
# Where a fast-fail request's time goes: each process's user and system CPU, and its context
# switches, per request, while wrk drives it closed-loop. The fallback answer (both flight
# breakers forced open, as `run-all.sh floor` sets it up) against the bare axum handler
# (benches/load/floor.rs) answering the same bytes, and optionally a second faregate build's
# fallback (BASE_BIN), the three alternated round by round so that the machine's swings
# (±30 % here between minutes) fall on all of them alike.
#
# Usage: benches/load/cpu.sh [ROUNDS]      (default 3)
# Knobs: BIN (a release faregate, else it builds one), EXAMPLES (where `floor` is), BASE_BIN
# (another faregate to compare, e.g. a checkout of main's), WRK_SECS (6), WRK_THREADS (2),
# WRK_CONNS (32), SKIP_BUILD=1.
#
# Reading the figures: throughput is what the issue's ratio is made of; user CPU per request
# is the process's own code (instructions × how fast they run); system CPU per request is the
# kernel's work for its sockets and wake-ups; context switches per request show how often a
# worker thread had to be woken or was preempted. CPU comes from /proc/PID/stat (clock ticks,
# 10 ms; a 6 s run at 30 k requests/s is hundreds of ticks) and the switches from
# /proc/PID/task/*/status, read before and after each run. Ports 18470-18479 on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
WRK_SECS=${WRK_SECS:-6}
WRK_THREADS=${WRK_THREADS:-2}
WRK_CONNS=${WRK_CONNS:-32}
DIR=$(mktemp -d /tmp/faregate-cpu.XXXXXX)
REPORT=$PWD/benches/load/report.py
# shellcheck source=benches/load/lib.sh
source benches/load/lib.sh
trap 'stop_all; rm -rf "$DIR"' EXIT
for tool in wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is required (see run-all.sh's header)"; exit 1; }
done
if [[ -z ${BIN:-} ]]; then
  [[ -n ${SKIP_BUILD:-} ]] || cargo build --release --quiet --bin faregate --example floor
  BIN=target/release/faregate
  EXAMPLES=target/release/examples
fi
EXAMPLES=${EXAMPLES:-target/release/examples}

# sample pid: "utime stime voluntary nonvoluntary" of the process, all its threads.
sample() {
  local stat
  stat=$(sed 's/^.*) //' "/proc/$1/stat")
  local ticks
  ticks=$(awk '{print $12, $13}' <<<"$stat")
  local switches
  switches=$(cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2} END {print v + 0, n + 0}')
  echo "$ticks $switches"
}

# measure label pid url: one wrk run, then one key=value line with the per-request figures.
measure() {
  local before after run
  before=$(sample "$2")
  run=$(wrk_post "$1" "$3" "$DIR/flights.json")
  after=$(sample "$2")
  python3 - "$1" "$(getconf CLK_TCK)" "$before" "$after" "$run" "$WRK_SECS" <<'PY'
import sys
label, hz, before, after, run, secs = sys.argv[1:]
b = [int(x) for x in before.split()]
a = [int(x) for x in after.split()]
fields = dict(kv.split("=", 1) for kv in run.split() if "=" in kv)
rps = float(fields["rps"])
requests = rps * float(secs)
us = 1e6 / int(hz) / requests
print(
    f"label={label} rps={rps:.0f} user_us={(a[0] - b[0]) * us:.1f} sys_us={(a[1] - b[1]) * us:.1f}"
    f" vol_cs={(a[2] - b[2]) / requests:.2f} invol_cs={(a[3] - b[3]) / requests:.2f}"
)
PY
}

SIM=127.0.0.1:18470 GW=127.0.0.1:18471 FL=127.0.0.1:18472 GB=127.0.0.1:18473
spawn sim "$BIN" sim --listen "$SIM"
wait_http "http://$SIM/_sim/stats"
echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}" > "$DIR/flights.json"

# open_gateway name dir listen: a gateway answering the fallback (stale) for search_flights.
open_gateway() {
  write_config "$DIR/$1" "$3" "http://$SIM" "http://$SIM"
  start_gateway "$1" "$DIR/$1"
  fast_fail "$3" "$DIR/flights.json" "$DIR/$1.json"
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); assert e["status"]=="stale", e["status"]' "$DIR/$1.json"
}

open_gateway gw "$DIR/gw" "$GW"
GW_MAIN=$GW_PID
targets=("floor" "fallback")
if [[ -n ${BASE_BIN:-} ]]; then
  BIN=$BASE_BIN open_gateway base "$DIR/base" "$GB"
  GW_BASE=$GW_PID
  targets+=("base")
fi
spawn floor "$EXAMPLES/floor" "$FL" "$DIR/gw.json"
FL_PID=$LAST_PID
wait_http "http://$FL/x" POST

URL=/v1/tools/search_flights/call
lines=()
for r in $(seq "$ROUNDS"); do
  for t in "${targets[@]}"; do
    case $t in
      floor) lines+=("round=$r $(measure "floor-$r" "$FL_PID" "http://$FL$URL")") ;;
      fallback) lines+=("round=$r $(measure "fallback-$r" "$GW_MAIN" "http://$GW$URL")") ;;
      base) lines+=("round=$r $(measure "base-$r" "$GW_BASE" "http://$GB$URL")") ;;
    esac
  done
done
printf '%s\n' "${lines[@]}"
echo
echo "# per request, wrk -t$WRK_THREADS -c$WRK_CONNS -d${WRK_SECS}s, $(date -u '+%F %H:%M UTC'), load average $(busy)"
echo "| round | target | rps | user µs | system µs | voluntary switches | involuntary switches | rps / floor's |"
echo "|---|---|---|---|---|---|---|---|"
python3 - "${lines[@]}" <<'PY'
import sys
rows = [dict(kv.split("=", 1) for kv in line.split()) for line in sys.argv[1:]]
floor = {r["round"]: float(r["rps"]) for r in rows if r["label"].startswith("floor")}
for r in rows:
    name = r["label"].rsplit("-", 1)[0]
    ratio = float(r["rps"]) / floor[r["round"]]
    print(f"| {r['round']} | {name} | {r['rps']} | {r['user_us']} | {r['sys_us']} | {r['vol_cs']} | {r['invol_cs']} | {ratio:.2f} |")
PY
