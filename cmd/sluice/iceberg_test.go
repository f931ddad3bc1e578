package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// iceSnapshot is one line of tools/icerows.mjs: a snapshot of an Iceberg
// table as icebird, the independent Iceberg reader, sees it.
type iceSnapshot struct {
	SnapshotID string            `json:"snapshot_id"`
	Operation  string            `json:"operation"`
	Summary    map[string]string `json:"summary"`
	Rows       int64             `json:"rows"`
	Paths      []string          `json:"paths"`
	Duck       struct {
		Rows     int64  `json:"rows"`
		Checksum string `json:"checksum"`
	} `json:"duck"`
}

// icebirdSnapshots reads every snapshot of the Iceberg table whose
// metadata file is metadataLocation with icebird, oldest first.
// With filesOnly it resolves the live files only, reading no rows.
func icebirdSnapshots(t *testing.T, metadataLocation string, filesOnly bool) []iceSnapshot {
	t.Helper()
	args := []string{filepath.Join(repoRoot(t), "tools", "icerows.mjs"), "--all", metadataLocation}
	if filesOnly {
		args = append(args, "--files-only")
	}
	out, err := exec.Command("node", args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("icerows %s: %v: %s (run \"make tools\" if icebird is missing)", metadataLocation, err, stderr)
	}
	var snaps []iceSnapshot
	for _, line := range lines(string(out)) {
		var s iceSnapshot
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("icerows line %q: %v", line, err)
		}
		snaps = append(snaps, s)
	}
	return snaps
}

// icebergSync runs `sluice iceberg sync TABLE --catalog sqlite:///... --json`
// and returns its summary.
func icebergSync(t *testing.T, table, catalogDB string, more ...string) map[string]any {
	t.Helper()
	args := append([]string{"iceberg", "sync", table, "--catalog", "sqlite://" + catalogDB, "--json"}, more...)
	return summaryOf(t, mustSluice(t, args...))
}

// checkMirror asserts that the mirror at metadataLocation has one
// snapshot per version of table, in order, each with its sluice.version,
// no file listed twice, and that icebird reads each snapshot as DuckDB
// reads `sluice files --version N`: same rows, same checksum (with
// filesOnly: the same files). It returns the snapshots' operations.
func checkMirror(t *testing.T, table, metadataLocation string, filesOnly bool) []string {
	t.Helper()
	snaps := icebirdSnapshots(t, metadataLocation, filesOnly)
	latest := len(lines(mustSluice(t, "history", table).stdout)) - 1 // less the header
	if len(snaps) != latest {
		t.Fatalf("the mirror has %d snapshots for %d versions", len(snaps), latest)
	}
	var ops []string
	for i, s := range snaps {
		v := i + 1
		if got := s.Summary["sluice.version"]; got != strconv.Itoa(v) {
			t.Fatalf("snapshot %d (%s): sluice.version=%q, want %d", i, s.SnapshotID, got, v)
		}
		seen := map[string]bool{}
		for _, p := range s.Paths {
			if seen[p] {
				t.Errorf("version %d: snapshot %s lists %s twice", v, s.SnapshotID, p)
			}
			seen[p] = true
		}
		files := lines(mustSluice(t, "files", table, "--version", strconv.Itoa(v)).stdout)
		ops = append(ops, s.Operation)
		if filesOnly {
			var got []string
			for _, p := range s.Paths {
				got = append(got, strings.TrimPrefix(p, "file://"))
			}
			slices.Sort(got)
			slices.Sort(files)
			if !slices.Equal(got, files) {
				t.Errorf("version %d: the snapshot lists %d files, not the %d of sluice files", v, len(got), len(files))
			}
			continue
		}
		want := duck{Rows: 0, Checksum: strings.Repeat("0", 32)}
		if len(files) > 0 {
			want = duckRead(t, files)
		}
		if len(s.Paths) != len(files) || s.Rows != want.Rows || s.Duck.Rows != want.Rows || s.Duck.Checksum != want.Checksum {
			t.Errorf("version %d: icebird reads %d files, %d rows, checksum %s; sluice files: %d files, %d rows, checksum %s",
				v, len(s.Paths), s.Rows, s.Duck.Checksum, len(files), want.Rows, want.Checksum)
		}
	}
	return ops
}

