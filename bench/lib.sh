# lib.sh, sourced by the benchmark scripts: reading /usr/bin/time -v
# reports and JSON summaries, and keeping the best and the median of interleaved rounds.

# rss FILE: peak RSS in kB from a /usr/bin/time -v report.
rss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }
# cpu FILE: user + system seconds from a /usr/bin/time -v report.
cpu() { awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$1"; }
# json KEY < FILE: a field of a JSON object (objects printed as JSON).
json() { node -e 'const o=JSON.parse(require("fs").readFileSync(0,"utf8"))[process.argv[1]];console.log(typeof o==="object"?JSON.stringify(o):o)' "$1"; }
# better A B: A is less than B, or B is unset.
better() { [ -z "$2" ] || [ "$(echo "$1 < $2" | bc)" = 1 ]; }
# median A B ...: the median of the numbers (the mean of the middle two
# of an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%.3f", NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# maxrss A B: the larger, or A when B is unset.
maxrss() { [ -z "$2" ] || [ "$1" -gt "$2" ] && echo "$1" || echo "$2"; }
# build_sluice OUT: builds sluice into OUT as the environment's go build
# does (cgo on where a C compiler is: zstd by libzstd), or without cgo
# (zstd by klauspost/compress, pure Go) when CGO=0 asks for it, and sets
# SLUICE_BUILD to say which, for the report.
build_sluice() {
  if [ "${CGO:-}" = 0 ] || [ "$(go env CGO_ENABLED)" = 0 ]; then
    CGO_ENABLED=0 go build -o "$1" ./cmd/sluice
    SLUICE_BUILD="CGO_ENABLED=0, zstd by klauspost/compress (pure Go)"
  else
    go build -o "$1" ./cmd/sluice
    SLUICE_BUILD="cgo, zstd by libzstd"
  fi
}
# start_broker ADDRFILE LOG: starts bench/kafkabench's in-process kfake
# broker ($DATA/kafkabench, built) on loopback, stopped on any exit; sets
# broker (its pid) and addr (host:port), or exits 1 with its log.
start_broker() {
  rm -f "$1"
  "$DATA/kafkabench" broker "$1" 2> "$2" &
  broker=$!
  trap 'kill "$broker" 2>/dev/null && wait "$broker" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do [ -s "$1" ] && break; kill -0 "$broker" || break; sleep 0.1; done
  [ -s "$1" ] || { echo "broker did not start:" >&2; cat "$2" >&2; exit 1; }
  addr=$(cat "$1")
}
