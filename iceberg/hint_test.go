package iceberg_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// hintedMetadata resolves the mirror of the table at dir as a reader
// taking its path does (DuckDB's iceberg_scan on dir/_iceberg): the name
// in metadata/version-hint.text, through the "%s.metadata.json" format.
func hintedMetadata(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(iceberg.HintKey)))
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.Join(dir, iceberg.MetadataFolder, "metadata", strings.TrimSpace(string(b))+".metadata.json")
}

// TestIcebergVersionHint: after every sync, and after vacuum expired
// snapshots, version-hint.text names the current metadata file, and
// icebird reading the file it names sees every version as DuckDB sees
// `sluice files`.
func TestIcebergVersionHint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	loc := filepath.Join(dir, "events")
	tbl := allTypesTable(t, ctx, loc)
	cat := sqliteCatalog(t, ctx, dir)
	opts := iceberg.Options{Namespace: "lake", Name: "events"}
	res, err := iceberg.Sync(ctx, tbl, cat, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := hintedMetadata(t, loc); got != res.MetadataLocation {
		t.Fatalf("the hint names %s, the sync's metadata is %s", got, res.MetadataLocation)
	}
	checkMirror(t, ctx, tbl, hintedMetadata(t, loc), []string{"append", "append", "append", "replace", "overwrite"})

	if _, err := tbl.Rollback(ctx, 4, "test"); err != nil {
		t.Fatal(err)
	}
	next, err := iceberg.Sync(ctx, tbl, cat, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := hintedMetadata(t, loc); got != next.MetadataLocation || got == res.MetadataLocation {
		t.Fatalf("after a second sync the hint names %s; the sync's metadata is %s", got, next.MetadataLocation)
	}
	checkMirror(t, ctx, tbl, hintedMetadata(t, loc), nil)

	var rr iceberg.RetainResult
	time.Sleep(20 * time.Millisecond)
	if _, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: 0, Force: true, Keep: iceberg.VacuumKeep(tbl, cat, opts, false, &rr)}); err != nil {
		t.Fatal(err)
	}
	if got := hintedMetadata(t, loc); rr.Expired != 5 || got != rr.MetadataLocation {
		t.Fatalf("after expiring %d snapshots the hint names %s, the mirror's metadata is %s", rr.Expired, got, rr.MetadataLocation)
	}
	if snaps := icebirdSnapshots(t, hintedMetadata(t, loc)); len(snaps) != 1 || snaps[0].Summary[iceberg.PropVersion] != "6" {
		t.Fatalf("icebird through the hint after the expiry: %+v", snaps)
	}
}
