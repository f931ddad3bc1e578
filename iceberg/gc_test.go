package iceberg_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// versionFiles returns the location of every file a version of tbl
// references: the files sluice keeps until its own vacuum says otherwise.
func versionFiles(t *testing.T, ctx context.Context, tbl *catalog.Table) []string {
	t.Helper()
	latest, err := tbl.LatestVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for v := int64(1); v <= latest; v++ {
		m, err := tbl.Manifest(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		files, err := tbl.Files(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if u := tbl.FileURL(f); !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	return out
}

// TestIcebergOutsideMaintenanceDeletesNoSluiceFile: iceberg-go's own
// snapshot expiry and orphan-file cleanup, run on the mirror as a user
// would (every snapshot but the current one expired, every file old
// enough), delete no file a version of the table references: the mirror
// is gc.enabled=false, so the expiry refuses, and the cleanup finds
// nothing of sluice's in the mirror's location. A mirror made without
// the property gets it at its next sync, and sluice's own vacuum still
// expires the mirror's snapshots.
func TestIcebergOutsideMaintenanceDeletesNoSluiceFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, replaced, merged := compactedTable(t, ctx, filepath.Join(dir, "events"))
	cat := sqliteCatalog(t, ctx, dir)
	opts := iceberg.Options{Namespace: "lake", Name: "events"}
	ident := table.Identifier{"lake", "events"}
	if _, err := iceberg.Sync(ctx, tbl, cat, opts); err != nil {
		t.Fatal(err)
	}
	// As an older sluice left it: no gc.enabled, so GC on by default.
	it, err := cat.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := it.NewTransaction()
	if err := tx.RemoveProperties([]string{"gc.enabled"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := iceberg.Sync(ctx, tbl, cat, opts); err != nil {
		t.Fatal(err)
	}
	if it, err = cat.Load(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if got, ok := it.Properties()["gc.enabled"]; got != "false" {
		t.Errorf("after a sync the mirror's gc.enabled is %q (set: %v), want false", got, ok)
	}

	pause()
	referenced := versionFiles(t, ctx, tbl)
	tx = it.NewTransaction()
	expireErr := tx.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1))
	if expireErr == nil {
		_, expireErr = tx.Commit(ctx)
	}
	if it, err = cat.Load(ctx, ident); err != nil {
		t.Fatal(err)
	}
	orphans, orphanErr := it.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(0))
	for _, f := range referenced {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("iceberg-go's maintenance deleted %s, which a version of the table references: %v", f, err)
		}
	}
	if expireErr == nil || !strings.Contains(expireErr.Error(), "GC is disabled") {
		t.Errorf("iceberg-go's ExpireSnapshots on the mirror: %v, want a refusal (gc.enabled=false)", expireErr)
	}
	if orphanErr != nil {
		t.Fatalf("iceberg-go's orphan-file cleanup: %v", orphanErr)
	}
	t.Logf("orphan cleanup deleted %d files of the mirror's location: %v", len(orphans.DeletedFiles), orphans.DeletedFiles)

	// sluice's vacuum expires the snapshots itself, deleting nothing;
	// the mirror stays gc.enabled=false.
	rr, err := iceberg.Retain(ctx, tbl, cat, opts, time.Now(), false)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Expired != 3 || rr.Retained != 1 || len(rr.Keep) != 1 || !rr.Keep[merged] {
		t.Fatalf("sluice's expiry: %+v, want 3 expired and %s kept", rr, merged)
	}
	for _, f := range append(replaced, merged) {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("sluice's expiry deleted %s: %v", f, err)
		}
	}
	if it, err = cat.Load(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if got := it.Properties()["gc.enabled"]; got != "false" {
		t.Errorf("after sluice's expiry the mirror's gc.enabled is %q, want false", got)
	}
	checkMirrorCurrent(t, tbl, rr.MetadataLocation, merged)
}

// checkMirrorCurrent asserts that icebird reads the mirror's one
// snapshot as DuckDB reads the file it should list.
func checkMirrorCurrent(t *testing.T, tbl *catalog.Table, metadataLocation, file string) {
	t.Helper()
	snaps := icebirdSnapshots(t, metadataLocation)
	want := duckFiles(t, []string{file})
	if len(snaps) != 1 || len(snaps[0].Paths) != 1 || snaps[0].Rows != want.Rows || snaps[0].Duck != want {
		t.Fatalf("icebird reads %+v; sluice files: %s, %+v", snaps, file, want)
	}
}
