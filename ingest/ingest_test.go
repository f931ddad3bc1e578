package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/ingest"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const eventsSchema = "event_id:uuid,list_id:int64,tally:int32,event_time:timestamp,note:string?"

func newTable(t *testing.T, loc string) *catalog.Table {
	t.Helper()
	return newTableWithSchema(t, loc, eventsSchema)
}

// put writes a landing file at loc/name.
func put(t *testing.T, loc, name string, data []byte) {
	t.Helper()
	ctx := context.Background()
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Put(ctx, name, strings.NewReader(string(data)), int64(len(data)), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func events(from, n int, day string) []byte {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-%012d","list_id":%d,"tally":1,"event_time":"%sT%02d:%02d:00Z","extra":"ignored"}`+"\n",
			i, i, day, i/60%24, i%60)
	}
	return []byte(b.String())
}

// rows reads every live row of a table.
func rows(t *testing.T, tb *catalog.Table) [][]any {
	t.Helper()
	ctx := context.Background()
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for _, f := range files {
		rs, err := pqio.ReadParquetRows(ctx, tb.Store(), f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rs...)
	}
	return out
}

func listIDs(t *testing.T, tb *catalog.Table) []int64 {
	var ids []int64
	for _, r := range rows(t, tb) {
		ids = append(ids, r[1].(int64))
	}
	slices.Sort(ids)
	return ids
}

func seq(from, n int) []int64 {
	var out []int64
	for i := from; i < from+n; i++ {
		out = append(out, int64(i))
	}
	return out
}

// runOK runs an ingest that must succeed, and checks that its counts
// reconcile.
func runOK(t *testing.T, tb *catalog.Table, src string, o ingest.Options) ingest.Result {
	t.Helper()
	res, err := ingest.Run(context.Background(), tb, src, o)
	if err != nil {
		t.Fatal(err)
	}
	reconcile(t, res)
	return res
}

// runElsewhere runs an ingest into the table at loc through a handle of
// its own, as another process would.
func runElsewhere(loc, src string, o ingest.Options) (ingest.Result, error) {
	tb, err := catalog.Open(context.Background(), loc, catalog.Options{})
	if err != nil {
		return ingest.Result{}, err
	}
	defer tb.Close()
	return ingest.Run(context.Background(), tb, src, o)
}

// someSucceeded checks the errors of concurrent runs of one source: at
// least one run succeeded, and every other lost the race with
// catalog.ErrConflict.
func someSucceeded(t *testing.T, errs []error) {
	t.Helper()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, catalog.ErrConflict):
			t.Fatalf("a concurrent run failed with %v, not ErrConflict", err)
		}
	}
	if ok == 0 {
		t.Fatalf("no concurrent run succeeded: %v", errs)
	}
}

func reconcile(t *testing.T, r ingest.Result) {
	t.Helper()
	if r.RecordsIn != r.RowsWritten+r.RecordsQuarantined+r.RecordsDeduplicated {
		t.Fatalf("records in %d != rows written %d + quarantined %d + deduplicated %d", r.RecordsIn, r.RowsWritten, r.RecordsQuarantined, r.RecordsDeduplicated)
	}
}

// putParquet writes rows of schema as the Parquet file name in dir.
func putParquet(t *testing.T, dir, name, schema string, rows [][]any) {
	t.Helper()
	ctx := context.Background()
	st, err := cloud.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pqio.WriteParquet(ctx, st, name, s, rows); err != nil {
		t.Fatal(err)
	}
}

// writeIncompatibleParquet writes a Parquet landing file whose event_time
// is a date where the table has a timestamp.
func writeIncompatibleParquet(t *testing.T, dir string) {
	t.Helper()
	day := time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	putParquet(t, dir, "incompatible.parquet", "event_id:uuid,list_id:int64,tally:int32,event_time:date",
		[][]any{{"6f1c3b9e-2a4d-4b8e-9c1f-000000000099", int64(99), int32(1), day}})
}

func copyCorpus(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "bad")
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() { // pipelines/: sluice validate's corpus, not landing files
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeIncompatibleParquet(t, dst)
	return dst
}

