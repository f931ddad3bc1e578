package compact

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// withReadBackHook sets readBackHook for the test.
func withReadBackHook(t *testing.T, hook func(f *os.File, size int64, proof *reuseProof)) {
	t.Helper()
	readBackHook = hook
	t.Cleanup(func() { readBackHook = nil })
}

// provenPageLocation returns where the reused page pg (rows counted in the
// file) is in f, found through its offset index.
func provenPageLocation(t *testing.T, f *os.File, size int64, pg reusedPage) format.PageLocation {
	t.Helper()
	pf, err := pqio.OpenParquetFileWithIndex("out", f, size)
	if err != nil {
		t.Fatal(err)
	}
	var start int64
	cols := len(pf.Root().Columns())
	for g, rg := range pf.RowGroups() {
		if pg.row < start+rg.NumRows() {
			for _, loc := range pf.OffsetIndexes()[g*cols+pg.col].PageLocations {
				if loc.FirstRowIndex == pg.row-start {
					return loc
				}
			}
		}
		start += rg.NumRows()
	}
	t.Fatalf("no page of column %d starts at row %d", pg.col, pg.row)
	return format.PageLocation{}
}

// proofAgrees fails the test unless output file f (size bytes, of
// schema's table) has the same checksum and rows proven by proof as read
// value by value.
func proofAgrees(t *testing.T, f *os.File, size int64, proof *reuseProof, schema catalog.Schema) {
	t.Helper()
	pf, err := pqio.OpenParquetFileWithIndex("out", f, size)
	if err != nil {
		t.Fatal(err)
	}
	hashers := tableHashers(pf.Schema(), schema)
	full, n, err := fileChecksum(context.Background(), pf, hashers, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	byProof, m, err := fileChecksum(context.Background(), pf, hashers, proof, f)
	if err != nil {
		t.Fatal(err)
	}
	if byProof != full || m != n {
		t.Errorf("proving %d pages (shares of %d rows on disk): checksum %016x over %d rows, reading every value: %016x over %d",
			len(proof.pages), proof.spilled, byProof, m, full, n)
	}
}

// The read-back that proves reused pages by their bytes computes the
// checksum a read of every value computes, on a file where most pages
// were reused.
func TestReadBackProvesReusedPagesAsAFullReadWould(t *testing.T) {
	st := tempStore(t)
	schema, inputs := reusableInputs(t, st, 24)
	var proven, files int
	withReadBackHook(t, func(f *os.File, size int64, proof *reuseProof) {
		files++
		proven += len(proof.pages)
		proofAgrees(t, f, size, proof, schema)
	})
	// Two outputs, so that the second file's proof starts afresh.
	res, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{Outputs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 || proven == 0 || proven > res.PagesReused {
		t.Fatalf("%d files read back proving %d pages; %d pages were reused", files, proven, res.PagesReused)
	}
}

// A reused page whose bytes changed between the write and the read-back
// fails the rewrite, and leaves no output behind.
func TestReadBackCatchesAChangedReusedPage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, f *os.File, loc format.PageLocation)
	}{
		{"a byte of its body", func(t *testing.T, f *os.File, loc format.PageLocation) {
			flipByte(t, f, loc.Offset+int64(loc.CompressedPageSize)-1)
		}},
		{"a byte of its header", func(t *testing.T, f *os.File, loc format.PageLocation) {
			flipByte(t, f, loc.Offset+2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tempStore(t)
			schema, inputs := reusableInputs(t, st, 24)
			changed := false
			withReadBackHook(t, func(f *os.File, size int64, proof *reuseProof) {
				if len(proof.pages) == 0 {
					t.Fatal("no reused page to change")
				}
				tc.change(t, f, provenPageLocation(t, f, size, proof.pages[len(proof.pages)/2]))
				changed = true
			})
			res, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{})
			if !changed || !errors.Is(err, ErrVerify) {
				t.Fatalf("changed %v: got %v, %d outputs; want an error wrapping ErrVerify", changed, err, len(res.Outputs))
			}
			if keys := listKeys(t, st); len(keys) != len(inputs) {
				t.Fatalf("%d files in the store after the failed rewrite, want the %d inputs", len(keys), len(inputs))
			}
		})
	}
}

func flipByte(t *testing.T, f *os.File, off int64) {
	t.Helper()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// A proof whose page is not where the file has it fails as ErrVerify:
// no page starting at its row, or one of another length.
func TestChunkProofRefusesMisplacedPages(t *testing.T) {
	locs := []format.PageLocation{{Offset: 4, CompressedPageSize: 100, FirstRowIndex: 0}, {Offset: 104, CompressedPageSize: 100, FirstRowIndex: 50}}
	for _, pg := range []reusedPage{{row: 10, n: 40, size: 90}, {row: 0, n: 40, size: 90}} {
		var buf []byte
		cp := &chunkProof{pages: []reusedPage{pg}, locs: locs, buf: &buf}
		if _, _, err := cp.skip(); !errors.Is(err, ErrVerify) {
			t.Errorf("page at row %d of %d rows: got %v, want ErrVerify", pg.row, pg.n, err)
		}
	}
}

// With blocks of shares small enough that most go to the temporary file
// (and some rows, read before the codec learned, have none), the proof
// still computes the checksum of a full read, and the file is gone after.
func TestReadBackProvesWithSharesOnDisk(t *testing.T) {
	privateTempDir(t)
	defer func(n int64) { shareBlock = n }(shareBlock)
	shareBlock = 1000
	st := tempStore(t)
	schema, inputs := reusableInputs(t, st, 24)
	var proven, spilled int
	withReadBackHook(t, func(f *os.File, size int64, proof *reuseProof) {
		proven += len(proof.pages)
		spilled += int(proof.spilled)
		proofAgrees(t, f, size, proof, schema)
	})
	if _, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if proven == 0 || spilled < 48000 {
		t.Fatalf("%d pages proven, shares of %d rows on disk; want some of each", proven, spilled)
	}
	noTempFiles(t)
}
