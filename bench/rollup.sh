#!/usr/bin/env bash
# rollup.sh: sluice's rollup beside DuckDB's window-function SQL, same
# input, same machine, same run; then sluice's incremental runs.
# Usage: bench/rollup.sh [EVENTS] [LISTS] [FILES_PER_DAY]
#        (default 20000000 50000 400)
#
# Input: subscribe/unsubscribe events (list_id int64 skewed, ts timestamp,
# tally int32 of +1/-1) in FILES_PER_DAY small zstd Parquet files a day,
# Hive layout, written by DuckDB (bench/gen-rollup-events.mjs), and a
# snapshot of 0.9*LISTS lists on the day before the first event day. The
# events become a sluice table partitioned by day(ts) that adopted the
# files in place (`sluice init` + `sluice import`, not timed).
#
# 1. full: EVENTS events over 10 days. `sluice rollup --full` against
#    bench/duckrollup.mjs (snapshot union, group by, date spine, window
#    sum, written as Parquet partitioned by date), in RUNS rounds (default
#    3) that interleave the two, so a busy machine slows both alike; the
#    fastest round of each is reported with its peak RSS over all rounds
#    (/usr/bin/time -v). Both outputs are checked equal through
#    tools/duckrows.mjs (row count and order-independent checksum).
# 2. incremental: EVENTS/30 events a day (INC_FILES files a day, default
#    FILES_PER_DAY/4), 30 days rolled up in full (timed), then day 31
#    imported and rolled up (timed: target under 10% of the full run's
#    time); a file of late events for day 15 imported and restated (timed);
#    the table then equals a --full run's. Then days 32..90 are added and
#    rolled up (not timed), and day 91 is rolled up (timed: target within
#    1.3x of day 31's). Each timed step runs RUNS times from the same
#    state (the output copied back before each round) and reports its
#    fastest. INCR=0 skips this part, FULL=0 the first.
#
# IMPORTED=1 makes the events a table as `sluice import` alone adopts a
# Spark-written folder: its date=YYYY-MM-DD folders a string partition,
# not day(ts), so an incremental run finds the days changed from the
# added files' statistics of ts.
#
# SLUICE_CPUPROFILE=PREFIX writes CPU profiles of the last round's sluice
# runs to PREFIX.full (the full rollup), PREFIX.full30, PREFIX.day31,
# PREFIX.late15 and PREFIX.day91 (the incremental part's timed steps):
# go tool pprof -top bench/.data/sluice PREFIX.full.
#
# Times are the "seconds" of each program's JSON summary (DuckDB's: the
# COPY statement alone, node's start excluded). CGO=0 builds sluice
# without cgo.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
EVENTS=${1:-20000000}
LISTS=${2:-50000}
FILES=${3:-400}
RUNS=${RUNS:-3}
INCR=${INCR:-1}
FULL=${FULL:-1}
IMPORTED=${IMPORTED:-0}
INC_FILES=${INC_FILES:-$(( FILES / 4 > 0 ? FILES / 4 : 1 ))}
DATA=bench/.data
FULL_IN=$DATA/rollup-full-$EVENTS-$LISTS-$FILES
SCHEMA='list_id:int64,ts:timestamp,tally:int32'
MEASURE='subscribers=sum(tally)'
mkdir -p "$DATA"
build_sluice "$DATA/sluice"
SLUICE=$DATA/sluice

