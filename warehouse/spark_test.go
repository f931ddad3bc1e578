package warehouse

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/testenv"
)

// TestPublishFillsHivePartitionColumns: Spark keeps partition columns out
// of its files, in the folder names; a table imported from Spark's output
// publishes them from there, NULL for Hive's default partition.
func TestPublishFillsHivePartitionColumns(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ts")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "testdata", "spark-written", "kernel-timestamp-TIMESTAMP_MICROS"))); err != nil {
		t.Fatal(err)
	}
	// The fixture is a Delta table: import refuses a folder whose log
	// says which files are live. Its files are all live, so without the
	// log it is the Hive folder this test needs.
	if err := os.RemoveAll(filepath.Join(dir, "_delta_log")); err != nil {
		t.Fatal(err)
	}
	tbl, err := catalog.Open(ctx, dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if _, err := tbl.Import(ctx, dir, catalog.ImportOptions{RunID: "test"}); err != nil {
		t.Fatal(err)
	}
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var nullRows int64
	parts := map[string]bool{}
	for _, f := range files {
		if v := f.PartitionValues["part"]; v == nil {
			nullRows += f.Rows
		} else {
			parts[*v] = true
		}
	}
	if len(parts) < 2 || nullRows == 0 {
		t.Fatalf("fixture: %d partitions and %d rows in the default one; want both", len(parts), nullRows)
	}
	res := mustPublish(t, tbl, Options{To: url, As: "ts"})
	conn := connectT(t, url)
	if n := count(t, conn, "SELECT count(*) FROM ts"); n != m.Rows || res.Rows != m.Rows {
		t.Fatalf("ts has %d rows (loaded %d), want %d", n, res.Rows, m.Rows)
	}
	if n := count(t, conn, "SELECT count(*) FROM ts WHERE part IS NULL"); n != nullRows {
		t.Fatalf("%d rows with a NULL part, want the %d of the default partition", n, nullRows)
	}
	if n := count(t, conn, "SELECT count(DISTINCT part) FROM ts"); n != int64(len(parts)) {
		t.Fatalf("%d distinct part values, want %d (%v)", n, len(parts), parts)
	}
}
