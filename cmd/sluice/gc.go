package main

import (
	"os"
	"runtime/debug"
)

// gcHeadroom is what a command may hold beyond its memory budget: the
// Parquet writers' page buffers, decoders, the runtime.
const gcHeadroom = 128 << 20

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