// TestIcebergSyncCommand: an imported Spark-style table and an ingested
// one, each through
// compaction and rollback, mirrored by `sluice iceberg sync` (part way,
// then to the end): at every version icebird reads what DuckDB reads
// over `sluice files`; --json says where the mirror stands; a second
// sync adds nothing.
func TestIcebergSyncCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")

	// Imported: Hive folders, the day only in the folder name.
	imp := filepath.Join(dir, "imported")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "sample", "events"), imp)
	mustSluice(t, "import", imp, "--from", imp)
	s := icebergSync(t, imp, db)
	for k, want := range map[string]any{"command": "iceberg sync", "catalog": "sqlite://" + db, "identifier": "sluice.imported",
		"version": 1.0, "mirrored": 1.0, "created": true} {
		if s[k] != want {
			t.Errorf("first sync: %s = %v, want %v (%v)", k, s[k], want, s)
		}
	}
	if id, _ := s["snapshot_id"].(float64); id == 0 {
		t.Errorf("first sync: snapshot_id %v", s["snapshot_id"])
	}
	// A second import adopts a file new in a day's folder (a copy: the
	// same rows again), then a rollback drops it.
	src := parquetFiles(t, filepath.Join(imp, "date=2024-05-02"))[0]
	copyFile(t, src, filepath.Join(imp, "date=2024-05-02", "part-00009-copy.parquet"))
	mustSluice(t, "import", imp, "--from", imp)
	mustSluice(t, "rollback", imp, "--to", "1")
	s = icebergSync(t, imp, db)
	if s["version"] != 3.0 || s["mirrored"] != 2.0 || s["created"] != false {
		t.Fatalf("second sync: %v", s)
	}
	if ops := checkMirror(t, imp, s["metadata_location"].(string), false); strings.Join(ops, ",") != "append,append,overwrite" {
		t.Errorf("operations %v, want append, append, overwrite", ops)
	}
	again := icebergSync(t, imp, db)
	if again["mirrored"] != 0.0 || again["snapshot_id"] != s["snapshot_id"] || again["metadata_location"] != s["metadata_location"] {
		t.Errorf("a sync with nothing new changed the mirror: %v after %v", again, s)
	}

	// Ingested, under another name and namespace in the same catalog.
	land, ing := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, ing)
	writeEvents(t, land, "a.jsonl", 0, 100)
	mustSluice(t, "ingest", ing, "--from", land)
	writeEvents(t, land, "b.jsonl", 100, 60)
	mustSluice(t, "ingest", ing, "--from", land)
	mustSluice(t, "compact", ing, "--include-current", "--min-input-files", "2")
	mustSluice(t, "rollback", ing, "--to", "3")
	latest := latestVersion(t, ing) // compaction commits in batches
	s = icebergSync(t, ing, db, "--namespace", "lake", "--name", "ev")
	if s["identifier"] != "lake.ev" || s["version"] != float64(latest) || s["mirrored"] != float64(latest) {
		t.Fatalf("sync of the ingested table at version %d: %v", latest, s)
	}
	ops := checkMirror(t, ing, s["metadata_location"].(string), false)
	want := []string{"append", "append", "append"} // create, two ingests
	for range latest - 4 {
		want = append(want, "replace")
	}
	if want = append(want, "overwrite"); strings.Join(ops, ",") != strings.Join(want, ",") {
		t.Errorf("operations %v, want %v", ops, want)
	}
}

