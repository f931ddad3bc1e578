//go:build unix

package scheduler

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServe200JobsEverySecond runs 200 jobs on @every 1s on the real
// clock for SLUICE_BENCH_SECONDS (default 10; the figure is for
// 60) on one instance and a local lake, and reports how late each run
// started after its tick (p50, p99, max), the CPU time used per second and
// the peak RSS. It reports; it asserts nothing.
//
// Late is when the job's work starts against its tick, and counts the
// claim of its interval. The first run of each job is a catch-up run of
// the interval that ended before the server started (up to a second
// before): its lateness is when the server started, not the scheduler's
// overhead, so catch-up runs are counted apart (catchup-runs) and kept
// out of the quantiles.
func BenchmarkServe200JobsEverySecond(b *testing.B) {
	secs := 10
	if v := os.Getenv("SLUICE_BENCH_SECONDS"); v != "" {
		fmt.Sscan(v, &secs)
	}
	var src strings.Builder
	src.WriteString("lake: lake\njobs:\n")
	for i := range 200 {
		fmt.Fprintf(&src, "  job%03d:\n    schedule: \"@every 1s\"\n    task: {}\n", i)
	}
	var mu sync.Mutex
	var late, steady []time.Duration
	var catchups int
	var started time.Time // of the current Serve
	dir := b.TempDir()
	kinds := map[string]Kind{"task": funcKind{run: func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		d := time.Since(iv.End)
		mu.Lock()
		defer mu.Unlock()
		if iv.End.Before(started) {
			catchups++
			return nil, nil
		}
		late = append(late, d)
		if iv.End.Sub(started) >= 2*time.Second {
			steady = append(steady, d) // past the start's first ticks
		}
		return nil, nil
	}}}
	p, err := Parse(dir+"/p.yaml", []byte(src.String()), kinds, env(nil))
	if err != nil {
		b.Fatal(err)
	}
	st, h := openLake(b, p)
	defer st()
	for range b.N {
		var ru0 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
		s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Instance: "bench"}}
		mu.Lock()
		started = time.Now()
		mu.Unlock()
		s.Serve(ctx)
		cancel()
		var ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
		b.ReportMetric(cpu.Seconds()/float64(secs), "cpu-s/s")
		b.ReportMetric(float64(ru1.Maxrss)/1024, "maxrss-MiB")
	}
	slices.Sort(late)
	if len(late) > 0 {
		q := func(f float64) float64 { return float64(late[int(f*float64(len(late)-1))].Milliseconds()) }
		b.ReportMetric(q(0.5), "late-p50-ms")
		b.ReportMetric(q(0.99), "late-p99-ms")
		b.ReportMetric(q(1), "late-max-ms")
		b.ReportMetric(float64(len(late)), "runs")
		b.ReportMetric(float64(catchups), "catchup-runs")
	}
	// The same after the first two seconds: at start every job reads its
	// history and the first ticks of all 200 meet at once.
	slices.Sort(steady)
	if len(steady) > 0 {
		q := func(f float64) float64 { return float64(steady[int(f*float64(len(steady)-1))].Milliseconds()) }
		b.ReportMetric(q(0.5), "steady-p50-ms")
		b.ReportMetric(q(0.99), "steady-p99-ms")
	}
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines-after")
}
