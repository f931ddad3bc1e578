package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

// quarantineReasons reads the quarantine table of the table at loc, as
// a user would look into it: position (file:line) -> reason.
func quarantineReasons(t *testing.T, loc string) map[string]string {
	t.Helper()
	ctx := context.Background()
	qt, err := catalog.Open(ctx, loc+"_quarantine", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qt.Close()
	m, err := qt.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := qt.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		rows, err := pqio.ReadParquetRows(ctx, qt.Store(), f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out[r[1].(string)] = r[2].(string)
		}
	}
	return out
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A CSV file whose quote is never closed fails whole, naming the file and
// the line the quote opened on, and is not recorded: the rerun takes it
// once fixed. Before, its quote swallowed the rest of the file, the run
// exited 0 with fewer records and nothing quarantined (issue 13, item 4).
func TestIngestCommandFailsACSVFileEndingInsideAQuote(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, land, "a.jsonl", 0, 5)
	const header = "event_id,list_id,tally,event_time,note\n"
	rec := func(i, note string) string {
		return "6f1c3b9e-2a4d-4b8e-9c1f-00000000010" + i + "," + "10" + i + ",1,2024-01-02T10:00:00Z," + note + "\n"
	}
	writeFile(t, land, "b.csv", header+rec("1", "fine")+rec("2", `"cut short`)+rec("3", "fine"))
	r := sluice(t, nil, "ingest", loc, "--from", land, "--json")
	failsWithOneLine(t, result{r.code, "", r.stderr}, "b.csv", "CSV line 3, column", "never closed", "landing files failed")
	s := summaryOf(t, r)
	for k, want := range map[string]float64{"files_in": 1, "files_failed": 1, "records_in": 5, "rows_written": 5, "records_quarantined": 0} {
		if s[k] != want {
			t.Errorf("%s = %v, want %v (%v)", k, s[k], want, s)
		}
	}
	if d := tableRead(t, loc); d.Rows != 5 {
		t.Fatalf("table rows %d, want 5", d.Rows)
	}

	// Fixed, it is taken by the next run, all three records.
	writeFile(t, land, "b.csv", header+rec("1", "fine")+rec("2", `"no longer cut short"`)+rec("3", "fine"))
	s = summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json"))
	if s["files_in"] != 1.0 || s["rows_written"] != 3.0 || s["files_failed"] != 0.0 {
		t.Fatalf("rerun: %v", s)
	}
	if d := tableRead(t, loc); d.Rows != 8 {
		t.Fatalf("table rows %d, want 8", d.Rows)
	}
}

// Records that JSON cannot say once and exactly are quarantined with a
// reason, and the counts reconcile: an epoch past 9999-12-31 (it made a
// date=10000-01-01 partition), a lone surrogate (stored as six
// characters), a key given twice (the first kept silently). A surrogate
// pair is one character (issue 13, item 7).
func TestIngestCommandQuarantinesAmbiguousAndOutOfRangeJSON(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	const id = `"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-00000000000`
	writeFile(t, land, "a.jsonl", strings.Join([]string{
		`{` + id + `1","list_id":1,"tally":1,"event_time":"2024-01-01T10:00:00Z","note":"\ud83d\ude00"}`,
		`{` + id + `2","list_id":2,"tally":1,"event_time":253402300800}`,
		`{` + id + `3","list_id":3,"tally":1,"event_time":"2024-01-01T10:00:00Z","note":"\ud800"}`,
		`{` + id + `4","list_id":4,"tally":1,"event_time":"2024-01-01T10:00:00Z","list_id":40}`,
		`{` + id + `5","list_id":5,"tally":1,"event_time":"9999-12-31T23:59:59Z"}`,
	}, "\n")+"\n")
	s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json"))
	for k, want := range map[string]float64{"records_in": 5, "rows_written": 2, "records_quarantined": 3, "files_in": 1} {
		if s[k] != want {
			t.Errorf("%s = %v, want %v (%v)", k, s[k], want, s)
		}
	}
	var parts []string
	for _, p := range s["partitions"].([]any) {
		parts = append(parts, p.(string))
	}
	if !slices.Equal(parts, []string{"date=2024-01-01", "date=9999-12-31"}) {
		t.Fatalf("partitions %v", parts)
	}
	got := quarantineReasons(t, loc)
	for pos, want := range map[string]string{
		"a.jsonl:2": `column "event_time" (timestamp): epoch 253402300800 (s) outside 0001-01-01 through 9999-12-31 (UTC)`,
		"a.jsonl:3": `string holds \ud800, the first half of a UTF-16 surrogate pair without its second`,
		"a.jsonl:4": `duplicate key "list_id": the record is ambiguous`,
	} {
		if !strings.HasPrefix(got[pos], want) {
			t.Errorf("%s: reason %q, want %q", pos, got[pos], want)
		}
	}
	if len(got) != 3 {
		t.Errorf("quarantine holds %v", got)
	}
}

// A --from folder that does not exist (a typo) fails with the location
// named, exit 1; it used to succeed with 0 files. An empty folder, and an
// object-store prefix holding nothing yet, succeed with 0 files (issue 13,
// item 11).
func TestIngestCommandFailsOnAMissingSourceFolder(t *testing.T) {
	dir := t.TempDir()
	loc := filepath.Join(dir, "events")
	initEvents(t, loc)
	failsWithOneLine(t, sluice(t, nil, "ingest", loc, "--from", "./no-such-folder"), "no-such-folder", "no such landing folder")
	missing := filepath.Join(dir, "landnig")
	failsWithOneLine(t, sluice(t, nil, "ingest", loc, "--from", missing), missing, "no such landing folder")
	if r := sluice(t, nil, "ingest", loc, "--from", missing, "--json"); r.code != 1 {
		t.Fatalf("--json: exit %d, want 1", r.code)
	}
	empty := filepath.Join(dir, "landing")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", empty, "--json")); s["files_in"] != 0.0 {
		t.Fatalf("empty folder: %v", s)
	}
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", testenv.Location(t, kind)+"/nothing-yet", "--json"))
			if s["files_in"] != 0.0 {
				t.Fatalf("empty prefix: %v", s)
			}
		})
	}
}
