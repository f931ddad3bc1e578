package iceberg_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// TestIcebergSyncPostgresCatalog: the same mirror, registered in a real
// PostgreSQL through iceberg-go's SQL catalog: every version a snapshot,
// each read by icebird as DuckDB reads `sluice files`; a sync from a
// second process's view (a new catalog handle) finds it current.
func TestIcebergSyncPostgresCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := allTypesTable(t, ctx, filepath.Join(dir, "events"))
	url := testenv.PostgresURL(t)
	cat, err := iceberg.OpenCatalog(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	res, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mirrored != 5 || res.Version != 5 {
		t.Fatalf("sync: %+v", res)
	}
	checkMirror(t, ctx, tbl, res.MetadataLocation, []string{"append", "append", "append", "replace", "overwrite"})

	cat2, err := iceberg.OpenCatalog(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer cat2.Close()
	again, err := iceberg.Sync(ctx, tbl, cat2, iceberg.Options{Namespace: "lake", Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Mirrored != 0 || again.SnapshotID != res.SnapshotID {
		t.Fatalf("second sync: %+v after %+v", again, res)
	}
}
