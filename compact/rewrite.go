package compact

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/big"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
	"slices"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// testHookCorrupt, when set by a test, may change values of table column
// col after they were hashed and before they are written: a corruption the
// verification must catch.
var testHookCorrupt func(col int, v *parquet.Value)

// ErrVerify: the rows a rewrite wrote do not match the rows it read (row
// count, null counts per column or the order-independent checksum of every
// row's values). The outputs were deleted.
var ErrVerify = errors.New("rewrite verification failed")

// RewriteOptions tune one Rewrite. The zero value of a field means its
// default (see DefaultRewriteOptions).
type RewriteOptions struct {
	// TargetFileSize is the size of an output file, in compressed bytes,
	// that the rewrite aims at: a file is closed at the first input row
	// group boundary where it would reach it. Zero: 256 MiB.
	TargetFileSize int64
	// RowGroupBytes is the uncompressed size of an output row group, in
	// bytes of the values' plain representation. Zero: 128 MiB.
	RowGroupBytes int64
	// MemoryBudget bounds the bytes this rewrite buffers: input files
	// fetched ahead and the output row group being built. Zero: 256 MiB.
	MemoryBudget int64
	// ReadConcurrency is how many input files are fetched at once; range
	// reads of small files on S3 or Azure are latency-bound. Zero: 8.
	ReadConcurrency int
	// Outputs, when set, is the planner's count of output files: the
	// inputs are cut into that many files of about equal input bytes, at
	// row group boundaries, and TargetFileSize is not used. That keeps the
	// planner's promise (no small leftover file) whatever the output's
	// compression ratio. Zero: cut by TargetFileSize.
	Outputs int
	// Codecs, when set, are shared by every rewrite of one run, so that
	// each column's zstd level is learnt once (catalog.Codecs). Nil: each
	// rewrite learns its own.
	Codecs *catalog.Codecs
}

// Defaults of RewriteOptions.
const (
	DefaultTargetFileSize  = catalog.DefaultTargetFileSize
	DefaultRowGroupBytes   = 128 << 20
	DefaultMemoryBudget    = 256 << 20
	DefaultReadConcurrency = 8
)

// DefaultRewriteOptions returns the options with every default filled in.
func DefaultRewriteOptions() RewriteOptions {
	return RewriteOptions{
		TargetFileSize:  DefaultTargetFileSize,
		RowGroupBytes:   DefaultRowGroupBytes,
		MemoryBudget:    DefaultMemoryBudget,
		ReadConcurrency: DefaultReadConcurrency,
	}
}

// Validate refuses negative sizes and a budget too small for one output
// row group's worth of buffering. Zero fields are valid (defaults).
func (o RewriteOptions) Validate() error {
	switch {
	case o.TargetFileSize < 0:
		return fmt.Errorf("rewrite options: target file size %d is negative", o.TargetFileSize)
	case o.RowGroupBytes < 0:
		return fmt.Errorf("rewrite options: row group bytes %d is negative", o.RowGroupBytes)
	case o.MemoryBudget < 0:
		return fmt.Errorf("rewrite options: memory budget %d is negative", o.MemoryBudget)
	case o.ReadConcurrency < 0:
		return fmt.Errorf("rewrite options: read concurrency %d is negative", o.ReadConcurrency)
	case o.Outputs < 0:
		return fmt.Errorf("rewrite options: outputs %d is negative", o.Outputs)
	}
	d := o.withDefaults()
	if d.MemoryBudget < 4<<20 {
		return fmt.Errorf("rewrite options: memory budget %d bytes is below the 4 MiB minimum", d.MemoryBudget)
	}
	return nil
}

func (o RewriteOptions) withDefaults() RewriteOptions {
	d := DefaultRewriteOptions()
	if o.TargetFileSize == 0 {
		o.TargetFileSize = d.TargetFileSize
	}
	if o.RowGroupBytes == 0 {
		o.RowGroupBytes = d.RowGroupBytes
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = d.MemoryBudget
	}
	if o.ReadConcurrency == 0 {
		o.ReadConcurrency = d.ReadConcurrency
	}
	return o
}

// Opener opens one input data file for ranged reads and returns its size.
// The orchestrator passes one built on the table's data file store and
// catalog.NewReaderAt.
type Opener func(ctx context.Context, f catalog.DataFile) (io.ReaderAt, int64, error)

// RewriteResult is what a Rewrite wrote.
type RewriteResult struct {
	// Outputs are the files written: durable in the store, not committed.
	// Each has Path (catalog.NewDataFilePath of the partition), Partition,
	// PartitionValues (copied from the inputs), Bytes and FileStats.
	Outputs []catalog.DataFile
	// RowsIn and RowsOut are the rows read and written (equal: verified);
	// BytesIn and BytesOut the bytes of the input and output files.
	RowsIn, RowsOut, BytesIn, BytesOut int64
	// PagesReused counts the output pages stored as their input's
	// compressed bytes rather than compressed again (see reusingCodec).
	PagesReused int
}

// Rewrite streams the rows of inputs (data files of one partition of a
// table of schema) into new files near o.TargetFileSize in out: the
// table's columns in its order and types exactly, zstd, dictionaries where
// they pay, statistics, row groups of about o.RowGroupBytes uncompressed.
// Memory is bounded by o.MemoryBudget, not by the partition's size.
//
// Inputs whose schema differs but converts (catalog.CheckCompatible: a
// nullable column added later, int32 → int64, decimal widening, INT96 and
// millisecond timestamps) are converted to the table's types; an
// incompatible input fails with an error wrapping
// catalog.ErrIncompatibleSchema that names the file and the column.
//
// Before it returns, Rewrite reads its outputs back and verifies them
// against the inputs: rows, null counts per column and an order-independent
// checksum of every row's values; a mismatch is an error wrapping
// ErrVerify. On any error the outputs written so far are deleted.
func Rewrite(ctx context.Context, open Opener, out cloud.Store, schema catalog.Schema, partition string, inputs []catalog.DataFile, o RewriteOptions) (res RewriteResult, err error) {
	if err := o.Validate(); err != nil {
		return RewriteResult{}, err
	}
	o = o.withDefaults()
	rw := &rewriter{
		ctx: ctx, out: out, schema: schema, partition: partition, o: o,
		nulls:  make([]int64, len(schema.Columns)),
		codecs: map[string]*reusingCodec{},
		proof:  newReuseProof(len(schema.Columns)),
		pages:  newPageBuffers(),
	}
	for _, c := range schema.Columns {
		rw.codecs[c.Name] = &reusingCodec{Codec: o.Codecs.For(c.Name)}
	}
	ps, err := rw.parquetSchema(nil)
	if err != nil {
		return RewriteResult{}, err
	}
	rw.ps, rw.hashers, rw.leaves = ps, tableHashers(ps, schema), ps.Fields()
	if len(inputs) > 0 {
		rw.partValues = inputs[0].PartitionValues
	}
	if o.Outputs > 0 {
		var total int64
		for _, f := range inputs {
			total += f.Bytes
		}
		rw.inPerOutput = (total + int64(o.Outputs) - 1) / int64(o.Outputs)
	}
	defer func() {
		rw.abortFile()
		rw.proof.close()
		if err != nil {
			// Best effort, with a context of its own: ctx may be why we fail.
			dctx := context.WithoutCancel(ctx)
			for _, f := range rw.res.Outputs {
				_ = out.Delete(dctx, f.Path)
			}
			res = RewriteResult{}
		}
	}()
	if err := rw.run(inputs, open); err != nil {
		return RewriteResult{}, err
	}
	if err := rw.closeFile(); err != nil {
		return RewriteResult{}, err
	}
	if err := rw.verify(); err != nil {
		return RewriteResult{}, err
	}
	for _, c := range rw.codecs {
		rw.res.PagesReused += c.reused
	}
	return rw.res, nil
}