func TestIngestBadInputCorpusQuarantinesRecordsAndReportsWholeFileFailures(t *testing.T) {
	ctx := context.Background()
	land := copyCorpus(t)
	loc := filepath.Join(t.TempDir(), "events")
	tb := newTable(t, loc)
	res, err := ingest.Run(ctx, tb, land, ingest.Options{RunID: "r1"})
	if !errors.Is(err, ingest.ErrFilesFailed) {
		t.Fatalf("err = %v, want ErrFilesFailed", err)
	}
	reconcile(t, res)
	if res.RecordsIn != 14 || res.RowsWritten != 8 || res.RecordsQuarantined != 6 || res.FilesIn != 7 || res.FilesFailed != 2 {
		t.Fatalf("result %+v", res)
	}
	var failed []string
	for _, f := range res.Failures {
		failed = append(failed, filepath.Base(f.File)+": "+f.Err.Error())
	}
	slices.Sort(failed)
	if len(failed) != 2 || !strings.Contains(failed[0], "incompatible.parquet") || !strings.Contains(failed[0], `"event_time"`) ||
		!strings.Contains(failed[1], "truncated.jsonl.gz") || !strings.Contains(failed[1], "gzip") {
		t.Fatalf("failures %q", failed)
	}
	if !strings.Contains(err.Error(), "landing files failed") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q", err)
	}
	if got := listIDs(t, tb); !slices.Equal(got, []int64{1, 3, 4, 7, 8, 10, 12, 14}) {
		t.Fatalf("list ids %v", got)
	}

	// Every bad record, with its reason and file:line.
	qt, err := catalog.Open(ctx, loc+"_quarantine", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qt.Close()
	want := map[string]string{
		"malformed.jsonl:2":     "malformed JSON",
		"not_uuid.jsonl:2":      `column "event_id" (uuid): not a UUID: "cat /etc/passwd"`,
		"bad_timestamp.jsonl:1": `column "event_time" (timestamp): not an RFC 3339 timestamp`,
		"invalid_utf8.jsonl:2":  "invalid UTF-8 at byte",
		"too_many_fields.csv:3": "CSV row has 5 fields, the header 4",
		"oversized.jsonl.zst:1": "exceeds the limit of 1048576 bytes",
	}
	got := map[string]string{}
	for _, r := range rows(t, qt) {
		got[r[1].(string)] = r[2].(string)
		if !strings.HasPrefix(r[0].(string), land) || len(r[3].([]byte)) == 0 {
			t.Errorf("quarantine row %v: want the source URL and the raw bytes", r[:3])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("quarantine holds %v, want %v", got, want)
	}
	for pos, reason := range want {
		if !strings.Contains(got[pos], reason) {
			t.Errorf("%s: reason %q, want it to mention %q", pos, got[pos], reason)
		}
	}

	// The late event went to its own day.
	m, _ := tb.Latest(ctx)
	if !slices.Contains(m.Summary.Partitions, "date=2023-12-25") {
		t.Fatalf("partitions %v lack the late event's day", m.Summary.Partitions)
	}

	// The failed files are retried: fix them, and only they are taken.
	os.Remove(filepath.Join(land, "incompatible.parquet"))
	if err := os.WriteFile(filepath.Join(land, "truncated.jsonl.gz"), gz(t, events(100, 5, "2024-02-01")), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = ingest.Run(ctx, tb, land, ingest.Options{RunID: "r2"})
	if err != nil || res.FilesIn != 1 || res.RowsWritten != 5 || res.RecordsQuarantined != 0 {
		t.Fatalf("rerun: %+v, %v", res, err)
	}
	if n := len(rows(t, qt)); n != 6 {
		t.Fatalf("quarantine holds %d rows after the rerun, want 6", n)
	}
}

func TestIngestTakesEachLandingFileOnce(t *testing.T) {
	ctx := context.Background()
	land := t.TempDir()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	put(t, land, "2024/01/a.jsonl", events(0, 10, "2024-01-31"))
	put(t, land, "2024/01/b.jsonl", events(10, 10, "2024-02-01"))
	put(t, land, "_SUCCESS", nil)
	res, err := ingest.Run(ctx, tb, land, ingest.Options{})
	if err != nil || res.FilesIn != 2 || res.RowsWritten != 20 {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	res, err = ingest.Run(ctx, tb, land, ingest.Options{})
	if err != nil || res.FilesIn != 0 || res.RecordsIn != 0 || res.Version != 2 {
		t.Fatalf("second run took something: %+v, %v", res, err)
	}
	put(t, land, "2024/01/c.jsonl", events(20, 5, "2024-02-01"))
	res, err = ingest.Run(ctx, tb, land, ingest.Options{})
	if err != nil || res.FilesIn != 1 || res.RowsWritten != 5 || res.Version != 3 {
		t.Fatalf("third run: %+v, %v", res, err)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 25)) {
		t.Fatalf("ids %v", got)
	}
}

func TestIngestLeavesYoungFilesForTheNextRun(t *testing.T) {
	ctx := context.Background()
	land := t.TempDir()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	put(t, land, "old.jsonl", events(0, 3, "2024-01-31"))
	put(t, land, "new.jsonl", events(3, 3, "2024-01-31"))
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(land, "old.jsonl"), old, old)
	res, err := ingest.Run(ctx, tb, land, ingest.Options{MinAge: time.Minute})
	if err != nil || res.FilesIn != 1 || res.FilesWaiting != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	res, err = ingest.Run(ctx, tb, land, ingest.Options{})
	if err != nil || res.FilesIn != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestIngestCompressedAndCSVAndParquetLandingFiles(t *testing.T) {
	ctx := context.Background()
	land := t.TempDir()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	put(t, land, "a.jsonl.gz", gz(t, events(0, 5, "2024-01-31")))
	put(t, land, "b.ndjson.zst", zst(t, events(5, 5, "2024-01-31")))
	put(t, land, "c.csv", []byte("list_id,event_time,event_id,tally,unknown\n10,1706695200,6f1c3b9e-2a4d-4b8e-9c1f-000000000010,1,x\n"))
	st, _ := cloud.Open(ctx, land)
	defer st.Close()
	s, _ := catalog.ParseSchema("event_id:string,list_id:int32,tally:int32,event_time:timestamp")
	ts := time.Date(2024, 1, 31, 1, 2, 3, 0, time.UTC)
	if _, _, err := pqio.WriteParquet(ctx, st, "d.parquet", s, [][]any{
		{"6f1c3b9e-2a4d-4b8e-9c1f-000000000011", int32(11), int32(1), ts},
		{"not-a-uuid", int32(12), int32(1), ts},
	}); err != nil {
		t.Fatal(err)
	}
	res := runOK(t, tb, land, ingest.Options{})
	if res.FilesIn != 4 || res.RowsWritten != 12 || res.RecordsQuarantined != 1 {
		t.Fatalf("%+v", res)
	}
	for _, r := range rows(t, tb) {
		if r[1].(int64) == 10 && !r[3].(time.Time).Equal(time.Unix(1706695200, 0)) {
			t.Fatalf("epoch seconds read as %v", r[3])
		}
	}
}

func TestIngestFromObjectStores(t *testing.T) {
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			base := testenv.Location(t, kind)
			land := base + "/landing"
			tb := newTable(t, base+"/events")
			put(t, land, "a.jsonl", events(0, 50, "2024-01-31"))
			put(t, land, "b.jsonl.gz", gz(t, events(50, 50, "2024-02-01")))
			res, err := ingest.Run(ctx, tb, land, ingest.Options{})
			if err != nil || res.FilesIn != 2 || res.RowsWritten != 100 {
				t.Fatalf("%+v, %v", res, err)
			}
			res, err = ingest.Run(ctx, tb, land, ingest.Options{})
			if err != nil || res.FilesIn != 0 {
				t.Fatalf("rerun: %+v, %v", res, err)
			}
			if got := listIDs(t, tb); !slices.Equal(got, seq(0, 100)) {
				t.Fatalf("ids %v", got)
			}
		})
	}
}

