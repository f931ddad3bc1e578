package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

func TestIngestCommandDedupKey(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, land, "a.jsonl", 0, 100)
	writeEvents(t, land, "b.jsonl", 50, 100) // 50..99 again
	s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--dedup-key", "event_id", "--json"))
	for k, want := range map[string]float64{"records_in": 200, "rows_written": 150, "records_quarantined": 0,
		"records_deduplicated": 50} {
		if s[k] != want {
			t.Errorf("%s = %v, want %v (%v)", k, s[k], want, s)
		}
	}
	// A producer's retry lands in the next run: dropped too.
	writeEvents(t, land, "c.jsonl", 140, 20) // 140..149 again
	s = summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--dedup-key", "event_id", "--dedup-window", "1h", "--json"))
	if s["rows_written"] != 10.0 || s["records_deduplicated"] != 10.0 {
		t.Fatalf("second run: %v", s)
	}
	if d := tableRead(t, loc); d.Rows != 160 {
		t.Fatalf("DuckDB reads %d rows, want 160", d.Rows)
	}

	failsWithOneLine(t, sluice(t, nil, "ingest", loc, "--from", land, "--dedup-key", "evnet_id"), `"evnet_id"`)
	if r := sluice(t, nil, "ingest", loc, "--from", land, "--dedup-window", "1h"); r.code != 2 {
		t.Fatalf("--dedup-window without --dedup-key: exit %d, want 2", r.code)
	}
}

func TestIngestCommandExtraColumn(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	mustSluice(t, "init", loc, "--schema", ingestSchema+",_extra:string?", "--partition-by", "day(event_time)")
	if err := os.MkdirAll(land, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(land, "a.jsonl"), []byte(
		`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-000000000001","list_id":1,"tally":1,"event_time":"2024-01-31T10:00:00Z","app":{"v":"2.1"}}`+"\n"+
			`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-000000000002","list_id":2,"tally":1,"event_time":"2024-01-31T10:00:00Z"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json"))
	if s["rows_written"] != 2.0 {
		t.Fatalf("%v", s)
	}
	d := tableRead(t, loc)
	if d.Rows != 2 || !slices.Contains(d.Columns, "_extra:VARCHAR") {
		t.Fatalf("DuckDB reads %+v", d)
	}
	ctx := context.Background()
	schema, _ := catalog.ParseSchema(ingestSchema + ",_extra:string?")
	got := map[int64]any{}
	for _, f := range lines(mustSluice(t, "files", loc).stdout) {
		st, err := cloud.Open(ctx, filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := pqio.ReadParquetRows(ctx, st, filepath.Base(f), fi.Size(), schema)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			got[r[1].(int64)] = r[5]
		}
	}
	if got[1] != `{"app":{"v":"2.1"}}` || got[2] != nil {
		t.Fatalf("_extra by list_id: %v", got)
	}
}
