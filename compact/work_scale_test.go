//go:build unix

// The process CPU time these figures separate from waiting comes from
// getrusage, which Windows does not have.

package compact_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/internal/testenv"
)

// The scaling benchmark runs a compaction spread over N workers against
// the S3 test server with a simulated store latency (testenv.Latency:
// 30 ms per request, 50 MiB/s per request body) — there is no cluster
// here. Workers are goroutines of this one process, each with its own
// store client and connection pool as a pod would have, sharing this
// machine's CPUs: so each run reports the process CPU time beside the
// wall time, and the waiting the transport injected, to tell the part
// that more workers shorten (waiting on the store) from the part that
// more workers only spread over more machines (CPU). The test server
// runs in this process too: its CPU time is in the figures, which the
// copy of the table before each run measures on its own (CPU per MB of
// plain GET and PUT, no compaction).

// scaleSchema is a mailing platform's delivery events: uuid texts,
// list ids skewed as a few large lists and many small ones, and subjects
// with quotes, backslashes, newlines, tabs and non-ASCII text.
var scaleSchema = mustSchema("event_id:uuid,list_id:int64,subscriber_id:uuid?,kind:string,subject:string?,amount:decimal(12,2)?,event_time:timestamp")

var scaleSubjects = []string{
	`Re: "Your order" is on its way`,
	`50% off — today only ✓`,
	`C:\Users\export\list.csv`,
	"line one\nline two",
	"tab\tseparated\tvalues",
	`{"utm":"spring","ids":[1,2,3]}`,
	`It's <b>here</b> & now`,
	"Grüße aus Köln 🎉",
}

var scaleKinds = []string{"delivered", "delivered", "delivered", "delivered", "delivered", "delivered",
	"open", "open", "open", "click", "click", "bounce", "unsubscribe"}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// uuidOf is a version-4-shaped uuid text drawn from x.
func uuidOf(x uint64) string {
	a, b := splitmix(x), splitmix(^x)
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", uint32(a>>32), uint16(a>>16), uint16(a)&0xfff,
		uint16(b>>48)&0x3fff|0x8000, b&0xffffffffffff)
}

// scaleRows makes n deterministic rows of day, numbered from base.
func scaleRows(day time.Time, base, n int) [][]any {
	r := rand.New(rand.NewPCG(uint64(base), uint64(n)))
	lists := rand.NewZipf(r, 1.2, 1, 49_999)
	rows := make([][]any, n)
	for i := range rows {
		k := uint64(base + i)
		h := splitmix(k)
		list := int64(lists.Uint64() + 1)
		var sub, subject, amount any
		if h%9 != 0 {
			sub = uuidOf(uint64(list)<<20 | h>>44)
		}
		if h%13 != 0 {
			subject = scaleSubjects[h>>8%uint64(len(scaleSubjects))] + " #" + strconv.FormatUint(h>>16%1000, 10)
		}
		if h%5 == 0 {
			amount = fmt.Sprintf("%d.%02d", h>>24%100000, h>>40%100)
		}
		rows[i] = []any{uuidOf(k), list, sub, scaleKinds[h>>4%uint64(len(scaleKinds))], subject, amount,
			day.Add(time.Duration(h>>20%86_400_000_000) * time.Microsecond)}
	}
	return rows
}

// scaleTable makes a table at loc of days daily partitions, each with
// appends files of rowsPerFile rows, one commit per append round as a
// stream leaves them. Files are written two rounds at a time and
// committed in order.
func scaleTable(tb testing.TB, loc string, days, appends, rowsPerFile int) *catalog.Table {
	tb.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	spec, err := catalog.ParsePartitionSpec("day(event_time)", scaleSchema)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := tbl.Create(ctx, scaleSchema, spec, nil, "scale")
	if err != nil {
		tb.Fatal(err)
	}
	day0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	rounds := make([][]catalog.DataFile, appends)
	var g errgroup.Group
	g.SetLimit(2)
	for a := range appends {
		g.Go(func() error {
			var rows [][]any
			for d := range days {
				rows = append(rows, scaleRows(day0.AddDate(0, 0, d), (a*days+d)*rowsPerFile, rowsPerFile)...)
			}
			var err error
			rounds[a], err = tbl.WriteFiles(ctx, m, rows)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		tb.Fatal(err)
	}
	for a, files := range rounds {
		if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: fmt.Sprint("a", a), Add: files, DataChange: true}); err != nil {
			tb.Fatal(err)
		}
	}
	return tbl
}

