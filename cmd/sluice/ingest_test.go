package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

const ingestSchema = "event_id:uuid,list_id:int64,tally:int32,event_time:timestamp,note:string?"

func initEvents(t *testing.T, loc string) {
	t.Helper()
	mustSluice(t, "init", loc, "--schema", ingestSchema, "--partition-by", "day(event_time)")
}

func writeEvents(t *testing.T, dir, name string, from, n int) {
	t.Helper()
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-%012d","list_id":%d,"tally":%d,"event_time":"2024-01-%02dT10:00:00Z"}`+"\n",
			i, i, i%7, 1+i%28)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestIngestCommandSummaryAndRerun(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, land, "a.jsonl", 0, 100)
	writeEvents(t, land, "b.jsonl", 100, 50)
	s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json"))
	for k, want := range map[string]float64{"records_in": 150, "rows_written": 150, "records_quarantined": 0,
		"files_in": 2, "files_failed": 0, "version": 2} {
		if s[k] != want {
			t.Errorf("%s = %v, want %v (%v)", k, s[k], want, s)
		}
	}
	for _, k := range []string{"bytes_in", "seconds"} {
		if v, _ := s[k].(float64); v <= 0 {
			t.Errorf("%s = %v", k, s[k])
		}
	}
	s = summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json"))
	if s["files_in"] != 0.0 || s["version"] != 2.0 {
		t.Fatalf("second run took files: %v", s)
	}
	writeEvents(t, land, "c.jsonl", 150, 10)
	s = summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json"))
	if s["files_in"] != 1.0 || s["rows_written"] != 10.0 {
		t.Fatalf("third run: %v", s)
	}
	if d := tableRead(t, loc); d.Rows != 160 {
		t.Fatalf("DuckDB reads %d rows, want 160", d.Rows)
	}
}

func TestIngestCommandErrors(t *testing.T) {
	dir := t.TempDir()
	loc := filepath.Join(dir, "events")
	initEvents(t, loc)
	// A malformed source is a bad --from: a usage error, before anything
	// is opened.
	if r := sluice(t, nil, "ingest", loc, "--from", "kafka://127.0.0.1:9092"); r.code != 2 || !strings.Contains(r.stderr, "--from") || !strings.Contains(r.stderr, "want kafka://host:port") {
		t.Fatalf("a topicless kafka:// source: exit %d, %s; want 2 naming --from", r.code, r.stderr)
	}
	if r := sluice(t, nil, "ingest", loc, "--from", "kafka://127.0.0.1:9092/events", "--on-gap", "ignore"); r.code != 2 {
		t.Fatalf("--on-gap ignore: exit %d, want 2", r.code)
	}
	if r := sluice(t, nil, "ingest", loc); r.code != 2 {
		t.Fatalf("no --from: exit %d, want 2", r.code)
	}
	if r := sluice(t, nil, "ingest", loc, "--from", dir, "--format", "xml"); r.code != 2 {
		t.Fatalf("--format xml: exit %d, want 2", r.code)
	}
	failsWithOneLine(t, sluice(t, nil, "ingest", filepath.Join(dir, "nope"), "--from", dir), "table not found")
}

func TestIngestCommandBadInputCorpus(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	copyFiles(t, filepath.Join(repoRoot(t), "testdata", "bad"), land)
	writeParquetFile(t, land, "incompatible.parquet", "event_id:uuid,list_id:int64,tally:int32,event_time:date",
		[]any{"6f1c3b9e-2a4d-4b8e-9c1f-000000000099", int64(99), int32(1), time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)})
	initEvents(t, loc)
	r := sluice(t, nil, "ingest", loc, "--from", land, "--json")
	failsWithOneLine(t, result{r.code, "", r.stderr}, "incompatible.parquet", `"event_time"`, "date", "1 more failed")
	s := summaryOf(t, r)
	for k, want := range map[string]float64{"records_in": 14, "rows_written": 8, "records_quarantined": 6, "files_in": 7, "files_failed": 2} {
		if s[k] != want {
			t.Errorf("%s = %v, want %v", k, s[k], want)
		}
	}
	if d := tableRead(t, loc); d.Rows != 8 {
		t.Fatalf("table rows %d, want 8", d.Rows)
	}
	if d := tableRead(t, loc+"_quarantine"); d.Rows != 6 {
		t.Fatalf("quarantine rows %d, want 6", d.Rows)
	}
	// A rerun takes nothing new, retries the failed file, and
	// quarantines nothing twice.
	r = sluice(t, nil, "ingest", loc, "--from", land, "--json")
	if s := summaryOf(t, r); r.code != 1 || s["files_in"] != 0.0 || s["files_failed"] != 2.0 {
		t.Fatalf("rerun: exit %d, %v", r.code, s)
	}
	if d := tableRead(t, loc+"_quarantine"); d.Rows != 6 {
		t.Fatalf("quarantine rows %d after rerun, want 6", d.Rows)
	}
}