func TestIngestConcurrentRunsNeverTakeAFileTwice(t *testing.T) {
	ctx := context.Background()
	land := t.TempDir()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	for i := range 10 {
		put(t, land, fmt.Sprintf("f%02d.jsonl", i), events(i*10, 10, "2024-01-31"))
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { _, errs[i] = ingest.Run(ctx, tb, land, ingest.Options{}) })
	}
	wg.Wait()
	someSucceeded(t, errs)
	if _, err := ingest.Run(ctx, tb, land, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 100)) {
		t.Fatalf("ids %v", got)
	}
}

func TestIngestRestartsWithoutAFileThatFailsAfterSpilling(t *testing.T) {
	ctx := context.Background()
	land := t.TempDir()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	put(t, land, "a.jsonl", events(0, 100, "2024-01-31"))
	full := gz(t, events(1000, 5000, "2024-01-31"))
	put(t, land, "b.jsonl.gz", full[:len(full)*3/4])
	put(t, land, "c.jsonl", events(100, 100, "2024-02-01"))
	res, err := ingest.Run(ctx, tb, land, ingest.Options{MemoryBudget: 64 << 10})
	if !errors.Is(err, ingest.ErrFilesFailed) || res.FilesIn != 2 || res.FilesFailed != 1 || res.RowsWritten != 200 {
		t.Fatalf("%+v, %v", res, err)
	}
	reconcile(t, res)
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 200)) {
		t.Fatalf("ids: %d rows", len(got))
	}
}

