#!/usr/bin/env bash
# ingest.sh: sluice's JSON lines ingest beside DuckDB's read_json -> Parquet,
# same input, same machine, same run.
# Usage: bench/ingest.sh [RECORDS] [FILES]   (default 10000000 100)
#
# Generates RECORDS JSON lines records in FILES landing files over 10 days
# (bench/genjsonl, deterministic) once into
# bench/.data/jsonl-SHAPE-RECORDS-FILES, then times, with /usr/bin/time -v
# for peak RSS:
#   duckdb  read_json with explicit column types -> zstd Parquet
#           (bench/duckjson.mjs), three ways: single (one unpartitioned
#           COPY), partitioned (COPY ... PARTITION_BY day), perday (load once
#           into a table, one COPY per day); the fastest (by median) is the
#           peer, and the faster of the two partitioned ones is reported
#           beside it: they write the partitioned table sluice does. And
#           single-text, reported beside the peer but never the peer:
#           single with the uuid columns stored as text, as sluice stores
#           them (DuckDB's UUID is 16 bytes, which zstd does not work on);
#           and partitioned-text, partitioned with the uuid columns as text:
#           the same table sluice writes, column for column
#   sluice  `sluice ingest T --from IN --json` into a table made by
#           `sluice init` (not timed), partitioned by day(event_time)
#   sluice  the same on the first RECORDS/2 records (FILES/2 files, a copy of
#           the first half's files) for peak RSS as the run doubles
# in RUNS rounds (default 3) that interleave the runs, so that a busy
# machine slows all of them alike; each run's fastest round and median
# round are reported, with the median of its CPU seconds, and peak RSS
# over all rounds. Ratios are given of both; on a shared machine a single
# round can be off by a third either way, and the median is the steadier.
# Checks sluice's table against DuckDB's output with tools/duckrows.mjs: row
# counts always; checksums over the columns whose types match (sluice stores
# uuid as VARCHAR and timestamp as TIMESTAMPTZ, DuckDB as UUID and TIMESTAMP),
# and over the uuid columns against DuckDB's single-text run, which keeps
# them as the text both read.
# SHAPE=flat times the five-field records without escapes instead of the
# default events (escaped payload strings, user agents, quoted and
# non-ASCII text, a nested object and an array; see bench/jsonl-data.sh).
# SLUICE_CPUPROFILE=FILE writes a CPU profile of the full-size sluice run.
# CGO=0 builds sluice without cgo (zstd by klauspost/compress, pure Go).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RECORDS=${1:-10000000}
FILES=${2:-100}
RUNS=${RUNS:-3}
DATA=bench/.data
OUT_DUCK=$DATA/ingest-duckdb
OUT_SLUICE=$DATA/ingest-sluice
OUT_HALF=$DATA/ingest-sluice-half
. bench/jsonl-data.sh   # sets IN and HALF
build_sluice "$DATA/sluice"

