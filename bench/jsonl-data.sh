# jsonl-data.sh, sourced by bench/ingest.sh and bench/kafka.sh: the JSON
# lines landing files both benchmarks read, generated once per shape and
# size. Needs RECORDS, FILES and DATA; SHAPE picks the records (default
# events: escaped payload strings, user agents, quoted and non-ASCII text,
# a nested object and an array, as users' events carry them; flat: five
# flat fields, no escapes; see bench/genjsonl). Sets IN (RECORDS records
# in FILES files over 10 days, bench/genjsonl, deterministic) and HALF (the
# first FILES/2 of them, hard links, for peak RSS as the run doubles), and
# SCHEMA, the table schema of the shape's records.
SHAPE=${SHAPE:-events}
case $SHAPE in
  flat) SCHEMA='event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp' ;;
  events) SCHEMA='event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp,payload:string,user_agent:string,subject:string,context:string,tags:string' ;;
  *) echo "SHAPE must be events or flat, not $SHAPE" >&2; exit 2 ;;
esac
IN=$DATA/jsonl-$SHAPE-$RECORDS-$FILES
HALF=$DATA/jsonl-$SHAPE-$RECORDS-$FILES-half
mkdir -p "$DATA"
[ "$FILES" -ge 2 ] || { echo "FILES must be >= 2 (the half run takes half the files)" >&2; exit 2; }
if [ ! -f "$IN/.done" ]; then
  echo "generating $RECORDS $SHAPE records in $FILES files into $IN ..." >&2
  rm -rf "$IN"
  go run ./bench/genjsonl -shape "$SHAPE" "$RECORDS" "$FILES" "$IN"
  touch "$IN/.done"
fi
if [ ! -f "$HALF/.done" ]; then
  rm -rf "$HALF"; mkdir -p "$HALF"
  ls "$IN" | grep '\.jsonl$' | sort | head -n $((FILES / 2)) | while read -r f; do ln "$IN/$f" "$HALF/$f"; done
  touch "$HALF/.done"
fi
