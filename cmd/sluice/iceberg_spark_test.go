package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestIcebergSyncSparkEscapedPartitions: Spark-written tables whose Hive
// folder names carry escaped values (`part=2021-10-01 08%3A09%3A20`,
// `_2=bar+%2521`, `__HIVE_DEFAULT_PARTITION__`), imported and mirrored:
// icebird reads each snapshot's files at the paths the mirror names, as
// written (the %3A is part of the folder's name), and reads what DuckDB
// reads over `sluice files`.
func TestIcebergSyncSparkEscapedPartitions(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	// The millis and micros tables have INT96's folder names.
	for _, name := range []string{"kernel-timestamp-INT96", "data-reader-escaped-chars", "data-reader-partition-values"} {
		t.Run(name, func(t *testing.T) {
			tbl := filepath.Join(dir, name)
			copyDir(t, filepath.Join(sparkDir(t), name), tbl)
			// The fixtures are Delta tables, which import refuses; every
			// file of theirs is live, so without the log they are the
			// Hive folders this test needs.
			if err := os.RemoveAll(filepath.Join(tbl, "_delta_log")); err != nil {
				t.Fatal(err)
			}
			mustSluice(t, "import", tbl, "--from", tbl)
			s := icebergSync(t, tbl, db)
			if s["version"] != 1.0 || s["mirrored"] != 1.0 {
				t.Fatalf("sync of the imported %s: %v", name, s)
			}
			checkMirror(t, tbl, s["metadata_location"].(string), false)
		})
	}
}
