package iceberg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// repoRoot is the module root, where tools/ lives.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), ".."))
}

type duck struct {
	Rows     int64  `json:"rows"`
	Checksum string `json:"checksum"`
}

// duckFiles reads files with DuckDB (tools/duckrows.mjs, Hive partitions
// as columns), as a user reads `sluice files`.
func duckFiles(t *testing.T, files []string) duck {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(repoRoot(), "tools", "duckrows.mjs"), "--hive", "--list", "-")
	cmd.Stdin = strings.NewReader(strings.Join(files, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckrows: %v: %s (run \"make tools\" if DuckDB is missing)", err, stderrOf(err))
	}
	var d duck
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("duckrows output %q: %v", out, err)
	}
	return d
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// iceSnapshot is one line of tools/icerows.mjs: a snapshot as icebird,
// the independent Iceberg reader, sees it.
type iceSnapshot struct {
	SnapshotID string            `json:"snapshot_id"`
	Operation  string            `json:"operation"`
	Summary    map[string]string `json:"summary"`
	Rows       int64             `json:"rows"`
	Paths      []string          `json:"paths"`
	Duck       duck              `json:"duck"`
}

// icebirdSnapshots reads every snapshot of the Iceberg table whose
// metadata file is metadataLocation with icebird, oldest first.
func icebirdSnapshots(t *testing.T, metadataLocation string) []iceSnapshot {
	t.Helper()
	out, err := exec.Command("node", filepath.Join(repoRoot(), "tools", "icerows.mjs"), "--all", metadataLocation).Output()
	if err != nil {
		t.Fatalf("icerows %s: %v: %s (run \"make tools\" if icebird is missing)", metadataLocation, err, stderrOf(err))
	}
	var snaps []iceSnapshot
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s iceSnapshot
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("icerows line %q: %v", line, err)
		}
		snaps = append(snaps, s)
	}
	return snaps
}

