package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// importAddsNothing imports from again and checks that nothing was
// committed and that the table still lists want and holds the sample's
// rows, by its own count and by DuckDB reading the listed files.
func importAddsNothing(t *testing.T, table, from string, want []string, rows duck) {
	t.Helper()
	sum := summaryOf(t, mustSluice(t, "import", table, "--from", from, "--json"))
	if sum["files_added"] != float64(0) || sum["version"] != nil {
		t.Fatalf("import again: %v; want no file added and no version", sum)
	}
	files := summaryOf(t, mustSluice(t, "files", table, "--json"))
	if files["rows"] != float64(rows.Rows) {
		t.Fatalf("table holds %v rows after importing again, want %d", files["rows"], rows.Rows)
	}
	got := lines(mustSluice(t, "files", table).stdout)
	if !slices.Equal(got, want) {
		t.Fatalf("sluice files after importing again:\n%v\nwant\n%v", got, want)
	}
	if d := duckRead(t, got); d.Rows != rows.Rows || d.Checksum != rows.Checksum {
		t.Fatalf("DuckDB over sluice files: %+v, want the sample's %+v", d, rows)
	}
}

// Regression (issue 13, item 1): the README's walk-through, import,
// compact, import again, doubled the table (3,479 rows to 6,958): the
// second import adopted the files the compaction had replaced.
func TestImportAgainAfterCompactionAddsNothing(t *testing.T) {
	t.Run("in place", func(t *testing.T) {
		dir, rows := sampleCopy(t)
		mustSluice(t, "import", dir, "--from", dir)
		live := compactAllOf(t, dir)
		importAddsNothing(t, dir, dir, live, rows)
	})
	t.Run("from another folder", func(t *testing.T) {
		src, rows := sampleCopy(t)
		table := filepath.Join(t.TempDir(), "events")
		mustSluice(t, "import", table, "--from", src)
		live := compactAllOf(t, table)
		importAddsNothing(t, table, src, live, rows)
	})
}

// Vacuum does not change it: within the retention it deletes nothing; with
// the versions expired (--retain 0) it still keeps a replaced file younger
// than the cutoff (here one whose modification time a copy of the folder
// renewed), and import must still know it was replaced.
func TestImportAgainAfterVacuumAddsNothing(t *testing.T) {
	dir, rows := sampleCopy(t)
	mustSluice(t, "import", dir, "--from", dir)
	live := compactAllOf(t, dir)
	vac := summaryOf(t, mustSluice(t, "vacuum", dir, "--json"))
	if vac["files_deleted"] != float64(0) {
		t.Fatalf("vacuum within the retention: %v; want nothing deleted", vac)
	}
	importAddsNothing(t, dir, dir, live, rows)

	later := time.Now().Add(time.Hour)
	replaced := 0
	for _, f := range parquetFiles(t, dir) {
		if !slices.Contains(live, f) {
			if err := os.Chtimes(f, later, later); err != nil {
				t.Fatal(err)
			}
			replaced++
		}
	}
	if replaced != 12 {
		t.Fatalf("%d replaced files on disk, want the 12 the compaction replaced", replaced)
	}
	vac = summaryOf(t, mustSluice(t, "vacuum", dir, "--retain", "0", "--force", "--json"))
	if vac["files_deleted"] != float64(0) || vac["retained_versions"] != float64(1) {
		t.Fatalf("vacuum --retain 0 of files younger than the cutoff: %v; want only the latest version retained, nothing deleted", vac)
	}
	importAddsNothing(t, dir, dir, live, rows)
}

// After a rollback, files that later versions added are not live but were
// referenced. Rolling back a compaction and importing again would bring
// back the compaction's output beside the files it replaced: the rows
// twice.
func TestImportAgainAfterRollbackAddsNothing(t *testing.T) {
	dir, rows := sampleCopy(t)
	mustSluice(t, "import", dir, "--from", dir)
	v1 := lines(mustSluice(t, "files", dir).stdout)
	compactAllOf(t, dir)
	mustSluice(t, "rollback", dir, "--to", "1")
	importAddsNothing(t, dir, dir, v1, rows)

	// Spark output that lands later is news, and only it is adopted.
	extra := filepath.Join(filepath.Dir(v1[0]), "part-99999-late.parquet")
	b, err := os.ReadFile(v1[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(extra, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := summaryOf(t, mustSluice(t, "import", dir, "--from", dir, "--json"))
	if sum["files_added"] != float64(1) || sum["files_skipped"] != float64(15) {
		t.Fatalf("import of one late file: %v; want 1 added, 15 skipped (12 live, 3 replaced)", sum)
	}
	if got := lines(mustSluice(t, "files", dir).stdout); len(got) != 13 || !slices.Contains(got, extra) {
		t.Fatalf("files after the late import: %v; want version 1's 12 and %s", got, extra)
	}
}
