package compact

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// A table with a struct, list or map column is rewritten row by row: each
// input's rows are read as the table's (pqio assembles the nested values
// from their leaves and widens them), written through pqio's writer, and
// verified as flat tables are, per leaf: every row is shredded into its
// leaves' values with their repetition and definition levels, and the
// row's hash folds the leaf index, both levels and the value of each, so
// that a value moved between lists ([[1],[2]] against [[1,2]]) or a NULL
// moved up a level changes it. The read-back hashes the output's rows as
// stored, levels as written, without assembling them.
//
// An input stored exactly as the output will be (pqio.SameLayout: the
// same columns, types, nullability and physical types, as files sluice or
// DuckDB wrote for the table are) skips the assembly: its rows are copied
// as Parquet rows, leaf values with their levels, and hashed as read.

// testHookCorruptRow, when set by a test, may change a row of a nested
// table after it was hashed on the inputs' side and before it is written;
// set, it sends every input through the assembling path.
var testHookCorruptRow func(row []any)

// testHookCorruptLeaves, when set by a test, may change a row copied as
// Parquet values (copyRows) after it was hashed and before it is written.
var testHookCorruptLeaves func(row parquet.Row)

// nestedRewrite is the state of one Rewrite of a table with nested columns.
type nestedRewrite struct {
	ctx       context.Context
	out       cloud.Store
	schema    catalog.Schema
	partition string
	o         RewriteOptions
	shred     *pqio.Shredder
	leafPaths []string

	pw       *pqio.ParquetWriter
	inBytes  int64 // input bytes that went into the current output
	fileRows int64

	inSum, outSum     uint64
	inNulls, outNulls []int64 // per leaf
	hashed            int64   // rows hashed on the inputs' side
	prow              parquet.Row
	batch             [][]any
	toWrite           []parquet.Row // copyRows' rows to write
	res               RewriteResult
	partValues        map[string]*string
}

// rewriteNested is Rewrite of a table with nested columns.
func rewriteNested(ctx context.Context, open Opener, out cloud.Store, schema catalog.Schema, partition string, inputs []catalog.DataFile, o RewriteOptions) (res RewriteResult, err error) {
	sh, err := pqio.NewShredder(schema)
	if err != nil {
		return RewriteResult{}, fmt.Errorf("rewrite %s: %w", partition, err)
	}
	nr := &nestedRewrite{ctx: ctx, out: out, schema: schema, partition: partition, o: o, shred: sh,
		inNulls: make([]int64, sh.Leaves()), outNulls: make([]int64, sh.Leaves())}
	for _, c := range schema.Columns {
		for _, l := range c.Leaves() {
			nr.leafPaths = append(nr.leafPaths, l.Path)
		}
	}
	if len(inputs) > 0 {
		nr.partValues = inputs[0].PartitionValues
	}
	var perOutput int64
	if o.Outputs > 0 {
		var total int64
		for _, f := range inputs {
			total += f.Bytes
		}
		perOutput = (total + int64(o.Outputs) - 1) / int64(o.Outputs)
	}
	defer func() {
		if nr.pw != nil {
			nr.pw.Abort()
		}
		if err != nil {
			dctx := context.WithoutCancel(ctx)
			for _, f := range nr.res.Outputs {
				_ = out.Delete(dctx, f.Path)
			}
			res = RewriteResult{}
		}
	}()
	for _, f := range inputs {
		if err := nr.copyFile(open, f); err != nil {
			return RewriteResult{}, err
		}
		full := nr.pw != nil && nr.pw.Written()+nr.pw.Buffered()/4 >= o.TargetFileSize
		if perOutput > 0 {
			full = nr.inBytes >= perOutput && len(nr.res.Outputs)+1 < o.Outputs
		}
		if full {
			if err := nr.closeFile(); err != nil {
				return RewriteResult{}, err
			}
		}
	}
	if err := nr.closeFile(); err != nil {
		return RewriteResult{}, err
	}
	if err := nr.verify(); err != nil {
		return RewriteResult{}, err
	}
	return nr.res, nil
}

