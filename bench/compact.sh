#!/usr/bin/env bash
# compact.sh: sluice's compaction beside DuckDB's, same input, same machine,
# same run. Usage: bench/compact.sh [ROWS] [FILES]   (default 20000000 4000)
#
# Generates ROWS rows in FILES small Parquet files over 10 day partitions
# (Hive layout, zstd and snappy, written by DuckDB) once into
# bench/.data/in-ROWS-FILES, then times:
#   floor   cat of every input > /dev/null, and dd of the sluice output size
#   duckdb  one COPY per partition, zstd (bench/duckcompact.mjs)
#   sluice  `sluice compact` of a table that adopted the same files in place
#           (`sluice import OUT --from IN`, not timed), NumCPU workers
# with /usr/bin/time -v for peak RSS and CPU time, in RUNS rounds (default
# 3) that interleave the two engines, so a busy machine slows both alike;
# each engine's fastest round is reported, with its peak RSS over all
# rounds. Checks both outputs against the input with tools/duckrows.mjs
# (row count and order-independent checksum), and prints seconds, output
# bytes, peak RSS, CPU seconds and the sluice/DuckDB ratios.
# CGO=0 builds sluice without cgo (zstd by klauspost/compress, pure Go).
# NESTED=1 adds a struct of three fields and a list<string> column beside
# the flat ones (see bench/gen-small-files.mjs), in a data set of its own.
# DELTA=1 adds a third engine to each round:
#   delta   `sluice compact` of a Delta table of the same files in place
#           (hard links to them, a log written by bench/delta-log.mjs as a
#           stream would have left it, one commit per 100 files; not
#           timed), committed as OPTIMIZE
# checked by tools/deltarows.mjs (the log replayed, DuckDB reading the
# files) before and after, and reported against sluice's own table and
# DuckDB.
# ICEBERG=1 adds two more engines to each round, each on an Iceberg table
# of its own in a SQLite catalog (hard links to the same files, registered
# by bench/icebergbench: day(ts) partitions, format 2, added in place with
# iceberg-go's AddFiles, one commit per 100 files, as a stream would have
# left it; not timed):
#   iceberg-go  iceberg-go's own compaction (table/compaction's bin-pack
#               plan, Table.RewriteDataFiles), by `icebergbench rewrite`
#   iceberg     `sluice compact iceberg+sqlite:///...#bench.events`,
#               committed as an Iceberg "replace" snapshot
# both checked after the rounds: the live files of the final snapshot as
# tools/icerows.mjs resolves them (icebird, not iceberg-go), read by
# tools/duckrows.mjs, hold the input's rows (the files' own columns on both
# sides: a Hive folder name would add `date` to the input and `ts_day` to
# the Iceberg files); reported against each other.
# SORT=COLUMN adds a fourth engine to each round:
#   sorted  `sluice compact --sort-by COLUMN` of a table of its own that
#           adopted the same files (as sluice's), its rows sorted by
#           COLUMN within and across each partition's outputs
# checked as sluice's output is, and reported against sluice's unsorted
# compaction (time, target <= 2.00) and --memory (peak RSS); then a point
# query `WHERE COLUMN = PROBE` (an integer; default 4242) runs in DuckDB
# (bench/duckcompact.mjs --probe, 3 rounds) on both outputs: the rows in
# row groups whose min/max admit PROBE (what a reader cannot skip), the
# bytes DuckDB's profiler says it read, and its best and median time.
# MEMORY=SIZE passes --memory SIZE to every sluice compaction (default:
# sluice's, 384MiB).
# SLUICE_CPUPROFILE=FILE writes CPU profiles of the last round's sluice runs
# to FILE.sluice, FILE.delta and FILE.iceberg (go tool pprof -top FILE.delta).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROWS=${1:-20000000}
FILES=${2:-4000}
RUNS=${RUNS:-3}
DATA=bench/.data
NESTED=${NESTED:-0}
IN=$DATA/in-$ROWS-$FILES
[ "$NESTED" = 1 ] && IN=$IN-nested
OUT_DUCK=$DATA/out-duckdb
OUT_SLUICE=$DATA/out-sluice
OUT_DELTA=$DATA/out-delta
DELTA=${DELTA:-0}
ICEBERG=${ICEBERG:-0}
OUT_ICEGO=$DATA/out-iceberg-go
OUT_ICE=$DATA/out-iceberg
OUT_SORTED=$DATA/out-sorted
SORT=${SORT:-}
PROBE=${PROBE:-4242}
MEMORY=${MEMORY:-}
mem_flag=(); [ -n "$MEMORY" ] && mem_flag=(--memory "$MEMORY")
SCHEMA='event_id:string,user_id:int64,ts:timestamp,kind:string,country:string?,amount:decimal(12,2)?,score:float64,qty:int32,flag:bool?'
mkdir -p "$DATA"

