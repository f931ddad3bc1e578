package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// rollupTable creates a table of schema (partitioned by spec) holding rows.
func rollupTable(t *testing.T, loc, schema, spec string, rows [][]any) {
	t.Helper()
	ctx := context.Background()
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := catalog.ParsePartitionSpec(spec, s)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	m, err := tb.Create(ctx, s, ps, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.WriteFiles(ctx, m, rows)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, catalog.Change{Operation: "append", RunID: "test", Add: files, DataChange: true}); err != nil {
		t.Fatal(err)
	}
}

// sluice rollup with a sluice table as snapshot: the --json summary says
// what was read, excluded and written; a rerun commits nothing; the
// output's rows are the running totals.
func TestRollupCommand(t *testing.T) {
	dir := t.TempDir()
	d0 := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	at := func(d int, h int) time.Time { return d0.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour) }
	src, snap, out := filepath.Join(dir, "events"), filepath.Join(dir, "snap"), filepath.Join(dir, "out")
	rollupTable(t, src, "list:int64,tally:int32,at:timestamp", "day(at)", [][]any{
		{int64(1), int32(1), at(0, 5)}, // on the snapshot day: already counted
		{int64(1), int32(1), at(1, 1)},
		{int64(1), int32(-1), at(3, 2)},
		{int64(2), int32(1), at(2, 9)}, // a list the snapshot lacks
	})
	rollupTable(t, snap, "list:int64,subscribers:int64,date:date", "", [][]any{
		{int64(1), int64(10), d0}, {int64(3), int64(7), d0},
	})
	args := []string{"rollup", out, "--source", src, "--snapshot", snap, "--key", "list", "--time", "at",
		"--measure", "subscribers=sum(tally)", "--measure", "events=count()", "--json"}
	s := jsonObject(t, mustSluice(t, args...))
	want := map[string]any{"events_read": 4.0, "events_excluded": 1.0, "keys": 3.0, "days": 4.0, "cells_written": 12.0,
		"partitions_written": 4.0, "full": true, "source_version_from": 0.0, "source_version_to": 2.0, "through": "2024-06-04"}
	for k, v := range want {
		if s[k] != v {
			t.Fatalf("summary %s = %v, want %v (%v)", k, s[k], v, s)
		}
	}
	s = jsonObject(t, mustSluice(t, args...))
	if s["version"] != 0.0 || s["cells_written"] != 0.0 {
		t.Fatalf("rerun with nothing new: %v, want nothing committed", s)
	}
	ctx := context.Background()
	tb, err := catalog.Open(ctx, out, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rows, err := pqio.ReadParquetRows(ctx, tb.Store(), f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			got[pqio.FormatValue(m.Schema.Columns[0].Type, r[0])+"@"+r[1].(time.Time).Format(time.DateOnly)] = r[2].(int64)
		}
	}
	wantRows := map[string]int64{
		"1@2024-06-01": 10, "1@2024-06-02": 11, "1@2024-06-03": 11, "1@2024-06-04": 10,
		"2@2024-06-01": 0, "2@2024-06-02": 0, "2@2024-06-03": 1, "2@2024-06-04": 1,
		"3@2024-06-01": 7, "3@2024-06-02": 7, "3@2024-06-03": 7, "3@2024-06-04": 7,
	}
	if len(got) != len(wantRows) {
		t.Fatalf("rows %v, want %v", got, wantRows)
	}
	for k, v := range wantRows {
		if got[k] != v {
			t.Fatalf("subscribers %s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

// Bad input is one line, exit 1 (2 for a bad command line), and nothing
// committed.
func TestRollupCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	d0 := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	src := filepath.Join(dir, "events")
	rollupTable(t, src, "list:int64,tally:int32,at:timestamp", "day(at)", [][]any{{int64(1), int32(1), d0.Add(30 * time.Hour)}})
	rollupTable(t, filepath.Join(dir, "snaptable"), "list:int64,subscribers:int64,date:date", "", [][]any{{int64(1), int64(10), d0}})
	base := func(out string, extra ...string) []string {
		return append([]string{"rollup", out, "--source", src, "--snapshot", filepath.Join(dir, "snaptable"),
			"--key", "list", "--time", "at", "--measure", "subscribers=sum(tally)"}, extra...)
	}
	out := filepath.Join(dir, "out")
	failsWithOneLine(t, sluice(t, nil, base(out, "--through", "2024-05-31")...), "--through 2024-05-31 is before the snapshot day 2024-06-01")
	failsWithOneLine(t, sluice(t, nil, base(out, "--measure", "x=sum(at)")...), `measure x=sum(at) is over column "at", which is timestamp`)
	if r := sluice(t, nil, base(out, "--measure", "x=avg(tally)")...); r.code != 2 {
		t.Fatalf("a bad --measure: exit %d, want 2 (%s)", r.code, r.stderr)
	}
	if r := sluice(t, nil, base(out, "--tz", "Mars/Olympus")...); r.code != 2 {
		t.Fatalf("a bad --tz: exit %d, want 2 (%s)", r.code, r.stderr)
	}
	failsWithOneLine(t, sluice(t, nil, "files", out), "table not found")
}

// Regression (review item 5): two events of 9.2e18 on one day gave a
// negative total, exit 0. The run fails, exit 1, in one line naming the
// measure, the key and the day, and commits nothing.
func TestRollupCommandOverflow(t *testing.T) {
	dir := t.TempDir()
	d0 := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	src := filepath.Join(dir, "events")
	const big = int64(9_200_000_000_000_000_000)
	rollupTable(t, src, "list:int64,amount:int64,at:timestamp", "day(at)", [][]any{
		{int64(7), big, d0.Add(30 * time.Hour)}, {int64(7), big, d0.Add(31 * time.Hour)}})
	rollupTable(t, filepath.Join(dir, "snap"), "list:int64,total:int64,date:date", "", [][]any{{int64(7), int64(0), d0}})
	out := filepath.Join(dir, "out")
	r := sluice(t, nil, "rollup", out, "--source", src, "--snapshot", filepath.Join(dir, "snap"),
		"--key", "list", "--time", "at", "--measure", "total=sum(amount)")
	failsWithOneLine(t, r, "measure total=sum(amount), key (7), 2024-06-02", "does not fit in int64")
	failsWithOneLine(t, sluice(t, nil, "files", out), "table not found")
}
