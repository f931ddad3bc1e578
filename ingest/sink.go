package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
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
//
// Decoding and encoding overlap: the caller's goroutine decodes and
// buffers, and one writer goroutine per sink (started by the first
// hand-off) encodes, compresses and uploads the batches handed to it, in
// order. One batch may wait in the queue while the writer works on
// another, so that neither side waits on the other's slowest batch; the
// rows in memory stay within the budget: half for the batch being filled
// and the one queued together, half for the one being written.
type sink struct {
	router *catalog.Partitioner
	budget int64 // for rows buffered here, half the sink's budget

	// handoff, when set, hands rows to the writer once this many bytes
	// are buffered, rather than at the end of a landing file or at the
	// budget: for a source whose rows are never taken back (Kafka), so
	// that memory holds a small batch rather than the whole budget.
	handoff int64

	parts    map[string]*buffered
	buffered int64 // estimated bytes of rows held in parts
	// hint is each partition's row count in the last batch, the capacity
	// its next buffer starts with rather than growing from nothing.
	hint    map[string]int
	spilled bool // rows of the current landing file reached a writer
	// arenas are those the buffered rows were cut from, each held once
	// (see arena); last is the one held last.
	arenas []*arena
	last   *arena

	w       *sinkWriter
	started bool // w's goroutine runs (or ran)
	stopped bool // w.batches is closed
}

// buffered is one partition's rows not yet handed to the writer.
type buffered struct {
	vals map[string]*string
	rows [][]any
	in   int64 // input bytes of rows
}

// batch is what one hand-off gives the writer: rows by partition. final
// asks it to finish every open file after writing them.
type batch struct {
	parts  map[string]*buffered
	arenas []*arena // released once the rows are written
	bytes  int64    // estimated, of its rows
	final  bool
}

// sinkWriter owns the Parquet writers of one sink; after start, only its
// goroutine touches it until done is closed.
type sinkWriter struct {
	t      *catalog.Table
	schema catalog.Schema
	codecs *pqio.Codecs // shared by the run's files
	budget int64        // for row groups held by open writers, half the sink's
	target int64

	parts map[string]*partition
	files []catalog.DataFile
	// inBytes and outBytes relate input record bytes to Parquet bytes over
	// the finished files, to predict when a file reaches the target.
	inBytes, outBytes int64

	batches chan batch // holds one batch besides the one being written
	// queued counts the estimated bytes of the batch waiting in the
	// queue: the sink adds them when it hands a batch over, the writer
	// takes them off when it picks the batch up.
	queued atomic.Int64
	done   chan struct{}
	err    error // read after done is closed
}

type partition struct {
	vals map[string]*string
	w    *pqio.ParquetWriter
	wIn  int64 // input bytes of rows written to w
}

// newSink returns a sink of table t (whose manifest is m). Its files
// compress with codecs, shared by the run's sinks of the same table.
func newSink(t *catalog.Table, m *catalog.Manifest, budget, target int64, codecs *pqio.Codecs) *sink {
	return &sink{router: catalog.NewPartitioner(m.Schema, m.Spec), budget: budget / 2, parts: map[string]*buffered{}, hint: map[string]int{},
		w: &sinkWriter{t: t, schema: m.Schema, codecs: codecs, budget: budget / 2, target: target, parts: map[string]*partition{},
			batches: make(chan batch, 1), done: make(chan struct{})}}
}

// add buffers one valid row; rawBytes is its input size. a is the arena
// the row was cut from, nil if none: the sink holds it until the row is
// written or dropped.
func (s *sink) add(ctx context.Context, row []any, rawBytes int, a *arena) error {
	p, vals, err := s.router.Of(row)
	if err != nil {
		return err
	}
	if a != nil && a != s.last {
		a.hold()
		s.arenas, s.last = append(s.arenas, a), a
	}
	b := s.parts[p]
	if b == nil {
		b = &buffered{vals: vals, rows: make([][]any, 0, s.hint[p])}
		s.parts[p] = b
	}
	b.rows = append(b.rows, row)
	b.in += int64(rawBytes)
	s.buffered += rowBytes(row)
	if s.buffered+s.w.queued.Load() > s.budget {
		s.spilled = true
		return s.write(ctx)
	}
	if s.handoff > 0 && s.buffered > s.handoff {
		return s.write(ctx)
	}
	return nil
}