if [ ! -f "$IN/.done" ]; then
  echo "generating $ROWS rows in $FILES files into $IN ..." >&2
  NESTED=$NESTED node bench/gen-small-files.mjs "$ROWS" "$FILES" "$IN" >/dev/null
  touch "$IN/.done"
fi
build_sluice "$DATA/sluice"
[ "$ICEBERG" = 1 ] && go build -o "$DATA/icebergbench" ./bench/icebergbench


in_bytes=$(du -sb --exclude=.done "$IN" | cut -f1)
sync
# The floor: read every input once, write the output's size once.
t0=$(date +%s.%N); find "$IN" -name '*.parquet' -print0 | xargs -0 cat > /dev/null; t1=$(date +%s.%N)
cat_s=$(echo "$t1 - $t0" | bc)

prof() { [ -n "${SLUICE_CPUPROFILE:-}" ] && echo "--cpuprofile=$SLUICE_CPUPROFILE.$1" || true; }
duck_s= sluice_s= duck_rss= sluice_rss= duck_all= sluice_all= delta_s= delta_rss= delta_all= delta_want=
icego_s= icego_rss= icego_all= ice_s= ice_rss= ice_all=
sorted_s= sorted_rss= sorted_all=
# iceberg_table DIR: a fresh Iceberg table of the input's files (hard links)
# at DIR, in the SQLite catalog DIR.db (not timed).
iceberg_table() {
  rm -rf "$1" "$1.db" "$1.db-wal" "$1.db-shm"
  cp -al "$IN" "$1"
  rm -f "$1/.done"
  "$DATA/icebergbench" register "$1" "$1.db" > /dev/null
}
for round in $(seq "$RUNS"); do
  /usr/bin/time -v -o "$DATA/duck.time" node bench/duckcompact.mjs "$IN" "$OUT_DUCK" > "$DATA/duck.json"
  s=$(json seconds < "$DATA/duck.json"); duck_all="$duck_all $(printf '%.2f' "$s")"
  if better "$s" "$duck_s"; then duck_s=$s; duck_cpu=$(cpu "$DATA/duck.time"); fi
  duck_rss=$(maxrss "$(rss "$DATA/duck.time")" "$duck_rss")

  rm -rf "$OUT_SLUICE"
  "$DATA/sluice" import -q "$OUT_SLUICE" --from "$IN" > /dev/null
  /usr/bin/time -v -o "$DATA/sluice.time" "$DATA/sluice" compact "$OUT_SLUICE" --include-current --min-input-files 1 "${mem_flag[@]}" --json $(prof sluice) > "$DATA/sluice.json"
  s=$(json seconds < "$DATA/sluice.json"); sluice_all="$sluice_all $(printf '%.2f' "$s")"
  if better "$s" "$sluice_s"; then sluice_s=$s; sluice_cpu=$(cpu "$DATA/sluice.time"); fi
  sluice_rss=$(maxrss "$(rss "$DATA/sluice.time")" "$sluice_rss")

  if [ -n "$SORT" ]; then
    rm -rf "$OUT_SORTED"
    "$DATA/sluice" import -q "$OUT_SORTED" --from "$IN" > /dev/null
    /usr/bin/time -v -o "$DATA/sorted.time" "$DATA/sluice" compact "$OUT_SORTED" --include-current --min-input-files 1 --sort-by "$SORT" "${mem_flag[@]}" --json $(prof sorted) > "$DATA/sorted.json"
    s=$(json seconds < "$DATA/sorted.json"); sorted_all="$sorted_all $(printf '%.2f' "$s")"
    if better "$s" "$sorted_s"; then sorted_s=$s; sorted_cpu=$(cpu "$DATA/sorted.time"); fi
    sorted_rss=$(maxrss "$(rss "$DATA/sorted.time")" "$sorted_rss")
  fi

  if [ "$DELTA" = 1 ]; then
    rm -rf "$OUT_DELTA"
    cp -al "$IN" "$OUT_DELTA"
    rm -f "$OUT_DELTA/.done"
    node bench/delta-log.mjs "$OUT_DELTA" > /dev/null
    [ -n "$delta_want" ] || delta_want=$(node tools/deltarows.mjs "$OUT_DELTA" | json checksum)
    /usr/bin/time -v -o "$DATA/delta.time" "$DATA/sluice" compact "$OUT_DELTA" --include-current --min-input-files 1 --json $(prof delta) > "$DATA/delta.json"
    s=$(json seconds < "$DATA/delta.json"); delta_all="$delta_all $(printf '%.2f' "$s")"
    if better "$s" "$delta_s"; then delta_s=$s; delta_cpu=$(cpu "$DATA/delta.time"); fi
    delta_rss=$(maxrss "$(rss "$DATA/delta.time")" "$delta_rss")
  fi

  if [ "$ICEBERG" = 1 ]; then
    iceberg_table "$OUT_ICEGO"
    /usr/bin/time -v -o "$DATA/icego.time" "$DATA/icebergbench" rewrite "$OUT_ICEGO.db" > "$DATA/icego.json"
    s=$(json seconds < "$DATA/icego.json"); icego_all="$icego_all $(printf '%.2f' "$s")"
    if better "$s" "$icego_s"; then icego_s=$s; icego_cpu=$(cpu "$DATA/icego.time"); fi
    icego_rss=$(maxrss "$(rss "$DATA/icego.time")" "$icego_rss")

    iceberg_table "$OUT_ICE"
    /usr/bin/time -v -o "$DATA/ice.time" "$DATA/sluice" compact "iceberg+sqlite://$PWD/$OUT_ICE.db#bench.events" --include-current --min-input-files 1 --json $(prof iceberg) > "$DATA/ice.json"
    s=$(json seconds < "$DATA/ice.json"); ice_all="$ice_all $(printf '%.2f' "$s")"
    if better "$s" "$ice_s"; then ice_s=$s; ice_cpu=$(cpu "$DATA/ice.time"); fi
    ice_rss=$(maxrss "$(rss "$DATA/ice.time")" "$ice_rss")
  fi
