#!/usr/bin/env bash
# HTTP/2 inbound at scale: CALLS (10,000) concurrent tool calls on CONNS (10) connections.
#
# Usage: benches/load/h2.sh        (BIN=a release faregate, else it builds one; knobs below)
# Starts `faregate sim` with Duffel's flight search answering after LATENCY_MS (1000), and
# `faregate serve` with the per-client limits off and search_flights served by Duffel alone, its
# bulkhead raised above CALLS; `[server] max_concurrent_streams` keeps its shipped 1000. Then
# h2load (nghttp2-client) with prior knowledge sends CALLS search_flights calls on CONNS
# connections, STREAMS (1000) in flight on each, so up to CONNS × STREAMS calls are held at
# once while the provider takes its second. Reports h2load's completed calls, errors and time,
# the calls the gateway answered `ok` (its own counter), the provider calls the simulator saw
# (h2load sends one body, so identical searches in flight at once share one provider call), and
# the gateway's RSS idle and at its peak (VmHWM). Ports 18480-18481 on 127.0.0.1; stops
# everything it started.
set -euo pipefail
cd "$(dirname "$0")/../.."
CALLS=${CALLS:-10000}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-1000}
LATENCY_MS=${LATENCY_MS:-1000}
SIM=127.0.0.1:18481
GW=127.0.0.1:18480
command -v h2load >/dev/null || { echo "h2load is needed (apt-get install nghttp2-client)" >&2; exit 1; }
if [[ -z "${BIN:-}" ]]; then
  nice cargo build --release --quiet --bin faregate
  BIN=target/release/faregate
fi
DIR=$(mktemp -d)
# shellcheck source=benches/load/lib.sh
source benches/load/lib.sh
trap 'stop_all; rm -rf "$DIR"' EXIT

spawn sim "$BIN" sim --listen "$SIM"
wait_http "http://$SIM/_sim/stats"
fault "$SIM" duffel_air_search "{\"latency_ms\": $LATENCY_MS}"
write_config "$DIR/gw" "$GW" "http://$SIM" "http://$SIM"
tool_set "$DIR/gw" search_flights providers '["duffel"]'
tool_set "$DIR/gw" search_flights max_concurrent $((CALLS * 2))
RUST_LOG=warn start_gateway gateway "$DIR/gw"

searches() {
  curl -sf "http://$SIM/_sim/stats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["groups"]["duffel_air_search"]["requests"])'
}
ok_calls() {
  curl -sf "http://$GW/metrics" |
    awk '/^faregate_tool_calls_total\{/ && /tool="search_flights"/ && /status="ok"/ {n += $NF} END {print n + 0}'
}
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

body="{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}"
echo "$body" > "$DIR/flights.json"
rss_idle=$(rss_kib "$GW_PID")
searches_before=$(searches)
ok_before=$(ok_calls)
h2load -n "$CALLS" -c "$CONNS" -m "$STREAMS" -d "$DIR/flights.json" \
  -H 'content-type: application/json' "http://$GW/v1/tools/search_flights/call" > "$DIR/h2load.txt" 2>&1 || true
rss_peak=$(hwm_kib "$GW_PID")
ok=$(($(ok_calls) - ok_before))
provider_calls=$(($(searches) - searches_before))
python3 - "$DIR/h2load.txt" "$CALLS" "$CONNS" "$STREAMS" "$ok" "$provider_calls" "$rss_idle" "$rss_peak" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
calls, conns, streams, ok, provider, idle, peak = (int(a) for a in sys.argv[2:])
req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
took = re.search(r"finished in ([\d.]+)(m?s)", text)
if not (req and codes and took):
    sys.exit("h2load did not report; its output:\n" + text)
seconds = float(took.group(1)) / (1000 if took.group(2) == "ms" else 1)
print(
    f"calls={calls} connections={conns} streams_per_connection={streams} "
    f"done={req.group(3)} succeeded={req.group(4)} failed={req.group(5)} errored={req.group(6)} "
    f"status_2xx={codes.group(1)} status_4xx={codes.group(3)} status_5xx={codes.group(4)} "
    f"envelopes_ok={ok} provider_calls={provider} seconds={seconds:.2f} "
    f"rss_idle_mib={idle / 1024:.1f} rss_peak_mib={peak / 1024:.1f} "
    f"bytes_per_call={(peak - idle) * 1024 // max(calls, 1)}"
)
PY
