package pqio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
)

// --- writing -----------------------------------------------------------------

// WriteParquet writes rows (each in schema's column order, values in their
// Go representation, nil for NULL) as one zstd-compressed Parquet file at
// key, and returns its size and statistics (read back from the footer it
// wrote, so they are exactly what InspectParquet will say).
//
// The file's columns are the schema's, in its order. The file is staged in
// a local temporary file and uploaded with one Put, so a reader never sees
// it half-written. See ParquetWriter to stream rows in batches.
func WriteParquet(ctx context.Context, st cloud.Store, key string, schema Schema, rows [][]any) (bytes int64, stats FileStats, err error) {
	w, err := NewParquetWriter(schema, nil)
	if err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	defer w.Abort()
	if err := w.Write(ctx, rows); err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	return w.Close(ctx, st, key)
}

// ParquetWriter streams rows into one Parquet data file, staged in a local
// temporary file until Close uploads it. Types map as follows:
//
//	string        BYTE_ARRAY (STRING), dictionary-encoded
//	uuid          BYTE_ARRAY (STRING): DuckDB, Spark and Redshift read a
//	              STRING column as text, while a FIXED_LEN_BYTE_ARRAY(16)
//	              UUID column is raw bytes to many of them (Spark reads it as
//	              binary); sluice's own readers map it back to uuid through
//	              the table schema. DELTA_LENGTH_BYTE_ARRAY, see uuidEncoding
//	int32, int64  INT32, INT64
//	float64       DOUBLE
//	bool          BOOLEAN
//	date          INT32 (DATE)
//	timestamp     INT64 (TIMESTAMP(MICROS, isAdjustedToUTC=true))
//	decimal(p,s)  DECIMAL(p,s) on INT32 (p <= 9), INT64 (p <= 18) or the
//	              smallest FIXED_LEN_BYTE_ARRAY that holds p digits
//	binary        BYTE_ARRAY
//	struct<...>   a group of the fields, in order
//	list<T>       the three-level LIST: group (LIST) / repeated list / element
//	map<K,V>      MAP: group (MAP) / repeated key_value / required key, value
//
// A row's nested value is map[string]any (struct), []any (list) and
// []MapEntry or map[string]any (map); nil is NULL, at any level.
//
// Statistics (min/max/nulls) are in the footer per column chunk and in the
// page index per page (see ParquetWriterOptions), string and binary bounds
// truncated to StatsTruncateBytes. A ParquetWriter is not safe for
// concurrent use.
type ParquetWriter struct {
	schema Schema
	tmp    *os.File
	// w is made by start, at the first Write of a flat schema, once the
	// first batch has said which string columns get a dictionary.
	w      *parquet.GenericWriter[any]
	codecs *Codecs
	enc    []func(any) (parquet.Value, error)
	// colVals holds one batch's values, a slice per column.
	colVals   [][]parquet.Value
	rows      int64
	groupRows int // rows in the row group being built
	done      bool
	// pending estimates the uncompressed bytes of the row group being
	// built, which parquet-go holds in memory until it is flushed.
	pending int64
	results []colResult // forColumns'
	// shred is set when the schema has a nested column: such a schema's
	// rows are shredded and written whole (see writeShredded).
	shred *Shredder
	prow  parquet.Row
	check func(r io.ReaderAt, size int64) error // CloseChecked's
}

// Buffered estimates the bytes of rows the writer holds in memory: the
// row group being built, uncompressed.
func (pw *ParquetWriter) Buffered() int64 { return pw.pending }

// FlushRowGroup ends the row group being built, compressing it into the
// file, so that the memory it held is free. Callers that keep several
// writers open (one per partition) use it to stay within a budget.
func (pw *ParquetWriter) FlushRowGroup() error {
	if pw.done || pw.pending == 0 || pw.w == nil {
		return nil
	}
	if err := noPanic(pw.w.Flush); err != nil {
		return fmt.Errorf("parquet writer: %w", err)
	}
	pw.pending, pw.groupRows = 0, 0
	return nil
}

