#!/usr/bin/env bash
# kafka.sh: `sluice ingest` from Kafka beside `sluice ingest` from landing
# files, same records, same machine, same run, with a bare franz-go consume
# loop over the same topic as the floor.
# Usage: bench/kafka.sh [RECORDS] [FILES]   (default 2000000 20)
#
# Generates RECORDS JSON lines records in FILES landing files (bench/genjsonl,
# deterministic; SHAPE=flat or the default events, see bench/jsonl-data.sh)
# once into bench/.data/jsonl-SHAPE-RECORDS-FILES, shared with
# bench/ingest.sh, starts an in-process kfake broker on loopback
# (bench/kafkabench broker), produces every line as one record onto topic
# `events` (PARTITIONS partitions, default 12, COMPRESSION batches, default
# lz4, as producers usually ship them, so the consumers pay the
# decompression a real topic costs) and the first FILES/2 files onto
# `events-half`, then times, in RUNS rounds (default 3), with
# /usr/bin/time -v for peak RSS and CPU time:
#   floor         `kafkabench consume`: franz-go reading every partition
#                 directly from start to the end offsets listed at start,
#                 read_committed, counting records and bytes
#   sluice kafka  `sluice ingest T --from kafka://ADDR/events --json`
#   sluice files  `sluice ingest T --from bench/.data/jsonl-... --json`
#   sluice half   the Kafka run over `events-half`, for peak RSS as the run
#                 doubles
# into tables made by `sluice init` (not timed), partitioned by
# day(event_time). Each path's fastest round is reported (the rounds
# interleave the paths, so a busy machine slows all of them alike), with
# the peak RSS over all rounds and the broker's CPU time during the sluice
# Kafka runs. Reports kafka/files wall and CPU ratios, and the bound:
# the Kafka run's process CPU beyond the files run's is at most the floor's
# CPU (consuming costs sluice no more than a bare consumer); the wall
# ratio is reported, not bounded: on 2 CPUs shared with an in-process
# broker it measures the broker as much as sluice.
# Checks that both full tables hold RECORDS rows with the
# same order-independent checksum (tools/duckrows.mjs), that the floor read
# RECORDS records and the half run wrote the half's rows; exits 1 if not.
# The broker runs beside sluice on the same CPUs; its peak RSS (kfake keeps
# the topics in memory) is printed apart. The landing files are in the page
# cache after producing, so the files path reads from memory, as the Kafka
# path does.
# SLUICE_CPUPROFILE=PREFIX writes CPU profiles PREFIX.kafka and PREFIX.files
# of the two full-size sluice runs (the last round's).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RECORDS=${1:-2000000}
FILES=${2:-20}
PARTITIONS=${PARTITIONS:-12}
COMPRESSION=${COMPRESSION:-lz4}
RUNS=${RUNS:-3}
DATA=bench/.data
OUT_KAFKA=$DATA/kafka-table-kafka
OUT_FILES=$DATA/kafka-table-files
OUT_HALF=$DATA/kafka-table-half
ADDRFILE=$DATA/kafka.addr
. bench/jsonl-data.sh   # sets IN and HALF
build_sluice "$DATA/sluice"
go build -o "$DATA/kafkabench" ./bench/kafkabench

# The broker, stopped on any exit.
start_broker "$ADDRFILE" "$DATA/kafka-broker.log"

echo "producing $RECORDS records onto $PARTITIONS partitions ($COMPRESSION) at $addr ..." >&2
"$DATA/kafkabench" produce -partitions "$PARTITIONS" -compression "$COMPRESSION" "$addr" events "$IN" > "$DATA/kafka-produce.json"
"$DATA/kafkabench" produce -partitions "$PARTITIONS" -compression "$COMPRESSION" "$addr" events-half "$HALF" > "$DATA/kafka-produce-half.json"
produced=$(json records < "$DATA/kafka-produce.json")
sync

# The rounds: floor, half, kafka, files. The broker's CPU time during each
# sluice Kafka run is read from /proc: it competes with sluice for the
# same CPUs.
ingest() { # ingest SOURCE OUT NAME [extra flags]
  local src=$1 out=$2 name=$3; shift 3
  rm -rf "$out" "${out}_quarantine"
  "$DATA/sluice" init "$out" --schema "$SCHEMA" --partition-by 'day(event_time)' > /dev/null
  /usr/bin/time -v -o "$DATA/kafka-$name.time" "$DATA/sluice" ingest "$out" --from "$src" --json "$@" > "$DATA/kafka-$name.json"
}
prof() { [ -n "${SLUICE_CPUPROFILE:-}" ] && echo "--cpuprofile=$SLUICE_CPUPROFILE.$1" || true; }
broker_ticks() { awk '{print $14 + $15}' "/proc/$broker/stat"; }
tck=$(getconf CLK_TCK)
for r in $(seq "$RUNS"); do
  echo "round $r of $RUNS ..." >&2
  /usr/bin/time -v -o "$DATA/kafka-floor-$r.time" "$DATA/kafkabench" consume "$addr" events > "$DATA/kafka-floor-$r.json"
  t0=$(broker_ticks); ingest "kafka://$addr/events-half" "$OUT_HALF" "half-$r"
  printf "%.2f\n" "$(echo "($(broker_ticks) - $t0) / $tck" | bc -l)" > "$DATA/kafka-half-$r.broker"
  # shellcheck disable=SC2046 # prof prints one word or none
  t0=$(broker_ticks); ingest "kafka://$addr/events" "$OUT_KAFKA" "kafka-$r" $(prof kafka)
  printf "%.2f\n" "$(echo "($(broker_ticks) - $t0) / $tck" | bc -l)" > "$DATA/kafka-kafka-$r.broker"
  # shellcheck disable=SC2046
  ingest "$IN" "$OUT_FILES" "files-$r" $(prof files)
