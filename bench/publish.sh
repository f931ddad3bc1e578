#!/usr/bin/env bash
# publish.sh: `sluice publish` into PostgreSQL beside `psql \copy` of the
# same rows as CSV (the floor a user knows), same server, same run.
# Usage: bench/publish.sh [ROWS...]   (default 10000000 20000000: the
#        second doubles the first, for peak RSS as the table doubles)
#
# For each ROWS, bench/genpublish writes (once, into bench/.data/publish-ROWS)
# a sluice table of ROWS deterministic rows (id bigint, uuid, timestamptz,
# numeric(12,2), integer, double precision, text with NULLs; Parquet files
# of 1M rows) and the same rows as CSV. Then, in RUNS rounds (default 3)
# that interleave the two so a busy machine slows both alike, it times:
#   sluice  `sluice publish TABLE --to URL --as pub --force --json`: binary
#           COPY streamed from the Parquet files into pub_new over
#           --connections connections (default 4, at most one per file),
#           ANALYZE, the swap transaction (/usr/bin/time -v for peak RSS)
#   psql    DROP/CREATE TABLE csv_pub, then `\copy csv_pub FROM CSV` (no
#           ANALYZE, no swap: the bare load)
# and reports each one's fastest and median round: rows/s; MB/s of its
# input (Parquet bytes for sluice, CSV bytes for psql) and of the loaded
# table (pg_table_size, the same rows for both); the ratios of the best
# and of the medians; peak RSS of sluice per size. It checks both tables
# hold the same rows (count and sums).
# PGURL=postgres://... uses that server; otherwise one is started with
# initdb/pg_ctl on a free loopback port (as the postgres user when root)
# and stopped at the end. CGO=0 builds sluice without cgo; SLUICE_BIN=FILE
# times that sluice binary instead of building one. SLUICE_ARGS adds
# flags to sluice publish (say --connections 1, the load on one
# connection). SLUICE_CPUPROFILE=FILE writes a CPU profile of each size's
# last sluice round to FILE.ROWS.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
if [ $# -eq 0 ]; then set -- 10000000 20000000; fi
RUNS=${RUNS:-3}
DATA=bench/.data
mkdir -p "$DATA"
sluice=$DATA/sluice
if [ -n "${SLUICE_BIN:-}" ]; then
  sluice=$SLUICE_BIN; SLUICE_BUILD="the binary of SLUICE_BIN"
else
  build_sluice "$sluice"
fi
read -r -a extra <<< "${SLUICE_ARGS:-}"

if [ -z "${PGURL:-}" ]; then
  bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1)")
  [ -x "$bin/initdb" ] || { echo "publish.sh: no PostgreSQL server (apt-get install postgresql, or set PGURL)" >&2; exit 1; }
  pgdir=$(mktemp -d /tmp/sluice-bench-pg-XXXXXX)
  as=()
  if [ "$(id -u)" = 0 ]; then chown postgres "$pgdir"; as=(runuser -u postgres --); fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${as[@]}" "$bin/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 --locale=C --no-sync > "$pgdir/initdb.log"
  "${as[@]}" "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$pgdir -c fsync=off -c max_wal_size=4GB" start > /dev/null
  trap '"${as[@]}" "$bin/pg_ctl" -D "$pgdir/data" -m fast stop > /dev/null; rm -rf "$pgdir"' EXIT
  PGURL="postgres://postgres@127.0.0.1:$port/postgres"
  server="started here (fsync=off), $("$bin/postgres" --version)"
else
  server="PGURL, $(psql "$PGURL" -Atc 'SHOW server_version')"
fi
export PGOPTIONS="-c client_min_messages=warning"
q() { psql "$PGURL" -v ON_ERROR_STOP=1 -Atqc "$1"; }
now() { date +%s.%N; }
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$1"; }

