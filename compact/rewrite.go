package compact

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// Opener opens one input data file for ranged reads and returns its size.
// The orchestrator passes one built on the table's data file store and
// pqio.NewReaderAt.
type Opener func(ctx context.Context, f catalog.DataFile) (io.ReaderAt, int64, error)

// RewriteResult is what a Rewrite wrote.
type RewriteResult struct {
	// Outputs are the files written: durable in the store, not committed.
	// Each has Path (RewriteOptions.NewPath of the partition), Partition,
	// PartitionValues (copied from the inputs), Bytes and FileStats.
	Outputs []catalog.DataFile
	// RowsIn and RowsOut are the rows read and written, RowsDeleted the
	// rows read that were deleted (RewriteOptions.Deleted) and left out:
	// RowsOut = RowsIn - RowsDeleted, verified. BytesIn and BytesOut are
	// the bytes of the input and output files.
	RowsIn, RowsOut, RowsDeleted, BytesIn, BytesOut int64
	// PagesReused counts the output pages stored as their input's
	// compressed bytes rather than compressed again (see reusingCodec).
	PagesReused int
	// SortRuns counts the sorted runs an ordered rewrite (RewriteOptions.
	// Order) spilled to local disk, those of merge passes included; 0
	// when its rows fit in its share of the memory budget.
	SortRuns int
}

// Rewrite streams the rows of inputs (data files of one partition of a
// table of schema) into new files near o.TargetFileSize in out: the
// table's columns in its order and types exactly, zstd, dictionaries where
// they pay, statistics, row groups of about o.RowGroupBytes uncompressed.
// Memory is bounded by o.MemoryBudget, not by the partition's size.
// With o.Order on, the rows are written in that order (see sort.go), the
// rows beyond a share of the budget spilled to local disk.
//
// Inputs whose schema differs but converts (pqio.CheckCompatible: a
// nullable column added later, int32 → int64, decimal widening, INT96 and
// millisecond timestamps) are converted to the table's types; an
// incompatible input fails with an error wrapping
// pqio.ErrIncompatibleSchema that names the file and the column.
//
// Before it returns, Rewrite reads its outputs back and verifies them
// against the inputs: rows, null counts per column and an order-independent
// checksum of every row's values; a mismatch is an error wrapping
// ErrVerify. On any error the outputs written so far are deleted.
//
// The deleted rows of an input (o.Deleted) are left out: such an input is
// read row by row (none of its pages is reused), and the verification
// counts and hashes its kept rows only. A deleted position that is not a
// row of its file fails the rewrite with ErrDeletePosition.
func Rewrite(ctx context.Context, open Opener, out cloud.Store, schema catalog.Schema, partition string, inputs []catalog.DataFile, o RewriteOptions) (res RewriteResult, err error) {
	if err := o.Validate(); err != nil {
		return RewriteResult{}, err
	}
	o = o.withDefaults()
	if pqio.HasNested(schema) {
		if _, err := o.Order.check(schema); err != nil {
			return RewriteResult{}, err
		}
		return rewriteNested(ctx, open, out, schema, partition, inputs, o)
	}
	rw := &rewriter{
		ctx: ctx, out: out, schema: schema, partition: partition, o: o,
		nulls:  make([]int64, len(schema.Columns)),
		codecs: map[string]*reusingCodec{},
		proof:  newReuseProof(len(schema.Columns)),
		pages:  newPageFiles(),
	}
	for _, c := range schema.Columns {
		rw.codecs[c.Name] = &reusingCodec{Codec: o.Codecs.For(c.Name)}
	}
	ps, err := rw.parquetSchema(nil)
	if err != nil {
		return RewriteResult{}, err
	}
	rw.ps, rw.hashers, rw.leaves = ps, tableHashers(ps, schema), ps.Fields()
	if o.Order.On() {
		// The prefetch gets an eighth of the budget, the sort's buffer a
		// sixteenth (startSort: its rows are held encoded, so the bytes
		// it counts are the bytes it holds, and a spill is a sequential
		// write of them; a larger buffer spilled less but raised peak
		// RSS more than it saved CPU); the rest is for the readers' and
		// the writer's buffers and the collector, which lets the heap
		// grow to several times what is live.
		rw.o.MemoryBudget = o.MemoryBudget / 8
		if err := rw.startSort(o.MemoryBudget); err != nil {
			return RewriteResult{}, err
		}
	}
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
		rw.pages.close()
		rw.proof.close()
		if rw.sorter != nil {
			rw.sorter.close()
		}
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
	if rw.sorter != nil {
		if err := rw.writeSorted(); err != nil {
			return RewriteResult{}, err
		}
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
	if rw.sorter != nil {
		rw.res.SortRuns = rw.sorter.spilled
	}
	return rw.res, nil
}

// parquetSchema is the output files' schema, string columns without a
// dictionary (DELTA_LENGTH_BYTE_ARRAY) where noDict says so, every column
// compressed by its reusingCodec.
func (rw *rewriter) parquetSchema(noDict []bool) (*parquet.Schema, error) {
	return pqio.ParquetSchemaNoDict(rw.schema, noDict, func(name string) compress.Codec { return rw.codecs[name] })
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
	// rows of an input with deleted rows (copyRowGroupRows): those read,
	// and of them those kept and those written
	rowBuf, keptRows, writtenRows []parquet.Row

	// codecs are the output columns' codecs by name.
	codecs map[string]*reusingCodec
	// proof holds what the read-back needs to prove the output file's
	// reused pages by their bytes (see reuseProof).
	proof *reuseProof
	pages *pageFiles // the writers' page buffers

	// sorter orders the rows when RewriteOptions.Order is on (sort.go);
	// nil: rows go out in input order. sortingColumns are what the
	// outputs record of it; nil for a z-order.
	sorter         *sorter
	sortingColumns []parquet.SortingColumn
	// sortBacking and sortBytes are sortRows' buffers, reused batch to batch.
	sortBacking []parquet.Value
	sortBytes   []byte
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
	f, err := pqio.OpenParquetFile(key, p.r, p.size)
	if err != nil {
		return err
	}
	fileSchema, cols, _, err := pqio.DescribeParquetFile(key, f)
	if err != nil {
		return err
	}
	if err := pqio.CheckCompatible(rw.schema, fileSchema, key); err != nil {
		return err
	}
	del, err := rw.o.deletions(p.f, f.NumRows())
	if err != nil {
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
			conv, err := pqio.Converter(c, tc, rw.leaves[j].Type())
			if err != nil {
				return fmt.Errorf("%s: column %q: %w", key, tc.Name, err)
			}
			pl.conv = conv
			// Only an optional table column's buffer reads a value's
			// definition level: a converted value, or one from a required
			// input column, needs 1 there. A required column's buffer
			// reads the payload alone.
			pl.relevel = tc.Nullable && (conv != nil || !c.Nullable)
			// An input with deleted rows is read row by row and hashed
			// as its rows are kept (copyRowGroupRows): neither its pages'
			// hashes nor its pages serve.
			if col := leafCols[c.Leaf]; del == nil && conv == nil && col != nil && rw.ph.covers(col, rw.hashers[j]) {
				pl.pageHash, pl.maxDef = true, byte(col.MaxDefinitionLevel())
			}
			pl.reuse = p.data != nil && pl.pageHash && int(pl.maxDef) == pl.def && !pl.relevel
		}
		plans[j] = pl
	}
	md := f.Metadata()
	if err := rw.chooseEncodings(md, plans); err != nil {
		return err
	}
	// Pages are reused only into a column the output writes PLAIN.
	for j, field := range rw.ps.Fields() {
		plans[j].reuse = plans[j].reuse && writesPlain(field)
	}
	rw.res.BytesIn += p.size
	if rw.sorter != nil {
		return rw.sortRowGroups(key, f, plans, del)
	}
	return rw.copyRowGroups(key, f, plans, p.data, del)
}

