package icebergtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table/dv"
)

// walkSnapshot is the part of a line of tools/iceberg_walk.py the tests
// look at.
type walkSnapshot struct {
	SnapshotID string `json:"snapshot_id"`
	Operation  string `json:"operation"`
	Current    bool   `json:"current"`
	DataFiles  []struct {
		Path        string         `json:"path"`
		RecordCount int64          `json:"record_count"`
		SpecID      int            `json:"spec_id"`
		Partition   map[string]any `json:"partition"`
	} `json:"data_files"`
	PositionDeleteFiles []struct {
		Path       string `json:"path"`
		FileFormat string `json:"file_format"`
	} `json:"position_delete_files"`
}

func walkSnapshots(t *testing.T, metadataLocation string) []walkSnapshot {
	t.Helper()
	r, err := readerEnv()
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.walkFiles(metadataLocation)
	if err != nil {
		t.Fatal(err)
	}
	var snaps []walkSnapshot
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s walkSnapshot
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("walk line %q: %v", line, err)
		}
		snaps = append(snaps, s)
	}
	return snaps
}

// checkRows checks each snapshot's row count against the commits that
// made it: an append adds perAppend rows, a delete removes some, and the
// latest holds what the fixture counted.
func checkRows(t *testing.T, tb *Table, snaps []Snap, perAppend int64) {
	t.Helper()
	var prev, deleted int64
	for i, s := range snaps {
		switch s.Operation {
		case "append":
			if s.Rows-prev != perAppend {
				t.Errorf("snapshot %d (%d, append): %d rows after %d", i, s.ID, s.Rows, prev)
			}
		case "delete":
			if s.Rows >= prev {
				t.Errorf("snapshot %d (%d, delete): %d rows after %d", i, s.ID, s.Rows, prev)
			}
			deleted += prev - s.Rows
		default:
			t.Errorf("snapshot %d (%d): operation %q", i, s.ID, s.Operation)
		}
		prev = s.Rows
	}
	if got, want := snaps[len(snaps)-1].Rows, tb.Rows(); got != want {
		t.Errorf("latest snapshot: %d rows, want %d appended - %d deleted = %d", got, tb.RowsAppended(), tb.RowsDeleted(), want)
	}
	if deleted != tb.RowsDeleted() {
		t.Errorf("the delete snapshots remove %d rows, the fixture deleted %d", deleted, tb.RowsDeleted())
	}
}