// parquetSchema is the output files' schema, string columns without a
// dictionary (DELTA_LENGTH_BYTE_ARRAY) where noDict says so, every column
// compressed by its reusingCodec.
func (rw *rewriter) parquetSchema(noDict []bool) (*parquet.Schema, error) {
	return catalog.ParquetSchemaNoDict(rw.schema, noDict, func(name string) compress.Codec { return rw.codecs[name] })
}

// rewriter is the state of one Rewrite.
type rewriter struct {
	ctx        context.Context
	out        cloud.Store
	schema     catalog.Schema
	ps         *parquet.Schema
	leaves     []parquet.Field
	partition  string
	partValues map[string]*string
	o          RewriteOptions
	hashers    []valueHasher

	// inputs side of the verification
	in    rowHashes
	nulls []int64 // NULLs read per table column

	// the output file being written
	tmp            *os.File
	buf            *bufio.Writer
	cw             *countingWriter
	w              *parquet.GenericWriter[any]
	rgBytes        int64 // uncompressed bytes buffered in the current row group
	inBytes        int64 // compressed input bytes that went into the current file
	flushedInBytes int64 // of which in row groups already flushed
	ratio          float64
	fileRows       int64
	inPerOutput    int64 // with Outputs: input bytes per output file

	// outputs side of the verification
	outSum   uint64
	outNulls []int64

	ph              pageHashes // hashes of the inputs' typed page values
	res             RewriteResult
	encodingsChosen bool
	vals            []parquet.Value

	// codecs are the output columns' codecs by name.
	codecs map[string]*reusingCodec
	// proof holds what the read-back needs to prove the output file's
	// reused pages by their bytes (see reuseProof).
	proof *reuseProof
	pages parquet.BufferPool // the writer's page buffers (newPageBuffers)
}

// prefetched is one input file, fetched ahead of its decoding.
type prefetched struct {
	f    catalog.DataFile
	r    io.ReaderAt
	data []byte // the whole file, when fetched into memory
	size int64
	held int64 // memory semaphore weight to release when done
	err  error
	done chan struct{}
}

// maxPrefetchFile is the largest file fetched whole into memory ahead of
// decoding; larger ones are read in place with ranged reads.
const maxPrefetchFile = 64 << 20

