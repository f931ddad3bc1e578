package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// linkOut moves the folder dir/table/part to dir/elsewhere/part and leaves
// a symbolic link in its place, as a user who moved a partition to another
// disk would. It returns the folder outside the table.
func linkOut(t *testing.T, dir, part string) string {
	t.Helper()
	elsewhere := filepath.Join(dir, "elsewhere", part)
	if err := os.MkdirAll(filepath.Dir(elsewhere), 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "table", part)
	if _, err := os.Stat(in); err == nil {
		if err := os.Rename(in, elsewhere); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, in); err != nil {
		t.Fatal(err)
	}
	return elsewhere
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// A partition folder that is a link out of the table is never written
// through: ingest fails naming it, and nothing lands outside the table.
func TestIngestRefusesAPartitionLinkedOutOfTheTable(t *testing.T) {
	dir := t.TempDir()
	table, land := filepath.Join(dir, "table"), filepath.Join(dir, "landing")
	initEvents(t, table)
	elsewhere := linkOut(t, dir, "date=2024-01-01")
	writeEvents(t, land, "a.jsonl", 0, 1) // one record, on 2024-01-01

	r := sluice(t, nil, "ingest", table, "--from", land)
	failsWithOneLine(t, r, filepath.Join(table, "date=2024-01-01"), "leaves the root")
	if got := names(t, elsewhere); len(got) != 0 {
		t.Fatalf("ingest wrote outside the table: %q", got)
	}
	if files := lines(mustSluice(t, "files", table).stdout); len(files) != 0 {
		t.Fatalf("the table lists %q after a failed ingest", files)
	}
}

// Import never adopts files through a link out of the folder it imports,
// nor passes over them in silence: it fails naming the link.
func TestImportRefusesAPartitionLinkedOutOfTheFolder(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "table")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "sample", "events"), table)
	linkOut(t, dir, "date=2024-05-03")

	r := sluice(t, nil, "import", table, "--from", table)
	failsWithOneLine(t, r, filepath.Join(table, "date=2024-05-03"), "leaves the root")
	if r := sluice(t, nil, "files", table); r.code == 0 && strings.TrimSpace(r.stdout) != "" {
		t.Fatalf("import adopted files despite the link: %s", r.stdout)
	}
}

// Vacuum never deletes through a link out of the table: the files it
// would delete there stay, and it fails naming the link.
func TestVacuumRefusesToDeleteThroughALinkOutOfTheTable(t *testing.T) {
	dir := t.TempDir()
	table, land := filepath.Join(dir, "table"), filepath.Join(dir, "landing")
	initEvents(t, table)
	for i, name := range []string{"a.jsonl", "b.jsonl"} {
		writeEvents(t, land, name, 28*i, 1) // one record each, on 2024-01-01
		mustSluice(t, "ingest", table, "--from", land)
	}
	mustSluice(t, "compact", table, "--min-input-files", "2")
	if n := len(lines(mustSluice(t, "files", table).stdout)); n != 1 {
		t.Fatalf("compaction left %d live files, want 1", n)
	}
	elsewhere := linkOut(t, dir, "date=2024-01-01")
	before := names(t, elsewhere)
	if len(before) != 3 {
		t.Fatalf("partition holds %q, want the two replaced files and the compacted one", before)
	}

	r := sluice(t, nil, "vacuum", table, "--retain", "1ns", "--force")
	failsWithOneLine(t, r, filepath.Join(table, "date=2024-01-01"), "leaves the root")
	if after := names(t, elsewhere); !slices.Equal(after, before) {
		t.Fatalf("vacuum deleted through the link: %q left of %q", after, before)
	}
}
