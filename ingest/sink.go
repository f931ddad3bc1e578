package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// errRestart: a landing file failed after some of its rows had already
// gone into Parquet writers (its rows outgrew the memory budget), and rows
// in a Parquet file cannot be taken back. The run starts over without that
// file. It is rare: only a file larger than the budget that then fails.
var errRestart = errors.New("restart without the failed file")

// sink is the micro-batch buffer of one table: rows are held per
// partition (day of the event time) in memory while a landing file is
// read, handed to that partition's streaming Parquet writer when the file
// ends (or when the memory budget is reached), and a partition's file is
// finished when it nears the target size. A failed landing file's rows are
// dropped from the buffers, so they never reach a file.
type sink struct {
	t      *catalog.Table
	schema catalog.Schema
	spec   catalog.PartitionSpec
	router *catalog.Partitioner
	budget int64
	target int64

	parts    map[string]*partition
	buffered int64 // estimated bytes of rows held in memory
	spilled  bool  // rows of the current landing file reached a writer
	files    []catalog.DataFile
	// inBytes and outBytes relate input record bytes to Parquet bytes over
	// the finished files, to predict when a file reaches the target.
	inBytes, outBytes int64
}

type partition struct {
	vals map[string]*string
	rows [][]any
	in   int64 // input bytes of rows
	w    *catalog.ParquetWriter
	wIn  int64 // input bytes of rows written to w
}

func newSink(t *catalog.Table, m *catalog.Manifest, budget, target int64) *sink {
	return &sink{t: t, schema: m.Schema, spec: m.Spec, router: catalog.NewPartitioner(m.Schema, m.Spec),
		budget: budget, target: target, parts: map[string]*partition{}}
}

// add buffers one valid row; rawBytes is its input size.
func (s *sink) add(ctx context.Context, row []any, rawBytes int) error {
	p, vals, err := s.router.Of(row)
	if err != nil {
		return err
	}
	pt := s.parts[p]
	if pt == nil {
		pt = &partition{vals: vals}
		s.parts[p] = pt
	}
	pt.rows = append(pt.rows, row)
	pt.in += int64(rawBytes)
	s.buffered += rowBytes(row)
	if s.buffered > s.budget {
		s.spilled = true
		return s.write(ctx)
	}
	return nil
}

// rowBytes estimates the memory a row holds.
func rowBytes(row []any) int64 {
	n := int64(24 + 16*len(row))
	for _, v := range row {
		switch x := v.(type) {
		case string:
			n += int64(len(x)) + 16
		case []byte:
			n += int64(len(x)) + 24
		case time.Time:
			n += 24
		case nil:
		default:
			n += 8
		}
	}
	return n
}

// write hands every buffered row to its partition's writer, and finishes
// the files that reached the target size.
func (s *sink) write(ctx context.Context) error {
	for _, p := range slices.Sorted(maps.Keys(s.parts)) {
		pt := s.parts[p]
		if len(pt.rows) > 0 {
			if pt.w == nil {
				w, err := catalog.NewParquetWriter(s.schema)
				if err != nil {
					return err
				}
				pt.w = w
			}
			if err := pt.w.Write(ctx, pt.rows); err != nil {
				return fmt.Errorf("write partition %q: %w", p, err)
			}
			pt.wIn += pt.in
			clear(pt.rows)
			pt.rows, pt.in = pt.rows[:0], 0
		}
		if pt.w != nil && float64(pt.wIn)*s.ratio() >= float64(s.target) {
			if err := s.finish(ctx, p, pt); err != nil {
				return err
			}
		}
	}
	s.buffered = 0
	return s.flushWriters()
}

// flushWriters keeps the row groups that open Parquet writers hold within
// half the budget: one writer a partition, each building a row group in
// memory, would otherwise hold a whole day's rows per partition and grow
// with the run. The largest row groups are flushed first.
func (s *sink) flushWriters() error {
	var open []*partition
	var held int64
	for _, pt := range s.parts {
		if pt.w != nil {
			open = append(open, pt)
			held += pt.w.Buffered()
		}
	}
	if held <= s.budget/2 {
		return nil
	}
	slices.SortFunc(open, func(a, b *partition) int { return cmp.Compare(b.w.Buffered(), a.w.Buffered()) })
	for _, pt := range open {
		if held <= s.budget/4 {
			break
		}
		held -= pt.w.Buffered()
		if err := pt.w.FlushRowGroup(); err != nil {
			return err
		}
	}
	return nil
}

// ratio predicts Parquet bytes per input byte: what the finished files
// showed, else a guess typical of JSON events under zstd.
func (s *sink) ratio() float64 {
	if s.inBytes == 0 || s.outBytes == 0 {
		return 0.2
	}
	return float64(s.outBytes) / float64(s.inBytes)
}

func (s *sink) finish(ctx context.Context, p string, pt *partition) error {
	key := catalog.NewDataFilePath(p)
	n, stats, err := pt.w.Close(ctx, s.t.Store(), key)
	pt.w = nil
	if err != nil {
		return err
	}
	s.files = append(s.files, catalog.DataFile{Path: key, Partition: p, PartitionValues: pt.vals, Bytes: n, FileStats: stats})
	s.inBytes += pt.wIn
	s.outBytes += n
	pt.wIn = 0
	return nil
}

// fileDone: the current landing file was read whole; its rows may go to
// the writers.
func (s *sink) fileDone(ctx context.Context) error {
	s.spilled = false
	return s.write(ctx)
}

// fileFailed drops the current landing file's buffered rows. It returns
// errRestart if some of them already reached a writer.
func (s *sink) fileFailed() error {
	for _, pt := range s.parts {
		clear(pt.rows)
		pt.rows, pt.in = pt.rows[:0], 0
	}
	s.buffered = 0
	if s.spilled {
		return errRestart
	}
	return nil
}

// close writes what is buffered and finishes every open file.
func (s *sink) close(ctx context.Context) ([]catalog.DataFile, error) {
	if err := s.write(ctx); err != nil {
		return nil, err
	}
	for _, p := range slices.Sorted(maps.Keys(s.parts)) {
		if pt := s.parts[p]; pt.w != nil {
			if err := s.finish(ctx, p, pt); err != nil {
				return nil, err
			}
		}
	}
	return s.files, nil
}

// abort discards open writers and deletes the files already uploaded:
// they were never committed, and their names are unique to this run.
func (s *sink) abort(ctx context.Context) {
	for _, pt := range s.parts {
		if pt.w != nil {
			pt.w.Abort()
			pt.w = nil
		}
	}
	for _, f := range s.files {
		_ = s.t.Store().Delete(ctx, f.Path)
	}
	s.files = nil
}