done
duck_b=$(du -sb "$OUT_DUCK" | cut -f1)
sluice_b=$(json bytes_out < "$DATA/sluice.json")

t0=$(date +%s.%N); dd if=/dev/zero of="$DATA/dd.out" bs=1M count=$(( (sluice_b + 1048575) / 1048576 )) conv=fsync status=none; t1=$(date +%s.%N)
dd_s=$(echo "$t1 - $t0" | bc); rm -f "$DATA/dd.out"

# Same rows in, same rows out, through an independent reader.
want=$(node tools/duckrows.mjs --hive "$IN/*/*.parquet" | json checksum)
got_duck=$(node tools/duckrows.mjs --hive "$OUT_DUCK/*/*.parquet" | json checksum)
got_sluice=$("$DATA/sluice" files "$OUT_SLUICE" | node tools/duckrows.mjs --hive --list - | json checksum)
[ "$want" = "$got_sluice" ] || { echo "sluice output differs from the input ($got_sluice != $want)" >&2; exit 1; }
if [ -n "$SORT" ]; then
  got_sorted=$("$DATA/sluice" files "$OUT_SORTED" | node tools/duckrows.mjs --hive --list - | json checksum)
  [ "$want" = "$got_sorted" ] || { echo "sorted sluice output differs from the input ($got_sorted != $want)" >&2; exit 1; }
  sorted_b=$(json bytes_out < "$DATA/sorted.json")
  "$DATA/sluice" files "$OUT_SLUICE" | node bench/duckcompact.mjs --probe - "$SORT" "$PROBE" 3 > "$DATA/probe-unsorted.json"
  "$DATA/sluice" files "$OUT_SORTED" | node bench/duckcompact.mjs --probe - "$SORT" "$PROBE" 3 > "$DATA/probe-sorted.json"