func TestIngestCommandObjectStores(t *testing.T) {
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			base := testenv.Location(t, kind)
			local := t.TempDir()
			writeEvents(t, local, "a.jsonl", 0, 40)
			writeEvents(t, local, "b.jsonl", 40, 40)
			uploadDir(t, local, base+"/landing")
			initEvents(t, base+"/events")
			s := summaryOf(t, mustSluice(t, "ingest", base+"/events", "--from", base+"/landing", "--json"))
			if s["rows_written"] != 80.0 || s["files_in"] != 2.0 {
				t.Fatalf("%v", s)
			}
			s = summaryOf(t, mustSluice(t, "ingest", base+"/events", "--from", base+"/landing", "--json"))
			if s["files_in"] != 0.0 {
				t.Fatalf("rerun: %v", s)
			}
			if n := len(lines(mustSluice(t, "files", base+"/events").stdout)); n == 0 {
				t.Fatal("no files")
			}
		})
	}
}

// TestIngestCommandKilledRunsExactlyOnce kills ingest with SIGKILL at
// random moments over a landing folder of 50 files, then lets one run
// finish: the table must hold every record exactly once, as a run that was
// never killed writes them.
func TestIngestCommandKilledRunsExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	land := filepath.Join(dir, "landing")
	for i := range 50 {
		writeEvents(t, land, fmt.Sprintf("f%03d.jsonl", i), i*200, 200)
		if i%10 == 0 { // one bad record in every tenth file, for the quarantine
			f, err := os.OpenFile(filepath.Join(land, fmt.Sprintf("f%03d.jsonl", i)), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(f, `{"event_id":"cat /etc/passwd","list_id":1,"tally":1,"event_time":"2024-01-01T00:00:00Z"}`)
			f.Close()
		}
	}
	ref := filepath.Join(dir, "reference")
	initEvents(t, ref)
	mustSluice(t, "ingest", ref, "--from", land)
	want := tableRead(t, ref)
	if want.Rows != 50*200 {
		t.Fatalf("reference rows %d", want.Rows)
	}

	loc := filepath.Join(dir, "events")
	initEvents(t, loc)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for i := range 6 {
		err := killedRun(t, rng, 250*time.Millisecond, "ingest", loc, "--from", land, "--max-records", fmt.Sprint(1000+rng.IntN(4000)))
		t.Logf("run %d: %v; table at version %d", i, err, len(lines(mustSluice(t, "history", loc).stdout))-1)
	}
	mustSluice(t, "ingest", loc, "--from", land)
	got := tableRead(t, loc)
	if got.Rows != want.Rows || got.Checksum != want.Checksum {
		t.Fatalf("after kills: %d rows, checksum %s; want %d rows, checksum %s", got.Rows, got.Checksum, want.Rows, want.Checksum)
	}
	if q := tableRead(t, loc+"_quarantine"); q.Rows != 5 {
		t.Fatalf("quarantine holds %d rows, want 5 (one per bad record, never twice)", q.Rows)
	}
	s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json"))
	if s["files_in"] != 0.0 {
		t.Fatalf("a final rerun took files: %v", s)
	}
}

// uploadDir copies the files of a local folder to a location.
func uploadDir(t *testing.T, dir, loc string) {
	t.Helper()
	ctx := context.Background()
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, e.Name(), bytes.NewReader(b), int64(len(b)), cloud.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func writeParquetFile(t *testing.T, dir, name, schema string, rows ...[]any) {
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