// run fetches the inputs ReadConcurrency at a time, in order, within the
// memory budget, and decodes them one after the other into the output.
func (rw *rewriter) run(inputs []catalog.DataFile, open Opener) error {
	ctx, cancel := context.WithCancel(rw.ctx)
	defer cancel()
	// The writer holds about a compressed row group; the rest of the budget
	// is for files fetched ahead.
	budget := max(rw.o.MemoryBudget-rw.o.RowGroupBytes/2, rw.o.MemoryBudget/4)
	sem := semaphore.NewWeighted(budget)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(rw.o.ReadConcurrency)
	queue := make(chan *prefetched, rw.o.ReadConcurrency)

	// The dispatcher takes memory in file order, so the consumer (which
	// releases it in the same order) can never wait on a later file.
	var dispatchErr error
	go func() {
		defer close(queue)
		for _, f := range inputs {
			p := &prefetched{f: f, done: make(chan struct{})}
			if f.Bytes <= maxPrefetchFile {
				p.held = min(max(f.Bytes, 1), budget)
				if err := sem.Acquire(gctx, p.held); err != nil {
					dispatchErr = err
					return
				}
			}
			select {
			case queue <- p:
			case <-gctx.Done():
				sem.Release(p.held)
				dispatchErr = gctx.Err()
				return
			}
			g.Go(func() error {
				defer close(p.done)
				r, size, err := open(gctx, f)
				if err != nil {
					p.err = fmt.Errorf("open %s: %w", f.Path, err)
					return nil
				}
				p.r, p.size = r, size
				if p.held > 0 && size <= maxPrefetchFile {
					b := make([]byte, size)
					if _, err := r.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF)) {
						p.err = fmt.Errorf("read %s: %w", f.Path, err)
						return nil
					}
					p.r, p.data = bytes.NewReader(b), b
				}
				return nil
			})
		}
	}()

	var err error
	for p := range queue {
		if err == nil {
			select {
			case <-p.done:
				err = p.err
				if err == nil {
					err = rw.copyFile(p)
				}
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		if err != nil {
			cancel()
		}
		// Once its fetch has ended (cut short by the cancel after a
		// failure), p is this goroutine's alone.
		<-p.done
		p.r, p.data = nil, nil
		sem.Release(p.held)
	}
	_ = g.Wait()
	if err == nil && dispatchErr != nil {
		err = dispatchErr
	}
	return err
}

// colPlan is how one table column is filled from one input file.
type colPlan struct {
	leaf     int                                          // input leaf index; -1: the file lacks the column (NULLs)
	conv     func(v parquet.Value) (parquet.Value, error) // nil: the value is already in the table's type
	relevel  bool                                         // give non-null values definition level 1 (see copyFile)
	def      int                                          // the table column's definition level of a non-null value
	nullable bool
	// pageHash: the values are hashed on the pages' typed values
	// (pageHashes), whose definition level of a non-null value is maxDef.
	pageHash bool
	maxDef   byte
	// reuse: the column's input pages may be stored as read (see
	// reusingCodec): the values go unconverted, with their levels as
	// read, to a PLAIN output column.
	reuse bool
}

// copyFile decodes one input file into the output, a row group at a time.
func (rw *rewriter) copyFile(p *prefetched) error {
	key := p.f.Path
	f, err := catalog.OpenParquetFile(key, p.r, p.size)
	if err != nil {
		return err
	}
	fileSchema, cols, _, err := catalog.DescribeParquetFile(key, f)
	if err != nil {
		return err
	}
	if err := catalog.CheckCompatible(rw.schema, fileSchema, key); err != nil {
		return err
	}
	leafCols := map[int]*parquet.Column{}
	leafColumns(f.Root(), leafCols)
	plans := make([]colPlan, len(rw.schema.Columns))
	for j, tc := range rw.schema.Columns {
		pl := colPlan{leaf: -1, nullable: tc.Nullable}
		if tc.Nullable {
			pl.def = 1
		}
		for _, c := range cols {
			if c.Name != tc.Name {
				continue
			}
			pl.leaf = c.Leaf
			conv, err := converter(c, tc, rw.leaves[j].Type())
			if err != nil {
				return fmt.Errorf("%s: column %q: %w", key, tc.Name, err)
			}
			pl.conv = conv
			// Only an optional table column's buffer reads a value's
			// definition level: a converted value, or one from a required
			// input column, needs 1 there. A required column's buffer
			// reads the payload alone.
			pl.relevel = tc.Nullable && (conv != nil || !c.Nullable)
			if col := leafCols[c.Leaf]; conv == nil && col != nil && rw.ph.covers(col, rw.hashers[j]) {
				pl.pageHash, pl.maxDef = true, byte(col.MaxDefinitionLevel())
			}
			pl.reuse = p.data != nil && pl.pageHash && int(pl.maxDef) == pl.def && !pl.relevel
		}
		plans[j] = pl
	}
	md := f.Metadata()
	if !rw.encodingsChosen && len(md.RowGroups) > 0 {
		// Dictionary encoding where it pays: where the engine that wrote the
		// first input gave up on a dictionary for a string column, so do we.
		rw.encodingsChosen = true
		noDict := make([]bool, len(plans))
		any := false
		for j, pl := range plans {
			if pl.leaf < 0 || pl.leaf >= len(md.RowGroups[0].Columns) || rw.leaves[j].Type().Kind() != parquet.ByteArray {
				continue
			}
			meta := &md.RowGroups[0].Columns[pl.leaf].MetaData
			noDict[j] = meta.DictionaryPageOffset == 0 && !slices.ContainsFunc(meta.Encoding, func(e format.Encoding) bool {
				// PLAIN_DICTIONARY is deprecated for writers, but older
				// writers (Spark 2, parquet-mr 1.x) still mark their
				// dictionary pages with it.
				return e == format.RLEDictionary || e == format.PlainDictionary //lint:ignore SA1019 reading old files
			})
			any = any || noDict[j]
		}
		if any && rw.w == nil {
			ps, err := rw.parquetSchema(noDict)
			if err != nil {
				return err
			}
			rw.ps = ps
		}
	}
	// Pages are reused only into a column the output writes PLAIN.
	for j, f := range rw.ps.Fields() {
		plans[j].reuse = plans[j].reuse && writesPlain(f)
	}
	rw.res.BytesIn += p.size
	for g, rg := range f.RowGroups() {
		if err := rw.ctx.Err(); err != nil {
			return err
		}
		n := rg.NumRows()
		if n == 0 {
			continue
		}
		var compressed int64
		if g < len(md.RowGroups) {
			for _, c := range md.RowGroups[g].Columns {
				compressed += c.MetaData.TotalCompressedSize
			}
		}
		if err := rw.startRowGroup(compressed); err != nil {
			return err
		}
		var metas []format.ColumnChunk
		if g < len(md.RowGroups) {
			metas = md.RowGroups[g].Columns
		}
		if err := catalog.NoPanic(func() error { return rw.copyRowGroup(key, rg, plans, p.data, metas) }); err != nil {
			return err
		}
		rw.inBytes += compressed
	}
	return nil
}

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
	if err := catalog.NoPanic(rw.w.Flush); err != nil {
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

// copyRowGroup decodes every column of one input row group, converts,
// checks and hashes its values and writes them to the output columns.
// data is the whole input file when it was fetched into memory (else
// nil), metas the row group's column chunks as its footer describes them.
func (rw *rewriter) copyRowGroup(key string, rg parquet.RowGroup, plans []colPlan, data []byte, metas []format.ColumnChunk) error {
	n := int(rg.NumRows())
	chunks := rg.ColumnChunks()
	writers := rw.w.ColumnWriters()
	rw.in.begin(n)
	if rw.vals == nil {
		rw.vals = make([]parquet.Value, 4096)
	}
	for j := range plans {
		pl := &plans[j]
		cw := writers[j]
		if pl.leaf < 0 {
			for off := 0; off < n; {
				m := min(n-off, len(rw.vals))
				vals := rw.vals[:m]
				clear(vals) // NULLs: the zero Value, levels 0
				if _, err := cw.WriteRowValues(vals); err != nil {
					return fmt.Errorf("%s: column %q: write: %w", key, rw.schema.Columns[j].Name, err)
				}
				off += m
			}
			rw.in.mixNulls(j, 0, n)
			rw.nulls[j] += int64(n)
			continue
		}
		k := rw.leaves[j].Type().Kind()
		isBytes := k == parquet.ByteArray || k == parquet.FixedLenByteArray
		var raws []rawPage
		if pl.reuse && pl.leaf < len(metas) {
			raws = reusablePages(data, &metas[pl.leaf].MetaData, int(pl.maxDef))
		}
		off, size, err := rw.copyChunk(key, j, pl, chunks[pl.leaf], n, isBytes, cw, raws)
		if err != nil {
			return err
		}
		if off != n {
			return fmt.Errorf("%s: %w: column %q holds %d values for %d rows", key, catalog.ErrCorruptFile, rw.schema.Columns[j].Name, off, n)
		}
		rw.rgBytes += size + int64(n)*fixedWidth(rw.leaves[j].Type())
	}
	rw.in.end()
	rw.fileRows += int64(n)
	if err := rw.proof.settle(rw.fileRows); err != nil {
		return err
	}
	rw.res.RowsIn += int64(n)
	return nil
}

// copyChunk decodes one input column chunk (table column j of a row group
// of n rows), page by page: it converts, checks and hashes the values and
// writes them to cw. raws, when not nil, are the chunk's data pages as
// stored, which may be reused (see reusingCodec). It returns how many
// values it read and, for a byte array column, their bytes.
func (rw *rewriter) copyChunk(key string, j int, pl *colPlan, chunk parquet.ColumnChunk, n int, isBytes bool, cw *parquet.ColumnWriter, raws []rawPage) (off int, size int64, err error) {
	name := rw.schema.Columns[j].Name
	pages := chunk.Pages()
	defer pages.Close()
	rw.ph.dict = nil // a chunk's dictionary is its own
	salt, null := columnSalt(j), nullHash(j)
	codec := rw.codecs[name]
	defer codec.done()
	for i := 0; ; i++ {
		// A page that may be reused is written as a page of its own:
		// what the column holds is flushed before it, and it after. Its
		// bytes, decompressed here to compare them with what the writer
		// makes of them, are primed for parquet-go's read of the page,
		// which then copies them instead of decompressing again.
		reuse := i < len(raws) && codec.accepts(len(raws[i].body), raws[i].uncompressed)
		if reuse {
			if err := cw.Flush(); err != nil {
				return off, size, fmt.Errorf("%s: column %q: write: %w", key, name, err)
			}
			reuse = codec.expectPage(raws[i])
		}
		var p parquet.Page
		var perr error
		if reuse {
			release := catalog.PrimeZstdPage(raws[i].body, codec.want)
			p, perr = pages.ReadPage()
			release()
			if perr == nil && p.NumValues() != int64(raws[i].values) {
				codec.done() // not the page expected: no reuse
				reuse = false
			}
		} else {
			p, perr = pages.ReadPage()
		}
		if perr != nil {
			if errors.Is(perr, io.EOF) {
				return off, size, nil
			}
			return off, size, fmt.Errorf("%s: column %q: %w: %v", key, name, catalog.ErrCorruptFile, perr)
		}
		m, psize, err := rw.copyPage(key, j, pl, p, off, n, isBytes, cw, salt, null)
		parquet.Release(p)
		if err == nil && reuse {
			before := codec.reused
			if err = cw.Flush(); err != nil {
				err = fmt.Errorf("%s: column %q: write: %w", key, name, err)
			} else if codec.reused > before && len(rw.ph.vh) == m {
				// Stored as read, and without NULLs: copyPage hashed
				// its values into rw.ph.vh, one a row.
				rw.proof.add(j, rw.fileRows+int64(off), rw.ph.vh, raws[i].body)
			}
			codec.done()
		}
		if err != nil {
			return off, size, err
		}
		off += m
		size += psize
	}
}

// copyPage is copyChunk's work on one page whose first value is the
// row group's row off.
func (rw *rewriter) copyPage(key string, j int, pl *colPlan, p parquet.Page, off, n int, isBytes bool, cw *parquet.ColumnWriter, salt, null uint64) (int, int64, error) {
	name := rw.schema.Columns[j].Name
	nv := int(p.NumValues())
	if off+nv > n {
		return 0, 0, fmt.Errorf("%s: %w: column %q holds more values than the row group's %d rows", key, catalog.ErrCorruptFile, name, n)
	}
	if pl.pageHash {
		if _, err := rw.ph.mixPage(&rw.in, j, off, n, p, rw.hashers[j], pl.maxDef, salt, null); err != nil {
			return 0, 0, fmt.Errorf("%s: column %q: %w: %v", key, name, catalog.ErrCorruptFile, err)
		}
	}
	if pl.conv == nil {
		if size, ok, err := rw.copyTyped(key, j, pl, p, off, nv, cw); ok || err != nil {
			return nv, size, err
		}
	}
	// Values already in the table's type and levels, with no NULL where
	// the table refuses one, are written as read: only the fixed-width
	// columns' NULLs need counting, which the page's levels do.
	asRead := pl.conv == nil && !pl.relevel && !isBytes && (pl.nullable || p.NumNulls() == 0)
	if asRead {
		rw.nulls[j] += p.NumNulls()
	}
	r := p.Values()
	start := off
	var size int64
	for {
		m, rerr := r.ReadValues(rw.vals)
		if m > 0 {
			if off+m > start+nv {
				return 0, 0, fmt.Errorf("%s: %w: column %q: a page of %d values holds more", key, catalog.ErrCorruptFile, name, nv)
			}
			vals := rw.vals[:m]
			var nulls int64
			check := vals
			if asRead {
				check = nil
			}
			for i := range check {
				v := &vals[i]
				if v.IsNull() {
					nulls++
					if !pl.nullable {
						return 0, 0, fmt.Errorf("%s: column %q: NULL in row %d of a row group but the table column is not nullable: %w", key, name, off+i, catalog.ErrIncompatibleSchema)
					}
					continue // a NULL's levels are 0 in any flat column
				}
				if pl.conv != nil {
					x, err := pl.conv(*v)
					if err != nil {
						return 0, 0, fmt.Errorf("%s: column %q: %w", key, name, err)
					}
					*v = x
				}
				if pl.relevel {
					catalog.SetDefinitionLevel(v, pl.def)
				}
				if isBytes {
					size += int64(len(v.ByteArray()))
				}
			}
			rw.nulls[j] += nulls
			if err := rw.writeValues(key, j, pl, off, vals, cw); err != nil {
				return 0, 0, err
			}
			off += m
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				break
			}
			return 0, 0, fmt.Errorf("%s: column %q: %w: %v", key, name, catalog.ErrCorruptFile, rerr)
		}
	}
	if off-start != nv {
		return 0, 0, fmt.Errorf("%s: %w: column %q: a page of %d values holds %d", key, catalog.ErrCorruptFile, name, nv, off-start)
	}
	return nv, size, nil
}

// copyTyped is copyPage's work on a page of the table column's own type:
// the values are built straight from the page's typed data (or its
// dictionary), not through parquet-go's value reader, which costs more per
// value than the rest of the copy short of compression. A page with NULLs
// takes this path when its column is flat (see pageHashes.covers) and the
// table column nullable; its non-null values are spread over the rows its
// definition levels say. Only an optional column's buffer reads a value's
// definition level, so only a nullable table column's values get one. ok
// is false, with nothing written, for a page it does not take: NULLs where
// the table column refuses them (copyPage reports those), nested levels,
// and FLOAT and INT96, which no table column holds unconverted.
func (rw *rewriter) copyTyped(key string, j int, pl *colPlan, p parquet.Page, off, nv int, cw *parquet.ColumnWriter) (size int64, ok bool, err error) {
	nulls := int(p.NumNulls())
	var defs []byte
	if nulls > 0 {
		defs = p.DefinitionLevels()
		if !pl.nullable || !pl.pageHash || pl.maxDef != 1 || len(defs) != nv {
			return 0, false, nil
		}
	}
	data := p.Data()
	// fill builds the values of rows [start, start+len(vals)) of the page
	// and returns their bytes (zero for a fixed-width kind); have is how
	// many values the page's data holds.
	var fill func(vals []parquet.Value, start int) int64
	var have int
	switch kind := p.Type().Kind(); {
	case p.Dictionary() != nil:
		dict, idx := p.Dictionary(), data.Int32()
		isBytes := kind == parquet.ByteArray || kind == parquet.FixedLenByteArray
		have, fill = len(idx), func(vals []parquet.Value, start int) (n int64) {
			dict.Lookup(idx[start:start+len(vals)], vals)
			for i := 0; isBytes && i < len(vals); i++ {
				n += int64(len(vals[i].ByteArray()))
			}
			return n
		}
	case kind == parquet.Boolean:
		// Packed bits from bit 0 (see hashValues), padding after them.
		bits := data.Boolean()
		have = min(nv-nulls, len(bits)*8)
		fill = func(vals []parquet.Value, start int) int64 {
			for i := range vals {
				vals[i] = parquet.BooleanValue(bit(bits, start+i))
			}
			return 0
		}
	case kind == parquet.Int32:
		xs := data.Int32()
		have, fill = len(xs), func(vals []parquet.Value, start int) int64 {
			for i, x := range xs[start : start+len(vals)] {
				vals[i] = parquet.Int32Value(x)
			}
			return 0
		}
	case kind == parquet.Int64:
		xs := data.Int64()
		have, fill = len(xs), func(vals []parquet.Value, start int) int64 {
			for i, x := range xs[start : start+len(vals)] {
				vals[i] = parquet.Int64Value(x)
			}
			return 0
		}
	case kind == parquet.Double:
		xs := data.Double()
		have, fill = len(xs), func(vals []parquet.Value, start int) int64 {
			for i, x := range xs[start : start+len(vals)] {
				vals[i] = parquet.DoubleValue(x)
			}
			return 0
		}
	case kind == parquet.ByteArray:
		b, offs := data.ByteArray()
		have, fill = max(len(offs)-1, 0), func(vals []parquet.Value, start int) int64 {
			for i := range vals {
				vals[i] = parquet.ByteArrayValue(b[offs[start+i]:offs[start+i+1]])
			}
			return int64(offs[start+len(vals)] - offs[start])
		}
	case kind == parquet.FixedLenByteArray:
		b, w := data.FixedLenByteArray()
		if w > 0 {
			have = len(b) / w
		}
		fill = func(vals []parquet.Value, start int) int64 {
			for i := range vals {
				k := (start + i) * w
				vals[i] = parquet.FixedLenByteArrayValue(b[k : k+w])
			}
			return int64(len(vals) * w)
		}
	default:
		return 0, false, nil
	}
	if have != nv-nulls {
		return 0, true, fmt.Errorf("%s: %w: column %q: a page of %d values and %d NULLs holds %d values", key, catalog.ErrCorruptFile, rw.schema.Columns[j].Name, nv, nulls, have)
	}
	k := 0 // the page's non-null values used so far
	for start := 0; start < nv; start += len(rw.vals) {
		vals := rw.vals[:min(nv-start, len(rw.vals))]
		if defs == nil {
			size += fill(vals, k)
			k += len(vals)
			if pl.nullable {
				for i := range vals {
					catalog.SetDefinitionLevel(&vals[i], pl.def)
				}
			}
		} else {
			n, dense, err := spreadValues(vals, defs[start:start+len(vals)], have-k, func(dense []parquet.Value) int64 { return fill(dense, k) }, pl.def)
			if err != nil {
				return size, true, fmt.Errorf("%s: %w: column %q: %v", key, catalog.ErrCorruptFile, rw.schema.Columns[j].Name, err)
			}
			size += n
			k += dense
		}
		if err := rw.writeValues(key, j, pl, off+start, vals, cw); err != nil {
			return size, true, err
		}
	}
	rw.nulls[j] += int64(nulls)
	return size, true, nil
}

// countNulls counts the NULLs of a flat optional column's page: its
// definition levels other than 1.
func countNulls(defs []byte) (n int) {
	for _, d := range defs {
		if d != 1 {
			n++
		}
	}
	return n
}

// spreadValues builds the values of the rows whose definition levels are
// defs (1 for a value, else NULL). fill builds the dense non-null values,
// of which left remain in the page; they are moved to the rows that defs
// marks, with definition level def, and the other rows become NULLs. It
// returns fill's bytes and how many values it took.
func spreadValues(vals []parquet.Value, defs []byte, left int, fill func(dense []parquet.Value) int64, def int) (size int64, dense int, err error) {
	dense = len(vals) - countNulls(defs)
	if dense > left {
		return 0, 0, fmt.Errorf("a page's levels define more values than it holds")
	}
	size = fill(vals[:dense])
	// From the back, so that no dense value is overwritten before it has
	// moved: src, the last one not yet moved, is below i at every NULL.
	src := dense - 1
	for i := len(vals) - 1; i >= 0; i-- {
		if defs[i] != 1 {
			vals[i] = parquet.Value{}
			continue
		}
		vals[i] = vals[src]
		catalog.SetDefinitionLevel(&vals[i], def)
		src--
	}
	return size, dense, nil
}

// writeValues hashes the values of table column j from the row group's
// row off on, unless their page was hashed whole (colPlan.pageHash), and
// writes them to cw.
func (rw *rewriter) writeValues(key string, j int, pl *colPlan, off int, vals []parquet.Value, cw *parquet.ColumnWriter) error {
	if !pl.pageHash {
		rw.in.mix(j, off, vals, rw.hashers[j])
	}
	if testHookCorrupt != nil {
		for i := range vals {
			testHookCorrupt(j, &vals[i])
		}
	}
	if _, err := cw.WriteRowValues(vals); err != nil {
		return fmt.Errorf("%s: column %q: write: %w", key, rw.schema.Columns[j].Name, err)
	}
	return nil
}

// leafColumns indexes the leaf columns under c by their leaf index.
func leafColumns(c *parquet.Column, out map[int]*parquet.Column) {
	for _, col := range c.Columns() {
		if col.Leaf() {
			out[col.Index()] = col
		} else {
			leafColumns(col, out)
		}
	}
}

// fixedWidth is the plain size of one value of a column type, 4 for the
// length prefix of a byte array.
func fixedWidth(t parquet.Type) int64 {
	switch t.Kind() {
	case parquet.Boolean:
		return 1
	case parquet.Int32, parquet.Float:
		return 4
	case parquet.Int64, parquet.Double:
		return 8
	case parquet.Int96:
		return 12
	case parquet.FixedLenByteArray:
		return 0 // counted from the values
	default:
		return 4
	}
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
	opts := append(catalog.ParquetWriterOptions(), rw.ps, parquet.DataPageVersion(1), parquet.ColumnPageBuffers(rw.pages))
	rw.w = parquet.NewGenericWriter[any](rw.cw, opts...)
	rw.rgBytes, rw.inBytes, rw.flushedInBytes, rw.fileRows = 0, 0, 0, 0
	rw.proof.reset()
	if rw.ratio == 0 {
		rw.ratio = 1
	}
	return nil
}

// newPageBuffers returns the pool that holds an output row group's
// compressed pages until the row group is flushed: parquet-go writes a
// column chunk's pages together, so a writer keeps the whole row group's
// until its last row. On the Go heap that was up to 65 MB a worker at
// 128 MiB row groups, doubled by the collector's headroom: a rewrite's
// peak RSS grew from 289 to 438 MB as its partitions grew from 1 to 2
// million rows. In temporary files (in the page cache, deleted once the
// row group is written, mostly before the kernel writes them out) the
// peak was 171 and 199 MB, for 3% more CPU at 2 million rows a partition.
func newPageBuffers() parquet.BufferPool {
	return parquet.NewFileBufferPool(os.TempDir(), "sluice-pages-*")
}

// abortFile discards the output file being written, if any.
func (rw *rewriter) abortFile() {
	if rw.tmp == nil {
		return
	}
	if rw.w != nil {
		// Gives the row group's page buffers back, which removes their
		// temporary files; Close did if it ran.
		_ = catalog.NoPanic(func() error { rw.w.Reset(io.Discard); return nil })
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
	if err := catalog.NoPanic(rw.w.Close); err != nil {
		return fmt.Errorf("rewrite %s: write: %w", rw.partition, err)
	}
	if err := rw.buf.Flush(); err != nil {
		return fmt.Errorf("rewrite %s: write: %w", rw.partition, err)
	}
	size, err := catalog.TruncateFooterStats(rw.tmp, rw.cw.n)
	if err != nil {
		return fmt.Errorf("rewrite %s: write: %w", rw.partition, err)
	}
	// The disk writes the file while the read-back below keeps the CPU
	// busy, so that PutFile's sync does not leave it idle.
	cloud.StartWriteback(rw.tmp)
	key := catalog.NewDataFilePath(rw.partition)
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

// readBackHook, set by tests only, sees each output file, whole, and its
// proof just before the read-back.
var readBackHook func(f *os.File, size int64, proof *reuseProof)

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

// readBack reads an output file as written and adds its rows to the
// outputs' side of the verification; it returns the file's footer stats.
func (rw *rewriter) readBack(key string, r io.ReaderAt, size int64) (catalog.FileStats, error) {
	open := catalog.OpenParquetFile
	if rw.proof.proves() {
		open = catalog.OpenParquetFileWithIndex // to seek past proven pages
	}
	f, err := open(key, r, size)
	if err != nil {
		return catalog.FileStats{}, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	fileSchema, _, stats, err := catalog.DescribeParquetFile(key, f)
	if err != nil {
		return catalog.FileStats{}, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	if got, want := fileSchema.Stored().String(), rw.schema.Stored().String(); got != want {
		return catalog.FileStats{}, fmt.Errorf("rewrite: %s: %w: the output's schema is %s, the table's %s", key, ErrVerify, got, want)
	}
	sum, n, err := fileChecksum(rw.ctx, f, rw.hashers, rw.proof, r)
	if err != nil {
		return catalog.FileStats{}, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	if n != stats.Rows {
		return catalog.FileStats{}, fmt.Errorf("rewrite: %s: %w: %d rows read back, the footer says %d", key, ErrVerify, n, stats.Rows)
	}
	rw.outSum += sum
	if rw.outNulls == nil {
		rw.outNulls = make([]int64, len(rw.schema.Columns))
	}
	for j, c := range rw.schema.Columns {
		rw.outNulls[j] += stats.Columns[c.Name].NullCount
	}
	return stats, nil
}

// verify compares the inputs' rows with the outputs'.
func (rw *rewriter) verify() error {
	if rw.res.RowsOut != rw.res.RowsIn {
		return fmt.Errorf("rewrite %s: %w: %d rows in, %d rows out", rw.partition, ErrVerify, rw.res.RowsIn, rw.res.RowsOut)
	}
	if rw.res.RowsOut == 0 {
		return nil
	}
	for j, c := range rw.schema.Columns {
		if rw.nulls[j] != rw.outNulls[j] {
			return fmt.Errorf("rewrite %s: %w: column %q: %d NULLs in, %d out", rw.partition, ErrVerify, c.Name, rw.nulls[j], rw.outNulls[j])
		}
	}
	if rw.in.sum != rw.outSum {
		return fmt.Errorf("rewrite %s: %w: the checksum of the rows read (%016x) differs from the rows written (%016x)", rw.partition, ErrVerify, rw.in.sum, rw.outSum)
	}
	return nil
}

// fileChecksum is the order-independent checksum of every row of a file
// whose columns are the table's (same order, same types); hashers are the
// table's (tableHashers).
//
// The columns sluice writes are read page by page, on the pages' typed
// values (pageHashes): a dictionary's values are hashed once, not once per
// row that refers to them. Other columns (booleans, nested or repeated
// ones, which a table never has) go through parquet-go's ReadValues.
// Both hash every value exactly as rowHashes.mix does.
//
// proof, when it holds pages (the file must then have been opened with
// its page index), proves those pages by their bytes, read through r,
// instead of reading their values (see reuseProof); nil reads every page.
func fileChecksum(ctx context.Context, f *parquet.File, hashers []valueHasher, proof *reuseProof, r io.ReaderAt) (sum uint64, rows int64, err error) {
	var h rowHashes
	var ph pageHashes
	vals := make([]parquet.Value, 4096)
	cols := f.Root().Columns()
	fp := proof.forFile(f, len(hashers), r)
	err = catalog.NoPanic(func() error {
		var start int64 // the row group's first row in the file
		for g, rg := range f.RowGroups() {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := int(rg.NumRows())
			chunks := rg.ColumnChunks()
			if len(chunks) != len(hashers) {
				return fmt.Errorf("%w: %d columns, want %d", ErrVerify, len(chunks), len(hashers))
			}
			h.begin(n)
			for j, c := range chunks {
				cp, err := fp.chunk(g, j, start, n)
				if err != nil {
					return err
				}
				var off int
				if len(cols) == len(chunks) && ph.covers(cols[j], hashers[j]) {
					off, err = ph.mixChunk(&h, j, c, n, hashers[j], byte(cols[j].MaxDefinitionLevel()), cp)
				} else if cp == nil {
					off, err = mixChunkValues(&h, j, c, n, hashers[j], vals)
				} else {
					err = fmt.Errorf("%w: column %d has reused pages but is not read page by page", ErrVerify, j)
				}
				if err != nil {
					return err
				}
				if off != n {
					return fmt.Errorf("%w: column %d holds %d values for %d rows", ErrVerify, j, off, n)
				}
			}
			if err := fp.addShares(h.rows, start); err != nil {
				return err
			}
			h.end()
			start += int64(n)
		}
		return fp.done(start)
	})
	return h.sum, h.n, err
}

// mixChunkValues mixes the values of column chunk c (column j of a row
// group of n rows) into h, read as parquet.Values; it returns how many it
// read.
func mixChunkValues(h *rowHashes, j int, c parquet.ColumnChunk, n int, hv valueHasher, vals []parquet.Value) (int, error) {
	r := parquet.NewColumnChunkValueReader(c)
	defer r.Close()
	off := 0
	for {
		m, rerr := r.ReadValues(vals)
		if off+m > n {
			return off, fmt.Errorf("%w: column %d holds more values than rows", ErrVerify, j)
		}
		h.mix(j, off, vals[:m], hv)
		off += m
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return off, nil
			}
			return off, rerr
		}
	}
}

// pageHashes hashes the values of column chunks page by page.
type pageHashes struct {
	vh       []uint64           // salted hashes of the current page's non-null values
	dict     parquet.Dictionary // the dictionary whose hashes dictHash holds
	dictHash []uint64           // its entries' salted hashes
}

// covers reports whether mixChunk reads column col of hasher hv: a flat,
// required or optional column of a physical type with typed page values.
func (ph *pageHashes) covers(col *parquet.Column, hv valueHasher) bool {
	if !col.Leaf() || col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 {
		return false
	}
	switch parquet.Kind(hv) {
	case parquet.Boolean, parquet.Int32, parquet.Int64, parquet.Float, parquet.Double, parquet.Int96, parquet.ByteArray, parquet.FixedLenByteArray:
		return col.Type().Kind() == parquet.Kind(hv)
	}
	return false
}

// mixChunk mixes the values of column chunk c (column j of a row group of
// n rows, NULL where the definition level is below maxDef) into h; it
// returns how many it read.
func (ph *pageHashes) mixChunk(h *rowHashes, j int, c parquet.ColumnChunk, n int, hv valueHasher, maxDef byte, cp *chunkProof) (int, error) {
	pages := c.Pages()
	defer pages.Close()
	ph.dict = nil // a chunk's dictionary is its own
	salt, null := columnSalt(j), nullHash(j)
	off := 0
	for {
		if cp.at(off) {
			pg, last, err := cp.skip()
			if err != nil {
				return off, fmt.Errorf("column %d: %w", j, err)
			}
			if off+pg.n > n {
				return off, fmt.Errorf("%w: column %d holds more values than rows", ErrVerify, j)
			}
			// Its values' terms come with the proof (see reuseProof).
			rows := h.rows[off : off+pg.n]
			for i := range rows {
				rows[i] = fold(rows[i], 0)
			}
			off += pg.n
			if last {
				return off, nil
			}
			if err := pages.SeekToRow(int64(off)); err != nil {
				return off, err
			}
			continue
		}
		p, err := pages.ReadPage()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if cp != nil && len(cp.pages) > 0 {
					return off, fmt.Errorf("%w: column %d ends at row %d, before the reused page written at row %d", ErrVerify, j, off, cp.pages[0].row)
				}
				return off, nil
			}
			return off, err
		}
		if cp.crosses(off, int(p.NumValues())) {
			parquet.Release(p)
			return off, fmt.Errorf("%w: column %d: a page at row %d runs into the reused page written at row %d", ErrVerify, j, off, cp.pages[0].row)
		}
		m, err := ph.mixPage(h, j, off, n, p, hv, maxDef, salt, null)
		parquet.Release(p)
		if err != nil {
			return off, err
		}
		off += m
	}
}

func (ph *pageHashes) mixPage(h *rowHashes, j, off, n int, p parquet.Page, hv valueHasher, maxDef byte, salt, null uint64) (int, error) {
	nv := int(p.NumValues())
	if off+nv > n {
		return 0, fmt.Errorf("%w: column %d holds more values than rows", ErrVerify, j)
	}
	defs := p.DefinitionLevels()
	if len(p.RepetitionLevels()) != 0 || (maxDef > 0 && len(defs) != nv) || (maxDef == 0 && len(defs) != 0) {
		return 0, fmt.Errorf("%w: column %d: a page of %d values has %d definition and %d repetition levels", ErrVerify, j, nv, len(defs), len(p.RepetitionLevels()))
	}
	// vh holds the salted hashes (x of rowHashes.mix) of the page's
	// non-null values; a dictionary's entries are hashed and salted once.
	data := p.Data()
	var vh []uint64
	if d := p.Dictionary(); d != nil {
		if d != ph.dict {
			ph.dictHash = saltHashes(hashValues(ph.dictHash[:0], parquet.Kind(hv), d.Page().Data(), d.Len()), salt)
			ph.dict = d
		}
		idx := data.Int32()
		vh = ph.vh[:0]
		for _, i := range idx {
			if uint(i) >= uint(len(ph.dictHash)) {
				return 0, fmt.Errorf("%w: column %d: dictionary index %d of %d entries", ErrVerify, j, i, len(ph.dictHash))
			}
			vh = append(vh, ph.dictHash[i])
		}
	} else {
		vh = saltHashes(hashValues(ph.vh[:0], parquet.Kind(hv), data, nv-int(p.NumNulls())), salt)
	}
	ph.vh = vh
	rows := h.rows[off : off+nv]
	k := 0
	if maxDef == 0 {
		if len(vh) != nv {
			return 0, fmt.Errorf("%w: column %d: a page of %d values holds %d", ErrVerify, j, nv, len(vh))
		}
		for i, x := range vh[:len(rows)] {
			rows[i] = fold(rows[i], x)
		}
		return nv, nil
	}
	defs = defs[:len(rows)]
	for i := range rows {
		x := null
		if defs[i] == maxDef {
			if k >= len(vh) {
				return 0, fmt.Errorf("%w: column %d: a page's levels define more values than it holds", ErrVerify, j)
			}
			x = vh[k]
			k++
		}
		rows[i] = fold(rows[i], x)
	}
	if k != len(vh) {
		return 0, fmt.Errorf("%w: column %d: a page holds %d values, its levels define %d", ErrVerify, j, len(vh), k)
	}
	return nv, nil
}

// saltHashes turns value hashes into column salt's: mix64(h ^ salt).
func saltHashes(hs []uint64, salt uint64) []uint64 {
	for i, h := range hs {
		hs[i] = mix64(h ^ salt)
	}
	return hs
}

// bit is the i-th of a boolean page's packed bits: eight to a byte, the
// first in the lowest.
func bit(bits []byte, i int) bool { return bits[i>>3]>>(i&7)&1 != 0 }

// hashValues appends to dst the hash (valueHasher.hash) of each value of
// a page's typed values of physical kind k, of which there are n (read for
// booleans alone, whose data is packed bits). A boolean page's bits are
// read from the first: a page read from a file starts at bit 0, which
// TestBooleanPagesStartAtBitZero holds parquet-go to.
func hashValues(dst []uint64, k parquet.Kind, data encoding.Values, n int) []uint64 {
	switch k {
	case parquet.Boolean:
		// The last byte's padding is not a value.
		bits := data.Boolean()
		for i := range min(n, len(bits)*8) {
			dst = append(dst, hashBool(bit(bits, i)))
		}
	case parquet.Int32:
		for _, v := range data.Int32() {
			dst = append(dst, uint64(int64(v)))
		}
	case parquet.Int64:
		for _, v := range data.Int64() {
			dst = append(dst, uint64(v))
		}
	case parquet.Float:
		for _, v := range data.Float() {
			dst = append(dst, uint64(math.Float32bits(v)))
		}
	case parquet.Double:
		for _, v := range data.Double() {
			dst = append(dst, math.Float64bits(v))
		}
	case parquet.Int96:
		for _, v := range data.Int96() {
			dst = append(dst, hashInt96(v))
		}
	case parquet.ByteArray:
		b, offsets := data.ByteArray()
		for i := 0; i+1 < len(offsets); i++ {
			dst = append(dst, maphash.Bytes(hashSeed, b[offsets[i]:offsets[i+1]]))
		}
	case parquet.FixedLenByteArray:
		b, size := data.FixedLenByteArray()
		for i := 0; size > 0 && i+size <= len(b); i += size {
			dst = append(dst, maphash.Bytes(hashSeed, b[i:i+size]))
		}
	default:
		panic(fmt.Sprintf("hashValues: kind %s", k))
	}
	return dst
}

// --- conversions -------------------------------------------------------------

// converter returns the conversion of a non-null value of file column c to
// the table column tc, whose Parquet type is to; nil when the value is
// already in the table's representation.
func converter(c catalog.ParquetColumn, tc catalog.Column, to parquet.Type) (func(parquet.Value) (parquet.Value, error), error) {
	from := c.Type
	switch tc.Type.Kind {
	case catalog.KindBool, catalog.KindDate:
		if c.Kind == to.Kind() {
			return nil, nil
		}
	case catalog.KindInt32:
		if c.Kind == parquet.Int32 {
			return nil, nil
		}
	case catalog.KindInt64:
		switch {
		case c.Kind == parquet.Int64:
			return nil, nil
		case from.Kind == catalog.KindInt64 && c.Kind == parquet.Int32: // UINT32
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(int64(uint32(v.Int32()))), nil }, nil
		case from.Kind == catalog.KindInt32:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(int64(v.Int32())), nil }, nil
		}
	case catalog.KindFloat64:
		switch {
		case c.Kind == parquet.Double:
			return nil, nil
		case c.Kind == parquet.Float:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.DoubleValue(float64(v.Float())), nil }, nil
		case from.Kind == catalog.KindInt32:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.DoubleValue(float64(v.Int32())), nil }, nil
		}
	case catalog.KindTimestamp:
		switch {
		case c.Kind == parquet.Int96:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.Int64Value(catalog.Int96Micros(v.Int96())), nil
			}, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e6:
			return nil, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e3:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(v.Int64() * 1000), nil }, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e9:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.Int64Value(catalog.FloorDiv(v.Int64(), 1000)), nil
			}, nil
		}
	case catalog.KindString, catalog.KindUUID:
		switch {
		case c.Kind == parquet.ByteArray:
			return nil, nil
		case from.Kind == catalog.KindUUID && c.Kind == parquet.FixedLenByteArray:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.ByteArrayValue([]byte(catalog.FormatUUID(v.ByteArray()))), nil
			}, nil
		}
	case catalog.KindBinary:
		switch c.Kind {
		case parquet.ByteArray:
			return nil, nil
		case parquet.FixedLenByteArray:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.ByteArrayValue(v.ByteArray()), nil }, nil
		}
	case catalog.KindDecimal:
		return decimalConverter(c, from, tc.Type, to)
	}
	return nil, fmt.Errorf("no conversion from %s (%s) to %s: %w", from, c.Kind, tc.Type, catalog.ErrIncompatibleSchema)
}

