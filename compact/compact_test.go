package compact_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var schema = mustSchema("event_id:uuid,list_id:int64,subscriber_id:uuid?,tally:int32,amount:decimal(12,2)?,event_time:timestamp")

func mustSchema(s string) catalog.Schema {
	sc, err := catalog.ParseSchema(s)
	if err != nil {
		panic(err)
	}
	return sc
}

// rowsFor makes n deterministic rows on day, numbered from base.
func rowsFor(day time.Time, base, n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		k := base + i
		var sub any
		if k%7 != 0 {
			sub = fmt.Sprintf("10000000-0000-4000-8000-%012d", k%5000)
		}
		var amount any
		if k%11 != 0 {
			amount = fmt.Sprintf("%d.%02d", k%100000, k%100)
		}
		rows[i] = []any{fmt.Sprintf("00000000-0000-4000-8000-%012d", k), int64(k % 97), sub, int32(k%5 - 2), amount,
			day.Add(time.Duration(k%86400) * time.Second)}
	}
	return rows
}

// smallFileTable makes a table of days partitions, each with appends small
// files, one commit per append round, as a streaming writer would.
func smallFileTable(t testing.TB, loc string, days, appends, rowsPerFile int) *catalog.Table {
	t.Helper()
	perDay := make([]int, days)
	for d := range perDay {
		perDay[d] = rowsPerFile
	}
	return dailyTable(t, loc, perDay, appends)
}

// dailyTable makes a table of one partition per element of perDay, each
// with appends files of that many rows, one commit per append round.
func dailyTable(t testing.TB, loc string, perDay []int, appends int) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := catalog.ParsePartitionSpec("day(event_time)", schema)
	m, err := tbl.Create(ctx, schema, spec, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	day0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	k := 0
	for a := range appends {
		var rows [][]any
		for d, n := range perDay {
			rows = append(rows, rowsFor(day0.AddDate(0, 0, d), k, n)...)
			k += n
		}
		files, err := tbl.WriteFiles(ctx, m, rows)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: fmt.Sprint("a", a), Add: files, DataChange: true}); err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

// tableRows reads every live row of the latest version as sorted strings:
// the multiset a reader sees.
func tableRows(t testing.TB, tbl *catalog.Table) []string {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		st, key, err := tbl.DataFileStore(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := pqio.ReadParquetRows(ctx, st, key, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, fmt.Sprint(r))
		}
	}
	slices.Sort(out)
	return out
}

// On every store (local disk, S3, Azure) compaction keeps the rows, packs
// each partition into ceil(bytes/target) files or fewer, and a second run
// does nothing.
func TestCompactionKeepsRowsAndPacksFiles(t *testing.T) {
	for _, kind := range testenv.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			tbl := smallFileTable(t, testenv.Location(t, kind), 10, 20, 200)
			defer tbl.Close()
			before := tableRows(t, tbl)
			const target = 64 << 10
			res, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{TargetFileSize: target}, RunID: "c1"})
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			if res.Partitions != 10 || res.FilesIn != 200 {
				t.Fatalf("compacted %d partitions, %d files in; want 10 and 200", res.Partitions, res.FilesIn)
			}
			after := tableRows(t, tbl)
			if !slices.Equal(before, after) {
				t.Fatalf("rows changed: %d before, %d after", len(before), len(after))
			}
			m, _ := tbl.Latest(ctx)
			if m.Operation != "compact" || m.Summary.DataChange {
				t.Fatalf("latest version %d: operation %q data_change %v; want a compact with no data change", m.Version, m.Operation, m.Summary.DataChange)
			}
			files, _ := tbl.Files(ctx, m)
			per := map[string][]catalog.DataFile{}
			for _, f := range files {
				per[f.Partition] = append(per[f.Partition], f)
			}
			for p, fs := range per {
				var bytes int64
				for _, f := range fs {
					bytes += f.Bytes
				}
				if want := int(math.Ceil(float64(bytes) / target)); len(fs) > want {
					t.Errorf("%s: %d files of %d bytes in all; want at most ceil(bytes/target) = %d", p, len(fs), bytes, want)
				}
			}
			// Column order and types are the table's, exactly.
			st, key, _ := tbl.DataFileStore(ctx, files[0])
			got, _, err := pqio.InspectParquet(ctx, st, key, files[0].Bytes)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range got.Columns {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != "event_id,list_id,subscriber_id,tally,amount,event_time" {
				t.Fatalf("output columns %v, want the table's order", names)
			}
			// A second run does nothing.
			again, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{TargetFileSize: target}})
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Versions) != 0 || len(again.Plan.Bins()) != 0 {
				t.Fatalf("second run planned %d bins and committed %v; want nothing\n%s", len(again.Plan.Bins()), again.Versions, again.Plan)
			}
		})
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	tbl := smallFileTable(t, t.TempDir(), 3, 8, 50)
	defer tbl.Close()
	v, _ := tbl.LatestVersion(ctx)
	res, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{TargetFileSize: 1 << 20}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Bins()) != 3 {
		t.Fatalf("plan:\n%s\nwant one bin per partition", res.Plan)
	}
	if now, _ := tbl.LatestVersion(ctx); now != v {
		t.Fatalf("dry run committed version %d", now)
	}
}

