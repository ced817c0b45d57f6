# Helpers for benches/load/run-all.sh (sourced, not run): processes it starts and stops, the
# gateway configuration it writes, and the load tools it drives.
#
# Every process started through `spawn` is stopped by `stop_all` (the EXIT trap), by its own
# pid, and nothing else is touched. Everything listens on 127.0.0.1.

PIDS=()
BIN=${BIN:-target/release/faregate}
EXAMPLES=${EXAMPLES:-target/release/examples}
ADMIN_KEY=bench-admin-key

spawn() { # name command...: runs in the background, logs to $DIR/name.log, remembers the pid
  local name=$1
  shift
  "$@" >"$DIR/$name.log" 2>&1 &
  PIDS+=($!)
  LAST_PID=$!
}

stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}

stop_pid() { # pid: stops one process started with spawn
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local keep=() pid
  for pid in "${PIDS[@]}"; do [[ $pid != "$1" ]] && keep+=("$pid"); done
  PIDS=("${keep[@]}")
}

wait_http() { # url [method]: waits up to 10 s (WAIT_SECS) for any HTTP answer
  for _ in $(seq $((${WAIT_SECS:-10} * 10))); do
    curl -s -o /dev/null -X "${2:-GET}" "$1" && return 0
    sleep 0.1
  done
  echo "no answer from $1" >&2
  return 1
}

on_cpu_ns() { # pid: on-CPU nanoseconds of the process, all its threads (schedstat's first field)
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s + 0}'
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

day() { date -u -d "+$1 days" +%F; }

# write_config dir listen flights_url hotels_url: faregate.toml, tools/ and prompts/ copied into
# dir. Flight providers (`duffel`, `amadeus`) point at flights_url; the hotel tools use their own
# provider entries (`duffel_h`, `amadeus_h`, same kinds) at hotels_url, so connections to the
# flight upstream can be counted on their own port. Tool files can be edited afterwards.
write_config() {
  local d=$1 listen=$2 flights=$3 hotels=$4
  mkdir -p "$d"
  cp -r tools prompts "$d/"
  sed -e "s|^listen = .*|listen = \"$listen\"|" \
      -e "s|^url = \"sqlite://faregate.db\"|url = \"sqlite://$d/jobs.db\"|" \
      -e "s|http://127.0.0.1:8081|$flights|" \
      -e 's|^client_rate = .*|client_rate = "off"|' \
      -e 's|^client_max_concurrent_calls = .*|client_max_concurrent_calls = 0|' \
      -e 's|^max_connections = .*|max_connections = 30000|' \
      faregate.toml > "$d/faregate.toml"
  # The load generator is one client: the per-client limits ([limits]) are off so that the
  # gateway, not its limiter, is measured; the connection cap is raised for the scale scenario.
  cat >> "$d/faregate.toml" <<EOF

[providers.duffel_h]
kind = "duffel"
base_url = "$hotels"
token_env = "DUFFEL_ACCESS_TOKEN"

[providers.amadeus_h]
kind = "amadeus"
base_url = "$hotels"
client_id_env = "AMADEUS_CLIENT_ID"
client_secret_env = "AMADEUS_CLIENT_SECRET"
EOF
  for t in search_hotels check_hotel_availability; do
    sed -i -e 's|^providers = \["duffel", "amadeus"\]|providers = ["duffel_h", "amadeus_h"]|' \
      "$d/tools/$t.toml"
  done
}

# tool_set dir tool key value: sets `key = value` in the tool's file (top-level keys only).
tool_set() {
  sed -i -e "s|^$3 = .*|$3 = $4|" "$1/tools/$2.toml"
}

