package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A single accepted 50 MB string made a 100 MB manifest piece: ingest a
// string of a few MB, then compact, and every piece, footer and bound
// stays small, the bounds marked truncated, and the compaction verifies.
func TestIngestOfALongStringKeepsPiecesAndFootersSmall(t *testing.T) {
	dir := t.TempDir()
	loc := filepath.Join(dir, "events")
	initEvents(t, loc)
	for i := range 2 {
		land := filepath.Join(dir, "land", string(rune('a'+i)))
		os.MkdirAll(land, 0o755)
		f, err := os.Create(filepath.Join(land, "big.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		writeLine(t, w, i, 4<<20)
		writeLine(t, w, i+2, 10)
		w.Flush()
		f.Close()
		mustSluice(t, "ingest", loc, "--from", land, "--max-record-bytes", "5MiB")
	}
	r := mustSluice(t, "--json", "compact", loc, "--min-input-files", "2")
	if s := summaryOf(t, r); s["files_in"] != 2.0 {
		t.Fatalf("compact: %v, want 2 files in", s)
	}

	// Every piece (of the ingests' versions and of the compaction's) and
	// every data file's footer (the ingests' and the compaction's output).
	pieces, _ := filepath.Glob(filepath.Join(loc, "_sluice", "pieces", "*.json"))
	if len(pieces) < 3 {
		t.Fatalf("%d manifest pieces, want one per commit", len(pieces))
	}
	for _, p := range pieces {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 4<<10 {
			t.Errorf("piece %s is %d bytes, want under 4 KiB", filepath.Base(p), len(b))
		}
		var piece struct {
			Files []struct {
				Cols map[string]struct {
					Min      *string `json:"min"`
					Max      *string `json:"max"`
					MinTrunc bool    `json:"min_trunc"`
					MaxTrunc bool    `json:"max_trunc"`
				} `json:"cols"`
			} `json:"files"`
		}
		if err := json.Unmarshal(b, &piece); err != nil || len(piece.Files) == 0 {
			t.Fatalf("piece %s: %v, %d files", filepath.Base(p), err, len(piece.Files))
		}
		for _, f := range piece.Files {
			// The short note is the min, exact; the long one the max, cut.
			note := f.Cols["note"]
			if note.Min == nil || *note.Min != "sluice hol" || note.MinTrunc ||
				note.Max == nil || !note.MaxTrunc || len(*note.Max) > 64 || !strings.HasPrefix(*note.Max, "sluice holds memory") {
				t.Errorf("piece %s: bounds of note %q..%.70q truncated %v/%v; want the exact short min and a 64-byte max marked truncated",
					filepath.Base(p), deref(note.Min), deref(note.Max), note.MinTrunc, note.MaxTrunc)
			}
		}
	}
	var data []string
	filepath.WalkDir(loc, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			data = append(data, p)
		}
		return err
	})
	if len(data) != 3 {
		t.Fatalf("%d data files, want 2 ingested and 1 compacted", len(data))
	}
	for _, p := range data {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := binary.LittleEndian.Uint32(b[len(b)-8:]); n > 4<<10 {
			t.Errorf("the footer of %s is %d bytes, want under 4 KiB", filepath.Base(p), n)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
