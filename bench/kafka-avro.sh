#!/usr/bin/env bash
# kafka-avro.sh: `sluice ingest` of Avro records through a Schema Registry
# beside a bare franz-go consume + hamba/avro decode loop over the same
# records, same machine, same run.
# Usage: bench/kafka-avro.sh [RECORDS] [FILES]   (default 2000000 20)
#
# The benchmark's events (bench/genjsonl, SHAPE events, shared with
# bench/ingest.sh and bench/kafka.sh) are produced as Avro records in the
# Confluent wire format (franz-go's Serde; bench/kafkabench's
# avroEventSchema: uuids and a timestamp-micros as logical types, the
# context a nested record with a nested record and a nullable long, the
# tags an array, the escaped payload and user agent as strings) onto
# topic `events-avro` (PARTITIONS, default 12, COMPRESSION batches,
# default lz4) of an in-process kfake broker, the schema registered in
# franz-go's in-memory registry (srfake); then, in RUNS rounds (default
# 3), timed with /usr/bin/time -v:
#   consume   `kafkabench consume`: franz-go reading every partition, no
#             decoding (what the broker and the client cost)
#   decode    `kafkabench consume -avro`: the same, each payload decoded
#             by hamba/avro into generic values, the schema fetched once:
#             the bare loop sluice is measured against
#   sluice    `sluice ingest T --from kafka://.../events-avro
#             --schema-registry URL` into a table made by `sluice init
#             --schema-from-registry events-avro-value` (not timed),
#             partitioned by day(event_time)
# Reports each path's fastest round with peak RSS and CPU (user+sys), and
# the bound: sluice's CPU per record at most 1.5 times the decode loop's.
# Checks the loops read RECORDS records and the table holds RECORDS rows
# (DuckDB, tools/duckrows.mjs); exits 1 if not.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RECORDS=${1:-2000000}
FILES=${2:-20}
PARTITIONS=${PARTITIONS:-12}
COMPRESSION=${COMPRESSION:-lz4}
RUNS=${RUNS:-3}
SHAPE=events
DATA=bench/.data
OUT=$DATA/kafka-avro-table
ADDRFILE=$DATA/kafka-avro.addr
URLFILE=$DATA/kafka-avro.registry
. bench/jsonl-data.sh   # sets IN
build_sluice "$DATA/sluice"
go build -o "$DATA/kafkabench" ./bench/kafkabench

rm -f "$ADDRFILE" "$URLFILE"
"$DATA/kafkabench" broker "$ADDRFILE" 2> "$DATA/kafka-avro-broker.log" &
broker=$!
"$DATA/kafkabench" registry "$URLFILE" 2> "$DATA/kafka-avro-registry.log" &
registry=$!
stop() { kill "$broker" "$registry" 2>/dev/null; wait "$broker" "$registry" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 100); do [ -s "$ADDRFILE" ] && [ -s "$URLFILE" ] && break; sleep 0.1; done
[ -s "$ADDRFILE" ] && [ -s "$URLFILE" ] || { echo "broker or registry did not start" >&2; cat "$DATA"/kafka-avro-*.log >&2; exit 1; }
addr=$(cat "$ADDRFILE"); url=$(cat "$URLFILE")

echo "producing $RECORDS Avro records onto $PARTITIONS partitions ($COMPRESSION) at $addr, schema at $url ..." >&2
"$DATA/kafkabench" produce -avro "$url" -partitions "$PARTITIONS" -compression "$COMPRESSION" "$addr" events-avro "$IN" > "$DATA/kafka-avro-produce.json"
produced=$(json records < "$DATA/kafka-avro-produce.json")

for r in $(seq "$RUNS"); do
  echo "round $r of $RUNS ..." >&2
  /usr/bin/time -v -o "$DATA/kafka-avro-consume-$r.time" "$DATA/kafkabench" consume "$addr" events-avro > "$DATA/kafka-avro-consume-$r.json"
  /usr/bin/time -v -o "$DATA/kafka-avro-decode-$r.time" "$DATA/kafkabench" consume -avro "$url" "$addr" events-avro > "$DATA/kafka-avro-decode-$r.json"
  rm -rf "$OUT" "${OUT}_quarantine"
  "$DATA/sluice" init "$OUT" --schema-from-registry events-avro-value --schema-registry "$url" --partition-by 'day(event_time)' > /dev/null
  # shellcheck disable=SC2046 # one word or none
  /usr/bin/time -v -o "$DATA/kafka-avro-sluice-$r.time" "$DATA/sluice" ingest "$OUT" --from "kafka://$addr/events-avro" \
    --schema-registry "$url" --format avro --json $([ -n "${SLUICE_CPUPROFILE:-}" ] && echo "--cpuprofile=$SLUICE_CPUPROFILE.avro") > "$DATA/kafka-avro-sluice-$r.json"
done

fail=0
[ "$produced" = "$RECORDS" ] || { echo "produced $produced records, not $RECORDS" >&2; fail=1; }
declare -A S R C
for name in consume decode sluice; do
  S[$name]=; R[$name]=0
  for r in $(seq "$RUNS"); do
    key=records; [ "$name" = sluice ] && key=rows_written
    got=$(json "$key" < "$DATA/kafka-avro-$name-$r.json")
    [ "$got" = "$RECORDS" ] || { echo "round $r: $name counted $got, not $RECORDS" >&2; fail=1; }
    s=$(json seconds < "$DATA/kafka-avro-$name-$r.json")
    R[$name]=$(maxrss "$(rss "$DATA/kafka-avro-$name-$r.time")" "${R[$name]}")
    if better "$s" "${S[$name]}"; then S[$name]=$s; C[$name]=$(cpu "$DATA/kafka-avro-$name-$r.time"); fi
  done
done
rows=$("$DATA/sluice" files "$OUT" | node tools/duckrows.mjs --list - | json rows)
[ "$rows" = "$RECORDS" ] || { echo "DuckDB reads $rows rows, not $RECORDS" >&2; fail=1; }

printf '\n%s Avro records (%s), %s partitions, %s batches, %s CPUs, best of %s rounds\n' "$RECORDS" "$SHAPE" "$PARTITIONS" "$COMPRESSION" "$(nproc)" "$RUNS"
printf 'sluice build: %s\n' "$SLUICE_BUILD"
printf '%-10s %9s %12s %8s %12s %14s\n' path seconds records/s cpu_s peak_rss_kb cpu_us/record
for name in consume decode sluice; do
  printf '%-10s %9.3f %12.0f %8s %12s %14.2f\n' "$name" "${S[$name]}" "$(echo "$RECORDS / ${S[$name]}" | bc -l)" "${C[$name]}" "${R[$name]}" \
    "$(echo "${C[$name]} * 1000000 / $RECORDS" | bc -l)"
done
ratio=$(echo "${C[sluice]} / ${C[decode]}" | bc -l)
printf 'sluice/decode CPU per record %.2f (bound <= 1.5: %s); time %.2f; peak RSS %.2f\n' "$ratio" \
  "$([ "$(echo "$ratio <= 1.5" | bc)" = 1 ] && echo met || echo MISSED)" "$(echo "${S[sluice]} / ${S[decode]}" | bc -l)" \
  "$(echo "${R[sluice]} / ${R[decode]}" | bc -l)"
printf 'check: DuckDB reads %s rows of %s\n' "$rows" "$RECORDS"
exit $fail
