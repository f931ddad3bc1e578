package compact

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A page file given back is handed out again, empty, its name gone from
// the temporary folder from the start; closing the pool closes it.
func TestPageFilesAreReusedEmptyAndNameless(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	p := newPageFiles()
	b := p.GetBuffer()
	if _, err := b.Write([]byte("a page of a row group")); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(p.named) == 0 && len(left) != 0 {
		t.Fatalf("a page file's name is left in the temporary folder: %v", left)
	}
	p.PutBuffer(b)
	again := p.GetBuffer()
	if again != b {
		t.Fatalf("a second buffer was made while the first was free")
	}
	if _, err := again.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(again); err != nil || len(got) != 0 {
		t.Fatalf("a reused page file holds %q (%v), want nothing", got, err)
	}
	other := p.GetBuffer()
	if other == again {
		t.Fatal("one page file handed out twice")
	}
	p.PutBuffer(again)
	p.close()
	if _, err := again.Write([]byte("x")); err == nil {
		t.Fatal("a page file kept for reuse is still open after the pool closed")
	}
	p.PutBuffer(other) // given back after close: closed at once
	if _, err := other.Write([]byte("x")); err == nil {
		t.Fatal("a page file given back after the pool closed is still open")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Fatalf("page files left in the temporary folder: %v", left)
	}
	if f, ok := other.(*os.File); !ok || f == nil {
		t.Fatalf("a page buffer is a %T, want a file", other)
	}
}