// eachObject calls fn for every object of st, 16 at a time.
func eachObject(ctx context.Context, st cloud.Store, fn func(cloud.ObjectInfo) error) error {
	var objs []cloud.ObjectInfo
	if err := st.List(ctx, "", func(o cloud.ObjectInfo) error {
		objs = append(objs, o)
		return nil
	}); err != nil {
		return fmt.Errorf("list %s: %w", st.URL(""), err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, o := range objs {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			return fn(o)
		})
	}
	return g.Wait()
}

// copyObjects copies every object of from into to, returning the bytes.
func copyObjects(ctx context.Context, from, to cloud.Store) (int64, error) {
	var n atomic.Int64
	err := eachObject(ctx, from, func(o cloud.ObjectInfo) error {
		rc, _, err := from.Get(ctx, o.Key)
		if err != nil {
			return fmt.Errorf("copy %s: %w", from.URL(o.Key), err)
		}
		// Read whole: a seekable body goes in one request, where a
		// stream would be buffered a multipart part at a time.
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", from.URL(o.Key), err)
		}
		if _, err := to.Put(ctx, o.Key, bytes.NewReader(data), int64(len(data)), cloud.PutOptions{}); err != nil {
			return fmt.Errorf("copy to %s: %w", to.URL(o.Key), err)
		}
		n.Add(int64(len(data)))
		return nil
	})
	return n.Load(), err
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// unitsDone is a worker's logger that counts the units recorded by every
// worker, and cancels the workers once the last one is: a worker that
// found every unit left held by live workers waits a third of a lease
// before it looks again, and that idle tail is not the work's.
type unitsDone struct {
	want   int64
	n      atomic.Int64
	at     atomic.Int64 // unix ns of the last unit recorded
	cancel context.CancelFunc
}

func (u *unitsDone) Enabled(context.Context, slog.Level) bool { return true }
func (u *unitsDone) WithAttrs([]slog.Attr) slog.Handler       { return u }
func (u *unitsDone) WithGroup(string) slog.Handler            { return u }
func (u *unitsDone) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "unit done" && u.n.Add(1) == u.want {
		u.at.Store(time.Now().UnixNano())
		u.cancel()
	}
	return nil
}

// scaleRun is one compaction of a fresh copy of a table by N workers.
type scaleRun struct {
	Workers  int
	Delay    time.Duration
	Units    int
	FilesIn  int
	FilesOut int
	BytesIn  int64
	Rows     int64
	Stolen   int
	Lost     int
	// Wall is from the workers' start to the last unit recorded; CPU
	// the process CPU time meanwhile.
	Wall, CPU time.Duration
	// Work are the workers' requests; Commit the committer's.
	Work, Commit testenv.RequestCounts
	// PlanWall and PlanReqs are the planner's (reading the latest
	// version, its files, and writing the plan).
	PlanWall time.Duration
	PlanReqs testenv.RequestCounts
	// CommitWall and CommitCPU are CommitWork's, in Versions commits.
	CommitWall, CommitCPU time.Duration
	Versions              int
	Committed             []string
	Planned               []string
	// CopyBytes, CopyWall and CopyCPU are the copy of the table made
	// before the run, with no delay: GET and PUT of every object.
	CopyBytes         int64
	CopyWall, CopyCPU time.Duration
	// RowsAfter are the rows of the table after the commit (manifest
	// totals).
	RowsBefore, RowsAfter int64
	// Loc is the copy's location, left for the caller's checks.
	Loc string
}

// scaleConfig is what one run does.
type scaleConfig struct {
	Workers int
	Latency testenv.LatencyOptions
	Plan    compact.PlanOptions
	// MaxCommits is the commit's; zero: CommitWork's default (10).
	MaxCommits int
}