// decimalConverter converts an integer or a decimal to the table's
// decimal(p,s): the unscaled value is multiplied by 10^(s - scale of the
// file) and written in the table's physical type.
func decimalConverter(c catalog.ParquetColumn, from, to catalog.Type, toType parquet.Type) (func(parquet.Value) (parquet.Value, error), error) {
	fromScale := 0
	if from.Kind == catalog.KindDecimal {
		fromScale = from.Scale
	}
	shift := to.Scale - fromScale
	if shift < 0 {
		return nil, fmt.Errorf("decimal scale %d does not fit %s: %w", fromScale, to, catalog.ErrIncompatibleSchema)
	}
	if shift == 0 && c.Kind == toType.Kind() && (c.Kind != parquet.FixedLenByteArray || c.Type.Precision == to.Precision) {
		return nil, nil
	}
	unsigned32 := from.Kind == catalog.KindInt64 && c.Kind == parquet.Int32
	mul := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil)
	var mul64 int64 = 1
	for range shift {
		mul64 *= 10 // only used when shift <= 18
	}
	out := toType.Kind()
	width := toType.Length()
	return func(v parquet.Value) (parquet.Value, error) {
		var small int64
		var bigV *big.Int
		switch c.Kind {
		case parquet.Int32:
			if unsigned32 {
				small = int64(uint32(v.Int32()))
			} else {
				small = int64(v.Int32())
			}
		case parquet.Int64:
			small = v.Int64()
		default:
			b := v.ByteArray()
			if len(b) <= 8 {
				var u uint64
				for _, x := range b {
					u = u<<8 | uint64(x)
				}
				if len(b) > 0 {
					s := 64 - 8*uint(len(b))
					small = int64(u<<s) >> s
				}
			} else {
				bigV = new(big.Int).SetBytes(b)
				if b[0]&0x80 != 0 {
					bigV.Sub(bigV, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
				}
			}
		}
		if bigV == nil && out != parquet.FixedLenByteArray && shift <= 18 {
			r := small * mul64
			if shift > 0 && r/mul64 != small {
				return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
			}
			if out == parquet.Int32 {
				if int64(int32(r)) != r {
					return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
				}
				return parquet.Int32Value(int32(r)), nil
			}
			return parquet.Int64Value(r), nil
		}
		if bigV == nil {
			bigV = big.NewInt(small)
		}
		u := new(big.Int).Mul(bigV, mul)
		switch out {
		case parquet.Int32:
			if !u.IsInt64() || int64(int32(u.Int64())) != u.Int64() {
				return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
			}
			return parquet.Int32Value(int32(u.Int64())), nil
		case parquet.Int64:
			if !u.IsInt64() {
				return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
			}
			return parquet.Int64Value(u.Int64()), nil
		default:
			b, ok := twosComplement(u, width)
			if !ok {
				return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
			}
			return parquet.FixedLenByteArrayValue(b), nil
		}
	}, nil
}

// twosComplement renders u as a size-byte big-endian two's complement.
func twosComplement(u *big.Int, size int) ([]byte, bool) {
	if u.BitLen() >= 8*size {
		return nil, false
	}
	out := make([]byte, size)
	if u.Sign() >= 0 {
		u.FillBytes(out)
		return out, true
	}
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*size))
	m.Add(m, u)
	m.FillBytes(out)
	return out, true
}
