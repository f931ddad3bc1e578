package iceberg_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// TestIcebergSyncS3Table: a table on the S3 test server (gofakes3, over
// HTTP) mirrored with its metadata on S3 too: every version a snapshot
// with its sluice.version; icebird, reading metadata and data over HTTP,
// resolves exactly the version's files and decodes its rows.
func TestIcebergSyncS3Table(t *testing.T) {
	ctx := context.Background()
	tbl := allTypesTable(t, ctx, testenv.Location(t, testenv.S3))
	cat := sqliteCatalog(t, ctx, t.TempDir())
	res, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mirrored != 5 || !strings.HasPrefix(res.MetadataLocation, "s3://") {
		t.Fatalf("sync: %+v", res)
	}
	snaps := icebirdSnapshots(t, res.MetadataLocation)
	if len(snaps) != 5 {
		t.Fatalf("%d snapshots, want 5", len(snaps))
	}
	for i, s := range snaps {
		m, err := tbl.Manifest(ctx, int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		files, err := tbl.Files(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, f := range files {
			want = append(want, tbl.FileURL(f))
		}
		got := slices.Clone(s.Paths)
		slices.Sort(got)
		slices.Sort(want)
		if s.Summary[iceberg.PropVersion] != strconv.Itoa(i+1) || !slices.Equal(got, want) || s.Rows != m.Rows {
			t.Errorf("version %d: snapshot %s=%s, %d files, %d rows; the version: %d files, %d rows",
				i+1, iceberg.PropVersion, s.Summary[iceberg.PropVersion], len(got), s.Rows, len(want), m.Rows)
		}
	}
}