// NewParquetWriter starts a Parquet file of schema in a local temporary
// file. Call Close to upload it, or Abort to discard it. Writers of one
// run pass the same codecs, so that each column's compression level is
// learnt once; nil learns it afresh for this file.
func NewParquetWriter(schema Schema, codecs *Codecs) (*ParquetWriter, error) {
	// The schema is checked now; the writer is made at the first Write
	// (see start), or now for a nested schema, whose columns always have
	// their dictionary.
	_, enc, err := parquetFields(schema, nil, codecs.For)
	if err != nil {
		return nil, fmt.Errorf("parquet writer: %w", err)
	}
	tmp, err := os.CreateTemp("", "sluice-*.parquet")
	if err != nil {
		return nil, fmt.Errorf("parquet writer: %w", err)
	}
	pw := &ParquetWriter{schema: schema, tmp: tmp, codecs: codecs, enc: enc}
	if hasNested(schema) {
		if pw.shred, err = NewShredder(schema); err != nil {
			pw.Abort()
			return nil, fmt.Errorf("parquet writer: %w", err)
		}
		if err := pw.start(nil); err != nil {
			pw.Abort()
			return nil, err
		}
	}
	return pw, nil
}

// start makes the Parquet writer, with a dictionary for every string
// column but those whose values in rows (the first batch) are nearly all
// distinct (see noDictionary).
func (pw *ParquetWriter) start(rows [][]any) error {
	var noDict []bool
	if pw.shred == nil {
		noDict = pw.codecs.noDictionary(pw.schema, rows)
	}
	ps, _, err := parquetFields(pw.schema, noDict, pw.codecs.For)
	if err != nil {
		return fmt.Errorf("parquet writer: %w", err)
	}
	opts := append(ParquetWriterOptions(), ps, parquet.MaxRowsPerRowGroup(parquetRowGroupRows))
	pw.w = parquet.NewGenericWriter[any](pw.tmp, opts...)
	return nil
}

// hasNested tells whether a schema has a struct, list or map column.
func hasNested(s Schema) bool {
	for _, c := range s.Columns {
		if c.Type.Nested() {
			return true
		}
	}
	return false
}

