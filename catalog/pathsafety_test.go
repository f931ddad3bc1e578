package catalog_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

// hostileFolders are partition folders, as a listing gives them, whose
// values unescape to paths that would climb out of the table, and those
// values.
var hostileFolders = map[string]string{
	"k=%2e%2e%2F%2e%2e":            "../..",
	"k=%2E%2E":                     "..",
	"k=..%5C..%5Cx":                `..\..\x`,
	"k=%2Fetc%2Fpasswd":            "/etc/passwd",
	"k=a%00b":                      "a\x00b",
	"k=%252e%252e":                 "%2e%2e",
	"k=C%3A%5CWindows":             `C:\Windows`,
	"k=__HIVE_DEFAULT_PARTITION__": "",
}

// Partition values come from folder names in a listing, unescaped: a
// value that unescapes to "..", an absolute path, a backslash or NUL is
// only ever a value. Imported, rewritten in its partition as compaction
// does, and vacuumed, on every store, the table's files stay in exactly
// the folders listed, inside the table's root, and nothing is written or
// deleted outside it (issue 19).
func TestPartitionValuesNeverLeaveTheRoot(t *testing.T) {
	ctx := context.Background()
	for _, kind := range testenv.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			loc := testenv.Location(t, kind)
			parentLoc := filepath.Dir(loc)
			if kind != testenv.Local {
				parentLoc = loc[:strings.LastIndex(loc, "/")]
			}
			parent, err := cloud.Open(ctx, parentLoc)
			if err != nil {
				t.Fatal(err)
			}
			defer parent.Close()
			// A file beside the table, which nothing may touch.
			if _, err := parent.Put(ctx, "beside/keep.txt", strings.NewReader("k"), 1, cloud.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			st, err := cloud.Open(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			day := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
			folders := slices.Sorted(func(yield func(string) bool) {
				for f := range hostileFolders {
					if !yield(f) {
						return
					}
				}
			})
			for i, folder := range folders {
				if _, _, err := pqio.WriteParquet(ctx, st, folder+"/part-0.parquet", eventSchema, eventRows(day, 10*i, 2)); err != nil {
					t.Fatal(err)
				}
			}
			tbl, err := catalog.Open(ctx, loc, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			if _, err := tbl.Import(ctx, loc, catalog.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			m, err := tbl.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			files, err := tbl.Files(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(folders) {
				t.Fatalf("%d files imported, want %d", len(files), len(folders))
			}
			var merged []catalog.DataFile
			for _, f := range files {
				folder := strings.TrimSuffix(f.Path, "/part-0.parquet")
				want, ok := hostileFolders[folder]
				if !ok || f.Partition != folder {
					t.Fatalf("file %q in partition %q: not a folder written", f.Path, f.Partition)
				}
				v := f.PartitionValues["k"]
				if (want == "") != (v == nil) || (v != nil && *v != want) {
					t.Errorf("%s: value %v, want %q", folder, v, want)
				}
				// Rewritten in its partition, as compaction does.
				key := catalog.NewDataFilePath(f.Partition)
				rs, err := pqio.ReadParquetRows(ctx, st, f.Path, f.Bytes, m.Schema)
				if err != nil {
					t.Fatal(err)
				}
				n, stats, err := pqio.WriteParquet(ctx, st, key, m.Schema, rs)
				if err != nil {
					t.Fatalf("rewrite %s: %v", f.Partition, err)
				}
				merged = append(merged, catalog.DataFile{Path: key, Partition: f.Partition, PartitionValues: f.PartitionValues, Bytes: n, FileStats: stats})
			}
			if _, err := tbl.Commit(ctx, catalog.Change{Operation: "compact", Add: merged, Remove: files}); err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			base := filepath.Base(loc)
			var outside, data []string
			err = parent.List(ctx, "", func(o cloud.ObjectInfo) error {
				rel, ok := strings.CutPrefix(o.Key, base+"/")
				switch {
				case !ok:
					outside = append(outside, o.Key)
				case !strings.HasPrefix(rel, "_sluice/"):
					data = append(data, rel)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(outside, []string{"beside/keep.txt"}) {
				t.Errorf("outside the table: %q, want only beside/keep.txt", outside)
			}
			if len(data) != len(folders) {
				t.Errorf("the table holds %q, want one file in each of %q", data, folders)
			}
			for _, k := range data {
				if _, ok := hostileFolders[k[:strings.Index(k, "/")]]; !ok || strings.Count(k, "/") != 1 {
					t.Errorf("%q is not a file of a folder written", k)
				}
			}
		})
	}
}
