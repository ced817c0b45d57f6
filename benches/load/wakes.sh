#!/usr/bin/env bash
# Who wakes whom: the futex wake-ups the gateway's tokio workers make during a few calls at a
# light rate, counted by where in the code they come from. On a lightly loaded gateway a call
# that wakes the other worker moves to the other core (BENCHMARKS.md, "One worker thread per
# replica" and "A connection that wakes itself"); this names what does the waking.
#
# Usage: benches/load/wakes.sh [CALLS]      (default 20)
# Knobs: BIN (a release faregate, else it builds one), WAKES_PATH (healthy, the default: the
# 62 KB search answered `ok`; or fallback: both flight breakers forced open), SKIP_BUILD=1,
# WAKES_KEEP=file (keeps `perf script`'s text there, to read the stacks whole).
#
# Setup as light.sh: a static nginx upstream answering the captured Duffel offers body, the
# gateway pointed at it. 50 warm-up calls, then `perf record -e syscalls:sys_enter_futex
# --call-graph dwarf` on the gateway while CALLS calls are made 100 ms apart on one kept-alive
# connection. Each FUTEX_WAKE a worker made is put in the first row whose frames its stack
# contains; the count per call is what one call costs (the store's pollers wake on their own
# timers, so their rows grow with the run's length, not the calls). The release profile keeps
# line tables, so inlined frames have names. Needs perf with tracepoints (perf_event_paranoid
# at most 1, or root), nginx, curl and python3. Ports 18496-18498 on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
CALLS=${1:-20}
WAKES_PATH=${WAKES_PATH:-healthy}
DIR=$(mktemp -d /tmp/faregate-wakes.XXXXXX)
chmod 755 "$DIR"
# shellcheck source=benches/load/lib.sh
source benches/load/lib.sh
trap 'stop_all; rm -rf "$DIR"' EXIT
for tool in perf nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is required (see the header)"; exit 1; }
done
if [[ -z ${SKIP_BUILD:-} ]]; then
  cargo build --release --quiet --bin faregate
fi

UP=127.0.0.1:18496 PX=127.0.0.1:18497 GW=127.0.0.1:18498
start_nginx "$DIR/nginx" "$UP" "$PX"
echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}" > "$DIR/flights.json"
write_config "$DIR/gw" "$GW" "http://$UP" "http://$UP"
start_gateway gw "$DIR/gw"
case $WAKES_PATH in
  healthy) ;;
  fallback) fast_fail "$GW" "$DIR/flights.json" "$DIR/fallback.json" ;;
  *) echo "WAKES_PATH is healthy or fallback, not $WAKES_PATH"; exit 1 ;;
esac

# drive.py host:port body calls gap: calls on one kept-alive connection, `gap` seconds apart.
cat > "$DIR/drive.py" <<'PY'
import http.client, sys, time
host, port = sys.argv[1].split(":")
body = open(sys.argv[2], "rb").read()
calls, gap = int(sys.argv[3]), float(sys.argv[4])
connection = http.client.HTTPConnection(host, int(port))
for _ in range(calls):
    connection.request("POST", "/v1/tools/search_flights/call", body, {"content-type": "application/json"})
    answer = connection.getresponse()
    answer.read()
    if answer.status != 200:
        sys.exit(f"the gateway answered {answer.status}")
    time.sleep(gap)
PY
python3 "$DIR/drive.py" "$GW" "$DIR/flights.json" 50 0
perf record -q -e syscalls:sys_enter_futex --call-graph dwarf,16384 -p "$GW_PID" \
  -o "$DIR/perf.data" 2>/dev/null &
PERF_PID=$!
sleep 1
python3 "$DIR/drive.py" "$GW" "$DIR/flights.json" "$CALLS" 0.1
sleep 0.5
kill -INT "$PERF_PID"
wait "$PERF_PID" || true
perf script -i "$DIR/perf.data" 2>/dev/null > "$DIR/perf.txt"
[[ -n ${WAKES_KEEP:-} ]] && cp "$DIR/perf.txt" "$WAKES_KEEP"

echo "# futex wake-ups by the gateway's tokio workers, $CALLS $WAKES_PATH calls at 10/s, $(date -u '+%F %H:%M UTC'), $BIN"
python3 - "$DIR/perf.txt" "$CALLS" <<'PY'
import sys
path, calls = sys.argv[1], int(sys.argv[2])
# (row, frames any of which puts a wake in it), first match wins: the specific before the general.
ROWS = [
    ("sqlx: the store's pollers (SQLite channel, release ping)", ("sqlx", "flume")),
    ("tokio: a worker that found work wakes the next (search relay)", ("transition_worker_from_searching",)),
    ("coalescing: the shared call's task publishes to its callers", ("coalesce",)),
    ("tokio: a task woken during its own poll, re-queued (yield)", ("harness::poll_future", "raw::poll")),
    ("tokio: a task woken from another, scheduled", ("wake_by_val", "wake_by_ref")),
]
counts = {row: 0 for row, _ in ROWS}
other = 0
for record in open(path).read().split("\n\n"):
    lines = record.strip().split("\n")
    if not lines or "faregate-worker" not in lines[0] or "op: 0x00000081" not in lines[0]:
        continue  # FUTEX_WAKE_PRIVATE by a worker only
    stack = "\n".join(lines[1:])
    # A yield re-queues the task after its poll: the scheduler is reached from the task's
    # poll itself (raw::poll), not from a waker inside it.
    for row, frames in ROWS:
        if row.startswith("tokio: a task woken during"):
            head = stack.split("schedule_task", 1)[-1][:2000]
            if "schedule_task" in stack and "raw::poll" in head and "wake_by" not in head:
                counts[row] += 1
                break
            continue
        if any(frame in stack for frame in frames):
            counts[row] += 1
            break
    else:
        other += 1
print("| where the wake-up comes from | wake-ups | per call |")
print("|---|---|---|")
for row, _ in ROWS:
    print(f"| {row} | {counts[row]} | {counts[row] / calls:.2f} |")
print(f"| other | {other} | {other / calls:.2f} |")
PY
