package delta_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

// maintained opens a Delta table with one long column "id" for
// maintenance, after appending files f0..f(n-1) to it, and reads it.
func maintained(t *testing.T, loc string, n int) (*delta.Table, *delta.Maintained, []catalog.DataFile) {
	t.Helper()
	ctx := context.Background()
	tbl := newDeltaTable(t, loc)
	for i := range n {
		if err := tbl.Commit(ctx, int64(i+1), []delta.Action{add(fmt.Sprintf("f%d.parquet", i))}); err != nil {
			t.Fatal(err)
		}
	}
	_, m, files := maintainedAt(t, tbl)
	return tbl, m, files
}

// compaction replaces files with one output holding rows 1..9.
func compaction(out string, files ...catalog.DataFile) catalog.Change {
	lo, hi := "1", "9"
	return catalog.Change{Operation: "compact", Remove: files, Add: []catalog.DataFile{{Path: out, Bytes: 100,
		FileStats: pqio.FileStats{Rows: 9, Columns: map[string]pqio.ColumnStats{"id": {Min: &lo, Max: &hi}}}}}}
}

// A compaction's commit lands after the blind appends that won the race
// for its version, keeping their files; one whose input a DELETE removed
// first is refused with catalog.ErrConflict (compaction then drops the
// batch for the next run) and changes nothing. The commit is an OPTIMIZE
// with the output's stats.
func TestCompactionCommitRebasesOverAppendsAndAbortsOnADelete(t *testing.T) {
	ctx := context.Background()
	tbl, m, files := maintained(t, t.TempDir(), 4)
	// Three appends land while the compaction runs.
	for i := range 3 {
		if err := tbl.Commit(ctx, int64(5+i), []delta.Action{add(fmt.Sprintf("late%d.parquet", i))}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.Commit(ctx, compaction("c.parquet", files[0], files[1]))
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 8 {
		t.Errorf("committed at version %d; want 8, after the appends", got.Version)
	}
	live := livePaths(t, tbl)
	for _, p := range []string{"c.parquet", "f2.parquet", "f3.parquet", "late0.parquet", "late1.parquet", "late2.parquet"} {
		if !live[p] {
			t.Errorf("%s is not live after the compaction: %v", p, live)
		}
	}
	if live["f0.parquet"] || live["f1.parquet"] || len(live) != 6 {
		t.Errorf("live files %v", live)
	}
	as, err := tbl.ReadCommit(ctx, 8)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Operation   string `json:"operation"`
		ReadVersion int64  `json:"readVersion"`
	}
	if err := json.Unmarshal(as[0].CommitInfo, &info); err != nil || info.Operation != "OPTIMIZE" || info.ReadVersion != 4 {
		t.Errorf("commitInfo %s: want OPTIMIZE read at version 4", as[0].CommitInfo)
	}
	last := as[len(as)-1].Add
	if last == nil || last.DataChange || last.Stats != `{"numRecords":9,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}` {
		t.Errorf("the output's add: %+v", last)
	}

	// A second compaction planned at version 4 too: f2 was removed by a
	// DELETE since.
	_, m2, files2 := maintainedAt(t, tbl)
	if err := tbl.Commit(ctx, 9, []delta.Action{remove("f2.parquet")}); err != nil {
		t.Fatal(err)
	}
	var in []catalog.DataFile
	for _, f := range files2 {
		if f.Path == "f2.parquet" || f.Path == "f3.parquet" {
			in = append(in, f)
		}
	}
	_, err = m2.Commit(ctx, compaction("c2.parquet", in...))
	if !errors.Is(err, catalog.ErrConflict) || !errors.Is(err, delta.ErrConflict) {
		t.Fatalf("a compaction of a file a DELETE removed: %v; want a conflict", err)
	}
	if live := livePaths(t, tbl); live["c2.parquet"] || !live["f3.parquet"] {
		t.Errorf("the refused compaction changed the table: %v", live)
	}
}

// maintainedAt opens tbl for maintenance at its newest version.
func maintainedAt(t *testing.T, tbl *delta.Table) (*catalog.Manifest, *delta.Maintained, []catalog.DataFile) {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Maintain(delta.MaintainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	man, err := m.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.Files(ctx, man)
	if err != nil {
		t.Fatal(err)
	}
	return man, m, files
}

// On S3 a Delta table is committed to only on the user's word that its
// writers all put conditionally: Spark's S3 log store does not. A dry run
// needs no word; Azure and local disk need none.
func TestMaintainOnS3NeedsTheWritersWord(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range testenv.Locations(t) {
		st, err := cloud.Open(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		tbl := delta.New(st)
		_, err = tbl.Maintain(delta.MaintainOptions{})
		if kind == testenv.S3 {
			if !errors.Is(err, delta.ErrS3Writers) {
				t.Errorf("S3 without --delta-s3-conditional-writers: %v; want ErrS3Writers", err)
			}
			if _, err := tbl.Maintain(delta.MaintainOptions{DryRun: true}); err != nil {
				t.Errorf("S3, a dry run: %v", err)
			}
			if _, err := tbl.Maintain(delta.MaintainOptions{S3ConditionalWriters: true}); err != nil {
				t.Errorf("S3 with the writers' word: %v", err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", kind, err)
		}
		st.Close()
	}
}

// The data files' schema is the table's less its partition columns; a
// type sluice does not write is refused naming the column.
func TestDataSchema(t *testing.T) {
	md := delta.Metadata{PartitionColumns: []string{"date"}, SchemaString: `{"type":"struct","fields":[
		{"name":"id","type":"long","nullable":false,"metadata":{}},
		{"name":"date","type":"date","nullable":true,"metadata":{}},
		{"name":"amount","type":"decimal(12,2)","nullable":true,"metadata":{}},
		{"name":"at","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"tags","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{}},
		{"name":"attrs","type":{"type":"map","keyType":"string","valueType":"integer","valueContainsNull":false},"nullable":true,"metadata":{}},
		{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"double","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`}
	s, err := md.DataSchema()
	if err != nil {
		t.Fatal(err)
	}
	want := "id:int64,amount:decimal(12,2)?,at:timestamp?,tags:list<string?>?,attrs:map<string,int32>?,s:struct<x:float64?>?"
	if got := s.String(); got != want {
		t.Errorf("schema %s; want %s", got, want)
	}
	md.SchemaString = `{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"n","type":"short","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`
	if _, err := md.DataSchema(); !errors.Is(err, delta.ErrUnsupportedFeature) || err.Error() != "unsupported Delta table feature: column s.n is of type short, which sluice does not write" {
		t.Errorf("a short column: %v", err)
	}
}