// A foreign table of racing appends before and after a spec change, with
// position deletes (two on one data file), then a writer's append after:
// both readers read the same rows at every snapshot, the counts add up,
// the current snapshot's files are under both specs, and without deletes a
// snapshot's checksum is duckrows' over its files.
func TestForeignTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := Options{Appends: 12, RowsPerAppend: 200, SpecChangeAt: 6, PositionDeletes: 4, Concurrent: 4, Seed: 42}
	tb := Write(t, o)
	if got := tb.RowsAppended(); got != int64(o.Appends*o.RowsPerAppend) {
		t.Fatalf("%d rows appended, want %d", got, o.Appends*o.RowsPerAppend)
	}
	t.Logf("%s: %d commits redone after losing a race", tb.URL(), tb.Retries())
	from := tb.DeletedFrom()
	if len(from) != o.PositionDeletes {
		t.Fatalf("rows deleted from %d files, want %d", len(from), o.PositionDeletes)
	}
	// A second delete file on a data file that has one already, then
	// a writer appends beside.
	if err := tb.DeleteSomeRowsOf(ctx, from[len(from)-1]); err != nil {
		t.Fatal(err)
	}
	if err := tb.Append(ctx, o.RowsPerAppend); err != nil {
		t.Fatal(err)
	}

	meta := tb.MetadataLocation(t)
	if !strings.HasPrefix(meta, tb.Location+"/metadata/") || !strings.HasPrefix(tb.Location, tb.Warehouse+"/lake.db/events") {
		t.Errorf("metadata %s, location %s, warehouse %s", meta, tb.Location, tb.Warehouse)
	}
	if want := "iceberg+sqlite://" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(tb.Warehouse, "file://"))) + "/catalog.db#lake.events"; tb.URL() != want {
		t.Errorf("URL %s, want %s", tb.URL(), want)
	}
	snaps := SnapshotRows(t, meta)
	if want := len(tb.Load(t).Metadata().Snapshots()); len(snaps) != want {
		t.Fatalf("%d snapshots read, the table has %d", len(snaps), want)
	}
	// o.Appends + 1 appends, o.PositionDeletes + 1 deletes.
	if want := o.Appends + o.PositionDeletes + 2; len(snaps) != want {
		t.Errorf("%d snapshots, want %d", len(snaps), want)
	}
	checkRows(t, tb, snaps, int64(o.RowsPerAppend))

	walk := walkSnapshots(t, meta)
	cur := walk[len(walk)-1]
	if !cur.Current {
		t.Fatalf("the walk's last snapshot %s is not the current one", cur.SnapshotID)
	}
	specs := map[int]int{}
	for _, f := range cur.DataFiles {
		specs[f.SpecID]++
		if _, ok := f.Partition["ts_day"]; !ok {
			t.Errorf("%s: partition %v has no ts_day", f.Path, f.Partition)
		}
		if _, ok := f.Partition["region"]; ok != (f.SpecID == 1) {
			t.Errorf("%s (spec %d): partition %v", f.Path, f.SpecID, f.Partition)
		}
	}
	if len(specs) != 2 || specs[0] == 0 || specs[1] == 0 {
		t.Errorf("current snapshot's data files by spec id: %v, want files of specs 0 and 1", specs)
	}
	if len(cur.PositionDeleteFiles) != o.PositionDeletes+1 {
		t.Errorf("%d position delete files, want %d", len(cur.PositionDeleteFiles), o.PositionDeletes+1)
	}
	for _, d := range cur.PositionDeleteFiles {
		if d.FileFormat != "PARQUET" {
			t.Errorf("position delete file %s is %s", d.Path, d.FileFormat)
		}
	}

	// The first snapshot, without deletes: duckrows' checksum over its
	// files, as a test of sluice's own tables would compute it.
	var files []string
	for _, f := range walk[0].DataFiles {
		files = append(files, strings.TrimPrefix(f.Path, "file://"))
	}
	r, err := readerEnv()
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(exec.Command(r.node, filepath.Join(r.tools, "duckrows.mjs"), "--list", "-"), []byte(strings.Join(files, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Rows     int64  `json:"rows"`
		Checksum string `json:"checksum"`
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("duckrows output %q: %v", out, err)
	}
	if d.Rows != snaps[0].Rows || d.Checksum != snaps[0].Checksum {
		t.Errorf("first snapshot: duckrows reads %+v, the readers %+v", d, snaps[0])
	}
}

// A format version 3 table: merge-on-read deletes are deletion vectors,
// which both readers decode.
func TestForeignTableV3(t *testing.T) {
	t.Parallel()
	o := Options{FormatVersion: 3, Appends: 4, RowsPerAppend: 100, SpecChangeAt: 2, PositionDeletes: 2, Seed: 3}
	tb := Write(t, o)
	meta := tb.MetadataLocation(t)
	snaps := SnapshotRows(t, meta)
	checkRows(t, tb, snaps, int64(o.RowsPerAppend))
	walk := walkSnapshots(t, meta)
	cur := walk[len(walk)-1]
	if len(cur.PositionDeleteFiles) != 2 {
		t.Fatalf("%d deletion vectors, want 2", len(cur.PositionDeleteFiles))
	}
	for _, d := range cur.PositionDeleteFiles {
		if d.FileFormat != "PUFFIN" {
			t.Errorf("delete file %s is %s, want a deletion vector (PUFFIN)", d.Path, d.FileFormat)
		}
	}
}

// Both deletion vector decoders (tools/icedv.mjs and tools/iceberg_walk.py)
// read what iceberg-go serializes: array, bitmap and run containers, and
// positions past 2^32.
func TestDeletionVectorDecoders(t *testing.T) {
	t.Parallel()
	r, err := readerEnv()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]uint64{
		"array": {0, 3, 7, 4095, 65535, 65536, 1 << 20},
		"run":   nil,
		"wide":  {5, 1<<32 + 1, 3<<32 + 65537},
		"dense": nil,
	}
	for i := range uint64(10000) {
		cases["run"] = append(cases["run"], 100+i)
	}
	for i := range uint64(40000) {
		if i%3 != 0 {
			cases["dense"] = append(cases["dense"], i) // > 4096 in one container, no long runs
		}
	}
	for name, positions := range cases {
		t.Run(name, func(t *testing.T) {
			bm := dv.NewRoaringPositionBitmap()
			for _, p := range positions {
				bm.Set(p)
			}
			blob, err := dv.SerializeDV(bm)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "dv.puffin")
			if err := os.WriteFile(file, append([]byte("PFA1"), blob...), 0o644); err != nil {
				t.Fatal(err)
			}
			off, n := "4", strconv.Itoa(len(blob))
			want := make([]string, len(positions))
			for i, p := range positions {
				want[i] = strconv.FormatUint(p, 10)
			}
			js, err := run(exec.Command(r.node, filepath.Join(r.tools, "icedv.mjs"), file, off, n), nil)
			if err != nil {
				t.Fatal(err)
			}
			py, err := run(exec.Command(r.python, "-B", "-c",
				"import sys; sys.path.insert(0, sys.argv[1]); import iceberg_walk as w; "+
					"print(*w.deletion_vector(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])), sep='\\n')",
				r.tools, file, off, n), nil)
			if err != nil {
				t.Fatal(err)
			}
			for lang, out := range map[string][]byte{"icedv.mjs": js, "iceberg_walk.py": py} {
				got := strings.Fields(string(bytes.TrimSpace(out)))
				if !slices.Equal(got, want) {
					t.Errorf("%s: %d positions (first %v), want %d", lang, len(got), got[:min(5, len(got))], len(want))
				}
			}
		})
	}
}

func TestAgree(t *testing.T) {
	a := []Snap{{ID: 1, Operation: "append", Rows: 10, Checksum: "ab"}}
	if err := agree(a, slices.Clone(a)); err != nil {
		t.Fatal(err)
	}
	b := []Snap{{ID: 1, Operation: "append", Rows: 10, Checksum: "ac"}}
	if err := agree(a, b); err == nil {
		t.Fatal("a checksum difference passes")
	}
	if err := agree(a, nil); err == nil {
		t.Fatal("a missing snapshot passes")
	}
}
