package compact

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// startRowGroup makes room for an input row group of about compressed
// bytes: it flushes the output row group when it is full and closes the
// output file when it would pass the target size.
func (rw *rewriter) startRowGroup(compressed int64) error {
	if rw.w != nil {
		// Bytes written (flushed row groups) plus the buffered row group's
		// input bytes at the output/input ratio seen so far.
		est := rw.cw.n + int64(float64(rw.inBytes-rw.flushedInBytes+compressed)*rw.ratio)
		full := est > rw.o.TargetFileSize
		if rw.inPerOutput > 0 {
			// The last output takes the rest, so that there is never
			// one more, small, file than planned.
			full = rw.inBytes >= rw.inPerOutput && len(rw.res.Outputs)+1 < rw.o.Outputs
		}
		if rw.fileRows > 0 && full {
			if err := rw.closeFile(); err != nil {
				return err
			}
		} else if rw.rgBytes >= rw.o.RowGroupBytes {
			if err := rw.flushRowGroup(); err != nil {
				return err
			}
		}
	}
	if rw.w == nil {
		return rw.openFile()
	}
	return nil
}

func (rw *rewriter) flushRowGroup() error {
	if err := pqio.NoPanic(rw.w.Flush); err != nil {
		return fmt.Errorf("write %s: %w", rw.partition, err)
	}
	rw.rgBytes = 0
	rw.flushedInBytes = rw.inBytes
	if rw.inBytes > 0 {
		// Learn how input bytes translate to output bytes.
		rw.ratio = float64(rw.cw.n) / float64(rw.inBytes)
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// openFile starts an output file in a local temporary file.
func (rw *rewriter) openFile() error {
	tmp, err := os.CreateTemp("", "sluice-compact-*.parquet")
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", rw.partition, err)
	}
	rw.tmp = tmp
	rw.buf = bufio.NewWriterSize(tmp, 1<<20)
	rw.cw = &countingWriter{w: rw.buf}
	// Version 1 data pages, whose compressed bytes hold the levels and
	// values as the inputs' do, so that a page may be reused whole.
	opts := append(pqio.ParquetWriterOptions(), rw.ps, parquet.DataPageVersion(1), parquet.ColumnPageBuffers(rw.pages))
	if len(rw.sortingColumns) > 0 {
		opts = append(opts, parquet.SortingWriterConfig(parquet.SortingColumns(rw.sortingColumns...)))
	}
	rw.w = parquet.NewGenericWriter[any](rw.cw, opts...)
	rw.rgBytes, rw.inBytes, rw.flushedInBytes, rw.fileRows = 0, 0, 0, 0
	rw.proof.reset()
	if rw.ratio == 0 {
		rw.ratio = 1
	}
	return nil
}

// abortFile discards the output file being written, if any.
func (rw *rewriter) abortFile() {
	if rw.tmp == nil {
		return
	}
	if rw.w != nil {
		// Gives the row group's page buffers back, which removes their
		// temporary files; Close did if it ran.
		_ = pqio.NoPanic(func() error { rw.w.Reset(io.Discard); return nil })
	}
	name := rw.tmp.Name()
	_ = rw.tmp.Close()
	_ = os.Remove(name)
	rw.tmp, rw.w, rw.buf, rw.cw = nil, nil, nil, nil
}

// closeFile finishes the output file, reads it back for the verification,
// and uploads it under a fresh name of the partition.
func (rw *rewriter) closeFile() error {
	if rw.w == nil {
		return nil
	}
	defer rw.abortFile()
	if rw.fileRows == 0 {
		return nil
	}
	if err := pqio.NoPanic(rw.w.Close); err != nil {
		return fmt.Errorf("rewrite %s: write: %w", rw.partition, err)
	}
	if err := rw.buf.Flush(); err != nil {
		return fmt.Errorf("rewrite %s: write: %w", rw.partition, err)
	}
	size, err := pqio.TruncateFooterStats(rw.tmp, rw.cw.n)
	if err != nil {
		return fmt.Errorf("rewrite %s: write: %w", rw.partition, err)
	}
	// The disk writes the file while the read-back below keeps the CPU
	// busy, so that PutFile's sync does not leave it idle.
	cloud.StartWriteback(rw.tmp)
	key := rw.o.newPath(rw.partition)
	if readBackHook != nil {
		readBackHook(rw.tmp, size, rw.proof)
	}
	stats, err := rw.readBack(key, rw.tmp, size)
	if err != nil {
		return err
	}
	if _, err := cloud.PutFile(rw.ctx, rw.out, key, rw.tmp, size, cloud.PutOptions{}); err != nil {
		return fmt.Errorf("rewrite: upload %s: %w", key, err)
	}
	rw.res.Outputs = append(rw.res.Outputs, catalog.DataFile{
		Path:            key,
		Partition:       rw.partition,
		PartitionValues: clonePartValues(rw.partValues),
		Bytes:           size,
		FileStats:       stats,
	})
	rw.res.BytesOut += size
	rw.res.RowsOut += stats.Rows
	return nil
}

func clonePartValues(m map[string]*string) map[string]*string {
	if m == nil {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		if v != nil {
			s := *v
			v = &s
		}
		out[k] = v
	}
	return out
}