done
broker_rss=$(awk '/VmHWM/ {print $2}' "/proc/$broker/status")

# Same rows through both paths: counts in every round, and a checksum over
# every column of the last round's tables.
fail=0
half_records=$(cat "$HALF"/*.jsonl | wc -l)
[ "$produced" = "$RECORDS" ] || { echo "produced $produced records, not $RECORDS" >&2; fail=1; }
for r in $(seq "$RUNS"); do
  for v in "floor records" "kafka rows_written" "files rows_written" "half rows_written"; do
    read -r name key <<< "$v"
    want=$RECORDS; [ "$name" = half ] && want=$half_records
    got=$(json "$key" < "$DATA/kafka-$name-$r.json")
    [ "$got" = "$want" ] || { echo "round $r: $name counted $got records, not $want" >&2; fail=1; }
  done
done
"$DATA/sluice" files "$OUT_KAFKA" | node tools/duckrows.mjs --list - > "$DATA/kafka-check-kafka.json"
"$DATA/sluice" files "$OUT_FILES" | node tools/duckrows.mjs --list - > "$DATA/kafka-check-files.json"
ck=$(json checksum < "$DATA/kafka-check-kafka.json"); cf=$(json checksum < "$DATA/kafka-check-files.json")
rk=$(json rows < "$DATA/kafka-check-kafka.json"); rf=$(json rows < "$DATA/kafka-check-files.json")
[ "$rk" = "$RECORDS" ] && [ "$rf" = "$RECORDS" ] || { echo "tables read back $rk (kafka) and $rf (files) rows, not $RECORDS" >&2; fail=1; }
[ "$ck" = "$cf" ] || { echo "checksums differ: kafka table $ck, files table $cf" >&2; fail=1; }

declare -A S B R C N W P
for name in floor kafka files half; do
  best=; all=; R[$name]=0
  for r in $(seq "$RUNS"); do
    s=$(json seconds < "$DATA/kafka-$name-$r.json"); all="$all $(printf '%.2f' "$s")"
    m=$(rss "$DATA/kafka-$name-$r.time"); [ "$m" -gt "${R[$name]}" ] && R[$name]=$m
    if [ -z "$best" ] || [ "$(echo "$s < ${S[$name]}" | bc)" = 1 ]; then best=$r; S[$name]=$s; fi
  done
  W[$name]=$all
  C[$name]=$(cpu "$DATA/kafka-$name-$best.time"); P[$name]=${C[$name]}
  if [ "$name" = floor ]; then
    N[$name]=$(json records < "$DATA/kafka-floor-$best.json"); B[$name]=$(json bytes < "$DATA/kafka-floor-$best.json")
  else
    N[$name]=$(json rows_written < "$DATA/kafka-$name-$best.json"); B[$name]=$(json bytes_in < "$DATA/kafka-$name-$best.json")
  fi
  [ -f "$DATA/kafka-$name-$best.broker" ] && C[$name]="${C[$name]} +$(cat "$DATA/kafka-$name-$best.broker")"
done
printf '\n%s %s records, %s files, %s partitions, %s batches, %s CPUs, best of %s rounds\n' "$RECORDS" "$SHAPE" "$FILES" "$PARTITIONS" "$COMPRESSION" "$(nproc)" "$RUNS"
printf 'sluice build: %s\n' "$SLUICE_BUILD"
printf '%-14s %9s %12s %8s %12s %14s  %s\n' path seconds records/s MB/s peak_rss_kb cpu_s+broker every_round_s
for name in floor kafka files half; do
  label=$name; [ "$name" = floor ] || label="sluice $name"
  printf '%-14s %9.3f %12.0f %8.1f %12s %14s %s\n' "$label" "${S[$name]}" "$(echo "${N[$name]} / ${S[$name]}" | bc -l)" \
    "$(echo "${B[$name]} / ${S[$name]} / 1000000" | bc -l)" "${R[$name]}" "${C[$name]}" "${W[$name]}"
done
printf '(MB/s over the bytes read: record values for Kafka, file bytes with newlines for files;\n'
printf ' cpu_s: user+sys of the process, +broker CPU in the same run; broker peak RSS %s kB, not included)\n' "$broker_rss"
printf 'kafka/files time %.2f, CPU %.2f (process CPU, broker apart); floor/kafka time %.2f\n' \
  "$(echo "${S[kafka]} / ${S[files]}" | bc -l)" "$(echo "${P[kafka]} / ${P[files]}" | bc -l)" "$(echo "${S[floor]} / ${S[kafka]}" | bc -l)"
# The bound: what consuming adds to sluice's CPU (the Kafka run's beyond
# the files run's, same records) is no more than a bare consumer's CPU.
extra=$(echo "${P[kafka]} - ${P[files]}" | bc -l)
printf 'kafka CPU beyond files %.2f s, floor (bare franz-go consumer) CPU %.2f s: ratio %.2f (bound <= 1: %s)\n' \
  "$extra" "${P[floor]}" "$(echo "$extra / ${P[floor]}" | bc -l)" "$([ "$(echo "$extra <= ${P[floor]}" | bc)" = 1 ] && echo met || echo MISSED)"
printf 'sluice kafka peak RSS full/half (%s/%s records): %.2f; kafka/files peak RSS %.2f\n' "$RECORDS" "$half_records" \
  "$(echo "${R[kafka]} / ${R[half]}" | bc -l)" "$(echo "${R[kafka]} / ${R[files]}" | bc -l)"
printf 'check: rows %s (kafka) = %s (files) = %s; checksum over all columns %s\n' "$rk" "$rf" "$RECORDS" "$([ "$ck" = "$cf" ] && echo equal || echo DIFFERS)"
exit $fail
