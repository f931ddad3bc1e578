package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/sluice-data/sluice/ingest"
)

// zstdFrameWithWindow is one zstd frame whose header asks for a window of
// 2^windowLog bytes, holding content as one raw block: valid zstd, as
// "zstd --long=windowLog" writes, whatever the decoder's memory.
func zstdFrameWithWindow(windowLog int, content []byte) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, byte(windowLog-10) << 3}
	h := len(content)<<3 | 1 // last block, raw, its size
	b = append(b, byte(h), byte(h>>8), byte(h>>16))
	return append(b, content...)
}

// A zstd frame may ask for a window of up to 512 MiB by default, held
// outside the rows the memory budget counts: the window is bounded by the
// budget, and a file that asks for more fails, named, with the reason.
func TestZstdFileAskingForAHugeWindowIsRefusedNamed(t *testing.T) {
	frame := zstdFrameWithWindow(28, events(0, 3, "2024-01-31")) // 256 MiB
	// The file is valid: a decoder with the default bound reads it.
	zr, err := zstd.NewReader(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || !bytes.Equal(b, events(0, 3, "2024-01-31")) {
		t.Fatalf("the frame does not decode: %v", err)
	}
	zr.Close()

	land := t.TempDir()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	put(t, land, "long-window.jsonl.zst", frame)
	put(t, land, "fine.jsonl.zst", zst(t, events(3, 2, "2024-01-31")))
	res, err := ingest.Run(context.Background(), tb, land, ingest.Options{MemoryBudget: 64 << 20})
	if !errors.Is(err, ingest.ErrFilesFailed) || res.FilesFailed != 1 || res.FilesIn != 1 || res.RowsWritten != 2 {
		t.Fatalf("files in %d, failed %d, rows %d, err %v; want the long-window file failed, the other taken", res.FilesIn, res.FilesFailed, res.RowsWritten, err)
	}
	for _, want := range []string{"long-window.jsonl.zst", "window", "8 MiB", "--memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// A budget that holds the window takes the file.
	res, err = ingest.Run(context.Background(), tb, land, ingest.Options{MemoryBudget: 2 << 30})
	if err != nil || res.FilesIn != 1 || res.RowsWritten != 3 {
		t.Fatalf("with --memory 2GiB: files in %d, rows %d, err %v; want the file taken", res.FilesIn, res.RowsWritten, err)
	}
}
