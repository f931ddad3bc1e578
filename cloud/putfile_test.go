package cloud_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
)

// On local disk PutFile links a file on the store's file system into
// place: the object is the file's data, written once, and no temp name is
// left beside it. A file it cannot link (here: its name already removed,
// as across file systems) is copied from its open handle.
func TestLocalPutFileLinksOrCopies(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st := openStore(t, root, cloud.DefaultOptions())
	body := bytes.Repeat([]byte("0123456789"), 100000)

	f := writeTemp(t, t.TempDir(), body)
	defer f.Close()
	if _, err := cloud.PutFile(ctx, st, "date=2024-01-01/part-1.parquet", f, int64(len(body)), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	obj, err := os.Stat(filepath.Join(root, "date=2024-01-01", "part-1.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(src, obj) {
		t.Error("the object is a copy of the file, not the file itself")
	}

	gone := writeTemp(t, t.TempDir(), body[:1234])
	defer gone.Close()
	if err := os.Remove(gone.Name()); err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.PutFile(ctx, st, "date=2024-01-01/part-2.parquet", gone, 1234, cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, st, "date=2024-01-01/part-2.parquet"); !bytes.Equal(got, body[:1234]) {
		t.Fatalf("copied object: %d bytes differing from the file's 1234", len(got))
	}

	entries, err := os.ReadDir(filepath.Join(root, "date=2024-01-01"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "part-1.parquet part-2.parquet" {
		t.Errorf("folder holds %q, want the two objects alone", names)
	}
}

// StartWriteback is a hint: the file keeps its content, stays writable,
// and PutFile stores it whole; on a closed file it does nothing.
func TestStartWritebackKeepsTheFile(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir(), cloud.DefaultOptions())
	body := bytes.Repeat([]byte("abcdefghij"), 50000)

	f := writeTemp(t, t.TempDir(), body[:len(body)/2])
	defer f.Close()
	cloud.StartWriteback(f)
	if _, err := f.Write(body[len(body)/2:]); err != nil {
		t.Fatalf("write after StartWriteback: %v", err)
	}
	cloud.StartWriteback(f)
	if _, err := cloud.PutFile(ctx, st, "date=2024-01-01/part-1.parquet", f, int64(len(body)), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, st, "date=2024-01-01/part-1.parquet"); !bytes.Equal(got, body) {
		t.Fatalf("stored %d bytes differing from the file's %d", len(got), len(body))
	}

	closed := writeTemp(t, t.TempDir(), body)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	cloud.StartWriteback(closed) // must not panic
	data, err := os.ReadFile(closed.Name())
	if err != nil || !bytes.Equal(data, body) {
		t.Fatalf("closed file after StartWriteback: %d bytes, %v", len(data), err)
	}
}
