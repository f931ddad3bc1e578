package compact_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/compact"
)

// copyTree copies a Spark-written fixture's folder as Spark's plain Parquet
// output: without its Delta log, which import refuses to glob past.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && info.Name() == "_delta_log" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Spark-written tables compact correctly: many tiny files of one table,
// and INT96 timestamps rewritten as the table's microsecond timestamps.
func TestCompactSparkWrittenTables(t *testing.T) {
	for name, wantFilesAfter := range map[string]int{
		"125-iterator-bug":                  1,
		"kernel-timestamp-INT96":            4, // 4 partitions; the one with 2 files becomes 1
		"kernel-timestamp-TIMESTAMP_MILLIS": 4,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), name)
			copyTree(t, filepath.Join("..", "testdata", "spark-written", name), dir)
			tbl, err := catalog.Open(ctx, dir, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			if _, err := tbl.Import(ctx, dir, catalog.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			before := tableRows(t, tbl)
			res, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{MinInputFiles: 2}})
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			if len(res.Versions) != 1 {
				t.Fatalf("committed %v, want one version\n%s", res.Versions, res.Plan)
			}
			after := tableRows(t, tbl)
			if !slices.Equal(before, after) {
				t.Fatalf("rows changed:\nbefore %v\nafter  %v", before, after)
			}
			m, _ := tbl.Latest(ctx)
			if files, _, _ := m.Totals(); int(files) != wantFilesAfter {
				t.Fatalf("%d live files after compaction, want %d", files, wantFilesAfter)
			}
		})
	}
}
