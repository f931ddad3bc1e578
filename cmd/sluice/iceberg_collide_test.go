package main

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/iceberg"
)

// TestIcebergSyncTwoLakesOneName: two lakes, each with an events folder,
// synced into one catalog under the default name: the second sync is
// refused in one line naming both tables and --name (before, its files
// were appended to the first lake's mirror), and the first lake's mirror
// still reads as its own versions. Under another name, the second lake
// gets its own mirror.
func TestIcebergSyncTwoLakesOneName(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	land := filepath.Join(dir, "landing")
	a, b := filepath.Join(dir, "lake-a", "events"), filepath.Join(dir, "lake-b", "events")
	initEvents(t, a)
	initEvents(t, b)
	writeEvents(t, land, "a.jsonl", 0, 30)
	mustSluice(t, "ingest", a, "--from", land)
	mustSluice(t, "ingest", b, "--from", land)
	writeEvents(t, land, "b.jsonl", 30, 30)
	mustSluice(t, "ingest", b, "--from", land)

	s := icebergSync(t, a, db)
	failsWithOneLine(t, sluice(t, nil, "iceberg", "sync", b, "--catalog", "sqlite://"+db), "sluice.events", a, b, "--name")
	if again := icebergSync(t, a, db); again["mirrored"] != 0.0 || again["metadata_location"] != s["metadata_location"] {
		t.Fatalf("the refused sync changed lake-a's mirror: %v after %v", again, s)
	}
	checkMirror(t, a, s["metadata_location"].(string), true)

	other := icebergSync(t, b, db, "--name", "events_b")
	if other["identifier"] != "sluice.events_b" || other["version"] != 3.0 {
		t.Fatalf("sync of lake-b's events under another name: %v", other)
	}
	checkMirror(t, b, other["metadata_location"].(string), true)
}

// TestIcebergSyncSecondCatalog: a table mirrored (after every commit) in
// one catalog is refused by another, in one line naming the recorded
// mirror and how to move it (before, the second catalog's mirror took
// over version-hint.text, and vacuum, which knew the first only, deleted
// files the second's unexpired snapshots referenced); nothing is created
// there, and vacuum --retain 0 then keeps every file the one mirror's
// snapshot references. Moving it: drop, disable --forget, remove
// _iceberg/, sync into the second catalog.
func TestIcebergSyncSecondCatalog(t *testing.T) {
	dir := t.TempDir()
	db, db2 := filepath.Join(dir, "catalog.db"), filepath.Join(dir, "second.db")
	land, tbl := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, tbl)
	mustSluice(t, "iceberg", "enable", tbl, "--catalog", "sqlite://"+db)
	writeEvents(t, land, "a.jsonl", 0, 60)
	mustSluice(t, "ingest", tbl, "--from", land)
	writeEvents(t, land, "b.jsonl", 60, 60)
	mustSluice(t, "ingest", tbl, "--from", land)
	s := summaryOf(t, mustSluice(t, "compact", tbl, "--include-current", "--min-input-files", "2", "--json"))
	synced(t, "compact", s, tbl)
	hint, err := os.ReadFile(filepath.Join(tbl, "_iceberg", "metadata", "version-hint.text"))
	if err != nil {
		t.Fatal(err)
	}

	failsWithOneLine(t, sluice(t, nil, "iceberg", "sync", tbl, "--catalog", "sqlite://"+db2),
		"mirrored as sluice.events in sqlite://"+db, "disable", "--forget")
	ctx := context.Background()
	second, err := iceberg.OpenCatalog(ctx, "sqlite://"+db2)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := second.Load(ctx, table.Identifier{"sluice", "events"}); !errors.Is(err, icecat.ErrNoSuchTable) {
		t.Fatalf("the refused sync made a mirror in the second catalog: %v", err)
	}
	if now, _ := os.ReadFile(filepath.Join(tbl, "_iceberg", "metadata", "version-hint.text")); string(now) != string(hint) {
		t.Fatalf("the refused sync moved the version hint from %q to %q", hint, now)
	}
	v := summaryOf(t, mustSluice(t, "vacuum", tbl, "--retain", "0", "--force", "--json"))
	ice := v["iceberg"].(map[string]any)
	snaps := icebirdSnapshots(t, ice["metadata_location"].(string), false)
	if len(snaps) != 1 || len(snaps[0].Paths) == 0 {
		t.Fatalf("after vacuum the mirror has %+v", snaps)
	}
	for _, p := range snaps[0].Paths {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); err != nil {
			t.Errorf("vacuum deleted a file the mirror references: %v", err)
		}
	}

	// Moving the mirror to the second catalog.
	dropTable(t, db, table.Identifier{"sluice", "events"})
	mustSluice(t, "iceberg", "disable", tbl, "--forget")
	failsWithOneLine(t, sluice(t, nil, "iceberg", "sync", tbl, "--catalog", "sqlite://"+db2), "_iceberg", "iceberg.json is missing")
	if err := os.RemoveAll(filepath.Join(tbl, "_iceberg")); err != nil {
		t.Fatal(err)
	}
	moved := summaryOf(t, mustSluice(t, "iceberg", "enable", tbl, "--catalog", "sqlite://"+db2, "--json"))
	if moved["enabled"] != true || moved["version"] != float64(latestVersion(t, tbl)) {
		t.Fatalf("enable in the second catalog: %v", moved)
	}
	checkMirror(t, tbl, moved["metadata_location"].(string), true)
}

// dropTable drops ident from the SQLite catalog db through iceberg-go's
// own SQL catalog, as a user's engine would.
func dropTable(t *testing.T, db string, ident table.Identifier) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cat, err := icesql.NewCatalog(iceberg.CatalogName, conn, icesql.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.DropTable(context.Background(), ident); err != nil {
		t.Fatal(err)
	}
}
