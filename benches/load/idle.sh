#!/usr/bin/env bash
# What an idle gateway costs: context switches per second (per thread kind) and on-CPU
# milliseconds per second, with the benchmark configuration (a SQLite store, nothing calling).
# A fleet keeps replicas idle most of the night, and the pollers' wake-ups are also what a
# light load finds in the caches (light.sh counts them per request).
#
# Usage: benches/load/idle.sh [ROUNDS]        (default 3; SECS=10 seconds per measurement)
# Knobs: BIN (a release faregate), BASE_BIN (another build, alternated with BIN round by round).
# Reads /proc/PID/task/*/status (voluntary + involuntary switches) and /proc/PID/task/*/schedstat
# (on-CPU nanoseconds) before and after SECS seconds, once the gateway has answered /healthz
# and settled for 3 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
SECS=${SECS:-10}
DIR=$(mktemp -d /tmp/faregate-idle.XXXXXX)
# shellcheck source=benches/load/lib.sh
source benches/load/lib.sh
trap 'stop_all; rm -rf "$DIR"' EXIT
[[ -x $BIN ]] || { echo "BIN=$BIN is not a faregate build"; exit 1; }

switches() { # pid: "thread-name switches" per thread
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' '_' <"$t/comm")" \
      "$(awk '/ctxt_switches/ {s += $2} END {print s}' "$t/status")"
  done | awk '{s[$1] += $2} END {for (k in s) print k, s[k]}' | sort
}

measure() { # label bin
  local label=$1
  write_config "$DIR/$label" 127.0.0.1:18490 http://127.0.0.1:18491 http://127.0.0.1:18491
  BIN=$2 start_gateway "gw-$label" "$DIR/$label"
  sleep 3
  local a b c0 c1
  a=$(switches "$GW_PID"); c0=$(on_cpu_ns "$GW_PID")
  sleep "$SECS"
  b=$(switches "$GW_PID"); c1=$(on_cpu_ns "$GW_PID")
  stop_pid "$GW_PID"
  rm -rf "${DIR:?}/$label"
  join <(echo "$a") <(echo "$b") | awk -v label="$label" -v secs="$SECS" -v cpu=$((c1 - c0)) '
    { d = ($3 - $2) / secs; total += d; parts = parts sprintf(" %s %.0f;", $1, d) }
    END { printf "| %s | %.0f | %.2f |%s |\n", label, total, cpu / secs / 1e6, parts }'
}

echo "# an idle gateway, ${SECS} s per measurement, $(date -u '+%F %H:%M UTC'), load average $(busy)"
echo "| build | switches per second | on-CPU ms per second | switches per second by thread |"
echo "|---|---|---|---|"
for _ in $(seq "$ROUNDS"); do
  measure new "$BIN"
  [[ -n ${BASE_BIN:-} ]] && measure base "$BASE_BIN"
done