# start_nginx prefix upstream proxy: nginx as a non-daemon child with its own prefix; on
# `upstream` it answers any POST with the captured Duffel offers body (a static file), on `proxy`
# it proxies to `upstream` with keep-alive, as a reverse proxy in front of a provider would.
start_nginx() {
  local UP=$2 PX=$3
  mkdir -p "$1/logs"
  # The body is a static file: nginx limits a `return` text to a few kilobytes of config. POST
  # to a static file is answered 405 by the static module; `error_page 405 =200 $uri` serves
  # the file anyway (an internal redirect, as cheap as it gets).
  mkdir -p "$1/static/air"
  cp benches/load/duffel_offers.json "$1/static/air/offer_requests"
  python3 - "$1/nginx.conf" "$UP" "$PX" "$1" <<'PY'
import sys
conf, up, px, prefix = sys.argv[1:]
temp = " ".join(f"{t}_temp_path {prefix}/{t};" for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
open(conf, "w").write(f"""
worker_processes auto;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 1000000;
  {temp}
  upstream duffel {{ server {up}; keepalive 64; }}
  server {{
    listen {up};
    root {prefix}/static;
    location / {{ default_type application/json; error_page 405 =200 $uri; }}
  }}
  server {{
    listen {px};
    location / {{
      proxy_pass http://duffel;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffer_size 16k;
      proxy_buffers 16 16k;
    }}
  }}
}}
""")
PY
  spawn nginx nginx -p "$1" -e "$1/logs/error.log" -c "$1/nginx.conf"
  wait_http "http://$UP/" POST
}

start_gateway() { # name dir: `faregate serve` on the dir's config, waits for /healthz
  # $WRAP (empty by default) runs the gateway under another program, e.g. valgrind.
  # shellcheck disable=SC2086
  spawn "$1" env FAREGATE_ADMIN_KEY="$ADMIN_KEY" ${WRAP:-} "$BIN" serve --config "$2/faregate.toml"
  GW_PID=$LAST_PID
  local listen
  listen=$(sed -n 's/^listen = "\(.*\)"/\1/p' "$2/faregate.toml")
  wait_http "http://$listen/healthz"
}

# start_opossum name listen upstream: the node + opossum gateway (benches/load/opossum/) on
# `listen` in front of `upstream`, as the one node process it is meant to be (see its header).
# Its node_modules come from `npm ci` into target/bench-opossum/, redone when the lock file
# changes, so nothing is installed into the source tree and a run after the first is offline.
start_opossum() {
  local src=${ROOT:-$PWD}/benches/load/opossum cache=${ROOT:-$PWD}/target/bench-opossum
  if ! cmp -s "$src/package-lock.json" "$cache/package-lock.json" || [[ ! -d $cache/node_modules ]]; then
    rm -rf "$cache"
    mkdir -p "$cache"
    cp "$src/package.json" "$src/package-lock.json" "$cache/"
    (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error) >&2
  fi
  spawn "$1" env NODE_PATH="$cache/node_modules" node "$src/gateway.js" "$2" "$3"
  NODE_PID=$LAST_PID
  wait_http "http://$2/healthz"
}

force() { # gateway breaker-key state
  curl -sf -X POST "http://$1/v1/breakers/$2/force" -H "authorization: Bearer $ADMIN_KEY" \
    -H 'content-type: application/json' -d "{\"state\":\"$3\"}" >/dev/null
}

# fast_fail gateway body-file out-file: the fast-fail setup every fallback measurement uses: one
# search_flights call with body-file (its answer becomes the stale answer), both flight breakers
# forced open, and the fallback answer to the same call written to out-file.
fast_fail() {
  # AUTH_HEADER (empty by default): the client key's header, where the gateway has keys.
  curl -sf "http://$1/v1/tools/search_flights/call" -H 'content-type: application/json' \
    ${AUTH_HEADER:+-H "$AUTH_HEADER"} -d @"$2" >/dev/null
  force "$1" search_flights.duffel open
  force "$1" search_flights.amadeus open
  curl -s "http://$1/v1/tools/search_flights/call" -H 'content-type: application/json' \
    ${AUTH_HEADER:+-H "$AUTH_HEADER"} -d @"$2" >"$3"
}

fault() { # sim group json
  curl -sf -X PUT "http://$1/_sim/faults/$2" -H 'content-type: application/json' -d "$3" >/dev/null
}

# wrk_post label url body-file: closed-loop throughput, one line of key=value on stdout.
wrk_post() {
  local lua="$DIR/wrk-$RANDOM.lua"
  python3 - "$3" > "$lua" <<'PY'
import json, sys
body = open(sys.argv[1]).read()
print("wrk.method = 'POST'")
print("wrk.headers['Content-Type'] = 'application/json'")
print("wrk.body = " + json.dumps(body))
PY
  wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${WRK_SECS}s" --latency -s "$lua" "$2" > "$DIR/wrk-$1.txt" 2>&1
  python3 "$REPORT" wrk "$1" "$DIR/wrk-$1.txt"
}

# metric_sum gateway name tool: the sum of a counter's series for one tool (all labels).
metric_sum() {
  curl -sf "http://$1/metrics" |
    awk -v m="$2" -v t="tool=\"$3\"" 'index($0, m "{") == 1 && index($0, t) {n += $NF} END {printf "%d\n", n}'
}

# wrk_post_distinct label url: closed-loop throughput of search_flights calls, each with its own
# departure date (330 days from the day after tomorrow; each wrk thread takes every
# WRK_THREADS-th of them, so two threads never send the same date however far one runs ahead of
# the other), so that calls in flight at once are distinct searches and do not share a provider
# call: the per-call cost, where wrk_post's one body measures what coalescing makes of
# identical calls.
wrk_post_distinct() {
  local lua="$DIR/wrk-$RANDOM.lua"
  cat > "$lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
local start = os.time()
local count = tonumber(os.getenv("WRK_THREADS") or "1") or 1
local per_thread = math.floor(330 / count)
local n = 0
function request()
  n = (n + 1) % per_thread
  local date = os.date("!%Y-%m-%d", start + 86400 * (2 + n * count + (id or 0)))
  return wrk.format(nil, nil, nil,
    '{"arguments":{"origin":"JFK","destination":"LHR","departure_date":"' .. date .. '"}}')
end
LUA
  WRK_THREADS="$WRK_THREADS" wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${WRK_SECS}s" --latency \
    -s "$lua" "$2" > "$DIR/wrk-$1.txt" 2>&1
  python3 "$REPORT" wrk "$1" "$DIR/wrk-$1.txt"
}

# oha_post label url body-file rate seconds [conns]: fixed rate, latency corrected (no
# coordinated omission); one line of key=value on stdout.
oha_post() {
  oha --no-tui --output-format json -z "${5}s" -q "$4" -c "${6:-8}" --latency-correction \
    -m POST -T application/json -D "$3" "$2" > "$DIR/oha-$1.json" 2>"$DIR/oha-$1.err" || true
  python3 "$REPORT" oha "$1" "$DIR/oha-$1.json"
}

busy() { # the 1-minute load average, for the record
  cut -d' ' -f1 /proc/loadavg
}