# events_table DIR: makes the Hive folder DIR/events a sluice table
# partitioned by day(ts), adopting its files in place.
events_table() {
  if [ "$IMPORTED" != 1 ]; then
    "$SLUICE" init "$1/events" --schema "$SCHEMA" --partition-by 'day(ts)' > /dev/null
  fi
  "$SLUICE" import -q "$1/events" --from "$1/events" > /dev/null
}
# rollup OUT DIR [ARGS...]: sluice rollup of DIR's events and snapshot into
# OUT, its JSON summary in $DATA/r.json and time -v report in $DATA/r.time.
rollup() {
  local out=$1 dir=$2; shift 2
  /usr/bin/time -v -o "$DATA/r.time" "$SLUICE" rollup "$out" --source "$dir/events" --snapshot "$dir/snapshot.parquet" \
    --key list_id --time ts --measure "$MEASURE" --json "$@" > "$DATA/r.json"
}
# prof NAME [ROUND]: the flag --cpuprofile=PREFIX.NAME for a sluice run of
# round ROUND (default: the last), when SLUICE_CPUPROFILE asks for profiles
# and ROUND is the last; else nothing.
prof() {
  [ -n "${SLUICE_CPUPROFILE:-}" ] && [ "${2:-$RUNS}" = "$RUNS" ] && echo "--cpuprofile=$SLUICE_CPUPROFILE.$1" || true
}
# checksum TABLE: duckrows' checksum of a sluice table's rows.
checksum() { "$SLUICE" files "$1" | node tools/duckrows.mjs --columns list_id,date,subscribers --list - | json checksum; }

if [ "$FULL" = 1 ]; then
if [ ! -f "$FULL_IN/.done" ]; then
  echo "generating $EVENTS events, 10 days, $FILES files a day, $LISTS lists into $FULL_IN ..." >&2
  rm -rf "$FULL_IN"
  node bench/gen-rollup-events.mjs "$FULL_IN/events" $(( EVENTS / 10 )) 1 10 "$FILES" "$LISTS" 0 --snapshot "$FULL_IN/snapshot.parquet" > /dev/null
  events_table "$FULL_IN"
  touch "$FULL_IN/.done"
fi
in_bytes=$(du -sb --exclude=_sluice "$FULL_IN/events" | cut -f1)

duck_s= sluice_s= duck_rss= sluice_rss= duck_all= sluice_all=
for round in $(seq "$RUNS"); do
  /usr/bin/time -v -o "$DATA/duck.time" node bench/duckrollup.mjs "$FULL_IN/snapshot.parquet" "$FULL_IN/events/*/*.parquet" "$DATA/rollup-duck" > "$DATA/duck.json"
  s=$(json seconds < "$DATA/duck.json"); duck_all="$duck_all $(printf '%.2f' "$s")"
  if better "$s" "$duck_s"; then duck_s=$s; duck_cpu=$(cpu "$DATA/duck.time"); fi
  duck_rss=$(maxrss "$(rss "$DATA/duck.time")" "$duck_rss")

  rm -rf "$DATA/rollup-sluice"
  rollup "$DATA/rollup-sluice" "$FULL_IN" --full $(prof full "$round")
  s=$(json seconds < "$DATA/r.json"); sluice_all="$sluice_all $(printf '%.2f' "$s")"
  if better "$s" "$sluice_s"; then sluice_s=$s; sluice_cpu=$(cpu "$DATA/r.time"); fi
  sluice_rss=$(maxrss "$(rss "$DATA/r.time")" "$sluice_rss")
done
cells=$(json cells_written < "$DATA/r.json")
want=$(node tools/duckrows.mjs --columns list_id,date,subscribers "$DATA/rollup-duck/*/*.parquet" | json checksum)
got=$(checksum "$DATA/rollup-sluice")
[ "$want" = "$got" ] || { echo "sluice's rollup differs from DuckDB's ($got != $want)" >&2; exit 1; }

printf '\nfull rollup: %s events, 10 days, %s lists, %s files a day, %s input bytes, %s output rows, %s CPUs, best of %s rounds\n' \
  "$EVENTS" "$LISTS" "$FILES" "$in_bytes" "$cells" "$(nproc)" "$RUNS"
printf 'sluice build: %s; outputs equal (duckrows checksum %s)\n' "$SLUICE_BUILD" "$got"
printf '%-8s %10s %12s %8s  %s\n' engine seconds peak_rss_kb cpu_s every_round_s
printf '%-8s %10.3f %12s %8s %s\n' duckdb "$duck_s" "$duck_rss" "$duck_cpu" "$duck_all"
printf '%-8s %10.3f %12s %8s %s\n' sluice "$sluice_s" "$sluice_rss" "$sluice_cpu" "$sluice_all"
printf 'sluice/duckdb: time %.2f (target <= 1.00), RSS %.2f, CPU %.2f\n' \
  "$(echo "$sluice_s / $duck_s" | bc -l)" "$(echo "$sluice_rss / $duck_rss" | bc -l)" "$(echo "$sluice_cpu / $duck_cpu" | bc -l)"
