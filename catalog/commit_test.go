package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var eventSchema = mustSchema("event_id:uuid,list_id:int64,tally:int32,event_time:timestamp")

func mustSchema(s string) catalog.Schema {
	sc, err := catalog.ParseSchema(s)
	if err != nil {
		panic(err)
	}
	return sc
}

func daySpec(t testing.TB) catalog.PartitionSpec {
	spec, err := catalog.ParsePartitionSpec("day(event_time)", eventSchema)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// eventRows makes n rows on day, with list ids from base.
func eventRows(day time.Time, base, n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{fmt.Sprintf("00000000-0000-4000-8000-%012d", base+i), int64(base + i), int32(1),
			day.Add(time.Duration(i) * time.Minute)}
	}
	return rows
}

func newTable(t *testing.T, loc string) (*catalog.Table, *catalog.Manifest) {
	t.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	m, err := tbl.Create(ctx, eventSchema, daySpec(t), nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	return tbl, m
}

func appendRows(t testing.TB, tbl *catalog.Table, rows [][]any) *catalog.Manifest {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.WriteFiles(ctx, m, rows)
	if err != nil {
		t.Fatal(err)
	}
	m, err = tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: "test", Add: files, DataChange: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func livePaths(t testing.TB, tbl *catalog.Table, m *catalog.Manifest) map[string]catalog.DataFile {
	t.Helper()
	files, err := tbl.Files(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]catalog.DataFile{}
	for _, f := range files {
		out[f.Path] = f
	}
	return out
}

func TestCreateTwiceFails(t *testing.T) {
	for kind, loc := range testenv.Locations(t) {
		t.Run(kind, func(t *testing.T) {
			tbl, _ := newTable(t, loc)
			_, err := tbl.Create(context.Background(), eventSchema, daySpec(t), nil, "again")
			if !errors.Is(err, catalog.ErrTableExists) {
				t.Fatalf("second create: got %v, want ErrTableExists", err)
			}
		})
	}
}

func TestOpenMissingTableSaysNotFound(t *testing.T) {
	tbl, err := catalog.Open(context.Background(), t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Latest(context.Background()); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Fatalf("got %v, want ErrTableNotFound", err)
	}
}

// Eight writers commit fifty appends each to one table at once: every
// commit lands as its own version, none is lost, none is skipped.
func TestConcurrentWritersLoseNoUpdate(t *testing.T) {
	const writers, commits = 8, 50
	for kind, loc := range testenv.Locations(t) {
		t.Run(kind, func(t *testing.T) {
			tbl, m0 := newTable(t, loc)
			ctx := context.Background()
			day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			var mu sync.Mutex
			added := map[string]bool{}
			versions := map[int64]bool{}
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Each writer has its own handle, as separate
					// processes would.
					h, err := catalog.Open(ctx, loc, catalog.Options{})
					if err != nil {
						errs <- err
						return
					}
					defer h.Close()
					for c := range commits {
						// Writers spread over 5 days so that some
						// race on the same partition and some not.
						d := day.AddDate(0, 0, (w+c)%5)
						files, err := h.WriteFiles(ctx, m0, eventRows(d, w*1000+c, 1))
						if err != nil {
							errs <- err
							return
						}
						m, err := h.Commit(ctx, catalog.Change{Operation: "append", RunID: fmt.Sprintf("w%d", w), Add: files, DataChange: true})
						if err != nil {
							errs <- fmt.Errorf("writer %d commit %d: %w", w, c, err)
							return
						}
						mu.Lock()
						if versions[m.Version] {
							errs <- fmt.Errorf("version %d committed twice", m.Version)
						}
						versions[m.Version] = true
						for _, f := range files {
							added[f.Path] = true
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			latest, err := tbl.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := m0.Version + writers*commits; latest.Version != want {
				t.Fatalf("latest version %d, want %d", latest.Version, want)
			}
			for v := m0.Version + 1; v <= latest.Version; v++ {
				if !versions[v] {
					t.Fatalf("version %d was not reported by any writer", v)
				}
			}
			live := livePaths(t, tbl, latest)
			if len(live) != writers*commits {
				t.Fatalf("%d live files, want %d", len(live), writers*commits)
			}
			for p := range added {
				if _, ok := live[p]; !ok {
					t.Fatalf("added file %s is not live: a lost update", p)
				}
			}
			files, rows, _ := latest.Totals()
			if files != writers*commits || rows != writers*commits {
				t.Fatalf("totals: %d files, %d rows; want %d each", files, rows, writers*commits)
			}
		})
	}
}

// A compaction-style change (remove + add) rebases over a concurrent
// append, but conflicts with a concurrent removal of the same file.
func TestRebaseRules(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)
	tbl, _ := newTable(t, t.TempDir())
	appendRows(t, tbl, eventRows(day, 0, 10))
	base := appendRows(t, tbl, eventRows(day, 10, 10))
	old := livePaths(t, tbl, base)
	var rm []catalog.DataFile
	for _, f := range old {
		rm = append(rm, f)
	}
	// The "compaction" writes its output based on base.
	merged, err := tbl.WriteFiles(ctx, base, append(eventRows(day, 0, 10), eventRows(day, 10, 10)...))
	if err != nil {
		t.Fatal(err)
	}
	// Meanwhile an ingest appends to the same partition.
	afterAppend := appendRows(t, tbl, eventRows(day, 20, 5))

	m, err := tbl.Commit(ctx, catalog.Change{Operation: "compact", Add: merged, Remove: rm})
	if err != nil {
		t.Fatalf("compaction over a concurrent append must rebase: %v", err)
	}
	if m.Version != afterAppend.Version+1 {
		t.Fatalf("compaction committed as %d, want %d", m.Version, afterAppend.Version+1)
	}
	live := livePaths(t, tbl, m)
	if len(live) != 2 {
		t.Fatalf("%d live files after compaction, want merged + appended = 2", len(live))
	}
	if _, rows, _ := m.Totals(); rows != 25 {
		t.Fatalf("rows %d, want 25", rows)
	}
	if m.Summary.DataChange {
		t.Fatal("a rewrite must be marked as no data change")
	}
	// A second compaction that read the old version now conflicts: its
	// inputs are gone.
	again, err := tbl.WriteFiles(ctx, base, eventRows(day, 0, 20))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tbl.Commit(ctx, catalog.Change{Operation: "compact", Add: again, Remove: rm})
	if !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("removing already removed files: got %v, want ErrConflict", err)
	}
	latest, _ := tbl.Latest(ctx)
	if latest.Version != m.Version {
		t.Fatalf("a conflicting commit must leave no version; latest %d, want %d", latest.Version, m.Version)
	}
}

// Two runs that started from the same checkpoint cannot both commit: the
// second would double-count the range.
func TestCheckpointConflict(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, t.TempDir())
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	commitFrom := func(from, to string) error {
		m, _ := tbl.Latest(ctx)
		files, err := tbl.WriteFiles(ctx, m, eventRows(day, 0, 3))
		if err != nil {
			return err
		}
		ch := catalog.Change{Operation: "ingest", Add: files, DataChange: true,
			Checkpoints: map[string]jsonRaw{"kafka:t/0": jsonRaw(to)}}
		if from != "" {
			ch.CheckpointBase = map[string]jsonRaw{"kafka:t/0": jsonRaw(from)}
		}
		_, err = tbl.Commit(ctx, ch)
		return err
	}
	if err := commitFrom("", `{"offset":10}`); err != nil {
		t.Fatal(err)
	}
	if err := commitFrom(`{"offset":10}`, `{"offset":20}`); err != nil {
		t.Fatal(err)
	}
	// A run that also started at 10 lost the race: it must not commit.
	err := commitFrom(`{"offset":10}`, `{"offset":15}`)
	if !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	m, _ := tbl.Latest(ctx)
	if got := string(m.Checkpoints["kafka:t/0"]); got != `{"offset":20}` {
		t.Fatalf("checkpoint %s, want offset 20", got)
	}
}

// Writers that each advance their own parts of one checkpoint (Kafka
// partitions spread over instances) commit without conflict, whatever the
// order; a writer whose part was moved by another fails with ErrConflict
// and commits nothing.
func TestCheckpointMergeCoversOnlyItsParts(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, t.TempDir())
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	// advance moves parts from their base offsets to new ones, requiring
	// only those parts unchanged.
	advance := func(from, to map[string]int) func(json.RawMessage) (json.RawMessage, error) {
		return func(cur json.RawMessage) (json.RawMessage, error) {
			m := map[string]int{}
			if cur != nil {
				if err := json.Unmarshal(cur, &m); err != nil {
					return nil, err
				}
			}
			for p, off := range from {
				if got, ok := m[p]; ok != (off >= 0) || (ok && got != off) {
					return nil, fmt.Errorf("part %s is at %d, not %d", p, got, off)
				}
				m[p] = to[p]
			}
			return json.Marshal(m)
		}
	}
	commit := func(from, to map[string]int) error {
		m, _ := tbl.Latest(ctx)
		files, err := tbl.WriteFiles(ctx, m, eventRows(day, 0, 3))
		if err != nil {
			return err
		}
		_, err = tbl.Commit(ctx, catalog.Change{Operation: "ingest", Add: files, DataChange: true,
			CheckpointMerge: map[string]func(json.RawMessage) (json.RawMessage, error){"kafka:t": advance(from, to)}})
		return err
	}
	// Eight writers, each the first to take its own part, all at once.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			p := strconv.Itoa(i)
			errs[i] = commit(map[string]int{p: -1}, map[string]int{p: 10 + i})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("writers of distinct parts conflicted: %v", err)
	}
	m, _ := tbl.Latest(ctx)
	want := `{"0":10,"1":11,"2":12,"3":13,"4":14,"5":15,"6":16,"7":17}`
	if got := string(m.Checkpoints["kafka:t"]); got != want {
		t.Fatalf("checkpoint %s, want %s", got, want)
	}
	if err := commit(map[string]int{"3": 13}, map[string]int{"3": 30}); err != nil {
		t.Fatal(err)
	}
	// A writer that also started part 3 at 13 lost the race.
	err := commit(map[string]int{"3": 13, "4": 14}, map[string]int{"3": 20, "4": 20})
	if !errors.Is(err, catalog.ErrConflict) || !strings.Contains(err.Error(), "part 3 is at 30, not 13") {
		t.Fatalf("got %v, want ErrConflict naming part 3", err)
	}
	if after, _ := tbl.Latest(ctx); after.Version != m.Version+1 {
		t.Fatalf("a conflicting merge left version %d, want %d", after.Version, m.Version+1)
	}
	_, err = tbl.Commit(ctx, catalog.Change{Operation: "ingest",
		Checkpoints:     map[string]jsonRaw{"kafka:t": jsonRaw(`{}`)},
		CheckpointMerge: map[string]func(json.RawMessage) (json.RawMessage, error){"kafka:t": advance(nil, nil)}})
	if err == nil || !strings.Contains(err.Error(), "both set and merged") {
		t.Fatalf("setting and merging one key: err = %v", err)
	}
}