// writeShredded writes rows of a schema with nested columns: each row is
// shredded into its leaves' values with their levels and written whole.
// A bad value fails its row, naming it and the column's path; the rows
// before it are written.
func (pw *ParquetWriter) writeShredded(ctx context.Context, rows [][]any) error {
	cols := pw.schema.Columns
	for k, row := range rows {
		if k%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if len(row) != len(cols) {
			return fmt.Errorf("row %d: %d values, the schema has %d columns", pw.rows, len(row), len(cols))
		}
		var err error
		if pw.prow, err = pw.shred.Shred(row, pw.prow[:0]); err != nil {
			return fmt.Errorf("row %d: %w", pw.rows, err)
		}
		for _, v := range pw.prow {
			pw.pending += valueBytes(v)
		}
		if err := noPanic(func() error {
			_, err := pw.w.WriteRows([]parquet.Row{pw.prow})
			return err
		}); err != nil {
			return fmt.Errorf("parquet writer: row %d: %w", pw.rows, err)
		}
		pw.rows++
		pw.groupRows++
		if pw.groupRows >= parquetRowGroupRows {
			if err := pw.FlushRowGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Write adds rows to the file. A row of the wrong width, a value of the
// wrong Go type or a NULL in a non-nullable column fails the call, naming
// the row (counted from 0 over the writer's life) and the column; the rows
// before it in the call may have been written.
func (pw *ParquetWriter) Write(ctx context.Context, rows [][]any) error {
	if pw.done {
		return errors.New("parquet writer: write after Close or Abort")
	}
	// Column by column: each column's values of a batch go to its column
	// writer in one call, without building parquet.Rows that parquet-go
	// would only take apart again. A batch is encoded whole before any of
	// it is written, so a bad value stops the call after the rows before
	// it, never in the middle of a row.
	if pw.shred != nil {
		return pw.writeShredded(ctx, rows)
	}
	if pw.w == nil {
		if err := pw.start(rows); err != nil {
			return err
		}
	}
	const batchRows = 1024
	cols := pw.schema.Columns
	if pw.colVals == nil {
		pw.colVals = make([][]parquet.Value, len(cols))
		for i := range pw.colVals {
			pw.colVals[i] = make([]parquet.Value, 0, batchRows)
		}
	}
	writers := pw.w.ColumnWriters()
	for len(rows) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(rows), batchRows, parquetRowGroupRows-pw.groupRows)
		good := n
		var bad error
		for k, row := range rows[:n] {
			if len(row) != len(cols) {
				good, bad = k, fmt.Errorf("row %d: %d values, the schema has %d columns", pw.rows+int64(k), len(row), len(cols))
				break
			}
		}
		// The columns are encoded, and then written, several at once: a
		// column's values go to their own column writer, which encodes
		// and compresses its pages; no two columns share anything.
		var pending int64
		for _, r := range pw.forColumns(func(i int) colResult {
			k, bytes, err := pw.encodeColumn(i, rows[:good], pw.rows)
			return colResult{k, bytes, err}
		}) {
			pending += r.bytes
			// The first bad row wins (a column's bad row is below the
			// good it was given), and at one row the first column.
			if r.err != nil && r.k < good {
				good, bad = r.k, r.err
			}
		}
		if good < n {
			// Rows from the bad one on are not written: count again.
			pending = 0
			for i := range cols {
				for _, v := range pw.colVals[i][:good] {
					pending += valueBytes(v)
				}
			}
		}
		if good > 0 {
			var err error
			for _, r := range pw.forColumns(func(i int) colResult {
				return colResult{err: noPanic(func() error {
					if _, err := writers[i].WriteRowValues(pw.colVals[i][:good]); err != nil {
						return fmt.Errorf("column %q: %w", cols[i].Name, err)
					}
					return nil
				})}
			}) {
				if r.err != nil && err == nil {
					err = r.err
				}
			}
			pw.pending += pending
			if err != nil {
				return fmt.Errorf("parquet writer: %w", err)
			}
			pw.rows += int64(good)
			pw.groupRows += good
			if pw.groupRows >= parquetRowGroupRows {
				if err := pw.FlushRowGroup(); err != nil {
					return err
				}
			}
		}
		if bad != nil {
			return bad
		}
		rows = rows[n:]
	}
	return nil
}

// colResult is what forColumns' work on one column gives.
type colResult struct {
	k     int
	bytes int64
	err   error
}

// forColumns runs fn for every column, columnWorkers at once, and returns
// each column's result; fn must touch nothing another column's call does.
func (pw *ParquetWriter) forColumns(fn func(i int) colResult) []colResult {
	n := len(pw.schema.Columns)
	if len(pw.results) != n {
		pw.results = make([]colResult, n)
	}
	res := pw.results
	workers := min(columnWorkers, n)
	if workers <= 1 {
		for i := range n {
			res[i] = fn(i)
		}
		return res
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				res[i] = fn(i)
			}
		})
	}
	wg.Wait()
	return res
}

// columnWorkers is how many columns of a batch a ParquetWriter encodes and
// writes at once.
var columnWorkers = runtime.NumCPU()

