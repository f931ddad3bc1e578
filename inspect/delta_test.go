package inspect_test

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/inspect"
)

// testdata is the repository's testdata folder.
func testdata(t *testing.T, elem ...string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), "..", "testdata"}, elem...)...)
}

// A Delta folder reads as its log says: the live files' rows only (the
// folder also holds the files a MERGE removed), its versions the log's,
// newest first.
func TestDeltaTableReadsAsItsLogSays(t *testing.T) {
	ctx := context.Background()
	tbl := open(t, testdata(t, "delta", "basic-with-inserts-merge"))
	if tbl.Format() != inspect.FormatDelta {
		t.Fatalf("format %s", tbl.Format())
	}
	n := -1 // the names come first
	if _, err := inspect.Rows(ctx, tbl, inspect.RowOptions{}, func([]any) error { n++; return nil }); err != nil || n != 140 {
		t.Fatalf("%d rows, %v; want the log's 140", n, err)
	}
	d, err := inspect.Describe(ctx, tbl, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != "delta" || d.Version != 1 || d.Rows != 140 || d.Files != 1 || len(d.Versions) != 2 || d.Versions[0].Version != 1 || d.Versions[0].Operation != "MERGE" || d.OldestVersion != 0 {
		t.Fatalf("describe: format %s, version %d, %d rows, %d files, versions %+v, oldest %d", d.Format, d.Version, d.Rows, d.Files, d.Versions, d.OldestVersion)
	}
	// Version 0 held the two files the MERGE replaced.
	m, err := tbl.Version(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if files, err := tbl.Files(ctx, m); err != nil || len(files) != 2 {
		t.Fatalf("version 0: %d files, %v", len(files), err)
	}
}

// A Delta table with deletion vectors is refused, naming the table and
// why: its deleted rows would read.
func TestDeltaDeletionVectorsAreRefused(t *testing.T) {
	loc := testdata(t, "delta-golden", "dv-partitioned-with-checkpoint")
	_, err := inspect.Open(context.Background(), loc, inspect.OpenOptions{})
	if !errors.Is(err, delta.ErrUnsupportedFeature) || !strings.Contains(err.Error(), "deletion vectors") || !strings.Contains(err.Error(), "dv-partitioned-with-checkpoint") {
		t.Fatalf("open: %v", err)
	}
}
