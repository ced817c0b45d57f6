#!/usr/bin/env bash
# Instructions per call, counted by callgrind: repeatable whatever else the machine runs, so a
# before/after comparison holds on a shared, busy machine where wall-clock load figures swing
# by a factor of two between runs.
#
# Usage: benches/load/profile.sh [CALLS]      (default 300 calls per path)
#   healthy   search_flights through faregate to a static nginx upstream (the captured 62 KB
#             Duffel offers body), answered `ok`
#   fallback  search_flights with both flight breakers forced open, answered from the stale cache
#   floor     the same request to benches/load/floor.rs, a bare axum handler answering the
#             fallback's bytes: the least any HTTP JSON answer costs here
# Each process runs under `valgrind --tool=callgrind`; after 50 warm-up calls its counters are
# zeroed, CALLS sequential calls are made (oha -c 1), and the counters are dumped. The figure is
# the dumped total divided by CALLS (everything the process executed: hyper, tokio, the
# gateway, its background tasks), and, beside it, what ran inside the connection's task alone
# (the call's own cost without the store pollers; for a healthy call since coalescing the
# provider call runs on a task of its own, so only the fallback's figure compares across
# versions). Needs valgrind, nginx and oha (see run-all.sh). Knobs: BIN,
# EXAMPLES (as run-all.sh), SKIP_BUILD=1, PROFILE_OUT=dir (keeps the callgrind files there,
# for callgrind_annotate), PROFILE_CLIENTS=N (default 1: no client keys, one client; N > 1
# gives the gateways N client keys and calls with the first, so the shares of several clients
# apply: each tool's bulkhead share and each provider's window share, asked on every attempt).
set -euo pipefail
cd "$(dirname "$0")/../.."
CALLS=${1:-300}
DIR=$(mktemp -d /tmp/faregate-profile.XXXXXX)
chmod 755 "$DIR"
# shellcheck source=benches/load/lib.sh
source benches/load/lib.sh
trap 'stop_all; rm -rf "$DIR"' EXIT
for tool in valgrind callgrind_control oha nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is required (see the header of $0)"; exit 1; }
done
if [[ -z ${SKIP_BUILD:-} ]]; then
  cargo build --release --quiet --bin faregate --example floor
fi
export WAIT_SECS=120   # start-up under valgrind is slow
CLIENTS=${PROFILE_CLIENTS:-1}
if (( CLIENTS > 1 )); then
  keys=$(seq -f 'profile-client-%g' 1 "$CLIENTS" | paste -sd,)
  export FAREGATE_CLIENT_KEYS=$keys
  export AUTH_HEADER="authorization: Bearer profile-client-1"
fi
CG="valgrind --tool=callgrind --callgrind-out-file=$DIR/cg.%p.out"

# count pid url body name: instructions per call of `url` in process `pid`
count() {
  oha --no-tui -n 50 -c 1 -m POST -T application/json ${AUTH_HEADER:+-H "$AUTH_HEADER"} -D "$3" "$2" >/dev/null
  callgrind_control -z "$1" >/dev/null 2>&1
  oha --no-tui -n "$CALLS" -c 1 -m POST -T application/json ${AUTH_HEADER:+-H "$AUTH_HEADER"} -D "$3" "$2" >/dev/null
  callgrind_control -d "$1" >/dev/null 2>&1
  local out
  out=$(ls -t "$DIR"/cg."$1".out.* | head -1)
  [[ -n ${PROFILE_OUT:-} ]] && mkdir -p "$PROFILE_OUT" && cp "$out" "$PROFILE_OUT/$4.callgrind"
  # Two figures: everything the process executed, and what ran inside the connection's task
  # (hyper, the edge, the handler, the call): the call's own cost, without the pollers that run
  # on their own timers whatever the calls do (the job queue, watches, the fleet's refresh),
  # whose share per call grows with how slowly valgrind happens to run the calls.
  local conn
  conn=$(callgrind_annotate --inclusive=yes "$out" 2>/dev/null \
    | grep -E '^ *[0-9,]+ .*server::connection::\{\{closure\}\}' | head -1 | awk '{gsub(",", "", $1); print $1}')
  python3 - "$out" "$CALLS" "${conn:-0}" <<'PY'
import sys
total = next(int(l.split()[1]) for l in open(sys.argv[1]) if l.startswith(("summary:", "totals:")))
conn = int(sys.argv[3])
print(round(total / int(sys.argv[2])), round(conn / int(sys.argv[2])) if conn else "-")
PY
}

UP=127.0.0.1:18451 PX=127.0.0.1:18452 GW=127.0.0.1:18453 SIM=127.0.0.1:18454 GF=127.0.0.1:18455 FL=127.0.0.1:18456
start_nginx "$DIR/nginx" "$UP" "$PX"
echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}" > "$DIR/flights.json"
URL=/v1/tools/search_flights/call

write_config "$DIR/healthy" "$GW" "http://$UP" "http://$UP"
WRAP=$CG start_gateway gw-healthy "$DIR/healthy"
healthy=$(count "$GW_PID" "http://$GW$URL" "$DIR/flights.json" healthy)
stop_pid "$GW_PID"

spawn sim "$BIN" sim --listen "$SIM"
wait_http "http://$SIM/_sim/stats"
write_config "$DIR/fallback" "$GF" "http://$SIM" "http://$SIM"
WRAP=$CG start_gateway gw-fallback "$DIR/fallback"
fast_fail "$GF" "$DIR/flights.json" "$DIR/fallback.json"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); assert e["status"]=="stale", e["status"]' "$DIR/fallback.json"
fallback=$(count "$GW_PID" "http://$GF$URL" "$DIR/flights.json" fallback)
stop_pid "$GW_PID"

spawn floor $CG "$EXAMPLES/floor" "$FL" "$DIR/fallback.json"
FL_PID=$LAST_PID
wait_http "http://$FL/x" POST
floor=$(count "$FL_PID" "http://$FL$URL" "$DIR/flights.json" floor)

ratio() { python3 -c "import sys; print(f'{int(sys.argv[1])/int(sys.argv[2]):.2f}')" "$1" "$2"; }
read -r healthy healthy_conn <<<"$healthy"
read -r fallback fallback_conn <<<"$fallback"
read -r floor _ <<<"$floor"
echo "# instructions per call (callgrind, $CALLS sequential calls each, $CLIENTS client key(s), $(date -u '+%F %H:%M UTC'), $BIN)"
echo "| path | instructions per call | ratio to the floor | in the connection's task |"
echo "|---|---|---|---|"
echo "| healthy search_flights (62 KB Duffel answer) | $healthy | $(ratio "$healthy" "$floor") | $healthy_conn |"
echo "| fallback, breakers open (stale answer) | $fallback | $(ratio "$fallback" "$floor") | $fallback_conn |"
echo "| floor (bare axum handler, same bytes) | $floor | 1.00 | - |"
