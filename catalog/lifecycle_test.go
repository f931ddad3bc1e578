package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// Regression (review item 9): Rollback checked only the files under the
// table's root. After a file adopted in place from another folder was
// deleted, a rollback to the version that lists it committed a version
// whose files do not all exist. Now it fails with ErrMissingFile naming the
// file, on every store, and commits nothing; while the files are there it
// rolls back as before.
func TestRollbackChecksFilesOutsideTheTable(t *testing.T) {
	ctx := context.Background()
	for _, kind := range testenv.Kinds {
		t.Run(kind, func(t *testing.T) {
			src, loc := testenv.Location(t, kind), testenv.Location(t, kind)
			writeImportFolder(t, src)
			tbl, err := catalog.Open(ctx, loc, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			res, err := tbl.Import(ctx, src, catalog.ImportOptions{})
			if err != nil || res.FilesAdded != 4 {
				t.Fatalf("import from %s: %+v, %v", src, res, err)
			}
			v1 := res.Manifest
			adopted, err := tbl.Files(ctx, v1)
			if err != nil {
				t.Fatal(err)
			}
			compactAll(t, tbl) // version 2: the rows in files under the table's root
			if _, err := tbl.Rollback(ctx, v1.Version, "rb"); err != nil {
				t.Fatalf("rollback to %d with every file there: %v", v1.Version, err)
			}
			if _, err := tbl.Rollback(ctx, 2, "rb"); err != nil {
				t.Fatalf("rollback to 2: %v", err)
			}

			// One of the files writeImportFolder wrote, as v1 lists it.
			st, err := cloud.Open(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			key := "date=2024-07-02/part-d.parquet"
			url := st.URL(key)
			if !slices.ContainsFunc(adopted, func(f catalog.DataFile) bool { return tbl.FileURL(f) == url }) {
				t.Fatalf("version 1 does not list %s", url)
			}
			if err := st.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			before, err := tbl.LatestVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tbl.Rollback(ctx, v1.Version, "rb")
			if !errors.Is(err, catalog.ErrMissingFile) || !strings.Contains(err.Error(), url) {
				t.Fatalf("rollback to %d after %s was deleted: %v, want %v naming it", v1.Version, url, err, catalog.ErrMissingFile)
			}
			if after, err := tbl.LatestVersion(ctx); err != nil || after != before {
				t.Fatalf("latest version %d (%v) after the refused rollback, want %d: something was committed", after, err, before)
			}
		})
	}
}