// encodeColumn converts column i of rows (the first counted as row first
// of the writer's life) into pw.colVals[i], and returns the bytes they
// will hold in the column buffer. At a bad value it stops and returns its
// row within rows and the error naming it.
//
// Only an optional column's non-null values get a level (definition level
// 1, by SetDefinitionLevel): parquet-go's column buffers read nothing else
// of a value's levels or column index, and the zero levels are a required
// value's and a NULL's. Value.Level on every value was about half of
// BenchmarkParquetWriterWrite (see SetDefinitionLevel).
func (pw *ParquetWriter) encodeColumn(i int, rows [][]any, first int64) (int, int64, error) {
	c := pw.schema.Columns[i]
	kind := c.Type.Kind
	vals := pw.colVals[i][:0]
	var bytes int64
	for k, row := range rows {
		// The common Go types inline, the rest (and a value of the wrong
		// type, which it names) through the column's encoder.
		var pv parquet.Value
		size := int64(8)
		ok := false
		switch x := row[i].(type) {
		case string:
			if ok = kind == KindString || kind == KindUUID; ok {
				pv = parquet.ByteArrayValue(stringBytes(x))
				size = int64(len(x)) + 4
			}
		case int64:
			if ok = kind == KindInt64; ok {
				pv = parquet.Int64Value(x)
			}
		case int32:
			if ok = kind == KindInt32; ok {
				pv = parquet.Int32Value(x)
			}
		case time.Time:
			if ok = kind == KindTimestamp; ok {
				pv = parquet.Int64Value(x.UnixMicro())
			}
		case nil:
			if !c.Nullable {
				pw.colVals[i] = vals
				return k, bytes, fmt.Errorf("row %d: column %q: NULL in a column that is not nullable", first+int64(k), c.Name)
			}
			vals = append(vals, parquet.Value{})
			bytes += 8
			continue
		}
		if !ok {
			var err error
			if pv, err = pw.enc[i](row[i]); err != nil {
				pw.colVals[i] = vals
				return k, bytes, fmt.Errorf("row %d: column %q: %w", first+int64(k), c.Name, err)
			}
			size = valueBytes(pv)
		}
		vals = append(vals, pv)
		if c.Nullable {
			SetDefinitionLevel(&vals[len(vals)-1], 1)
		}
		bytes += size
	}
	pw.colVals[i] = vals
	return len(rows), bytes, nil
}

// valueBytes estimates the bytes a value holds in a column buffer.
func valueBytes(v parquet.Value) int64 {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return int64(len(v.ByteArray())) + 4
	}
	return 8
}

// Close finishes the file, stores it under key with cloud.PutFile (on local
// disk the temporary file itself, hard-linked; elsewhere one Put streamed
// from it) and returns its size and its footer's statistics.
// The temporary file is removed whatever happens.
func (pw *ParquetWriter) Close(ctx context.Context, st cloud.Store, key string) (int64, FileStats, error) {
	if pw.done {
		return 0, FileStats{}, fmt.Errorf("write %s: parquet writer already closed", key)
	}
	defer pw.Abort()
	if pw.w == nil {
		if err := pw.start(nil); err != nil {
			return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
		}
	}
	if err := noPanic(pw.w.Close); err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	size, err := pw.tmp.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	if size, err = TruncateFooterStats(pw.tmp, size); err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	var stats FileStats
	f, err := openFile(key, pw.tmp, size)
	if err == nil {
		err = noPanic(func() (err error) {
			_, _, stats, err = describeParquet(key, f)
			return err
		})
	}
	if err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: reading back the footer: %w", key, err)
	}
	if pw.check != nil {
		if err := pw.check(pw.tmp, size); err != nil {
			return 0, FileStats{}, err
		}
	}
	if _, err := cloud.PutFile(ctx, st, key, pw.tmp, size, cloud.PutOptions{}); err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	return size, stats, nil
}

// Written is the bytes of the row groups written to the file so far (the
// one being built is Buffered).
func (pw *ParquetWriter) Written() int64 {
	if pw.done {
		return 0
	}
	n, _ := pw.tmp.Seek(0, io.SeekCurrent)
	return n
}

// CloseChecked is Close that gives the finished file (size bytes read
// through r) to check before it is stored: an error from check stores
// nothing and is returned as is.
func (pw *ParquetWriter) CloseChecked(ctx context.Context, st cloud.Store, key string, check func(r io.ReaderAt, size int64) error) (int64, FileStats, error) {
	pw.check = check
	return pw.Close(ctx, st, key)
}

// Abort discards the file. It is safe to call after Close, and more than
// once.
func (pw *ParquetWriter) Abort() {
	if pw.done {
		return
	}
	pw.done = true
	name := pw.tmp.Name()
	_ = pw.tmp.Close()
	_ = os.Remove(name)
}

