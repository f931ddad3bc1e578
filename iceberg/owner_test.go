package iceberg_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// eventsTable makes a table at loc with appends of five rows each, n
// versions in all.
func eventsTable(t *testing.T, ctx context.Context, loc string, n int) *catalog.Table {
	t.Helper()
	tbl, m := newTable(t, ctx, loc, "id:int64,ts:timestamp", "day(ts)")
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for v := 2; v <= n; v++ {
		var rows [][]any
		for i := range int64(5) {
			id := int64(v)*100 + i
			rows = append(rows, []any{id, day.Add(time.Duration(id) * time.Minute)})
		}
		m, _ = appendRows(t, ctx, tbl, m, rows)
	}
	return tbl
}

// TestIcebergSyncRefusesAnotherTablesMirror: two lakes, each with an
// events table, synced into one catalog under the default name: the
// second sync is refused with ErrAnotherTable (before, it appended its
// own files to the first table's mirror), and the mirror still holds
// exactly the first table's versions. The second table mirrors under
// another name.
func TestIcebergSyncRefusesAnotherTablesMirror(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := eventsTable(t, ctx, filepath.Join(dir, "lake-a", "events"), 2)
	b := eventsTable(t, ctx, filepath.Join(dir, "lake-b", "events"), 3)
	cat := sqliteCatalog(t, ctx, dir)
	opts := iceberg.Options{Namespace: "sluice", Name: "events"}
	res, err := iceberg.Sync(ctx, a, cat, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = iceberg.Sync(ctx, b, cat, opts)
	if !errors.Is(err, iceberg.ErrAnotherTable) || !strings.Contains(err.Error(), "lake-a") || !strings.Contains(err.Error(), "lake-b") {
		t.Fatalf("sync of lake-b's events into lake-a's mirror: %v, want ErrAnotherTable naming both", err)
	}
	it, err := cat.Load(ctx, table.Identifier{"sluice", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if it.MetadataLocation() != res.MetadataLocation {
		t.Fatalf("the refused sync moved the mirror to %s", it.MetadataLocation())
	}
	checkMirror(t, ctx, a, it.MetadataLocation(), []string{"append", "append"})
	if _, err := os.Stat(filepath.Join(dir, "lake-b", "events", filepath.FromSlash(iceberg.SettingsKey))); !os.IsNotExist(err) {
		t.Errorf("the refused sync recorded a mirror for lake-b's events: %v", err)
	}

	if other, err := iceberg.Sync(ctx, b, cat, iceberg.Options{Namespace: "sluice", Name: "events_b"}); err != nil || other.Mirrored != 3 {
		t.Fatalf("sync of lake-b's events under another name: %+v, %v", other, err)
	}
}

// TestIcebergOneMirrorPerTable: a table synced into one catalog is
// refused by another catalog, and under another name in the same one
// (ErrMirroredElsewhere; before, the second catalog's mirror took over
// version-hint.text, and vacuum, knowing the first only, deleted files
// the second's snapshots referenced); nothing is created there and the
// hint still names the first mirror's metadata. The settings record the
// mirror: catalog, identifier, location, uuid.
func TestIcebergOneMirrorPerTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	loc := filepath.Join(dir, "events")
	tbl, _, _ := compactedTable(t, ctx, loc)
	first := sqliteCatalog(t, ctx, dir)
	opts := iceberg.Options{Namespace: "lake", Name: "events"}
	res, err := iceberg.Sync(ctx, tbl, first, opts)
	if err != nil {
		t.Fatal(err)
	}
	set, ok, err := iceberg.ReadSettings(ctx, tbl)
	it, lerr := first.Load(ctx, table.Identifier{"lake", "events"})
	if err != nil || lerr != nil || !ok || set.Catalog != "sqlite://"+filepath.Join(dir, "catalog.db") || set.Identifier() != "lake.events" ||
		set.TableUUID != it.Metadata().TableUUID().String() || set.Location != "file://"+filepath.Join(loc, "_iceberg") || set.AfterCommit {
		t.Fatalf("settings after a sync: %+v, %v, %v, %v", set, ok, err, lerr)
	}

	second, err := iceberg.OpenCatalog(ctx, "sqlite://"+filepath.Join(dir, "second.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	for what, c := range map[string]*iceberg.Catalog{"another catalog": second, "another name": first} {
		o := opts
		if c == first {
			o.Name = "events2"
		}
		_, err := iceberg.Sync(ctx, tbl, c, o)
		if !errors.Is(err, iceberg.ErrMirroredElsewhere) || !strings.Contains(err.Error(), set.Catalog) || !strings.Contains(err.Error(), "lake.events") {
			t.Fatalf("sync into %s: %v, want ErrMirroredElsewhere naming the recorded mirror", what, err)
		}
		if _, err := c.Load(ctx, table.Identifier{o.Namespace, o.Name}); err == nil {
			t.Errorf("the refused sync into %s created %s", what, o.Name)
		}
	}
	if got := hintedMetadata(t, loc); got != res.MetadataLocation {
		t.Fatalf("after the refused syncs the hint names %s, not the mirror's %s", got, res.MetadataLocation)
	}
	if again, err := iceberg.Sync(ctx, tbl, first, opts); err != nil || again.Mirrored != 0 {
		t.Fatalf("a sync into the recorded mirror: %+v, %v", again, err)
	}
}

// TestIcebergUnmirrorableTableNotRecorded: a table the mirror cannot be
// made of (a partition field that is also a data column) fails its first
// sync saying why, and is not recorded as mirrored there, so that it
// stays free to be mirrored elsewhere once it can be.
func TestIcebergUnmirrorableTableNotRecorded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	loc := filepath.Join(dir, "events")
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	schema, err := catalog.ParseSchema("id:int64,region:string")
	if err != nil {
		t.Fatal(err)
	}
	spec := catalog.PartitionSpec{Fields: []catalog.PartitionField{{Name: "region", Transform: "identity", Type: catalog.Type{Kind: catalog.KindString}}}}
	if _, err := tbl.Create(ctx, schema, spec, nil, "test"); err != nil {
		t.Fatal(err)
	}
	cat := sqliteCatalog(t, ctx, dir)
	if _, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"}); err == nil || !strings.Contains(err.Error(), "also a data column") {
		t.Fatalf("sync of a table with a partition column in its data: %v, want the reason", err)
	}
	if _, ok, err := iceberg.ReadSettings(ctx, tbl); ok || err != nil {
		t.Fatalf("the failed sync recorded a mirror: %v, %v", ok, err)
	}
}
