package rollup

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// The typed page reader reads every INT32 and INT64 column of the Spark-
// and DuckDB-written test files (dictionary and plain pages, NULLs, dates,
// timestamps of every unit, UINT32) as parquet-go's value reader does,
// and sluice's own files too.
func TestTypedChunkReadsAsParquetValues(t *testing.T) {
	ctx := context.Background()
	root, _ := filepath.Abs(filepath.Join("..", "testdata"))
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, string(filepath.Separator)+"bad"+string(filepath.Separator)) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, ownFile(t))
	st, err := cloud.Open(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checked := map[string]int{}
	for _, p := range files {
		key := strings.TrimPrefix(p, "/")
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := pqio.OpenParquetFile(key, pqio.NewReaderAt(ctx, st, key, info.Size()), info.Size())
		if err != nil {
			continue // a file pqio refuses is not this test's
		}
		_, pcs, _, err := pqio.DescribeParquetFile(key, f)
		if err != nil {
			continue
		}
		defs := map[int]int{}
		leafDefs(f.Root(), func(leaf, def int) { defs[leaf] = def })
		for _, pc := range pcs {
			if !typedChunk(pc) {
				continue
			}
			for g, rg := range f.RowGroups() {
				var want, got colData
				want.reset(pc.Type)
				got.reset(pc.Type)
				c := rg.ColumnChunks()[pc.Leaf]
				if err := readChunk(c, pc, &want, make([]parquet.Value, 100)); err != nil {
					t.Fatalf("%s: %s: values: %v", p, pc.Name, err)
				}
				if err := readTypedChunk(c, pc, byte(defs[pc.Leaf]), &got); err != nil {
					t.Fatalf("%s: %s: typed: %v", p, pc.Name, err)
				}
				for i := range want.valid {
					if !want.valid[i] && i < len(want.ints) {
						want.ints[i] = 0
					}
					if !want.valid[i] && i < len(want.floats) {
						want.floats[i] = 0
					}
				}
				if !slices.Equal(got.valid, want.valid) || !slices.Equal(got.ints, want.ints) || !slices.Equal(got.floats, want.floats) {
					t.Fatalf("%s: column %s, row group %d: typed reader differs from the value reader", p, pc.Name, g)
				}
				if slices.Contains(want.valid, false) {
					checked["with NULLs"]++
				}
				checked[pc.Type.String()]++
			}
		}
	}
	t.Logf("column chunks checked: %v", checked)
	for _, k := range []string{"int32", "int64", "float64", "date", "timestamp", "with NULLs"} {
		if checked[k] == 0 {
			t.Errorf("no %s column chunk checked (%v)", k, checked)
		}
	}
}

// ownFile writes a file as sluice writes them, with NULLs and a
// dictionary-friendly column, and returns its path.
func ownFile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := catalog.ParseSchema("a:int64?,b:int32,d:date?,ts:timestamp?,f:float64?")
	if err != nil {
		t.Fatal(err)
	}
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows [][]any
	for i := range 20000 {
		var a, d, ts any
		if i%7 != 0 {
			a = int64(i % 13)
		}
		if i%5 != 0 {
			d = time.Date(2024, 1, 1+i%40, 0, 0, 0, 0, time.UTC)
		}
		if i%3 != 0 {
			ts = time.UnixMicro(int64(i) * 123456789).UTC()
		}
		var f any
		if i%4 != 0 {
			f = float64(i%17) * 0.25
		}
		rows = append(rows, []any{a, int32(i - 10000), d, ts, f})
	}
	if _, _, err := pqio.WriteParquet(context.Background(), st, "own.parquet", s, rows); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "own.parquet")
}