fail=0
report=()
for rows in "$@"; do
  dir=$DATA/publish-$rows
  if [ ! -e "$dir/.done" ]; then
    rm -rf "$dir"; mkdir -p "$dir"
    go run ./bench/genpublish "$rows" "$dir/table" "$dir/rows.csv"
    touch "$dir/.done"
  fi
  pq_bytes=$("$sluice" files "$dir/table" | xargs du -cb | tail -1 | cut -f1)
  csv_bytes=$(stat -c %s "$dir/rows.csv")
  s_s= p_s= s_rss= s_all= p_all=
  for round in $(seq "$RUNS"); do
    prof=()
    [ -n "${SLUICE_CPUPROFILE:-}" ] && [ "$round" = "$RUNS" ] && prof=(--cpuprofile "$SLUICE_CPUPROFILE.$rows")
    /usr/bin/time -v -o "$DATA/publish.time" "$sluice" publish "$dir/table" --to "$PGURL" --as pub --force --json \
      ${extra[@]+"${extra[@]}"} ${prof[@]+"${prof[@]}"} > "$DATA/publish.json"
    s=$(json seconds < "$DATA/publish.json"); s_all="$s_all $(printf '%.2f' "$s")"
    s_rss=$(maxrss "$(rss "$DATA/publish.time")" "$s_rss")
    if better "$s" "$s_s"; then s_s=$s; s_cpu=$(cpu "$DATA/publish.time"); fi
    q "DROP TABLE IF EXISTS csv_pub; CREATE TABLE csv_pub (id bigint NOT NULL, u uuid NOT NULL, ts timestamptz NOT NULL,
       amount numeric(12,2) NOT NULL, n integer NOT NULL, f double precision NOT NULL, s text)"
    /usr/bin/time -v -o "$DATA/psql.time" psql "$PGURL" -v ON_ERROR_STOP=1 -qc "\\copy csv_pub FROM '$dir/rows.csv' WITH (FORMAT csv)"
    s=$(wall "$DATA/psql.time"); p_all="$p_all $(printf '%.2f' "$s")"
    p_rss=$(rss "$DATA/psql.time")
    if better "$s" "$p_s"; then p_s=$s; fi
  done
  sums="count(*), sum(id), sum(n), sum(amount), count(s), count(DISTINCT u), min(ts), max(ts)"
  a=$(q "SELECT $sums FROM pub"); b=$(q "SELECT $sums FROM csv_pub")
  [ "$a" = "$b" ] || { echo "rows differ for $rows: sluice $a, psql $b" >&2; fail=1; }
  [ "$(json rows < "$DATA/publish.json")" = "$rows" ] || { echo "sluice loaded $(json rows < "$DATA/publish.json") rows, not $rows" >&2; fail=1; }
  tbl_bytes=$(q "SELECT pg_table_size('pub')")
  mb() { echo "$1 / $2 / 1000000" | bc -l; }
  report+=("$(printf '%-11s %10s %8.2f %8.2f %12.0f %9.1f %9.1f %12s %8s  %s' sluice "$rows" "$s_s" "$(median $s_all)" "$(echo "$rows / $s_s" | bc -l)" \
    "$(mb "$pq_bytes" "$s_s")" "$(mb "$tbl_bytes" "$s_s")" "$s_rss" "$s_cpu" "$s_all")")
  report+=("$(printf '%-11s %10s %8.2f %8.2f %12.0f %9.1f %9.1f %12s %8s  %s' 'psql \copy' "$rows" "$p_s" "$(median $p_all)" "$(echo "$rows / $p_s" | bc -l)" \
    "$(mb "$csv_bytes" "$p_s")" "$(mb "$tbl_bytes" "$p_s")" "$p_rss" - "$p_all")")
  report+=("$(printf '  %s rows: input %s Parquet bytes, %s CSV bytes, table %s bytes; sluice/psql time %.2f best, %.2f median (rows/s ratio %.2f, %.2f); check %s' \
    "$rows" "$pq_bytes" "$csv_bytes" "$tbl_bytes" "$(echo "$s_s / $p_s" | bc -l)" "$(echo "$(median $s_all) / $(median $p_all)" | bc -l)" \
    "$(echo "$p_s / $s_s" | bc -l)" "$(echo "$(median $p_all) / $(median $s_all)" | bc -l)" "$([ "$a" = "$b" ] && echo 'same rows' || echo DIFFERS)")")
  eval "rss_$rows=$s_rss"
done

printf '\nserver: %s; %s CPUs; best of %s rounds; sluice build: %s\n' "$server" "$(nproc)" "$RUNS" "$SLUICE_BUILD"
printf '%-11s %10s %8s %8s %12s %9s %9s %12s %8s  %s\n' loader rows best_s median_s rows/s in_MB/s tbl_MB/s peak_rss_kb cpu_s every_round_s
printf '%s\n' "${report[@]}"
printf '(in_MB/s: sluice of the Parquet files read, psql of the CSV; tbl_MB/s: of the loaded table, pg_table_size;\n sluice includes ANALYZE and the swap, psql is the bare \\copy; psql peak RSS is the client'"'"'s)\n'
if [ $# -ge 2 ]; then
  first=$1; last=${!#}
  eval "r1=\$rss_$first; r2=\$rss_$last"
  printf 'sluice peak RSS %s rows / %s rows: %.2f (rows ratio %.1f)\n' "$last" "$first" "$(echo "$r2 / $r1" | bc -l)" "$(echo "$last / $first" | bc -l)"
fi
exit $fail