// An ingest that appends every 100 ms while compaction runs: both succeed,
// and no row is lost or duplicated.
func TestCompactionBesideConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	loc := t.TempDir()
	tbl := smallFileTable(t, loc, 6, 15, 300)
	defer tbl.Close()
	var appended atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var appendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		w, _ := catalog.Open(ctx, loc, catalog.Options{})
		defer w.Close()
		day := time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			m, err := w.Latest(ctx)
			if err != nil {
				appendErr = err
				return
			}
			files, err := w.WriteFiles(ctx, m, rowsFor(day, 1_000_000+i*10, 10))
			if err == nil {
				_, err = w.Commit(ctx, catalog.Change{Operation: "append", Add: files, DataChange: true})
			}
			if err != nil {
				appendErr = err
				return
			}
			appended.Add(10)
		}
	}()
	before := len(tableRows(t, tbl))
	// Several small runs so that appends land between their commits.
	compacted := 0
	for range 3 {
		res, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{TargetFileSize: 32 << 10, MinInputFiles: 2}, MaxCommits: 6})
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		// Appends never remove a file, so they never make compaction
		// give up: it rebases and commits.
		if len(res.Dropped) > 0 {
			t.Fatalf("compaction dropped %v beside appends", res.Dropped)
		}
		compacted += len(res.Versions)
		time.Sleep(150 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if appendErr != nil {
		t.Fatalf("append beside compaction: %v", appendErr)
	}
	if appended.Load() == 0 {
		t.Fatal("no append ran during compaction")
	}
	if compacted == 0 {
		t.Fatal("no compaction committed")
	}
	rows := tableRows(t, tbl)
	if int64(len(rows)) != int64(before)+appended.Load() {
		t.Fatalf("%d rows, want %d before + %d appended", len(rows), before, appended.Load())
	}
	for i := 1; i < len(rows); i++ {
		if rows[i] == rows[i-1] {
			t.Fatalf("row duplicated: %s", rows[i])
		}
	}
}

// Bins are rewritten largest first, so that workers end on small ones
// and finish together: with one worker, the first progress report is the
// largest partition's bytes, and every partition is still compacted.
func TestLargestBinsAreRewrittenFirst(t *testing.T) {
	ctx := context.Background()
	tbl := dailyTable(t, t.TempDir(), []int{100, 900, 400}, 6) // the second day is the largest
	plan, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{IncludeCurrent: true}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var largest int64
	for _, b := range plan.Plan.Bins() {
		largest = max(largest, b.Bytes)
	}
	var reports []int64
	res, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{IncludeCurrent: true}, Workers: 1,
		Progress: func(done, _ int64) { reports = append(reports, done) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partitions != 3 || len(reports) != 3 {
		t.Fatalf("%d partitions compacted, %d progress reports; want 3 and 3", res.Partitions, len(reports))
	}
	if reports[0] != largest {
		t.Fatalf("first bin done: %d bytes; the largest bin holds %d (reports %v)", reports[0], largest, reports)
	}
}
