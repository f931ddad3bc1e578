package main

import (
	"os"
	"runtime/debug"
)

// gcHeadroom is what a command may hold beyond its memory budget: the
// Parquet writers' page buffers, decoders, the runtime, and the garbage
// of the rows decoded since the last collection.
//
// It was 128 MiB. At the default budget (256 MiB) an ingest's live heap
// is about 180 MiB of buffered rows, so that limit left some 200 MiB of
// allocation between collections: 20 of them in a 2M-record run
// (GODEBUG=gctrace=1), marking for about half its time, every pointer
// write of the decoder and the writers then through the write barrier.
// At 256 MiB the same run (bench/ingest.sh 2000000 20's records) took
// 2.55-2.66 s instead of 2.77-2.90 s and 4.8-5.0 CPU-seconds instead of
// 5.2-5.4, its peak RSS 544 MB instead of 432 MB (three runs each,
// interleaved, GOGC=200 GOMEMLIMIT=384MiB against 512MiB); 384 MiB gained
// little more (2.53-2.64 s, 614 MB).
const gcHeadroom = 256 << 20

// tuneGC lets the heap grow to three times what is live (GOGC=200) rather
// than twice, under a soft limit of budget plus gcHeadroom. A JSON ingest
// allocates a row per record, and at the default it spends about a tenth
// of its CPU in the collector; its buffers are bounded by the budget
// anyway, so the limit, not the percentage, caps its memory. GOGC or
// GOMEMLIMIT in the environment win.
func tuneGC(budget int64) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	debug.SetGCPercent(200)
	debug.SetMemoryLimit(budget + gcHeadroom)
}
