#!/usr/bin/env bash
# kafka-group.sh: several `sluice ingest` processes on one topic and one
# table, sharing the topic's partitions through a Kafka consumer group, as
# several pods would run them.
# Usage: bench/kafka-group.sh [RECORDS] [FILES]   (default 1000000 10)
#
# Produces RECORDS JSON lines records (bench/genjsonl, the events shape of
# bench/kafka.sh, shared with it in bench/.data/) onto topic `events`
# (PARTITIONS partitions, default 12, lz4 batches) of an in-process kfake
# broker on loopback, then, for each member count M in MEMBERS (default
# "1 2 4") and in RUNS interleaved rounds (default 3), starts M processes
# of `sluice ingest T --from kafka://ADDR/events --group G --json` at once
# into a fresh table (one group per round) and times them from the start
# of the first to the exit of the last. Reports, per M, the best and
# median wall time, records/s, the sum of the members' CPU time and their
# peak RSS, and the speedup against M=1.
# Checks in every round that the members' rows_written add up to RECORDS
# and that the table reads back RECORDS rows (tools/duckrows.mjs): every
# record ingested once, whatever member read it. Exits 1 if not.
#
# On one machine the members, and the broker, share its CPUs: the figures
# say how the group spreads a topic's partitions and what that costs, not
# how pods on machines of their own would scale, which is bounded by the
# topic's partition count (a member beyond it gets none).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RECORDS=${1:-1000000}
FILES=${2:-10}
PARTITIONS=${PARTITIONS:-12}
MEMBERS=${MEMBERS:-1 2 4}
RUNS=${RUNS:-3}
DATA=bench/.data
ADDRFILE=$DATA/kafka-group.addr
OUT=$DATA/kafka-group-table
. bench/jsonl-data.sh   # sets IN and SCHEMA
build_sluice "$DATA/sluice"
go build -o "$DATA/kafkabench" ./bench/kafkabench

start_broker "$ADDRFILE" "$DATA/kafka-group-broker.log"
echo "producing $RECORDS records onto $PARTITIONS partitions at $addr ..." >&2
"$DATA/kafkabench" produce -partitions "$PARTITIONS" -compression lz4 "$addr" events "$IN" > "$DATA/kafka-group-produce.json"
produced=$(json records < "$DATA/kafka-group-produce.json")
[ "$produced" = "$RECORDS" ] || { echo "produced $produced records, not $RECORDS" >&2; exit 1; }

fail=0
for r in $(seq "$RUNS"); do
  for m in $MEMBERS; do
    echo "round $r of $RUNS: $m members ..." >&2
    rm -rf "$OUT" "${OUT}_quarantine"
    "$DATA/sluice" init "$OUT" --schema "$SCHEMA" --partition-by 'day(event_time)' -q > /dev/null
    t0=$(date +%s.%N)
    pids=()
    for i in $(seq "$m"); do
      /usr/bin/time -v -o "$DATA/kafka-group-$m-$r-$i.time" "$DATA/sluice" ingest "$OUT" \
        --from "kafka://$addr/events" --group "bench-$m-$r" --json > "$DATA/kafka-group-$m-$r-$i.json" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || { echo "round $r: a member of $m failed" >&2; fail=1; }; done
    echo "$(date +%s.%N) - $t0" | bc -l > "$DATA/kafka-group-$m-$r.seconds"
    sum=0
    for i in $(seq "$m"); do sum=$((sum + $(json rows_written < "$DATA/kafka-group-$m-$r-$i.json"))); done
    [ "$sum" = "$RECORDS" ] || { echo "round $r, $m members: rows_written add up to $sum, not $RECORDS" >&2; fail=1; }
    rows=$("$DATA/sluice" files "$OUT" | node tools/duckrows.mjs --list - | json rows)
    [ "$rows" = "$RECORDS" ] || { echo "round $r, $m members: the table reads back $rows rows, not $RECORDS" >&2; fail=1; }
    echo "$sum" > "$DATA/kafka-group-$m-$r.rows"
  done
done

printf '\n%s %s records, %s partitions, %s CPUs, %s rounds; sluice build: %s\n' "$RECORDS" "$SHAPE" "$PARTITIONS" "$(nproc)" "$RUNS" "$SLUICE_BUILD"
printf '%-8s %8s %8s %12s %10s %12s %8s  %s\n' members best_s median_s records/s cpu_s peak_rss_kb speedup every_round_s
base=
for m in $MEMBERS; do
  best=; all=(); bestr=
  for r in $(seq "$RUNS"); do
    s=$(cat "$DATA/kafka-group-$m-$r.seconds"); all+=("$s")
    if better "$s" "$best"; then best=$s; bestr=$r; fi
  done
  cpus=0; peak=
  for i in $(seq "$m"); do
    cpus=$(echo "$cpus + $(cpu "$DATA/kafka-group-$m-$bestr-$i.time")" | bc -l)
    peak=$(maxrss "$(rss "$DATA/kafka-group-$m-$bestr-$i.time")" "$peak")
  done
  [ -n "$base" ] || base=$best
  printf '%-8s %8.2f %8.2f %12.0f %10.2f %12s %8.2f  %s\n' "$m" "$best" "$(median "${all[@]}")" \
    "$(echo "$RECORDS / $best" | bc -l)" "$cpus" "$peak" "$(echo "$base / $best" | bc -l)" "$(printf '%.2f ' "${all[@]}")"
done
printf 'check: every round, the members wrote %s rows in all and the table reads back %s: %s\n' "$RECORDS" "$RECORDS" "$([ $fail = 0 ] && echo yes || echo NO)"
exit $fail