// copyFile streams one input's rows into the output.
func (nr *nestedRewrite) copyFile(open Opener, df catalog.DataFile) error {
	r, size, err := open(nr.ctx, df)
	if err != nil {
		return fmt.Errorf("open %s: %w", df.Path, err)
	}
	f, err := pqio.OpenParquetFile(df.Path, r, size)
	if err != nil {
		return err
	}
	if nr.pw == nil {
		if nr.pw, err = pqio.NewParquetWriter(nr.schema, nr.o.Codecs); err != nil {
			return fmt.Errorf("rewrite %s: %w", nr.partition, err)
		}
		nr.inBytes, nr.fileRows = 0, 0
	}
	del, err := nr.o.deletions(df, f.NumRows())
	if err != nil {
		return err
	}
	// Counted from the positions, not as rows go: the verification
	// compares the two.
	nr.res.RowsDeleted += del.within(0, f.NumRows())
	nr.res.BytesIn += size
	nr.inBytes += size
	if pqio.SameLayout(nr.schema, df.Path, f) && testHookCorruptRow == nil {
		return nr.copyRows(df.Path, f, del)
	}
	var pos int64 // the row's position in the file
	err = pqio.ScanParquetFile(nr.ctx, df.Path, f, nr.schema, func(row []any) error {
		kept, write := del.keep(pos)
		pos++
		nr.res.RowsIn++
		if kept {
			var err error
			if nr.prow, err = nr.shred.Shred(row, nr.prow[:0]); err != nil {
				return fmt.Errorf("%s: %w", df.Path, err)
			}
			nr.inSum += leafRowHash(nr.prow, nr.inNulls)
			nr.hashed++
		}
		if !write {
			return nil
		}
		if testHookCorruptRow != nil {
			testHookCorruptRow(row)
		}
		nr.batch = append(nr.batch, row)
		if len(nr.batch) == 256 {
			return nr.flushBatch()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return nr.flushBatch()
}

// copyRows copies an input stored as the output is (pqio.SameLayout) row
// by row as Parquet rows, leaf values with their levels, hashed as read:
// nothing is assembled or converted. The rows del deletes are left out.
func (nr *nestedRewrite) copyRows(key string, f *parquet.File, del *deletions) error {
	buf := make([]parquet.Row, 256)
	var pos int64 // the position of buf[0] in the file
	err := pqio.NoPanic(func() error {
		for g, rg := range f.RowGroups() {
			if err := nr.ctx.Err(); err != nil {
				return err
			}
			rows := rg.Rows()
			for {
				n, rerr := rows.ReadRows(buf)
				// The rows written gather in a slice of their own:
				// ReadRows refills each of buf's rows in place.
				out := nr.toWrite[:0]
				for i, row := range buf[:n] {
					kept, write := del.keep(pos + int64(i))
					if kept {
						nr.inSum += leafRowHash(row, nr.inNulls)
						nr.hashed++
					}
					if write {
						if testHookCorruptLeaves != nil {
							testHookCorruptLeaves(row)
						}
						out = append(out, row)
					}
				}
				nr.toWrite = out
				pos += int64(n)
				nr.res.RowsIn += int64(n)
				nr.fileRows += int64(len(out))
				if len(out) > 0 {
					if err := nr.pw.WriteRows(out); err != nil {
						rows.Close()
						return err
					}
				}
				if errors.Is(rerr, io.EOF) {
					break
				}
				if rerr != nil {
					rows.Close()
					return fmt.Errorf("row group %d: %w", g, rerr)
				}
			}
			if err := rows.Close(); err != nil {
				return fmt.Errorf("row group %d: %w", g, err)
			}
			if nr.pw.Buffered() >= nr.flushAt() {
				if err := nr.pw.FlushRowGroup(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("rewrite: %s: %w", key, err)
	}
	return err
}

// flushAt is the buffered bytes at which the output's row group is
// flushed: its row group size, or half the rewrite's memory budget if
// that is less (pqio's writer holds a row group in memory).
func (nr *nestedRewrite) flushAt() int64 { return min(nr.o.RowGroupBytes, nr.o.MemoryBudget/2) }

func (nr *nestedRewrite) flushBatch() error {
	if len(nr.batch) == 0 {
		return nil
	}
	if err := nr.pw.Write(nr.ctx, nr.batch); err != nil {
		return fmt.Errorf("rewrite %s: %w", nr.partition, err)
	}
	nr.fileRows += int64(len(nr.batch))
	clear(nr.batch)
	nr.batch = nr.batch[:0]
	if nr.pw.Buffered() >= nr.flushAt() {
		return nr.pw.FlushRowGroup()
	}
	return nil
}

// closeFile finishes the output, reads it back into the outputs' side of
// the verification and stores it.
func (nr *nestedRewrite) closeFile() error {
	if nr.pw == nil {
		return nil
	}
	pw := nr.pw
	nr.pw = nil
	if nr.fileRows == 0 {
		pw.Abort()
		return nil
	}
	key := nr.o.newPath(nr.partition)
	var rows int64
	size, stats, err := pw.CloseChecked(nr.ctx, nr.out, key, func(r io.ReaderAt, size int64) (err error) {
		rows, err = nr.readBack(key, r, size)
		return err
	})
	if err != nil {
		return err
	}
	if rows != stats.Rows {
		return fmt.Errorf("rewrite: %s: %w: %d rows read back, the footer says %d", key, ErrVerify, rows, stats.Rows)
	}
	nr.res.Outputs = append(nr.res.Outputs, catalog.DataFile{
		Path: key, Partition: nr.partition, PartitionValues: clonePartValues(nr.partValues), Bytes: size, FileStats: stats,
	})
	nr.res.BytesOut += size
	nr.res.RowsOut += stats.Rows
	return nil
}

// readBack hashes every row of an output as stored: its leaves' values
// and levels, as written.
func (nr *nestedRewrite) readBack(key string, r io.ReaderAt, size int64) (int64, error) {
	f, err := pqio.OpenParquetFile(key, r, size)
	if err != nil {
		return 0, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	fileSchema, _, stats, err := pqio.DescribeParquetFile(key, f)
	if err != nil {
		return 0, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	if got, want := fileSchema.Stored().String(), nr.schema.Stored().String(); got != want {
		return 0, fmt.Errorf("rewrite: %s: %w: the output's schema is %s, the table's %s", key, ErrVerify, got, want)
	}
	nulls := make([]int64, len(nr.outNulls))
	var n int64
	buf := make([]parquet.Row, 64)
	err = pqio.NoPanic(func() error {
		for _, rg := range f.RowGroups() {
			if err := nr.ctx.Err(); err != nil {
				return err
			}
			rows := rg.Rows()
			for {
				k, rerr := rows.ReadRows(buf)
				for _, row := range buf[:k] {
					nr.outSum += leafRowHash(row, nulls)
					n++
				}
				if errors.Is(rerr, io.EOF) {
					break
				}
				if rerr != nil {
					rows.Close()
					return rerr
				}
			}
			if err := rows.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	for l, p := range nr.leafPaths {
		if got := stats.Columns[p].NullCount; got != nulls[l] {
			return 0, fmt.Errorf("rewrite: %s: %w: column %q: the footer says %d NULLs, the pages hold %d", key, ErrVerify, p, got, nulls[l])
		}
		nr.outNulls[l] += nulls[l]
	}
	return n, nil
}

// verify compares the inputs' rows with the outputs'.
func (nr *nestedRewrite) verify() error {
	if err := verifyRows(nr.partition, nr.res, nr.hashed); err != nil {
		return err
	}
	for l, p := range nr.leafPaths {
		if nr.inNulls[l] != nr.outNulls[l] {
			return fmt.Errorf("rewrite %s: %w: column %q: %d NULLs in, %d out", nr.partition, ErrVerify, p, nr.inNulls[l], nr.outNulls[l])
		}
	}
	if nr.inSum != nr.outSum {
		return fmt.Errorf("rewrite %s: %w: the checksum of the rows read (%016x) differs from the rows written (%016x)", nr.partition, ErrVerify, nr.inSum, nr.outSum)
	}
	return nil
}

// leafRowHash is the hash of one row's leaf values (in leaf order, as
// pqio.Shredder gives them and a Parquet reader reads them): each value's
// leaf, repetition and definition levels and, unless NULL, its value
// (hashed as flat columns' values are), folded in order. It counts the
// row's NULLs per leaf into nulls.
func leafRowHash(row parquet.Row, nulls []int64) uint64 {
	h := uint64(len(row))
	for i := range row {
		v := &row[i]
		c := v.Column()
		x := columnSalt(c) ^ uint64(v.RepetitionLevel())<<48 ^ uint64(v.DefinitionLevel())<<56
		if v.IsNull() {
			nulls[c]++
			x = mix64(x ^ 0x6e756c6c)
		} else {
			x = mix64(x) ^ hasherFor(v.Kind()).hash(v)
		}
		h = fold(h, mix64(x))
	}
	return mix64(h)
}