half_records=$(cat "$HALF"/*.jsonl | wc -l)

in_bytes=$(du -sb --exclude=.done "$IN" | cut -f1)
half_bytes=$(du -sbL --exclude=.done "$HALF" | cut -f1)
sync

ingest() { # ingest IN OUT TIMEFILE JSONFILE [extra flags]
  local in=$1 out=$2 tf=$3 jf=$4; shift 4
  rm -rf "$out"
  "$DATA/sluice" init "$out" --schema "$SCHEMA" --partition-by 'day(event_time)' > /dev/null
  /usr/bin/time -v -o "$tf" "$DATA/sluice" ingest "$out" --from "$in" --json "$@" > "$jf"
}
prof=()
[ -n "${SLUICE_CPUPROFILE:-}" ] && prof=(--cpuprofile "$SLUICE_CPUPROFILE")

# DuckDB's modes (see bench/duckjson.mjs); the first three compete for
# the peer, the text ones are reported beside it.
DUCK_MODES="single partitioned perday single-text partitioned-text"

# The rounds: DuckDB three ways (the fastest is the peer), sluice on the
# half, sluice on the whole.
for round in $(seq "$RUNS"); do
  for mode in $DUCK_MODES; do
    /usr/bin/time -v -o "$DATA/duck-$mode.time" node bench/duckjson.mjs "$IN" "$OUT_DUCK-$mode" "$mode" "$SCHEMA" > "$DATA/duck-$mode.json"
    s=$(json seconds < "$DATA/duck-$mode.json")
    eval "prev=\${duck_s_${mode//-/_}:-}; prss=\${duck_rss_${mode//-/_}:-}"
    eval "duck_all_${mode//-/_}=\"\${duck_all_${mode//-/_}:-} $(printf '%.2f' "$s")\"; duck_rss_${mode//-/_}=$(maxrss "$(rss "$DATA/duck-$mode.time")" "$prss")"
    eval "duck_secs_${mode//-/_}=\"\${duck_secs_${mode//-/_}:-} $s\"; duck_cpus_${mode//-/_}=\"\${duck_cpus_${mode//-/_}:-} $(cpu "$DATA/duck-$mode.time")\""
    if better "$s" "$prev"; then
      eval "duck_s_${mode//-/_}=$s; duck_b_${mode//-/_}=$(du -sb "$OUT_DUCK-$mode" | cut -f1); duck_cpu_${mode//-/_}=$(cpu "$DATA/duck-$mode.time"); duck_rows_${mode//-/_}=$(json rows < "$DATA/duck-$mode.json")"
    fi
  done
  ingest "$HALF" "$OUT_HALF" "$DATA/sluice-half.time" "$DATA/sluice-half.json"
  s=$(json seconds < "$DATA/sluice-half.json")
  half_rss=$(maxrss "$(rss "$DATA/sluice-half.time")" "${half_rss:-}")
  if better "$s" "${half_s:-}"; then half_s=$s; half_rows=$(json rows_written < "$DATA/sluice-half.json"); fi
  ingest "$IN" "$OUT_SLUICE" "$DATA/sluice.time" "$DATA/sluice.json" "${prof[@]}"
  s=$(json seconds < "$DATA/sluice.json"); sluice_all="${sluice_all:-} $(printf '%.2f' "$s")"
  sluice_secs="${sluice_secs:-} $s"; sluice_cpus="${sluice_cpus:-} $(cpu "$DATA/sluice.time")"
  sluice_rss=$(maxrss "$(rss "$DATA/sluice.time")" "${sluice_rss:-}")
  if better "$s" "${sluice_s:-}"; then sluice_s=$s; sluice_cpu=$(cpu "$DATA/sluice.time"); fi
done
# Medians over the rounds, beside the fastest round: on a shared machine
# one round can be far off either way, and the median is the steadier.
for mode in $DUCK_MODES; do
  eval "secs=\$duck_secs_${mode//-/_}; cpus=\$duck_cpus_${mode//-/_}"
  # shellcheck disable=SC2086 # the lists split into their numbers
  eval "med_s_${mode//-/_}=$(median $secs); med_cpu_${mode//-/_}=$(median $cpus)"
done
# shellcheck disable=SC2086
sluice_med=$(median $sluice_secs); sluice_med_cpu=$(median $sluice_cpus)
# The peer is DuckDB's fastest mode by median; bestp its fastest mode that
# writes a partitioned table, as sluice does.
best= bestp=
for mode in single partitioned perday; do
  eval "s=\$med_s_${mode//-/_}"
  if [ -z "$best" ] || [ "$(echo "$s < $best_s" | bc)" = 1 ]; then best=$mode; best_s=$s; fi
  if [ "$mode" != single ] && { [ -z "$bestp" ] || [ "$(echo "$s < $bestp_s" | bc)" = 1 ]; }; then bestp=$mode; bestp_s=$s; fi
done
eval "duck_b=\$duck_b_$best; duck_rss=\$duck_rss_$best"
sluice_b=$(du -sb "$OUT_SLUICE" | cut -f1)   # the table folder: data files and log
sluice_data_b=$("$DATA/sluice" files "$OUT_SLUICE" | xargs du -cb | tail -1 | cut -f1)
sluice_rows=$(json rows_written < "$DATA/sluice.json")

# Same rows: counts always, checksums over the columns of matching types.
"$DATA/sluice" files "$OUT_SLUICE" | node tools/duckrows.mjs --list - > "$DATA/check-sluice.json"
node tools/duckrows.mjs "$OUT_DUCK-single/data_0.parquet" > "$DATA/check-duck.json"
read -r common < <(node -e '
  const fs=require("fs");
  const a=JSON.parse(fs.readFileSync(process.argv[1])).columns, b=new Set(JSON.parse(fs.readFileSync(process.argv[2])).columns);
  console.log(a.filter(c=>b.has(c)).map(c=>c.slice(0,c.indexOf(":"))).join(","));' "$DATA/check-sluice.json" "$DATA/check-duck.json")
got=$(json rows < "$DATA/check-sluice.json")
want=$(json rows < "$DATA/check-duck.json")
fail=0
[ "$got" = "$RECORDS" ] && [ "$want" = "$RECORDS" ] || { echo "row counts differ: sluice $got, duckdb $want, generated $RECORDS" >&2; fail=1; }
for mode in ${DUCK_MODES#single }; do
  eval "r=\$duck_rows_${mode//-/_}"; [ "$r" = "$RECORDS" ] || { echo "duckdb $mode wrote $r rows, not $RECORDS" >&2; fail=1; }
done
[ "$half_rows" = "$half_records" ] || { echo "half run wrote $half_rows rows, not $half_records" >&2; fail=1; }
if [ -n "$common" ]; then
  cs=$("$DATA/sluice" files "$OUT_SLUICE" | node tools/duckrows.mjs --list - --columns "$common" | json checksum)
  cd_=$(node tools/duckrows.mjs --columns "$common" "$OUT_DUCK-single/data_0.parquet" | json checksum)
  [ "$cs" = "$cd_" ] || { echo "checksums over $common differ: sluice $cs, duckdb $cd_" >&2; fail=1; }
fi
# The uuid columns against DuckDB's text copy of them: DuckDB reads
# sluice's uuid texts back as the texts it read from the JSON.
text_cols=event_id,subscriber_id
ts=$("$DATA/sluice" files "$OUT_SLUICE" | node tools/duckrows.mjs --list - --columns "$text_cols" | json checksum)
td=$(node tools/duckrows.mjs --columns "$text_cols" "$OUT_DUCK-single-text/data_0.parquet" | json checksum)
[ "$ts" = "$td" ] || { echo "checksums over $text_cols differ: sluice $ts, duckdb single-text $td" >&2; fail=1; }

mbs() { echo "$1 / $2 / 1000000" | bc -l; }
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
# times NAME: "time B (fastest rounds), M (medians), CPU C (medians)" of
# sluice against DuckDB's mode NAME.
times() {
  eval "local s=\$duck_s_${1//-/_} m=\$med_s_${1//-/_} c=\$med_cpu_${1//-/_}"
  printf 'time %s (fastest rounds), %s (medians), CPU %s (medians)' "$(ratio "$sluice_s" "$s")" "$(ratio "$sluice_med" "$m")" "$(ratio "$sluice_med_cpu" "$c")"
}
printf '\n%s %s records, %s files, %s input bytes, %s CPUs, %s rounds\n' "$RECORDS" "$SHAPE" "$FILES" "$in_bytes" "$(nproc)" "$RUNS"
printf 'sluice build: %s\n' "$SLUICE_BUILD"
printf '%-24s %8s %8s %12s %9s %14s %12s %8s  %s\n' engine best_s median_s records/s MB/s out_bytes peak_rss_kb cpu_s every_round_s
for mode in $DUCK_MODES; do
  eval "s=\$duck_s_${mode//-/_}; md=\$med_s_${mode//-/_}; b=\$duck_b_${mode//-/_}; m=\$duck_rss_${mode//-/_}; c=\$med_cpu_${mode//-/_}; all=\$duck_all_${mode//-/_}"
  mark=; [ "$mode" = "$best" ] && mark='*'
  printf '%-24s %8.3f %8.3f %12.0f %9.1f %14s %12s %8s %s\n' "duckdb $mode$mark" "$s" "$md" "$(echo "$RECORDS / $md" | bc -l)" "$(mbs "$in_bytes" "$md")" "$b" "$m" "$c" "$all"
done
printf '%-24s %8.3f %8.3f %12.0f %9.1f %14s %12s %8s %s\n' "sluice" "$sluice_s" "$sluice_med" "$(echo "$RECORDS / $sluice_med" | bc -l)" "$(mbs "$in_bytes" "$sluice_med")" "$sluice_b" "$sluice_rss" "$sluice_med_cpu" "$sluice_all"
printf '%-24s %8.3f %8s %12.0f %9.1f %14s %12s\n' "sluice half" "$half_s" - "$(echo "$half_records / $half_s" | bc -l)" "$(mbs "$half_bytes" "$half_s")" "$(du -sb "$OUT_HALF" | cut -f1)" "$half_rss"
printf '(* the peer: DuckDB'"'"'s fastest mode by median; records/s and MB/s of the medians; sluice out_bytes is the table\n folder, %s of it data files; cpu_s: user+sys of a round'"'"'s process, the median, node'"'"'s start included for DuckDB)\n' "$sluice_data_b"
printf 'sluice/duckdb(%s): %s, bytes %.3f, RSS %.2f\n' "$best" "$(times "$best")" "$(echo "$sluice_b / $duck_b" | bc -l)" "$(echo "$sluice_rss / $duck_rss" | bc -l)"
eval "p_b=\$duck_b_$bestp; p_rss=\$duck_rss_$bestp"
printf 'sluice/duckdb(%s, fastest partitioned): %s, bytes %.3f, RSS %.2f\n' "$bestp" "$(times "$bestp")" "$(echo "$sluice_b / $p_b" | bc -l)" "$(echo "$sluice_rss / $p_rss" | bc -l)"
printf 'sluice/duckdb(single-text, uuid stored as text by both): %s, bytes %.3f\n' "$(times single-text)" "$(echo "$sluice_b / $duck_b_single_text" | bc -l)"
printf 'sluice/duckdb(partitioned-text, the same table: by day, uuid as text): %s, bytes %.3f, RSS %.2f\n' \
  "$(times partitioned-text)" "$(echo "$sluice_b / $duck_b_partitioned_text" | bc -l)" "$(echo "$sluice_rss / $duck_rss_partitioned_text" | bc -l)"
printf 'sluice RSS full/half (%s/%s records): %.2f\n' "$RECORDS" "$half_records" "$(echo "$sluice_rss / $half_rss" | bc -l)"
if [ -n "$common" ]; then
  printf 'check: rows %s = %s; checksum over %s (types match) %s\n' "$got" "$want" "$common" "$([ "$cs" = "$cd_" ] && echo equal || echo DIFFERS)"
else
  printf 'check: rows %s = %s; no column types match, checksums not compared\n' "$got" "$want"
fi
printf 'check: checksum over %s against duckdb single-text %s\n' "$text_cols" "$([ "$ts" = "$td" ] && echo equal || echo DIFFERS)"
printf 'types: sluice %s\n       duckdb %s\n' "$(json columns < "$DATA/check-sluice.json")" "$(json columns < "$DATA/check-duck.json")"
exit $fail