func TestRollbackRestoresFiles(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range testenv.Locations(t) {
		t.Run(kind, func(t *testing.T) {
			tbl, _ := newTable(t, loc)
			day := time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)
			v2 := appendRows(t, tbl, eventRows(day, 0, 5))
			appendRows(t, tbl, eventRows(day.AddDate(0, 0, 1), 5, 5))
			want := livePaths(t, tbl, v2)
			m, err := tbl.Rollback(ctx, v2.Version, "rb")
			if err != nil {
				t.Fatal(err)
			}
			if m.RolledBackTo != v2.Version || m.Operation != "rollback" {
				t.Fatalf("rollback manifest: %+v", m)
			}
			got := livePaths(t, tbl, m)
			if len(got) != len(want) {
				t.Fatalf("%d live files after rollback, want %d", len(got), len(want))
			}
			for p := range want {
				if _, ok := got[p]; !ok {
					t.Fatalf("file %s of version %d not live after rollback", p, v2.Version)
				}
			}
		})
	}
}

// Appends to one partition must not make commits slower and slower: pieces
// are merged so that a partition keeps few of them.
func TestPiecesStayFewPerPartition(t *testing.T) {
	tbl, _ := newTable(t, t.TempDir())
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var m *catalog.Manifest
	for i := range 40 {
		m = appendRows(t, tbl, eventRows(day, i, 1))
	}
	refs, err := tbl.Partitions(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 {
		t.Fatalf("%d partitions, want 1", len(refs))
	}
	if n := len(refs[0].Pieces); n > catalog.DefaultOptions().MaxPiecesPerPartition {
		t.Fatalf("%d pieces, want at most %d", n, catalog.DefaultOptions().MaxPiecesPerPartition)
	}
	if got := len(livePaths(t, tbl, m)); got != 40 {
		t.Fatalf("%d live files, want 40", got)
	}
}

// Random appends and rewrites over many partitions, with tiny pages and
// pieces so that splits and merges happen all the time: the live files
// always equal a plain model's, and the totals add up.
func TestRandomChangesMatchModel(t *testing.T) {
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, t.TempDir(), catalog.Options{MaxPartitionsPerPage: 4, MaxPiecesPerPartition: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if _, err := tbl.Create(ctx, eventSchema, daySpec(t), nil, "test"); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	model := map[string]catalog.DataFile{}
	day0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 150 {
		var ch catalog.Change
		ch.Operation = "append"
		for range 1 + rng.IntN(4) {
			f := syntheticFile(day0.AddDate(0, 0, rng.IntN(40)))
			ch.Add = append(ch.Add, f)
		}
		if step%3 == 2 && len(model) > 0 {
			ch.Operation = "compact"
			for _, f := range model {
				if rng.IntN(4) == 0 {
					ch.Remove = append(ch.Remove, f)
				}
			}
		}
		m, err := tbl.Commit(ctx, ch)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for _, f := range ch.Remove {
			delete(model, f.Path)
		}
		for _, f := range ch.Add {
			model[f.Path] = f
		}
		live := livePaths(t, tbl, m)
		if len(live) != len(model) {
			t.Fatalf("step %d: %d live files, model has %d", step, len(live), len(model))
		}
		var rows int64
		for p, f := range model {
			if _, ok := live[p]; !ok {
				t.Fatalf("step %d: %s missing", step, p)
			}
			rows += f.Rows
		}
		if files, r, _ := m.Totals(); files != int64(len(model)) || r != rows {
			t.Fatalf("step %d: totals %d files %d rows, want %d, %d", step, files, r, len(model), rows)
		}
	}
	m, _ := tbl.Latest(ctx)
	if len(m.Pages) < 5 {
		t.Fatalf("%d pages for 40 partitions at 4 a page: pages are not split", len(m.Pages))
	}
	for i := 1; i < len(m.Pages); i++ {
		if m.Pages[i-1].Last >= m.Pages[i].First {
			t.Fatalf("pages overlap or are out of order: %+v", m.Pages)
		}
	}
}

// A commit stamps the files it adds with when and in which version, which
// compaction's --min-file-age reads; a rollback keeps the stamps of the
// version it restores.
func TestCommitStampsAddedFiles(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, t.TempDir())
	day := time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)
	before := time.Now().UTC()
	v2 := appendRows(t, tbl, eventRows(day, 0, 5))
	after := time.Now().UTC()
	first := livePaths(t, tbl, v2)
	if len(first) == 0 {
		t.Fatal("no live files after an append")
	}
	for p, f := range first {
		if f.AddedVersion != v2.Version || f.AddedAt.Before(before) || f.AddedAt.After(after) {
			t.Errorf("%s: added in version %d at %s; want version %d between %s and %s", p, f.AddedVersion, f.AddedAt, v2.Version, before, after)
		}
	}
	v3 := appendRows(t, tbl, eventRows(day.AddDate(0, 0, 1), 5, 5))
	for p, f := range livePaths(t, tbl, v3) {
		want := v3.Version
		if _, old := first[p]; old {
			want = v2.Version
		}
		if f.AddedVersion != want {
			t.Errorf("%s: added in version %d, want %d", p, f.AddedVersion, want)
		}
	}
	m, err := tbl.Rollback(ctx, v2.Version, "rb")
	if err != nil {
		t.Fatal(err)
	}
	for p, f := range livePaths(t, tbl, m) {
		if !f.AddedAt.Equal(first[p].AddedAt) || f.AddedVersion != v2.Version {
			t.Errorf("%s after rollback: added %d at %s, want %d at %s", p, f.AddedVersion, f.AddedAt, v2.Version, first[p].AddedAt)
		}
	}
}