fi
[ "$want" = "$got_duck" ] || echo "warning: DuckDB output checksum differs ($got_duck != $want)" >&2
if [ "$DELTA" = 1 ]; then
  got_delta=$(node tools/deltarows.mjs "$OUT_DELTA" | json checksum)
  [ "$delta_want" = "$got_delta" ] || { echo "the compacted Delta table differs from the table before ($got_delta != $delta_want)" >&2; exit 1; }
  delta_b=$(json bytes_out < "$DATA/delta.json")
fi
# iceberg_rows DIR: rows and checksum (the files' own columns) of the live
# data files of the current snapshot of the table at DIR, as icebird
# resolves them from the catalog's metadata file (in DIR.icerows.json).
iceberg_rows() {
  node tools/icerows.mjs --files-only "$("$DATA/icebergbench" metadata "$1.db")" > "$1.icerows.json"
  node -e 'for (const p of JSON.parse(require("fs").readFileSync(0, "utf8")).paths) console.log(p.replace(/^file:\/\//, ""))' < "$1.icerows.json" |
    node tools/duckrows.mjs --list -
}
if [ "$ICEBERG" = 1 ]; then
  ice_want=$(node tools/duckrows.mjs "$IN/*/*.parquet")
  for t in "$OUT_ICEGO" "$OUT_ICE"; do
    got=$(iceberg_rows "$t")
    op=$(json operation < "$t.icerows.json")
    [ "$op" = replace ] || { echo "the current snapshot of the Iceberg table $t is a \"$op\", not the compaction's \"replace\"" >&2; exit 1; }
    [ "$(json checksum <<< "$got")" = "$(json checksum <<< "$ice_want")" ] && [ "$(json rows <<< "$got")" = "$(json rows <<< "$ice_want")" ] ||
      { echo "the compacted Iceberg table $t differs from the input ($got != $ice_want)" >&2; exit 1; }
  done
  icego_b=$(json bytes_out < "$DATA/icego.json")
  ice_b=$(json bytes_out < "$DATA/ice.json")
fi

printf '\n%s rows, %s files, %s input bytes, %s CPUs, best of %s rounds%s\n' "$ROWS" "$FILES" "$in_bytes" "$(nproc)" "$RUNS" \
  "$([ "$NESTED" = 1 ] && echo ', with nested columns (a struct of three fields, a list<string>)')"
