# Scenarios 3-5 of benches/load/run-all.sh (sourced by it; uses its helpers and variables).

# --------------------------------------------------------------------------------------------
# 3 + 4: isolation (a hanging flight provider beside healthy hotels) and the recovery ramp. Flights and hotels have simulators of their
# own, so connections to the flight upstream are counted on its port alone.
isolation() {
  echo "== isolation: hotels + flights at ${ISO_RPS}/s each; flights go to 15 s latency mid-run"
  local SF=127.0.0.1:18421 SH=127.0.0.1:18422 GW=127.0.0.1:18423 d=$DIR/iso
  spawn sim-flights "$BIN" sim --listen "$SF"
  spawn sim-hotels "$BIN" sim --listen "$SH"
  wait_http "http://$SF/_sim/stats" && wait_http "http://$SH/_sim/stats"
  write_config "$d" "$GW" "http://$SF" "http://$SH"
  # Shorter open and ramp periods than shipped (30 s each) so the ramp fits in a minute.
  sed -i -e '/^\[breaker\]/a open_for = "10s"\nopen_for_max = "40s"\nramp = ["10%:10s", "50%:10s"]' \
    "$d/tools/search_flights.toml"
  start_gateway gw-iso "$d"
  local bulkhead
  bulkhead=$(sed -n 's/^max_concurrent = \([0-9]*\).*/\1/p' "$d/tools/search_flights.toml")
  echo "{\"arguments\":{\"city_code\":\"PAR\",\"check_in_date\":\"$(day 21)\",\"check_out_date\":\"$(day 23)\",\"adults\":2}}" > "$DIR/hotels.json"
  echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}" > "$DIR/flights.json"
  local H=http://$GW/v1/tools/search_hotels/call F=http://$GW/v1/tools/search_flights/call
  local rss0 h1 f1 h2 f2
  rss0=$(rss_kib "$GW_PID")

  oha_post flights-healthy "$F" "$DIR/flights.json" "$ISO_RPS" "$ISO_SECS" > "$DIR/f1" &
  local fp=$!
  h1=$(oha_post hotels-healthy "$H" "$DIR/hotels.json" "$ISO_RPS" "$ISO_SECS")
  wait $fp
  f1=$(cat "$DIR/f1")
  printf '%s\n' "$h1" "$f1"

  # Phase 2: the load starts healthy; 2 s in, both flight providers slow to 15 s.
  local port=${SF##*:} samples=$DIR/iso-samples
  (
    end=$((SECONDS + 2 * ISO_SECS + 4))
    while ((SECONDS < end)); do
      echo "$(ss -Htn state established "( dport = :$port )" | wc -l) $(rss_kib "$GW_PID")"
      sleep 0.2
    done
  ) > "$samples" &
  local sp=$!
  oha_post flights-slow "$F" "$DIR/flights.json" "$ISO_RPS" $((2 * ISO_SECS)) 200 > "$DIR/f2" &
  fp=$!
  (sleep 2; fault "$SF" duffel_air_search '{"latency_ms":15000}'; fault "$SF" amadeus_flights '{"latency_ms":15000}') &
  local faultp=$!
  h2=$(oha_post hotels-flights-slow "$H" "$DIR/hotels.json" "$ISO_RPS" $((2 * ISO_SECS)))
  wait $fp $faultp
  wait $sp || true
  f2=$(cat "$DIR/f2")
  printf '%s\n' "$h2" "$f2"
  local maxconn maxrss rss1
  maxconn=$(awk 'BEGIN {m=0} $1 > m {m=$1} END {print m}' "$samples")
  maxrss=$(awk 'BEGIN {m=0} $2 > m {m=$2} END {print m}' "$samples")
  rss1=$(rss_kib "$GW_PID")
  local growth=$(((maxrss - rss0) / 1024))
  local p99r
  p99r=$(ratio "$(val p99_ms "$h2")" "$(val p99_ms "$h1")")
  row "| 3 isolation | hotels p99: healthy $(val p99_ms "$h1") ms, flights at 15 s $(val p99_ms "$h2") ms (p50 $(val p50_ms "$h1") / $(val p50_ms "$h2") ms) | $p99r | ≤ 1.10: $(check "$p99r <= 1.1") |"
  row "| 3 isolation | hotel errors: $(val errors "$h1") of $(val n "$h1") healthy, $(val errors "$h2") of $(val n "$h2") with flights slow | | 0: $(check "$(val errors "$h1") + $(val errors "$h2") == 0") |"
  row "| 3 isolation | connections to the flight upstream: at most $maxconn (sampled every 0.2 s) | bulkhead $bulkhead | ≤ bulkhead: $(check "$maxconn <= $bulkhead") |"
  row "| 3 isolation | gateway RSS: $((rss0 / 1024)) MiB before, peak $((maxrss / 1024)) MiB, $((rss1 / 1024)) MiB after | +$growth MiB | < 20 MB: $(check "$growth < 20") |"
  row "| 3 isolation | flights once open: $(val rps "$f2") rps answered, p50 $(val p50_ms "$f2") ms (fallback: stale) | | — |"

  # Phase 3: the providers heal; flights keep their fixed rate while the breaker recovers.
  local before t0 rec=${REC_SECS:-75}
  before=$(curl -s "http://$GW/v1/breakers/search_flights.duffel" | python3 -c 'import json,sys; print(json.load(sys.stdin)["history"]["times_opened"])')
  curl -sf -X DELETE "http://$SF/_sim/faults" > /dev/null
  t0=$(date +%s)
  local f3
  f3=$(oha_post flights-recovery "$F" "$DIR/flights.json" "$ISO_RPS" "$rec" 200)
  echo "$f3"
  curl -s "http://$GW/v1/breakers/search_flights.duffel" > "$DIR/breaker.json"
  curl -s "http://$SF/_sim/stats" > "$DIR/sim-flights-stats.json"
  python3 - "$DIR/sim-flights-stats.json" "$DIR/breaker.json" "$t0" "$rec" "$ISO_RPS" "$before" > "$DIR/ramp.txt" <<'PY'
import json, sys
stats, breaker = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t0, rec, rps, before = (int(x) for x in sys.argv[3:7])
g = stats["groups"]
duffel = {int(k): v for k, v in g["duffel_air_search"]["arrivals"].items()}
amadeus = {int(k): v for k, v in g["amadeus_flights"]["arrivals"].items()}
secs = range(t0 + 1, t0 + rec)
series = [duffel.get(s, 0) for s in secs]
print("duffel arrivals per second from the heal:", " ".join(map(str, series)))
print("amadeus arrivals per second from the heal:", " ".join(str(amadeus.get(s, 0)) for s in secs))
# Stages: runs of seconds whose share of the offered load rounds to the same band.
def band(n):
    share = n / rps
    return "0%" if share < 0.03 else "10%" if share < 0.3 else "50%" if share < 0.75 else "100%"
runs = []
for n in series:
    b = band(n)
    if runs and runs[-1][0] == b:
        runs[-1][1].append(n)
    else:
        runs.append((b, [n]))
text = ", ".join(f"{b} ×{len(v)} s (median {sorted(v)[len(v) // 2]}/s)" for b, v in runs if len(v) >= 2)
after = breaker["history"]["times_opened"]
order = [b for b, v in runs if len(v) >= 2]
ramped = all(b in order for b in ("10%", "50%", "100%")) and order.index("10%") < order.index("50%") < order.index("100%")
ok = ramped and after == before and breaker["state"] == "closed" and order[-1] == "100%"
print(f"RAMP {text}")
print(f"TRIPS opened before the heal {before}, after {after}; state now {breaker['state']}")
print(f"VERDICT {'met' if ok else 'MISSED'}")
PY
  cat "$DIR/ramp.txt"
  local ramp trips verdict
  ramp=$(sed -n 's/^RAMP //p' "$DIR/ramp.txt")
  trips=$(sed -n 's/^TRIPS //p' "$DIR/ramp.txt")
  verdict=$(sed -n 's/^VERDICT //p' "$DIR/ramp.txt")
  row "| 4 recovery | Duffel arrivals/s at ${ISO_RPS}/s offered, after the heal: $ramp | $trips | ramp 10/50/100 %, no re-trip: $verdict |"
  stop_pid "$GW_PID"
}