// checkMirror asserts that the mirror whose metadata is at
// metadataLocation holds one snapshot per version of tbl, in order, each
// with its sluice.version, and that icebird reads each as DuckDB reads
// the version's `sluice files`: same rows, same checksum, no file twice.
func checkMirror(t *testing.T, ctx context.Context, tbl *catalog.Table, metadataLocation string, wantOps []string) {
	t.Helper()
	snaps := icebirdSnapshots(t, metadataLocation)
	latest, err := tbl.LatestVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(snaps)) != latest {
		t.Fatalf("the mirror has %d snapshots for %d versions", len(snaps), latest)
	}
	for i, s := range snaps {
		v := int64(i + 1)
		if got := s.Summary[iceberg.PropVersion]; got != strconv.FormatInt(v, 10) {
			t.Fatalf("snapshot %d (%s): %s=%q, want %d", i, s.SnapshotID, iceberg.PropVersion, got, v)
		}
		if wantOps != nil && s.Operation != wantOps[i] {
			t.Errorf("version %d: operation %q, want %q", v, s.Operation, wantOps[i])
		}
		m, err := tbl.Manifest(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		files, err := tbl.Files(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		var urls []string
		for _, f := range files {
			urls = append(urls, tbl.FileURL(f))
		}
		want := duckFiles(t, urls)
		seen := map[string]bool{}
		for _, p := range s.Paths {
			if seen[p] {
				t.Errorf("version %d: snapshot lists %s twice", v, p)
			}
			seen[p] = true
		}
		if len(s.Paths) != len(files) || s.Rows != want.Rows || s.Duck != want {
			t.Errorf("version %d (%s): icebird reads %d files, %d rows, checksum %s over its files; sluice files: %d files, %d rows, checksum %s",
				v, m.Operation, len(s.Paths), s.Rows, s.Duck.Checksum, len(files), want.Rows, want.Checksum)
		}
	}
}

func sqliteCatalog(t *testing.T, ctx context.Context, dir string) *iceberg.Catalog {
	t.Helper()
	cat, err := iceberg.OpenCatalog(ctx, "sqlite://"+filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// newTable creates a table at loc of the schema string, partitioned by
// partitionBy, closed when the test ends; it returns the table and its
// first manifest.
func newTable(t testing.TB, ctx context.Context, loc, schemaText, partitionBy string) (*catalog.Table, *catalog.Manifest) {
	t.Helper()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	schema, err := catalog.ParseSchema(schemaText)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := catalog.ParsePartitionSpec(partitionBy, schema)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tbl.Create(ctx, schema, spec, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	return tbl, m
}

// appendRows writes rows into new files of tbl (whose latest manifest is
// m) and commits them as an append; it returns the new manifest and the
// files.
func appendRows(t testing.TB, ctx context.Context, tbl *catalog.Table, m *catalog.Manifest, rows [][]any) (*catalog.Manifest, []catalog.DataFile) {
	t.Helper()
	files, err := tbl.WriteFiles(ctx, m, rows)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = tbl.Commit(ctx, catalog.Change{Operation: "append", Add: files, DataChange: true}); err != nil {
		t.Fatal(err)
	}
	return m, files
}

// allTypesTable creates a table of every column type, partitioned by
// day(event_time), and gives it versions: create, two appends (the
// second into a new day), a compaction of the first day, a rollback to
// version 3. It returns the table.
func allTypesTable(t *testing.T, ctx context.Context, loc string) *catalog.Table {
	t.Helper()
	tbl, m := newTable(t, ctx, loc, "id:int64,event_id:uuid,name:string?,n:int32,x:float64?,ok:bool,d:date,event_time:timestamp,amount:decimal(12,2)?,raw:binary?", "day(event_time)")
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	row := func(i int64, at time.Time) []any {
		var name, x, amount, raw any
		if i%3 != 0 {
			name, x, amount, raw = fmt.Sprintf("name-%d", i), float64(i)/4, fmt.Sprintf("%d.%02d", i, i%100), []byte{byte(i), 0, 0xff}
		}
		return []any{i, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), name, int32(i % 7), x, i%2 == 0, at.Truncate(24 * time.Hour), at, amount, raw}
	}
	appendFrom := func(from, n int64, at time.Time) []catalog.DataFile {
		var rows [][]any
		for i := from; i < from+n; i++ {
			rows = append(rows, row(i, at.Add(time.Duration(i)*time.Minute)))
		}
		var files []catalog.DataFile
		m, files = appendRows(t, ctx, tbl, m, rows)
		return files
	}
	a := appendFrom(0, 40, day)                  // v2
	b := appendFrom(40, 30, day.Add(-time.Hour)) // v3: days 04-30 and 05-01
	// v4: compact the first day's two files into one, the same rows.
	var rows [][]any
	for i := int64(0); i < 40; i++ {
		rows = append(rows, row(i, day.Add(time.Duration(i)*time.Minute)))
	}
	for i := int64(40); i < 70; i++ {
		if at := day.Add(-time.Hour).Add(time.Duration(i) * time.Minute); !at.Before(day) {
			rows = append(rows, row(i, at))
		}
	}
	merged, err := tbl.WriteFiles(ctx, m, rows)
	if err != nil {
		t.Fatal(err)
	}
	var old []catalog.DataFile
	for _, f := range append(a, b...) {
		if f.Partition == "date=2024-05-01" {
			old = append(old, f)
		}
	}
	if len(old) != 2 || len(merged) != 1 {
		t.Fatalf("fixture: %d files of 2024-05-01 to merge into %d", len(old), len(merged))
	}
	if m, err = tbl.Commit(ctx, catalog.Change{Operation: "compact", Add: merged, Remove: old}); err != nil {
		t.Fatal(err)
	}
	if m, err = tbl.Rollback(ctx, 3, "test"); err != nil { // v5
		t.Fatal(err)
	}
	if m.Version != 5 {
		t.Fatalf("fixture: %d versions, want 5", m.Version)
	}
	return tbl
}

// TestIcebergSyncEveryVersion: every version of a table (create, appends,
// compaction, rollback) becomes one snapshot, in order, with its
// sluice.version; icebird reads each as DuckDB reads `sluice files` of
// that version; a second sync adds nothing.
func TestIcebergSyncEveryVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := allTypesTable(t, ctx, filepath.Join(dir, "events"))
	cat := sqliteCatalog(t, ctx, dir)
	res, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mirrored != 5 || res.Version != 5 || !res.Created || res.Identifier != "lake.events" {
		t.Fatalf("first sync: %+v", res)
	}
	checkMirror(t, ctx, tbl, res.MetadataLocation, []string{"append", "append", "append", "replace", "overwrite"})

	again, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Mirrored != 0 || again.SnapshotID != res.SnapshotID || again.MetadataLocation != res.MetadataLocation {
		t.Fatalf("second sync changed the mirror: %+v after %+v", again, res)
	}

	// A new version is mirrored on the next sync, on top of the others.
	files, err := tbl.WriteFiles(ctx, mustLatest(t, ctx, tbl), [][]any{{int64(99), "00000000-0000-4000-8000-000000000099", nil, int32(1), nil, true,
		time.Date(2024, 5, 9, 0, 0, 0, 0, time.UTC), time.Date(2024, 5, 9, 3, 0, 0, 0, time.UTC), nil, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", Add: files, DataChange: true}); err != nil {
		t.Fatal(err)
	}
	third, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if third.Mirrored != 1 || third.Version != 6 {
		t.Fatalf("sync after an append: %+v", third)
	}
	checkMirror(t, ctx, tbl, third.MetadataLocation, []string{"append", "append", "append", "replace", "overwrite", "append"})
}

func mustLatest(t *testing.T, ctx context.Context, tbl *catalog.Table) *catalog.Manifest {
	t.Helper()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestIcebergSyncRefusesForeignTable: a catalog table that mirrors
// another sluice table is not overwritten: the sync fails with
// ErrAnotherTable, naming both tables.
func TestIcebergSyncRefusesForeignTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := allTypesTable(t, ctx, filepath.Join(dir, "events"))
	cat := sqliteCatalog(t, ctx, dir)
	if _, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"}); err != nil {
		t.Fatal(err)
	}
	other, err := catalog.Open(ctx, filepath.Join(dir, "other"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s, _ := catalog.ParseSchema("id:int64")
	if _, err := other.Create(ctx, s, catalog.PartitionSpec{}, nil, "test"); err != nil {
		t.Fatal(err)
	}
	_, err = iceberg.Sync(ctx, other, cat, iceberg.Options{Namespace: "lake", Name: "events"})
	if !errors.Is(err, iceberg.ErrAnotherTable) || !strings.Contains(err.Error(), filepath.Join(dir, "events")) || !strings.Contains(err.Error(), other.Location()) {
		t.Fatalf("sync of another table onto lake.events: %v, want ErrAnotherTable naming both tables", err)
	}
}

// TestIcebergOpenCatalogBadURL: a catalog URL that is not sqlite:/// or
// postgres:// fails with ErrCatalogURL, naming what is wanted.
func TestIcebergOpenCatalogBadURL(t *testing.T) {
	for _, u := range []string{"sqlite://relative/cat.db", "mysql://x/y", "catalog.db"} {
		_, err := iceberg.OpenCatalog(context.Background(), u)
		if !errors.Is(err, iceberg.ErrCatalogURL) || !strings.Contains(err.Error(), "sqlite:///") {
			t.Errorf("OpenCatalog(%q): %v, want ErrCatalogURL", u, err)
		}
	}
}

// TestIcebergSyncConcurrent: four syncs of one table into one catalog at
// once (each with its own catalog handle, as separate processes would
// have) all succeed, and the mirror holds every version exactly once, in
// order: a sync that loses a commit to a rival resumes after it.
func TestIcebergSyncConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := allTypesTable(t, ctx, filepath.Join(dir, "events"))
	errs := make(chan error, 4)
	mirrored := make(chan int, 4)
	for range 4 {
		go func() {
			cat, err := iceberg.OpenCatalog(ctx, "sqlite://"+filepath.Join(dir, "catalog.db"))
			if err != nil {
				errs <- err
				return
			}
			defer cat.Close()
			res, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"})
			mirrored <- res.Mirrored
			errs <- err
		}()
	}
	total := 0
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("a concurrent sync failed: %v", err)
		}
		total += <-mirrored
	}
	if total != 5 {
		t.Errorf("the syncs committed %d snapshots together, want 5", total)
	}
	cat := sqliteCatalog(t, ctx, dir)
	res, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "events"})
	if err != nil || res.Mirrored != 0 {
		t.Fatalf("a sync after them: %+v, %v", res, err)
	}
	checkMirror(t, ctx, tbl, res.MetadataLocation, []string{"append", "append", "append", "replace", "overwrite"})
}