printf 'sluice build: %s\n' "$SLUICE_BUILD"
W=8; [ "$ICEBERG" = 1 ] && W=10
printf '%-*s %10s %14s %12s %8s  %s\n' $W engine seconds out_bytes peak_rss_kb cpu_s every_round_s
printf '%-*s %10.3f %14s %12s %8s\n' $W floor "$(echo "$cat_s + $dd_s" | bc)" "-" "-" "-"
printf '%-*s %10.3f %14s %12s %8s %s\n' $W duckdb "$duck_s" "$duck_b" "$duck_rss" "$duck_cpu" "$duck_all"
printf '%-*s %10.3f %14s %12s %8s %s\n' $W sluice "$sluice_s" "$sluice_b" "$sluice_rss" "$sluice_cpu" "$sluice_all"
[ "$DELTA" = 1 ] && printf '%-*s %10.3f %14s %12s %8s %s\n' $W delta "$delta_s" "$delta_b" "$delta_rss" "$delta_cpu" "$delta_all"
if [ "$ICEBERG" = 1 ]; then
  printf '%-*s %10.3f %14s %12s %8s %s\n' $W iceberg-go "$icego_s" "$icego_b" "$icego_rss" "$icego_cpu" "$icego_all"
  printf '%-*s %10.3f %14s %12s %8s %s\n' $W iceberg "$ice_s" "$ice_b" "$ice_rss" "$ice_cpu" "$ice_all"
fi
if [ -n "$SORT" ]; then
  printf '%-*s %10.3f %14s %12s %8s %s\n' $W sorted "$sorted_s" "$sorted_b" "$sorted_rss" "$sorted_cpu" "$sorted_all"
fi
printf 'sluice/duckdb: time %.2f (target <= 0.80), bytes %.3f (target <= 1.05), RSS %.2f, CPU %.2f\n' \
  "$(echo "$sluice_s / $duck_s" | bc -l)" "$(echo "$sluice_b / $duck_b" | bc -l)" "$(echo "$sluice_rss / $duck_rss" | bc -l)" "$(echo "$sluice_cpu / $duck_cpu" | bc -l)"
if [ "$DELTA" = 1 ]; then
  printf 'delta/sluice: time %.2f (target <= 1.10), RSS %.2f; delta/duckdb: time %.2f (target <= 0.50), RSS %.2f\n' \
    "$(echo "$delta_s / $sluice_s" | bc -l)" "$(echo "$delta_rss / $sluice_rss" | bc -l)" "$(echo "$delta_s / $duck_s" | bc -l)" "$(echo "$delta_rss / $duck_rss" | bc -l)"
fi
if [ "$ICEBERG" = 1 ]; then
  printf 'iceberg(sluice)/iceberg-go: time %.2f (target <= 0.30; medians %.2f), RSS %.2f, bytes %.3f, CPU %.2f\n' \
    "$(echo "$ice_s / $icego_s" | bc -l)" "$(echo "$(median $ice_all) / $(median $icego_all)" | bc -l)" \
    "$(echo "$ice_rss / $icego_rss" | bc -l)" "$(echo "$ice_b / $icego_b" | bc -l)" "$(echo "$ice_cpu / $icego_cpu" | bc -l)"
fi
if [ -n "$SORT" ]; then
  printf 'sorted/sluice: time %.2f (target <= 2.00; medians %.2f), RSS %.2f, bytes %.3f; sorted peak RSS %s kB for --memory %s\n' \
    "$(echo "$sorted_s / $sluice_s" | bc -l)" "$(echo "$(median $sorted_all) / $(median $sluice_all)" | bc -l)" \
    "$(echo "$sorted_rss / $sluice_rss" | bc -l)" "$(echo "$sorted_b / $sluice_b" | bc -l)" "$sorted_rss" "${MEMORY:-384MiB}"
  for v in unsorted sorted; do
    p=$DATA/probe-$v.json
    printf 'WHERE %s = %s, %-8s rows %s; row groups kept %s of %s (%s rows); DuckDB bytes read %s; best %.4f s, median %.4f s\n' "$SORT" "$PROBE" "$v:" \
      "$(json rows < "$p")" "$(json row_groups_kept < "$p")" "$(json row_groups < "$p")" "$(json rows_kept < "$p")" "$(json bytes_read < "$p")" "$(json best_s < "$p")" "$(json median_s < "$p")"
  done
fi
printf '(floor: cat %.3f s + dd %.3f s; cpu_s: user+sys of the fastest round'"'"'s process, node'"'"'s start included for DuckDB)\n' "$cat_s" "$dd_s"