# --------------------------------------------------------------------------------------------
# 5: memory at scale. A hanging provider holds SCALE_CALLS interactive calls in flight (bulkhead
# and timeouts raised so nothing turns them away); then 10,000 breaker keys in one registry.
scale() {
  # Each held call takes two descriptors in the gateway (the caller's connection and the
  # provider's); a sandbox whose hard limit cannot be raised caps the count below 2 per call.
  local fds
  fds=$(ulimit -n)
  if ((SCALE_CALLS * 2 + 200 > fds)); then
    echo "(open-file limit $fds, which this shell cannot raise: holding $(((fds - 200) / 2)) calls instead of $SCALE_CALLS)"
    SCALE_CALLS=$(((fds - 200) / 2))
  fi
  echo "== scale: $SCALE_CALLS interactive calls held by a hanging provider; 10,000 breaker keys"
  local SS=127.0.0.1:18431 GW=127.0.0.1:18432 d=$DIR/scale
  spawn sim-scale "$BIN" sim --listen "$SS"
  wait_http "http://$SS/_sim/stats"
  write_config "$d" "$GW" "http://$SS" "http://$SS"
  tool_set "$d" search_flights providers '["duffel"]'
  tool_set "$d" search_flights max_concurrent $((SCALE_CALLS * 2))
  tool_set "$d" search_flights timeout '"300s"'
  tool_set "$d" search_flights deadline '"300s"'
  tool_set "$d" search_flights stale_for '"0s"'
  start_gateway gw-scale "$d"
  echo "{\"arguments\":{\"origin\":\"JFK\",\"destination\":\"LHR\",\"departure_date\":\"$(day 21)\"}}" > "$DIR/flights.json"
  oha --no-tui -n 200 -c 8 -m POST -T application/json -D "$DIR/flights.json" \
    "http://$GW/v1/tools/search_flights/call" > /dev/null 2>&1 || true
  # Admit every call: the breaker is not what is measured here, memory per held call is.
  force "$GW" search_flights.duffel closed
  fault "$SS" duffel_air_search '{"hang":true}'
  local out
  out=$(python3 benches/load/hold.py "$GW" "$SS" "$GW_PID" "$SCALE_CALLS" "$DIR/flights.json")
  echo "$out"
  row "| 5 scale | $(val held "$out") of $SCALE_CALLS calls in flight ($(val at_provider "$out") at the provider): gateway RSS $(val rss_idle_mib "$out") → $(val rss_held_mib "$out") MiB; all answered after the hang: $(val answered "$out") | $(val bytes_per_call "$out") bytes per in-flight call | — (reported) |"
  stop_pid "$GW_PID"
  local keys
  keys=$("$EXAMPLES/breaker_keys" 10000)
  echo "$keys"
  row "| 5 scale | 10,000 breaker keys (100 calls recorded on each): RSS $(val rss_before_kib "$keys") → $(val rss_after_kib "$keys") KiB | $(val bytes_per_key "$keys") bytes per key | — (reported) |"
}