// A run that starts over drops its first pass whole: no writer goroutine,
// temporary file or uploaded file of that pass outlives the run. A
// one-shot run hid the leak; serve, running for days, would not.
func TestIngestRestartLeavesNothingOfTheDroppedPass(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where Parquet writers keep their files
	land := t.TempDir()
	loc := filepath.Join(t.TempDir(), "events")
	tb := newTable(t, loc)
	put(t, land, "a.jsonl", events(0, 100, "2024-01-31"))
	full := gz(t, events(1000, 5000, "2024-01-31"))
	put(t, land, "b.jsonl.gz", full[:len(full)*3/4])
	put(t, land, "c.jsonl", events(100, 100, "2024-02-01"))
	before := runtime.NumGoroutine()
	// A small target makes the first pass upload files before b fails.
	res, err := ingest.Run(ctx, tb, land, ingest.Options{MemoryBudget: 64 << 10, TargetFileSize: 8 << 10})
	if !errors.Is(err, ingest.ErrFilesFailed) || res.FilesIn != 2 || res.FilesFailed != 1 || res.RowsWritten != 200 {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 200)) {
		t.Fatalf("ids: %d rows", len(got))
	}

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("temporary file left behind: %s", e.Name())
	}
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := livePathsOf(t, tb, m)
	err = filepath.WalkDir(loc, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		rel, _ := filepath.Rel(loc, path)
		if !live[filepath.ToSlash(rel)] {
			t.Errorf("data file %s is in no version: left by the dropped pass", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// livePathsOf returns the paths of m's live files.
func livePathsOf(t *testing.T, tb *catalog.Table, m *catalog.Manifest) map[string]bool {
	t.Helper()
	files, err := tb.Files(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, f := range files {
		live[f.Path] = true
	}
	return live
}

func TestIngestRollsFilesAtTheTargetSize(t *testing.T) {
	ctx := context.Background()
	land := t.TempDir()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	for i := range 8 {
		put(t, land, fmt.Sprintf("f%d.jsonl", i), events(i*500, 500, "2024-01-31"))
	}
	res, err := ingest.Run(ctx, tb, land, ingest.Options{TargetFileSize: 8 << 10})
	if err != nil || res.RowsWritten != 4000 || res.FilesOut < 2 {
		t.Fatalf("%+v, %v", res, err)
	}
}

// quarantined returns the quarantine table's rows of the table at loc,
// position -> reason.
func quarantined(t *testing.T, loc string) map[string]string {
	t.Helper()
	qt, err := catalog.Open(context.Background(), loc+"_quarantine", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qt.Close()
	got := map[string]string{}
	for _, r := range rows(t, qt) {
		got[r[1].(string)] = r[2].(string)
	}
	return got
}

// A timestamp past 9999-12-31 or before 0001-01-01 is quarantined on
// every input path, Parquet landing files too, and never makes a
// date=10000-01-01 partition (issue 13, item 7).
func TestIngestQuarantinesTimestampsOutsideTheCalendar(t *testing.T) {
	land := t.TempDir()
	loc := filepath.Join(t.TempDir(), "events")
	tb := newTable(t, loc)
	id := func(i int) string { return fmt.Sprintf("6f1c3b9e-2a4d-4b8e-9c1f-%012d", i) }
	put(t, land, "a.jsonl", []byte(
		`{"event_id":"`+id(1)+`","list_id":1,"tally":1,"event_time":253402300799}`+"\n"+
			`{"event_id":"`+id(2)+`","list_id":2,"tally":1,"event_time":253402300800}`+"\n"+
			`{"event_id":"`+id(3)+`","list_id":3,"tally":1,"event_time":"9999-12-31T23:00:00-05:00"}`+"\n"))
	put(t, land, "b.csv", []byte("event_id,list_id,tally,event_time\n"+
		id(4)+",4,1,-62135596800\n"+
		id(5)+",5,1,-62135596801\n"))
	putParquet(t, land, "c.parquet", "event_id:uuid,list_id:int64,tally:int32,event_time:timestamp", [][]any{
		{id(6), int64(6), int32(1), time.Date(9999, 12, 31, 12, 0, 0, 0, time.UTC)},
		{id(7), int64(7), int32(1), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{id(8), int64(8), int32(1), time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)},
	})
	res := runOK(t, tb, land, ingest.Options{})
	if res.FilesIn != 3 || res.RowsWritten != 3 || res.RecordsQuarantined != 5 {
		t.Fatalf("%+v", res)
	}
	if got := listIDs(t, tb); !slices.Equal(got, []int64{1, 4, 6}) {
		t.Fatalf("list ids %v", got)
	}
	if !slices.Equal(res.Partitions, []string{"date=0001-01-01", "date=9999-12-31"}) {
		t.Fatalf("partitions %v", res.Partitions)
	}
	got := quarantined(t, loc)
	for _, pos := range []string{"a.jsonl:2", "a.jsonl:3", "b.csv:3", "c.parquet:2", "c.parquet:3"} {
		if !strings.Contains(got[pos], `column "event_time" (timestamp)`) || !strings.Contains(got[pos], "outside 0001-01-01 through 9999-12-31 (UTC)") {
			t.Errorf("%s: reason %q", pos, got[pos])
		}
	}
}

// A local --from folder that does not exist, or is a file, fails the run
// naming it, rather than succeeding with no files as a typo did (issue
// 13, item 11). An empty folder, and an object-store prefix holding
// nothing, are where files have not arrived yet: no error.
func TestIngestFailsWhenTheLocalSourceFolderDoesNotExist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tb := newTable(t, filepath.Join(dir, "events"))
	put(t, filepath.Join(dir, "landing"), "a.jsonl", events(0, 3, "2024-01-31"))
	for name, src := range map[string]string{
		"a typo":     filepath.Join(dir, "landnig"),
		"a file URL": "file://" + filepath.Join(dir, "no-such-folder"),
		"a file":     filepath.Join(dir, "landing", "a.jsonl"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ingest.Run(ctx, tb, src, ingest.Options{})
			if !errors.Is(err, ingest.ErrNoSuchSource) || !strings.Contains(err.Error(), strings.TrimPrefix(src, "file://")) {
				t.Fatalf("err = %v, want ErrNoSuchSource naming %s", err, src)
			}
		})
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if res := runOK(t, tb, empty, ingest.Options{}); res.FilesSeen != 0 || res.Version != 1 {
		t.Fatalf("empty folder: %+v", res)
	}
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			if res := runOK(t, tb, testenv.Location(t, kind)+"/nothing-yet", ingest.Options{}); res.FilesSeen != 0 {
				t.Fatalf("empty prefix: %+v", res)
			}
		})
	}
}