// streamingHandoff is the batch a streaming source's sink hands to its
// writer: large enough that a batch spreads over every open partition,
// small beside a budget.
const streamingHandoff = 16 << 20

// streaming makes the sink hand rows to its writer in small batches, for
// a source that never drops rows it has buffered (see handoff).
func (s *sink) streaming() *sink {
	s.handoff = min(streamingHandoff, s.budget)
	return s
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
		case map[string]any, []any, []pqio.MapEntry:
			n += nestedBytes(x)
		default:
			n += 8
		}
	}
	return n
}

// write hands every buffered row to the writer goroutine. It blocks while
// the writer is still busy with the previous batch, and returns the
// writer's error if it failed.
func (s *sink) write(ctx context.Context) error {
	if s.buffered == 0 {
		return nil
	}
	return s.send(ctx, s.take(false))
}

// take returns what is buffered as a batch, and starts buffering afresh.
func (s *sink) take(final bool) batch {
	b := batch{parts: s.parts, arenas: s.arenas, bytes: s.buffered, final: final}
	s.arenas, s.last = nil, nil
	for p, bp := range s.parts {
		s.hint[p] = len(bp.rows)
	}
	s.parts, s.buffered = map[string]*buffered{}, 0
	return b
}

func (s *sink) send(ctx context.Context, b batch) error {
	if s.stopped {
		return errors.New("ingest: sink used after close")
	}
	if !s.started {
		s.started = true
		go s.w.run(ctx)
	}
	s.w.queued.Add(b.bytes)
	select {
	case s.w.batches <- b:
		return nil
	case <-s.w.done:
		return s.w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop closes the writer's queue and waits for it; its error, if any.
func (s *sink) stop() error {
	if !s.started {
		return nil
	}
	if !s.stopped {
		s.stopped = true
		close(s.w.batches)
	}
	<-s.w.done
	return s.w.err
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
	clear(s.parts)
	s.buffered = 0
	release(s.arenas)
	s.arenas, s.last = nil, nil
	if s.spilled {
		return errRestart
	}
	return nil
}

// close writes what is buffered, finishes every open file, and returns
// the files written.
func (s *sink) close(ctx context.Context) ([]catalog.DataFile, error) {
	if err := s.send(ctx, s.take(true)); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.stop(); err != nil {
		return nil, err
	}
	return s.w.files, nil
}

// abort stops the writer, discards open writers and deletes the files
// already uploaded: they were never committed (see keep), and their names
// are unique to this run.
func (s *sink) abort(ctx context.Context) {
	s.stop()
	w := s.w
	for _, pt := range w.parts {
		if pt.w != nil {
			pt.w.Abort()
			pt.w = nil
		}
	}
	for _, f := range w.files {
		_ = w.t.Store().Delete(ctx, f.Path)
	}
	w.files = nil
}

// keep hands the sink's finished files over to a commit that references
// them, so that abort leaves them: the commit landed, or may have (an
// unknown outcome), and deleting a file a live version names loses its
// rows. Vacuum removes them if they turn out to be orphans.
func (s *sink) keep() { s.w.files = nil }

// release drops the sink's hold on each arena.
func release(arenas []*arena) {
	for _, a := range arenas {
		a.release()
	}
}

// run writes the batches in order until the queue closes, a final batch
// is done, one fails, or ctx is cancelled.
func (w *sinkWriter) run(ctx context.Context) {
	defer close(w.done)
	for {
		var b batch
		var ok bool
		select {
		case b, ok = <-w.batches:
		case <-ctx.Done():
			w.err = ctx.Err()
			return
		}
		if !ok {
			return
		}
		w.queued.Add(-b.bytes)
		w.err = w.write(ctx, b)
		// The writers copied what they keep of the rows: nothing reads
		// them after write, whatever it returned.
		release(b.arenas)
		if w.err != nil {
			return
		}
		if b.final {
			w.err = w.finishAll(ctx)
			return
		}
	}
}

// write hands a batch's rows to their partitions' writers, and finishes
// the files that reached the target size.
func (w *sinkWriter) write(ctx context.Context, b batch) error {
	for _, p := range slices.Sorted(maps.Keys(b.parts)) {
		bp := b.parts[p]
		pt := w.parts[p]
		if pt == nil {
			pt = &partition{vals: bp.vals}
			w.parts[p] = pt
		}
		if len(bp.rows) > 0 {
			if pt.w == nil {
				pw, err := pqio.NewParquetWriter(w.schema, w.codecs)
				if err != nil {
					return err
				}
				pt.w = pw
			}
			if err := pt.w.Write(ctx, bp.rows); err != nil {
				return fmt.Errorf("write partition %q: %w", p, err)
			}
			pt.wIn += bp.in
		}
		if pt.w != nil && float64(pt.wIn)*w.ratio() >= float64(w.target) {
			if err := w.finish(ctx, p, pt); err != nil {
				return err
			}
		}
	}
	return w.flushWriters()
}

// flushWriters keeps the row groups that open Parquet writers hold within
// the writer's budget: one writer a partition, each building a row group in
// memory, would otherwise hold a whole day's rows per partition and grow
// with the run. The largest row groups are flushed first.
func (w *sinkWriter) flushWriters() error {
	var open []*partition
	var held int64
	for _, pt := range w.parts {
		if pt.w != nil {
			open = append(open, pt)
			held += pt.w.Buffered()
		}
	}
	if held <= w.budget {
		return nil
	}
	slices.SortFunc(open, func(a, b *partition) int { return cmp.Compare(b.w.Buffered(), a.w.Buffered()) })
	for _, pt := range open {
		if held <= w.budget/2 {
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
func (w *sinkWriter) ratio() float64 {
	if w.inBytes == 0 || w.outBytes == 0 {
		return 0.2
	}
	return float64(w.outBytes) / float64(w.inBytes)
}

// finish closes a partition's file and records it.
func (w *sinkWriter) finish(ctx context.Context, p string, pt *partition) error {
	f, err := closeFile(ctx, w.t, p, pt)
	if err != nil {
		return err
	}
	w.record(f, pt)
	return nil
}

// finishAll finishes every open file, finishers at a time. At the end of
// a run every partition's file closes at once (a day rarely fills a file
// within one run), and closing compresses the last row group and uploads
// with an fsync: on the writer goroutine alone that was a serial tail of
// about a twentieth of the run. The files that closed are recorded even
// if another failed, so that abort deletes them.
func (w *sinkWriter) finishAll(ctx context.Context) error {
	var open []string
	for _, p := range slices.Sorted(maps.Keys(w.parts)) {
		if w.parts[p].w != nil {
			open = append(open, p)
		}
	}
	files := make([]catalog.DataFile, len(open))
	errs := make([]error, len(open))
	var g errgroup.Group
	g.SetLimit(finishers)
	for i, p := range open {
		g.Go(func() error {
			files[i], errs[i] = closeFile(ctx, w.t, p, w.parts[p])
			return nil
		})
	}
	_ = g.Wait()
	var first error
	for i, p := range open {
		if errs[i] == nil {
			w.record(files[i], w.parts[p])
		} else if first == nil {
			first = errs[i]
		}
	}
	return first
}

// finishers is how many files finishAll closes at once: compressing is
// CPU work, the upload's fsync waits on the disk.
var finishers = max(2, runtime.NumCPU())

// closeFile closes a partition's Parquet writer into a new data file of
// t; the writer is gone either way.
func closeFile(ctx context.Context, t *catalog.Table, p string, pt *partition) (catalog.DataFile, error) {
	key := catalog.NewDataFilePath(p)
	n, stats, err := pt.w.Close(ctx, t.Store(), key)
	pt.w = nil
	if err != nil {
		return catalog.DataFile{}, err
	}
	return catalog.DataFile{Path: key, Partition: p, PartitionValues: pt.vals, Bytes: n, FileStats: stats}, nil
}

// record adds a finished file of pt to the files written.
func (w *sinkWriter) record(f catalog.DataFile, pt *partition) {
	w.files = append(w.files, f)
	w.inBytes += pt.wIn
	w.outBytes += f.Bytes
	pt.wIn = 0
}