// chooseEncodings picks, at the first input that has a row group, which
// string columns the outputs write without a dictionary.
func (rw *rewriter) chooseEncodings(md *format.FileMetaData, plans []colPlan) error {
	if rw.encodingsChosen || len(md.RowGroups) == 0 {
		return nil
	}
	// Dictionary encoding where it pays: where the engine that wrote the
	// first input gave up on a dictionary for a string column, so do we.
	rw.encodingsChosen = true
	noDict := make([]bool, len(plans))
	anyNoDict := false
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
		anyNoDict = anyNoDict || noDict[j]
	}
	if anyNoDict && rw.w == nil {
		ps, err := rw.parquetSchema(noDict)
		if err != nil {
			return err
		}
		rw.ps = ps
	}
	return nil
}

// keptRowGroups calls fn for each row group of input f that keeps a row
// (del: the deleted ones, nil for none), with its index, its first row in
// the file and how many it keeps; a group with nothing kept is counted in
// and as deleted without being read.
func (rw *rewriter) keptRowGroups(f *parquet.File, del *deletions, fn func(g int, rg parquet.RowGroup, first int64, kept int) error) error {
	var first int64 // the row group's first row in the file
	for g, rg := range f.RowGroups() {
		if err := rw.ctx.Err(); err != nil {
			return err
		}
		n := rg.NumRows()
		start := first
		first += n
		if n == 0 {
			continue
		}
		dropped := del.within(start, n)
		if dropped == n {
			// Nothing of it is kept: nothing to read.
			rw.res.RowsIn += n
			rw.res.RowsDeleted += n
			continue
		}
		if err := fn(g, rg, start, int(n-dropped)); err != nil {
			return err
		}
	}
	return nil
}

// copyRowGroups copies the row groups of input f, whose deleted rows, if
// any, are del (nil: none), into the output.
func (rw *rewriter) copyRowGroups(key string, f *parquet.File, plans []colPlan, data []byte, del *deletions) error {
	md := f.Metadata()
	return rw.keptRowGroups(f, del, func(g int, rg parquet.RowGroup, first int64, kept int) error {
		var compressed int64
		var metas []format.ColumnChunk
		if g < len(md.RowGroups) {
			metas = md.RowGroups[g].Columns
			for _, c := range metas {
				compressed += c.MetaData.TotalCompressedSize
			}
		}
		if err := rw.startRowGroup(compressed); err != nil {
			return err
		}
		copyGroup := func() error { return rw.copyRowGroup(key, rg, plans, data, metas) }
		if del != nil {
			copyGroup = func() error { return rw.copyRowGroupRows(key, rg, plans, del, first, kept) }
		}
		if err := pqio.NoPanic(copyGroup); err != nil {
			return err
		}
		rw.inBytes += compressed
		return nil
	})
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
