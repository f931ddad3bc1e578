package jobs

import (
	"os"
	"runtime"
	"runtime/debug"
)

// gcHeadroom is what a process may hold beyond its jobs' memory budgets:
// the Parquet writers' page buffers, decoders, the runtime, and the
// garbage of the rows decoded since the last collection.
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
const GCHeadroom = 256 << 20

// budgeted is a job whose run holds memory up to a budget.
type budgeted interface {
	// memoryBudget is the bytes the run may hold (its --memory, else
	// its default).
	memoryBudget() int64
}

// lightBudget is what a job without a budget of its own is counted as
// holding: a publish's COPY buffers, a vacuum's listing.
const lightBudget = 64 << 20

// Budget is the memory the jobs hold when they run at once: the sum of
// their budgets.
func Budget(js ...Job) int64 {
	var n int64
	for _, j := range js {
		if b, ok := j.(budgeted); ok {
			n += b.memoryBudget()
		} else {
			n += lightBudget
		}
	}
	return n
}

// Tune sets, once for the process, its soft memory limit to budget (what
// the jobs it may run at once hold: Budget) plus GCHeadroom, and lets
// the heap grow to three times what is live (GOGC=200) rather than
// twice: a JSON ingest allocates a row per record, and at the default it
// spends about a tenth of its CPU in the collector, while its buffers
// are bounded by its budget anyway, so the limit, not the percentage,
// caps memory. GOGC or GOMEMLIMIT in the environment win. It is the
// process's to call, at its start: a job never sets it, so jobs running
// side by side under serve do not change each other's.
func Tune(budget int64) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	debug.SetGCPercent(200)
	debug.SetMemoryLimit(budget + GCHeadroom)
}

// SpareProcs gives the Go scheduler two Ps per CPU, unless GOMAXPROCS is
// set, for a process that runs one compaction and nothing else. Most of
// a compaction's CPU is zstd in C (cgo). A goroutine in a C call keeps
// its thread but soon loses its P to the next runnable goroutine; with
// one P per CPU, the call then returns to no P, and its thread sleeps
// until one is free while the CPU it ran on idles. On 2 CPUs that was 5%
// of a rewrite's CPU time idle (perf's sched_switch: threads asleep in
// exitsyscallNoP) and 115K context switches per 10M rows; with 4 Ps there
// were 39K, and the rewrite ran 11% faster (median of 10 interleaved
// rounds). Ingest, whose decoding is Go, ran slower with more Ps, so a
// process that may run other jobs beside a compaction (serve) keeps one
// P per CPU.
func SpareProcs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
}

// wantsSpareProcs is a job that runs faster with SpareProcs when it runs
// alone (compaction).
type wantsSpareProcs interface{ spareProcs() bool }

// TuneFor tunes a process that runs j alone: Tune with its budget, and
// SpareProcs when it asks for them.
func TuneFor(j Job) {
	Tune(Budget(j))
	if s, ok := j.(wantsSpareProcs); ok && s.spareProcs() {
		SpareProcs()
	}
}