fi

[ "$INCR" = 1 ] || exit 0

# The incremental part: a 30-day base, cached, copied afresh each run.
PER_DAY=$(( EVENTS / 30 ))
BASE=$DATA/rollup-inc-$PER_DAY-$LISTS-$INC_FILES
WORK=$DATA/rollup-inc-work
if [ ! -f "$BASE/.done" ]; then
  echo "generating 30 days of $PER_DAY events, $INC_FILES files a day, into $BASE ..." >&2
  rm -rf "$BASE"
  node bench/gen-rollup-events.mjs "$BASE/events" "$PER_DAY" 1 30 "$INC_FILES" "$LISTS" 0 --snapshot "$BASE/snapshot.parquet" > /dev/null
  touch "$BASE/.done"
fi
rm -rf "$WORK" "$DATA/rollup-inc-out" "$DATA/rollup-inc-out.before" "$DATA/rollup-inc-full"
cp -r "$BASE" "$WORK"
events_table "$WORK"
OUT=$DATA/rollup-inc-out
# step NAME PROF: rolls up OUT RUNS times from the same state (a copy of OUT
# restored before each round, not timed) and prints the fastest round's
# line of the report, with the peak RSS over all rounds; sets $best. The
# last round's profile, if asked for, is PREFIX.PROF.
step() {
  local name=$1 pname=$2 rss_max= s all=
  best=
  rm -rf "$OUT.before"; [ -d "$OUT" ] && cp -r "$OUT" "$OUT.before"
  for round in $(seq "$RUNS"); do
    rm -rf "$OUT"; [ -d "$OUT.before" ] && cp -r "$OUT.before" "$OUT"
    rollup "$OUT" "$WORK" $(prof "$pname" "$round")
    s=$(json seconds < "$DATA/r.json"); all="$all $(printf '%.3f' "$s")"
    if better "$s" "$best"; then best=$s; cp "$DATA/r.json" "$DATA/r.best.json"; fi
    rss_max=$(maxrss "$(rss "$DATA/r.time")" "$rss_max")
  done
  printf '%-26s %9.3f %12s %10s %12s %9s %s\n' "$name" "$best" "$rss_max" "$(json events_read < "$DATA/r.best.json")" \
    "$(json cells_restated < "$DATA/r.best.json")" "$(json partitions_written < "$DATA/r.best.json")" "$all"
}
add_days() { # FROM TO TAG [PER_DAY FILES]
  node bench/gen-rollup-events.mjs "$WORK/events" "${4:-$PER_DAY}" "$1" "$2" "${5:-$INC_FILES}" "$LISTS" "$3" > /dev/null
  "$SLUICE" import -q "$WORK/events" --from "$WORK/events" > /dev/null
}
printf '\nincremental: %s events a day, %s files a day, %s lists\n' "$PER_DAY" "$INC_FILES" "$LISTS"
printf '%-26s %9s %12s %10s %12s %9s %s\n' run seconds peak_rss_kb events_read cells_restated partitions every_round_s
step "full, 30 days" full30; full30=$best
add_days 31 31 0
step "day 31" day31; d31=$best
add_days 15 15 1 $(( PER_DAY / INC_FILES )) 1
step "late events of day 15" late15
rollup "$DATA/rollup-inc-full" "$WORK" --full
[ "$(checksum "$OUT")" = "$(checksum "$DATA/rollup-inc-full")" ] || { echo "incremental rollup differs from --full" >&2; exit 1; }
echo "(after day 31 and the late day 15 the table equals a --full run's)"
add_days 32 90 0
rollup "$OUT" "$WORK" # days 32..90, not timed
add_days 91 91 0
step "day 91, 90 days of history" day91; d91=$best
printf 'day 31 / full 30 days: %.3f (target < 0.10); day 91 / day 31: %.2f (target <= 1.30)\n' \
  "$(echo "$d31 / $full30" | bc -l)" "$(echo "$d91 / $d31" | bc -l)"
