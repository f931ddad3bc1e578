package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// historyVersion is one version of `sluice history --json`.
type historyVersion struct {
	Version      int64  `json:"version"`
	Operation    string `json:"operation"`
	FilesAdded   int64  `json:"files_added"`
	FilesRemoved int64  `json:"files_removed"`
	RowsAdded    int64  `json:"rows_added"`
	RowsRemoved  int64  `json:"rows_removed"`
	Files        int64  `json:"files"`
	Rows         int64  `json:"rows"`
	RolledBackTo int64  `json:"rolled_back_to"`
}

// A rollback across a compaction puts back the small files and takes out
// the compacted ones: history says how many of each, not the net change
// (which was +4/-0 files and +0/-0 rows here, as if nothing had been
// removed). Regression: the rollback's summary held partition totals'
// differences.
func TestHistoryOfARollbackShowsFilesAddedAndRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "events")
	// Version 1 is the empty table; 2 and 3 append a file to each of two
	// days, 30 rows a day.
	writeSmallFiles(t, dir, 2, 2, 30)
	mustSluice(t, "compact", dir, "--min-input-files", "2", "--max-commits", "1")
	mustSluice(t, "rollback", dir, "--to", "3")
	mustSluice(t, "rollback", dir, "--to", "4")

	var hist struct {
		Versions []historyVersion `json:"versions"`
	}
	out := mustSluice(t, "history", dir, "--json").stdout
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatalf("history --json %q: %v", out, err)
	}
	if len(hist.Versions) != 6 {
		t.Fatalf("history has %d versions, want 6: %s", len(hist.Versions), out)
	}
	want := []historyVersion{
		{Version: 1, Operation: "create"},
		{Version: 2, Operation: "append", FilesAdded: 2, RowsAdded: 60, Files: 2, Rows: 60},
		{Version: 3, Operation: "append", FilesAdded: 2, RowsAdded: 60, Files: 4, Rows: 120},
		{Version: 4, Operation: "compact", FilesAdded: 2, FilesRemoved: 4, RowsAdded: 120, RowsRemoved: 120, Files: 2, Rows: 120},
		{Version: 5, Operation: "rollback", FilesAdded: 4, FilesRemoved: 2, RowsAdded: 120, RowsRemoved: 120, Files: 4, Rows: 120, RolledBackTo: 3},
		{Version: 6, Operation: "rollback", FilesAdded: 2, FilesRemoved: 4, RowsAdded: 120, RowsRemoved: 120, Files: 2, Rows: 120, RolledBackTo: 4},
	}
	for i, w := range want {
		got := hist.Versions[i]
		if got != w {
			t.Errorf("history --json version %d:\n got %+v\nwant %+v", w.Version, got, w)
		}
	}

	text := lines(mustSluice(t, "history", dir).stdout)
	if len(text) != 7 {
		t.Fatalf("history prints %d lines, want a header and 6 versions:\n%s", len(text), strings.Join(text, "\n"))
	}
	for i, w := range want {
		// The last four columns: FILES +/-, ROWS +/-, FILES, ROWS.
		f := strings.Fields(text[1+i])
		got := strings.Join(f[len(f)-4:], " ")
		cells := fmt.Sprintf("+%d/-%d +%d/-%d %d %d", w.FilesAdded, w.FilesRemoved, w.RowsAdded, w.RowsRemoved, w.Files, w.Rows)
		if f[0] != fmt.Sprint(w.Version) || got != cells {
			t.Errorf("history line %q: want version %d with %q", text[1+i], w.Version, cells)
		}
	}
}