// columnNode returns the Parquet node of a table column and the encoder of
// its non-null values; the node carries the column's field id (see
// withFieldID).
func columnNode(c Column) (parquet.Node, func(any) (parquet.Value, error), error) {
	t := c.Type
	check := func(f func(any) parquet.Value) func(any) (parquet.Value, error) {
		return func(v any) (parquet.Value, error) {
			if err := checkGoValue(t, v); err != nil {
				return parquet.Value{}, err
			}
			return f(v), nil
		}
	}
	var n parquet.Node
	var enc func(any) (parquet.Value, error)
	switch t.Kind {
	case KindString:
		n = parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
		enc = check(func(v any) parquet.Value { return parquet.ByteArrayValue(stringBytes(v.(string))) })
	case KindUUID:
		// Text, not FIXED_LEN_BYTE_ARRAY(16) UUID: see ParquetWriter.
		n = parquet.Encoded(parquet.String(), uuidEncoding)
		enc = check(func(v any) parquet.Value { return parquet.ByteArrayValue(stringBytes(v.(string))) })
	case KindInt32:
		n = parquet.Leaf(parquet.Int32Type)
		enc = check(func(v any) parquet.Value { return parquet.Int32Value(v.(int32)) })
	case KindInt64:
		n = parquet.Leaf(parquet.Int64Type)
		enc = check(func(v any) parquet.Value { return parquet.Int64Value(v.(int64)) })
	case KindFloat64:
		n = parquet.Leaf(parquet.DoubleType)
		enc = check(func(v any) parquet.Value { return parquet.DoubleValue(v.(float64)) })
	case KindBool:
		n = parquet.Leaf(parquet.BooleanType)
		enc = check(func(v any) parquet.Value { return parquet.BooleanValue(v.(bool)) })
	case KindDate:
		n = parquet.Date()
		// The UTC day of the value: a date is held as UTC midnight.
		enc = check(func(v any) parquet.Value {
			return parquet.Int32Value(int32(FloorDiv(v.(time.Time).Unix(), 86400)))
		})
	case KindTimestamp:
		n = parquet.Timestamp(parquet.Microsecond)
		enc = check(func(v any) parquet.Value { return parquet.Int64Value(v.(time.Time).UnixMicro()) })
	case KindDecimal:
		p := t.Precision
		if p < 1 || p > 38 || t.Scale < 0 || t.Scale > p {
			return nil, nil, fmt.Errorf("invalid type %s", t)
		}
		var typ parquet.Type
		switch {
		case p <= 9:
			typ = parquet.Int32Type
		case p <= 18:
			typ = parquet.Int64Type
		default:
			typ = parquet.FixedLenByteArrayType(decimalBytes(p))
		}
		n = parquet.Decimal(t.Scale, p, typ)
		size := decimalBytes(p)
		enc = func(v any) (parquet.Value, error) {
			if err := checkGoValue(t, v); err != nil {
				return parquet.Value{}, err
			}
			u, err := DecimalUnscaled(t, v.(string))
			if err != nil {
				return parquet.Value{}, err
			}
			switch {
			case p <= 9:
				return parquet.Int32Value(int32(u.Int64())), nil
			case p <= 18:
				return parquet.Int64Value(u.Int64()), nil
			default:
				b, ok := twosComplement(u, size)
				if !ok {
					return parquet.Value{}, fmt.Errorf("decimal value %s overflows %s", v, t)
				}
				return parquet.FixedLenByteArrayValue(b), nil
			}
		}
	case KindBinary:
		n = parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), &parquet.Plain)
		enc = check(func(v any) parquet.Value { return parquet.ByteArrayValue(v.([]byte)) })
	default:
		return nil, nil, fmt.Errorf("unknown type %s", t)
	}
	if c.Nullable {
		n = parquet.Optional(n)
	} else {
		n = parquet.Required(n)
	}
	return withFieldID(n, c.ID), enc, nil
}

// uuidEncoding is the encoding of a uuid column's text:
// DELTA_LENGTH_BYTE_ARRAY, which stores the lengths (all 36) apart, a few
// bytes per page, and the texts one after the other. PLAIN puts a 4-byte
// length before each text, and zstd level 1 then finds a short match in
// almost every value, which makes it both slower and larger than on the
// texts alone; that compression is a large share of an ingest's CPU
// (bench/ingest.sh measures it). The Parquet format prefers this
// encoding to PLAIN for byte arrays, and
// DuckDB, Spark, Arrow and Trino read it.
var uuidEncoding = &parquet.DeltaLengthByteArray