// TestIcebergSyncCommandBadInput: one clear line, and a --json error.
func TestIcebergSyncCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "events")
	initEvents(t, tbl)
	if r := sluice(t, nil, "iceberg", "sync", tbl); r.code != 2 || !strings.Contains(r.stderr, "--catalog") {
		t.Errorf("no --catalog: exit %d, %s", r.code, r.stderr)
	}
	failsWithOneLine(t, sluice(t, nil, "iceberg", "sync", tbl, "--catalog", "mysql://db/x"), "sqlite:///path/catalog.db", "postgres://")
	if r := sluice(t, nil, "iceberg", "sync", tbl, "--catalog", "sqlite://"+filepath.Join(dir, "c.db"), "--name", "a.b"); r.code != 2 {
		t.Errorf("--name a.b: exit %d, %s", r.code, r.stderr)
	}
	// enable stores the catalog URL in the table: never a password.
	r := sluice(t, nil, "iceberg", "enable", tbl, "--catalog", "postgres://sluice:hunter2@localhost/lake")
	if r.code != 2 || !strings.Contains(r.stderr, "PGPASSWORD") || strings.Contains(r.stderr, "hunter2") {
		t.Errorf("enable with a password in the URL: exit %d, %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(tbl, "_sluice", "mirrors", "iceberg.json")); !os.IsNotExist(err) {
		t.Errorf("a refused enable left settings: %v", err)
	}
	r = sluice(t, nil, "iceberg", "sync", filepath.Join(dir, "missing"), "--catalog", "sqlite://"+filepath.Join(dir, "c.db"), "--json")
	if r.code != 1 || summaryOf(t, r)["error"] == nil {
		t.Errorf("a missing table: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestIcebergSyncKilledAtRandom: the sync killed with SIGKILL at random
// moments 20 times (5 under -short), then run to the end: every version
// mirrored exactly once, in order, each snapshot with its sluice.version,
// no file twice, and each snapshot lists exactly its version's files.
// A kill counts only if it found the sync still running; a sync that
// finished first gets new versions to mirror before the next one, so that
// every kill has work to interrupt.
func TestIcebergSyncKilledAtRandom(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "events")
	db := filepath.Join(dir, "catalog.db")
	manyVersions(t, tbl, 40)
	kills := 20
	if testing.Short() {
		kills = 5
	}
	rng := rand.New(rand.NewPCG(20, 26))
	killed, finished := 0, 0
	for killed < kills {
		if finished > 10*kills {
			t.Fatalf("%d syncs finished before the kill, %d killed: the kills come too late to test anything", finished, killed)
		}
		err := killedRun(t, rng, 400*time.Millisecond, "iceberg", "sync", tbl, "--catalog", "sqlite://"+db)
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ProcessState.Sys().(syscall.WaitStatus).Signaled():
			killed++
		case err == nil:
			finished++
			appendVersions(t, tbl, 3)
		default:
			t.Fatalf("sync: %v", err)
		}
	}
	s := icebergSync(t, tbl, db)
	latest := latestVersion(t, tbl)
	if s["version"] != float64(latest) {
		t.Fatalf("final sync at version %d: %v", latest, s)
	}
	t.Logf("%d syncs killed while running, %d finished first (then 3 versions added); the final sync mirrored %v of %d versions",
		killed, finished, s["mirrored"], latest)
	checkMirror(t, tbl, s["metadata_location"].(string), true)
}

// manyVersions makes a table at loc with n appends after its creation,
// over a few days, and a compaction in the middle.
func manyVersions(t *testing.T, loc string, n int) {
	t.Helper()
	initEvents(t, loc)
	appendVersions(t, loc, n/2+1)
	mustSluice(t, "compact", loc, "--include-current", "--min-input-files", "2")
	appendVersions(t, loc, n-1-(n/2+1))
}

// appendVersions commits n appends of five rows each to the table at loc,
// their ids numbered from the version each appends to, so never twice.
func appendVersions(t *testing.T, loc string, n int) {
	t.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	for range n {
		m, err := tbl.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var rows [][]any
		for j := range 5 {
			k := int(m.Version)*5 + j
			rows = append(rows, []any{fmt.Sprintf("00000000-0000-4000-8000-%012d", k), int64(k), int32(k % 3),
				time.Date(2024, 3, 1+k%4, 1, 0, k%60, 0, time.UTC), nil})
		}
		fs, err := tbl.WriteFiles(ctx, m, rows)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", Add: fs, DataChange: true}); err != nil {
			t.Fatal(err)
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func latestVersion(t *testing.T, loc string) int64 {
	t.Helper()
	tbl, err := catalog.Open(context.Background(), loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	v, err := tbl.LatestVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}
