package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// probe is what bench/duckcompact.mjs --probe tells of a point query.
type probe struct {
	Rows          int64 `json:"rows"`
	RowGroups     int64 `json:"row_groups"`
	RowGroupsKept int64 `json:"row_groups_kept"`
	RowsKept      int64 `json:"rows_kept"`
	BytesRead     int64 `json:"bytes_read"`
}

// duckProbe runs `SELECT * ... WHERE column = value` in DuckDB over the
// live files of the table at dir, once.
func duckProbe(t *testing.T, dir, column, value string) probe {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(repoRoot(t), "bench", "duckcompact.mjs"), "--probe", "-", column, value, "1")
	cmd.Stdin = strings.NewReader(mustSluice(t, "files", dir).stdout)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckcompact --probe: %v: %s (run \"make tools\" if DuckDB is missing)", err, stderrOf(err))
	}
	var p probe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("duckcompact --probe output %q: %v", out, err)
	}
	return p
}

// A table compacted with --sort-by list_id answers `WHERE list_id = X`
// from a fraction of its row groups, where before, every small file held
// every list; DuckDB reads the same rows before and after.
func TestCompactSortByPrunesPointQueries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "events")
	writeSmallFiles(t, dir, 1, 10, 4000) // list_id = row number % 1000
	want := tableRead(t, dir)

	t.Run("sort-by and zorder-by together are refused", func(t *testing.T) {
		r := sluice(t, nil, "compact", dir, "--sort-by", "list_id", "--zorder-by", "tally")
		if first, _, _ := strings.Cut(r.stderr, "\n"); r.code != 2 || !strings.Contains(first, "--zorder-by and --sort-by: give one") {
			t.Fatalf("exit %d, stderr %q; want a usage error (exit 2) saying to give one", r.code, r.stderr)
		}
	})

	before := duckProbe(t, dir, "list_id", "500")
	// About four outputs of the 10 small files.
	r := summaryOf(t, mustSluice(t, "compact", dir, "--target-file-size", "24KiB", "--sort-by", "list_id", "--json"))
	if r["files_in"].(float64) != 10 || r["files_out"].(float64) < 3 {
		t.Fatalf("sorted compaction: %v files in, %v out; want 10 in and several out", r["files_in"], r["files_out"])
	}
	if got := tableRead(t, dir); got.Rows != want.Rows || got.Checksum != want.Checksum {
		t.Fatalf("after compaction: %+v, want the rows before: %+v", got, want)
	}

	after := duckProbe(t, dir, "list_id", "500")
	t.Logf("WHERE list_id = 500: before %+v; after --sort-by %+v", before, after)
	if before.Rows != 40 || after.Rows != 40 {
		t.Fatalf("WHERE list_id = 500 matched %d rows before and %d after; want 40 and 40", before.Rows, after.Rows)
	}
	if before.RowGroupsKept != before.RowGroups {
		t.Fatalf("before, %d of %d row groups admit list_id 500; want all", before.RowGroupsKept, before.RowGroups)
	}
	if after.RowsKept*3 > before.RowsKept || after.RowGroupsKept > 1 {
		t.Fatalf("after: %d rows in %d row groups DuckDB cannot skip, before %d rows; want one row group and a third of the rows or fewer",
			after.RowsKept, after.RowGroupsKept, before.RowsKept)
	}
	if after.BytesRead >= before.BytesRead {
		t.Fatalf("DuckDB read %d bytes after, %d before; want fewer", after.BytesRead, before.BytesRead)
	}
}
