package compact

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// deletingTable is a table whose data files have the deleted rows del
// says, asked through RowDeleter.
type deletingTable struct {
	*catalog.Table
	del func(f catalog.DataFile) ([]int64, error)

	mu    sync.Mutex
	asked map[string]int
}

func (d *deletingTable) DeletedRows(ctx context.Context, f catalog.DataFile) ([]int64, error) {
	d.mu.Lock()
	d.asked[f.Path]++
	d.mu.Unlock()
	return d.del(f)
}

// twoDayTable makes a table of two day partitions, each with appends
// files of rowsPer rows (id, name, at), one commit per append.
func twoDayTable(t *testing.T, appends, rowsPer int) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, filepath.Join(t.TempDir(), "t"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	schema := parseSchema(t, "id:int64,name:string?,at:timestamp")
	spec, err := catalog.ParsePartitionSpec("day(at)", schema)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tbl.Create(ctx, schema, spec, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	k := 0
	for a := range appends {
		var rows [][]any
		for d := range 2 {
			for range rowsPer {
				var name any
				if k%3 != 0 {
					name = fmt.Sprint("n", k%11)
				}
				rows = append(rows, []any{int64(k), name, day.AddDate(0, 0, d).Add(time.Duration(k) * time.Second)})
				k++
			}
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

// liveFiles returns the live files of tbl's latest version, and its schema.
func liveFiles(t *testing.T, tbl *catalog.Table) ([]catalog.DataFile, catalog.Schema) {
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
	return files, m.Schema
}

// Run leaves out the rows a RowDeleter table says are deleted, asking once
// for each input: the first partition's files lose their first and last
// rows, one of them every row; the second partition, whose deleted rows
// cannot be read, fails alone and keeps its files. Result.RowsDeleted
// counts what was left out, and the table then holds exactly the kept
// rows.
func TestRunLeavesOutRowDeleterRows(t *testing.T) {
	ctx := context.Background()
	tbl := twoDayTable(t, 4, 50)
	files, schema := liveFiles(t, tbl)
	parts := map[string][]catalog.DataFile{}
	for _, f := range files {
		parts[f.Partition] = append(parts[f.Partition], f)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for p := range parts {
			if !yield(p) {
				return
			}
		}
	})
	if len(names) != 2 {
		t.Fatalf("partitions %v", names)
	}
	deleting, failing := parts[names[0]], parts[names[1]]
	del := map[string][]int64{}
	for i, f := range deleting {
		del[f.Path] = []int64{0, f.Rows - 1}
		if i == 1 {
			del[f.Path] = nil
			for p := range f.Rows {
				del[f.Path] = append(del[f.Path], p)
			}
		}
	}
	errUnreadable := errors.New("delete file unreadable")
	dt := &deletingTable{Table: tbl, asked: map[string]int{}, del: func(f catalog.DataFile) ([]int64, error) {
		if f.Path == failing[2].Path {
			return nil, errUnreadable
		}
		return del[f.Path], nil
	}}
	var want []string
	var deleted int64
	for _, f := range files {
		st, key, err := tbl.DataFileStore(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, keptRows(t, st, schema, catalog.DataFile{Path: key, Bytes: f.Bytes}, del[f.Path])...)
		deleted += int64(len(del[f.Path]))
	}
	slices.Sort(want)

	res, err := Run(ctx, dt, Options{Plan: PlanOptions{MinInputFiles: 2}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || res.Failed[0].Partition != names[1] || !errors.Is(res.Failed[0], errUnreadable) ||
		!strings.Contains(res.Failed[0].Error(), failing[2].Path) {
		t.Fatalf("failed %v; want %s alone, for its unreadable deletes of %s", res.Failed, names[1], failing[2].Path)
	}
	if res.Partitions != 1 || res.Rows != 200 || res.RowsDeleted != deleted {
		t.Fatalf("%d partitions, %d rows, %d deleted; want 1, 200, %d", res.Partitions, res.Rows, res.RowsDeleted, deleted)
	}
	for _, f := range deleting {
		if n := dt.asked[f.Path]; n != 1 {
			t.Errorf("%s: deleted rows asked %d times, want once", f.Path, n)
		}
	}
	after, _ := liveFiles(t, tbl)
	if got := readRows(t, tbl.Store(), schema, after); !slices.Equal(got, want) {
		t.Fatalf("the table holds %d rows, want the %d kept", len(got), len(want))
	}
	for _, f := range failing {
		if !slices.ContainsFunc(after, func(g catalog.DataFile) bool { return g.Path == f.Path }) {
			t.Errorf("%s of the failed partition is gone", f.Path)
		}
	}
}

// Run on a nested table leaves out a RowDeleter's rows too.
func TestRunLeavesOutRowDeleterRowsOfNestedTable(t *testing.T) {
	ctx := context.Background()
	tbl := nestedTable(t, filepath.Join(t.TempDir(), "nested"), 20, 5)
	files, schema := liveFiles(t, tbl)
	var want []string
	for _, f := range files {
		want = append(want, keptRows(t, tbl.Store(), schema, f, []int64{2})...)
	}
	slices.Sort(want)
	dt := &deletingTable{Table: tbl, asked: map[string]int{}, del: func(catalog.DataFile) ([]int64, error) { return []int64{2}, nil }}
	res, err := Run(ctx, dt, Options{Plan: PlanOptions{MinInputFiles: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if res.Rows != 100 || res.RowsDeleted != 20 {
		t.Fatalf("%d rows, %d deleted; want 100, 20", res.Rows, res.RowsDeleted)
	}
	after, _ := liveFiles(t, tbl)
	if got := readRows(t, tbl.Store(), schema, after); !slices.Equal(got, want) {
		t.Fatalf("the table holds %d rows, want the %d kept", len(got), len(want))
	}
}
