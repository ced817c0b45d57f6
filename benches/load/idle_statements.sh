#!/usr/bin/env bash
# The statements an idle replica sends PostgreSQL: a `faregate demo` on a database of its own,
# nothing calling, every statement counted from the server's log for SECS seconds, by kind.
# A fleet's replicas are idle most of the night, each one polling the same database.
#
# Usage: benches/load/idle_statements.sh [SECS]     (default 30)
# Knobs: BIN (a faregate build; default target/release/faregate), PGURL (a server where the
# user may create databases; default postgres://postgres@127.0.0.1:5432), PGLOG (that server's
# log, readable here; default the Debian cluster's), DB (the scratch database, dropped and made
# again; default faregate_idle). `log_statement = 'all'` is set on the scratch database only.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-30}
BIN=${BIN:-target/release/faregate}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
PGLOG=${PGLOG:-$(ls /var/log/postgresql/postgresql-*-main.log 2>/dev/null | head -1)}
DB=${DB:-faregate_idle}
[[ -x $BIN ]] || { echo "BIN=$BIN is not a faregate build" >&2; exit 1; }
[[ -r $PGLOG ]] || { echo "PGLOG=$PGLOG: the server's log is not readable here" >&2; exit 1; }
BIN=$(realpath "$BIN")
psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" \
  -c "ALTER DATABASE $DB SET log_statement = 'all'"
DIR=$(mktemp -d /tmp/faregate-idle-sql.XXXXXX)
(cd "$DIR" && exec "$BIN" demo --listen 127.0.0.1:18480 --sim-listen 127.0.0.1:18481 \
  --store "$PGURL/$DB") >"$DIR/demo.log" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; rm -rf "$DIR"; psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"' EXIT
sleep 15   # migrations, the first passes
start=$(wc -l <"$PGLOG")
sleep "$SECS"
end=$(wc -l <"$PGLOG")
sed -n "$((start + 1)),${end}p" "$PGLOG" | grep -a "@$DB LOG:  \(statement\|execute\)" \
  | sed -E 's/.*LOG:  (statement|execute [^:]*): //' | cut -c1-80 >"$DIR/statements"
n=$(wc -l <"$DIR/statements")
echo "$n statements in $SECS s: $(awk -v n="$n" -v s="$SECS" 'BEGIN {printf "%.1f", n / s}') a second"
sort "$DIR/statements" | uniq -c | sort -rn | head -25