// runScale copies the table of src to a fresh location on the S3 test
// server, plans its compaction, runs the workers over the latency
// transport and commits, measuring each step.
func runScale(tb testing.TB, src cloud.Store, c scaleConfig) scaleRun {
	tb.Helper()
	ctx := context.Background()
	lo := c.Latency
	r := scaleRun{Workers: c.Workers, Delay: lo.Delay, Loc: testenv.Location(tb, testenv.S3)}
	plain, err := cloud.Open(ctx, r.Loc)
	if err != nil {
		tb.Fatal(err)
	}
	defer plain.Close()
	start, cpu0 := time.Now(), cpuTime()
	if r.CopyBytes, err = copyObjects(ctx, src, plain); err != nil {
		tb.Fatal(err)
	}
	r.CopyWall, r.CopyCPU = time.Since(start), cpuTime()-cpu0

	open := func() (*catalog.Table, *testenv.Latency) {
		lat, err := testenv.NewLatency(lo, nil)
		if err != nil {
			tb.Fatal(err)
		}
		st, err := cloud.OpenWithOptions(ctx, r.Loc, cloud.Options{HTTPClient: lat.Client()})
		if err != nil {
			tb.Fatal(err)
		}
		return catalog.NewTable(r.Loc, st, catalog.Options{}), lat
	}
	lead, leadLat := open()
	defer lead.Close()
	defer leadLat.CloseIdleConnections()
	start = time.Now()
	m, err := lead.Latest(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	_, r.RowsBefore, _ = m.Totals()
	plan, err := compact.PlanWork(ctx, lead, c.Plan, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	r.PlanWall, r.PlanReqs = time.Since(start), leadLat.Counts()
	r.Units = len(plan.Units)
	for _, u := range plan.Units {
		r.Planned = append(r.Planned, u.ID)
	}
	r.runWorkers(tb, plan, open)

	before := leadLat.Counts()
	start, cpu0 = time.Now(), cpuTime()
	cr, err := compact.CommitWork(ctx, lead, plan.ID, compact.CommitOptions{MaxCommits: c.MaxCommits, RunID: fmt.Sprint("scale-", c.Workers)})
	r.CommitWall, r.CommitCPU = time.Since(start), cpuTime()-cpu0
	if err != nil {
		tb.Fatal(err)
	}
	if !cr.Done || len(cr.Dropped) > 0 || len(cr.Pending) > 0 {
		tb.Fatalf("commit: done %v, dropped %v, pending %v; want done with none dropped or pending", cr.Done, cr.Dropped, cr.Pending)
	}
	after := leadLat.Counts()
	r.Commit = testenv.RequestCounts{Get: after.Get - before.Get, List: after.List - before.List, Put: after.Put - before.Put,
		Head: after.Head - before.Head, Delete: after.Delete - before.Delete, Post: after.Post - before.Post,
		Other: after.Other - before.Other, BytesRead: after.BytesRead - before.BytesRead,
		BytesWritten: after.BytesWritten - before.BytesWritten}
	r.Versions, r.Committed = len(cr.Versions), cr.Committed
	if m, err = lead.Latest(ctx); err != nil {
		tb.Fatal(err)
	}
	_, r.RowsAfter, _ = m.Totals()
	return r
}

// runWorkers runs the n workers of r on plan, each with its own table
// handle and store client from open, until every unit is recorded.
func (r *scaleRun) runWorkers(tb testing.TB, plan *compact.WorkPlan, open func() (*catalog.Table, *testenv.Latency)) {
	tb.Helper()
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := &unitsDone{want: int64(len(plan.Units)), cancel: cancel}
	results := make([]compact.WorkerResult, r.Workers)
	errs := make([]error, r.Workers)
	lats := make([]*testenv.Latency, r.Workers)
	tables := make([]*catalog.Table, r.Workers)
	for i := range r.Workers {
		tables[i], lats[i] = open()
	}
	start, cpu0 := time.Now(), cpuTime()
	var wg sync.WaitGroup
	for i := range r.Workers {
		wg.Go(func() {
			results[i], errs[i] = compact.Work(wctx, tables[i], plan.ID, compact.WorkerOptions{
				Name: fmt.Sprint("worker-", i), Shard: i, Shards: r.Workers, Logger: slog.New(done)})
		})
	}
	wg.Wait()
	end := time.Now()
	if at := done.at.Load(); at != 0 {
		end = time.Unix(0, at)
	}
	r.Wall, r.CPU = end.Sub(start), cpuTime()-cpu0
	for i := range r.Workers {
		if errs[i] != nil && !(errors.Is(errs[i], context.Canceled) && done.n.Load() == done.want) {
			tb.Fatalf("worker %d: %v", i, errs[i])
		}
		w := results[i]
		r.FilesIn += w.FilesIn
		r.FilesOut += w.FilesOut
		r.BytesIn += w.BytesIn
		r.Rows += w.Rows
		r.Stolen += w.Stolen
		r.Lost += w.LostRaces
		r.Work = r.Work.Add(lats[i].Counts())
		lats[i].CloseIdleConnections()
		tables[i].Close()
	}
}

// injected is the waiting the transport added to the requests c counts,
// summed over requests (concurrent ones overlap).
func injected(c testenv.RequestCounts, lo testenv.LatencyOptions) time.Duration {
	d := time.Duration(c.Total()) * lo.Delay
	if lo.ReadBytesPerSecond > 0 {
		d += time.Duration(float64(c.BytesRead) / float64(lo.ReadBytesPerSecond) * float64(time.Second))
	}
	if lo.WriteBytesPerSecond > 0 {
		d += time.Duration(float64(c.BytesWritten) / float64(lo.WriteBytesPerSecond) * float64(time.Second))
	}
	return d
}

func perUnit(n int64, units int) float64 { return float64(n) / float64(max(units, 1)) }

// scaleHeader and line print a run as one row of the table that
// docs/scaling.md keeps.
const scaleHeader = "| workers | delay | units | wall s | units/s | input MB/s | req/unit (GET LIST PUT DEL) | waited s (sum) | CPU s | CPU s/unit | CPU busy of 2 | steals | commit s (versions) | commit req |"

func (r scaleRun) line(lo testenv.LatencyOptions) string {
	wall := r.Wall.Seconds()
	c := r.Work
	return fmt.Sprintf("| %d | %v | %d | %.2f | %.1f | %.2f | %.1f (%.1f %.1f %.1f %.1f) | %.1f | %.2f | %.3f | %.0f%% | %d | %.2f (%d) | %d |",
		r.Workers, r.Delay, r.Units, wall, float64(r.Units)/wall, float64(r.BytesIn)/1e6/wall,
		perUnit(c.Total(), r.Units), perUnit(c.Get, r.Units), perUnit(c.List, r.Units), perUnit(c.Put, r.Units),
		perUnit(c.Delete, r.Units), injected(c, lo).Seconds(), r.CPU.Seconds(), r.CPU.Seconds()/float64(max(r.Units, 1)),
		100*r.CPU.Seconds()/(wall*2), r.Stolen, r.CommitWall.Seconds(), r.Versions, r.Commit.Total())
}

// deleteAll removes every object at loc, so the server's memory does not
// grow with each run.
func deleteAll(tb testing.TB, loc string) {
	tb.Helper()
	ctx := context.Background()
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	if err := eachObject(ctx, st, func(o cloud.ObjectInfo) error { return st.Delete(ctx, o.Key) }); err != nil {
		tb.Fatal(err)
	}
}

// scalePlan is the plan options of a table whose files hold fileBytes
// each on average: bins of perUnit files, of six targets each, so that a
// file is a fraction of the target (small), and each partition is cut
// into several units, as a 256 MiB target cuts a day of a few GiB of
// small files into bins of 1.5 GiB.
func scalePlan(fileBytes int64, perUnit int) compact.PlanOptions {
	bin := fileBytes * int64(perUnit)
	return compact.PlanOptions{TargetFileSize: bin / 6, MaxBinBytes: bin}
}

// BenchmarkWorkersScaling compacts a table of 4,000 small files (25 daily
// partitions of 160 files of 1,000 rows) on the S3 test server through
// the latency transport, by 1, 2, 4, 8 and 16 workers, each run on a fresh
// copy of the table, and once by one worker without latency. Per run it
// reports the wall time, units/s, input MB/s, requests per unit, the
// waiting injected, the process CPU time, steals and the commit's time;
// then prints them as one table. It is a benchmark (go test -bench), not
// a test: it asserts only that each run kept the rows and committed every
// unit once. A full run takes a few minutes on 2 CPUs:
//
//	go test -run '^$' -bench WorkersScaling -benchtime 1x -timeout 30m ./compact
func BenchmarkWorkersScaling(b *testing.B) {
	ctx := context.Background()
	const days, appends, rowsPerFile = 25, 160, 1000
	start, cpu0 := time.Now(), cpuTime()
	tbl := scaleTable(b, testenv.Location(b, testenv.S3), days, appends, rowsPerFile)
	defer tbl.Close()
	m, err := tbl.Latest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	files, rows, bytes := m.Totals()
	po := scalePlan(bytes/files, 40)
	lo := testenv.DefaultLatencyOptions()
	fmt.Fprintf(os.Stdout, "table: %d files, %d rows, %.1f MB in %d daily partitions (built in %.1f s, %.1f CPU s); target file size %d bytes, bins of %d\n",
		files, rows, float64(bytes)/1e6, days, time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds(), po.TargetFileSize, po.MaxBinBytes)
	fmt.Fprintf(os.Stdout, "latency: %v per request, %d MiB/s per request body each way; workers are goroutines of one process on %d CPUs (GOMAXPROCS)\n",
		lo.Delay, lo.ReadBytesPerSecond>>20, runtimeCPUs())
	type scaleCase struct {
		workers int
		lo      testenv.LatencyOptions
	}
	cases := []scaleCase{{1, testenv.LatencyOptions{}}}
	for _, n := range []int{1, 2, 4, 8, 16} {
		cases = append(cases, scaleCase{n, lo})
	}
	var runs []scaleRun
	for _, c := range cases {
		name := fmt.Sprintf("workers=%d/delay=%v", c.workers, c.lo.Delay)
		b.Run(name, func(b *testing.B) {
			var r scaleRun
			for range b.N {
				r = runScale(b, tbl.Store(), scaleConfig{Workers: c.workers, Latency: c.lo, Plan: po})
				deleteAll(b, r.Loc)
				if r.RowsAfter != rows || r.Rows != rows || !slices.Equal(sortedCopy(r.Committed), r.Planned) {
					b.Fatalf("rows %d after (workers wrote %d), committed %d of %d units; want %d rows and every unit once",
						r.RowsAfter, r.Rows, len(r.Committed), len(r.Planned), rows)
				}
			}
			wall := r.Wall.Seconds()
			// ns/op is the workers' time: the copy made before each run
			// and the commit after are not the work's.
			b.ReportMetric(float64(r.Wall.Nanoseconds()), "ns/op")
			b.ReportMetric(float64(r.Units)/wall, "units/s")
			b.ReportMetric(float64(r.BytesIn)/1e6/wall, "MB/s")
			b.ReportMetric(perUnit(r.Work.Total(), r.Units), "req/unit")
			b.ReportMetric(perUnit(r.Work.Get, r.Units), "get/unit")
			b.ReportMetric(perUnit(r.Work.Put, r.Units), "put/unit")
			b.ReportMetric(perUnit(r.Work.List, r.Units), "list/unit")
			b.ReportMetric(perUnit(r.Work.Delete, r.Units), "delete/unit")
			b.ReportMetric(r.CPU.Seconds()/float64(max(r.Units, 1)), "cpu-s/unit")
			b.ReportMetric(float64(r.Stolen), "steals")
			b.ReportMetric(r.CommitWall.Seconds(), "commit-s")
			runs = append(runs, r)
		})
	}
	fmt.Fprintln(os.Stdout, scaleHeader)
	fmt.Fprintln(os.Stdout, "|"+strings.Repeat("---|", strings.Count(scaleHeader, "|")-1))
	for i, r := range runs {
		fmt.Fprintln(os.Stdout, r.line(cases[i].lo))
	}
	var copyBytes int64
	var copyCPU, copyWall, commitCPU, commitWall time.Duration
	var versions int
	for _, r := range runs {
		copyBytes += r.CopyBytes
		copyCPU += r.CopyCPU
		copyWall += r.CopyWall
		commitCPU += r.CommitCPU
		commitWall += r.CommitWall
		versions += r.Versions
	}
	if len(runs) > 0 {
		fmt.Fprintf(os.Stdout, "copies without delay (GET and PUT of every object, no compaction): %.0f MB in %.1f s, %.2f CPU s per 100 MB moved (client and test server)\n",
			float64(copyBytes)/1e6, copyWall.Seconds(), copyCPU.Seconds()/(float64(copyBytes)/1e8))
		fmt.Fprintf(os.Stdout, "commits: %d versions in %.2f s, %.3f s and %.3f CPU s per version; input per run %.1f MB, CPU s per input GB at 1 worker without delay %.1f\n",
			versions, commitWall.Seconds(), commitWall.Seconds()/float64(max(versions, 1)), commitCPU.Seconds()/float64(max(versions, 1)),
			float64(runs[0].BytesIn)/1e6, runs[0].CPU.Seconds()/(float64(runs[0].BytesIn)/1e9))
	}
}

func runtimeCPUs() int { return runtime.GOMAXPROCS(0) }

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// Two compactions of one small table (200 files in 10 daily partitions)
// spread over workers through the latency transport, by one worker and by
// four: each keeps every row (same rows, same checksum), commits every
// unit exactly once, and sends no more requests than its data needs plus
// the claims' bound below. The delay is a third of the benchmark's, to
// keep the test short.
func TestWorkersScalingSmall(t *testing.T) {
	ctx := context.Background()
	const days = 10
	src := scaleTable(t, testenv.Location(t, testenv.S3), days, 20, 200)
	defer src.Close()
	want := tableRows(t, src)
	wantSum := sha256.Sum256([]byte(strings.Join(want, "\n")))
	m, err := src.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, _, bytes := m.Totals()
	lo := testenv.LatencyOptions{Delay: 10 * time.Millisecond, ReadBytesPerSecond: 50 << 20, WriteBytesPerSecond: 50 << 20}
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprint("workers=", n), func(t *testing.T) {
			r := runScale(t, src.Store(), scaleConfig{Workers: n, Latency: lo, Plan: scalePlan(bytes/files, 20), MaxCommits: 3})
			tbl, err := catalog.Open(ctx, r.Loc, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			got := tableRows(t, tbl)
			if sum := sha256.Sum256([]byte(strings.Join(got, "\n"))); len(got) != len(want) || sum != wantSum {
				t.Fatalf("after the compaction: %d rows, checksum %x; want %d rows, checksum %x", len(got), sum[:8], len(want), wantSum[:8])
			}
			if r.Units < days {
				t.Fatalf("planned %d units; want at least one per partition, %d", r.Units, days)
			}
			if committed := sortedCopy(r.Committed); !slices.Equal(committed, r.Planned) {
				t.Fatalf("committed %v; want every planned unit once: %v", committed, r.Planned)
			}
			// What the data needs: a GET per input file, a PUT per output,
			// a claim and a result per unit, and per worker a read of the
			// plan and a LIST of the results per round (two rounds, then
			// the workers are stopped). Beyond it, a worker looks at each
			// unit another one holds at most twice (a refused claim and a
			// read of it) before it waits, and a lost race or a renewal
			// (every 40 s) does not happen in a run this short.
			need := int64(r.FilesIn + r.FilesOut + 2*r.Units + 3*n)
			limit := need + int64(4*(n-1)*r.Units)
			if tot := r.Work.Total(); tot < int64(r.FilesIn+r.FilesOut) || tot > limit {
				t.Errorf("%d workers sent %d requests (%v) for %d units of %d files in, %d out; want between %d and %d (%.1f a unit at most)",
					n, tot, r.Work, r.Units, r.FilesIn, r.FilesOut, r.FilesIn+r.FilesOut, limit, perUnit(limit, r.Units))
			}
			if r.Work.Delete != 0 || r.Lost != 0 {
				t.Errorf("%d deletes, %d lost races; want none: no unit was done twice", r.Work.Delete, r.Lost)
			}
			t.Logf("copy %v, plan %v (%v), work %v, commit %v", r.CopyWall, r.PlanWall, r.PlanReqs, r.Wall, r.CommitWall)
			t.Logf("%d workers: %d units, %d files in, %d out; worker requests %v (limit %d); commit requests %v",
				n, r.Units, r.FilesIn, r.FilesOut, r.Work, limit, r.Commit)
		})
	}
}