// A commit touching many partitions writes their pieces concurrently:
// every file is listed in its own partition, and a piece that cannot be
// written fails the commit whole, the table left at its version.
func TestCommitOfManyPartitions(t *testing.T) {
	ctx := context.Background()
	loc := testenv.Location(t, testenv.S3)
	clean, _ := newTable(t, loc)
	// From the 7th piece on, every PUT of one (the SDK's retry too) is
	// dropped before it reaches the server.
	var pieces atomic.Int32
	faults := &testenv.Faults{
		Match: func(path string) bool { return strings.Contains(path, "_sluice/pieces/") },
		LaterPut: func(req *http.Request) (*http.Response, error) {
			if pieces.Add(1) >= 6 {
				return testenv.Drop(req)
			}
			return http.DefaultTransport.RoundTrip(req)
		},
	}
	flaky := flakyTable(t, loc, faults)
	day0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var add []catalog.DataFile
	for d := range 40 {
		for range 1 + d%3 {
			add = append(add, syntheticFile(day0.AddDate(0, 0, d)))
		}
	}
	change := catalog.Change{Operation: "append", Add: add, DataChange: true}
	if _, err := flaky.Commit(ctx, change); err == nil || errors.Is(err, cloud.ErrOutcomeUnknown) {
		t.Fatalf("Commit with pieces failing: %v; want a failure that is not of unknown outcome", err)
	}
	if v, err := clean.LatestVersion(ctx); err != nil || v != 1 {
		t.Fatalf("latest version %d, %v; want 1, unchanged", v, err)
	}
	small, err := catalog.Open(ctx, loc, catalog.Options{ReadConcurrency: 4, MaxPartitionsPerPage: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { small.Close() })
	m, err := small.Commit(ctx, change)
	if err != nil {
		t.Fatalf("Commit again: %v", err)
	}
	live := livePaths(t, clean, m)
	if len(live) != len(add) {
		t.Fatalf("%d live files, want %d", len(live), len(add))
	}
	for _, f := range add {
		got, ok := live[f.Path]
		if !ok || got.Partition != f.Partition || got.Rows != f.Rows {
			t.Errorf("%s: live %v as %+v; want it in %s with %d rows", f.Path, ok, got.Partition, f.Partition, f.Rows)
		}
	}
	parts, err := clean.Partitions(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 40 || len(m.Pages) < 5 {
		t.Fatalf("%d partitions on %d pages; want 40 on at least 5 (8 a page)", len(parts), len(m.Pages))
	}
	for _, p := range parts {
		if len(p.Pieces) != 1 {
			t.Errorf("partition %s has %d pieces, want 1", p.Partition, len(p.Pieces))
		}
	}
}
