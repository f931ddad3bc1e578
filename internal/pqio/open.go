package pqio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/sluice-data/sluice/cloud"
)

// This file exports what a column-wise rewrite of Parquet files (compaction)
// needs of this package's Parquet mapping, without going through rows of Go
// values: the table's Parquet schema (ordered columns, sluice's physical
// types and encodings), the writer options sluice writes with, and how a
// file's columns map to our types.

// ParquetColumn is one top-level column of a Parquet file, mapped to our
// types.
type ParquetColumn struct {
	Column
	// Leaf is the column's leaf index in the file (its ColumnChunks index);
	// a nested column's (Type.Nested) first leaf's.
	Leaf int
	// Kind is the column's physical type; meaningless for a nested column,
	// whose leaves each have their own.
	Kind parquet.Kind
	// Unit is the number of ticks per second of an INT64 timestamp (1e3,
	// 1e6 or 1e9), 0 for any other column (INT96 timestamps included).
	Unit int64
}

// OpenParquetFile opens a Parquet file of size bytes read through r, with
// sluice's read options (no page index, no bloom filters, large reads). key
// names the file in errors. A file that is not Parquet, truncated or whose
// footer does not decode fails with ErrCorruptFile.
func OpenParquetFile(key string, r io.ReaderAt, size int64) (*parquet.File, error) {
	return openFile(key, r, size)
}

// OpenParquetFileWithIndex is OpenParquetFile that also reads the page
// index, for a reader that seeks to rows (parquet.Pages.SeekToRow) past
// pages it does not read: without the offset index, a seek reads every
// page before the row.
func OpenParquetFileWithIndex(key string, r io.ReaderAt, size int64) (*parquet.File, error) {
	return openFile(key, r, size, parquet.SkipPageIndex(false))
}

// openParquet opens the file at key over ranged reads of st. Options add
// to openFile's defaults.
func openParquet(ctx context.Context, st cloud.Store, key string, size int64, opts ...parquet.FileOption) (*parquet.File, *storeReaderAt, error) {
	r := newStoreReaderAt(ctx, st, key, size)
	f, err := openFile(key, r, size, opts...)
	if err != nil {
		return nil, nil, err
	}
	return f, r, nil
}

// openFile is the one opener of Parquet files: every read of this package
// starts here. It opens the file of size bytes read through r with
// sluice's read options (no page index, no bloom filters: sluice uses
// neither unless opts say otherwise; large reads), turns a panic of
// parquet-go into an error, and tells a failed read of the object from
// bytes that are not Parquet (see readError). key names the file in
// errors.
func openFile(key string, r io.ReaderAt, size int64, opts ...parquet.FileOption) (*parquet.File, error) {
	if size < parquetMinSize {
		return nil, fmt.Errorf("%s: %w: %d bytes is too small (a Parquet file has at least %d)", key, ErrCorruptFile, size, parquetMinSize)
	}
	opts = append([]parquet.FileOption{
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(parquetReadBufferSize),
	}, opts...)
	var f *parquet.File
	err := noPanic(func() (err error) {
		f, err = parquet.OpenFile(r, size, opts...)
		return err
	})
	if err != nil {
		if sr, ok := r.(*storeReaderAt); ok {
			return nil, readError(key, sr, err)
		}
		return nil, fmt.Errorf("%s: %w: %s", key, ErrCorruptFile, cloud.OneLine(err.Error(), errLineLimit))
	}
	return f, nil
}

// readError tells a failed read of the object (the store's error, which
// names the key) from bytes that are not a valid Parquet file.
func readError(key string, r *storeReaderAt, err error) error {
	if ioErr := r.ioErr(); ioErr != nil {
		return ioErr
	}
	if r.truncated() {
		return fmt.Errorf("%s: %w: the object is shorter than the %d bytes expected (truncated?)", key, ErrCorruptFile, r.size)
	}
	return fmt.Errorf("%s: %w: %s", key, ErrCorruptFile, cloud.OneLine(err.Error(), errLineLimit))
}

// errLineLimit caps the cause quoted in ErrCorruptFile: parquet-go's
// thrift errors can spell out a long path through garbage.
const errLineLimit = 200

// noPanic runs fn and turns a panic into an error: parquet-go may panic on
// malformed input, and a bad file must fail its own work, not the process.
func noPanic(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed data: %v", p)
		}
	}()
	return fn()
}

// DescribeParquetFile maps an open file's columns to our types (as
// InspectParquet does) and returns its schema, its columns and its footer
// statistics. key names the file in errors; a column of an unsupported type
// fails with ErrUnsupportedType naming it.
func DescribeParquetFile(key string, f *parquet.File) (Schema, []ParquetColumn, FileStats, error) {
	schema, cols, stats, err := describeParquet(key, f)
	if err != nil {
		return Schema{}, nil, FileStats{}, err
	}
	out := make([]ParquetColumn, len(cols))
	for i, c := range cols {
		out[i] = ParquetColumn{Column: c.Column, Leaf: c.index, Kind: parquet.Kind(c.phys), Unit: c.unit}
	}
	return schema, out, stats, nil
}

// ParquetSchema returns the Parquet schema sluice writes a table of schema
// with: its columns in the table's order (not sorted by name, as
// parquet.Group would), with the physical types, logical types and
// encodings listed on ParquetWriter, and the field ids of the columns and
// nested children that have one (Column.ID).
func ParquetSchema(schema Schema) (*parquet.Schema, error) {
	return ParquetSchemaNoDict(schema, nil, nil)
}

// ParquetWriterOptions are the options sluice writes data files with: zstd,
// dictionaries that stop growing at parquet-mr's 1 MiB, statistics in the
// footer and the page index (column index), byte arrays' truncated to
// StatsTruncateBytes (the footer's by TruncateFooterStats, which a writer
// must call on the finished file). Page headers carry none: the
// column index has the same bounds, readers use it, and parquet-go would
// compute every page's bounds twice.
// Row group size is the caller's (parquet-go flushes a row group at
// MaxRowsPerRowGroup rows or when the caller calls Flush).
func ParquetWriterOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&parquet.Zstd),
		// parquet-go writes page header statistics unless told not to.
		parquet.DataPageStatistics(false),
		parquet.DictionaryMaxBytes(parquetDictionaryMaxBytes),
		// Page index bounds of byte arrays as long as the footer's (see
		// TruncateFooterStats): parquet-go cuts them, 16 bytes unless told.
		parquet.ColumnIndexSizeLimit(func([]string) int { return StatsTruncateBytes }),
	}
}

// NoPanic runs fn and turns a panic into an error, as every Parquet read
// and write of this package does: parquet-go may panic on malformed input,
// and a bad file must fail its own work, not the process.
func NoPanic(fn func() error) error { return noPanic(fn) }

// ParquetSchemaNoDict is ParquetSchema with the columns i for which
// noDict[i] holds written without a dictionary: for a column whose values
// are mostly distinct (ids, hashes), a dictionary only costs time until
// the writer gives up on it. Such a column is DELTA_LENGTH_BYTE_ARRAY when
// its values are byte arrays (as uuid columns always are: see
// uuidEncoding), else PLAIN. noDict may be shorter than the schema. codec,
// called once per column with its name, gives the column's codec; nil
// gives each column a codec of its own (see Codecs.For).
func ParquetSchemaNoDict(schema Schema, noDict []bool, codec func(column string) compress.Codec) (*parquet.Schema, error) {
	if codec == nil {
		codec = (*Codecs)(nil).For
	}
	ps, _, err := parquetFields(schema, noDict, codec)
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	return ps, nil
}

// parquetFields builds ParquetSchemaNoDict's schema and, for each column,
// the encoder of its Go values (see ParquetWriter).
func parquetFields(schema Schema, noDict []bool, codec func(column string) compress.Codec) (*parquet.Schema, []func(any) (parquet.Value, error), error) {
	if len(schema.Columns) == 0 {
		return nil, nil, errors.New("the schema has no columns")
	}
	if err := checkFieldIDs(schema); err != nil {
		return nil, nil, err
	}
	fields := make(orderedGroup, len(schema.Columns))
	enc := make([]func(any) (parquet.Value, error), len(schema.Columns))
	for i, c := range schema.Columns {
		if c.Type.Nested() {
			n, err := nestedNode(c, c.Name, codec)
			if err != nil {
				return nil, nil, err
			}
			fields[i] = &namedField{Node: n, name: c.Name}
			continue
		}
		n, e, err := columnNode(c)
		if err != nil {
			return nil, nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		// Texts without a dictionary compress faster and smaller
		// DELTA_LENGTH_BYTE_ARRAY than PLAIN (see uuidEncoding, which a
		// uuid column has whether or not noDict says so).
		if i < len(noDict) && noDict[i] {
			if n.Type().Kind() == parquet.ByteArray {
				n = parquet.Encoded(n, &parquet.DeltaLengthByteArray)
			} else {
				n = parquet.Encoded(n, &parquet.Plain)
			}
		}
		fields[i] = &namedField{Node: parquet.Compressed(n, codec(c.Name)), name: c.Name}
		enc[i] = e
	}
	return parquet.NewSchema("sluice", fields), enc, nil
}

// Stored returns the schema as a data file sluice wrote says it is when
// read back: a uuid column is written as a string (see ParquetWriter), so
// a file's schema reads string where the table says uuid, a nested
// column's uuid fields, elements, keys and values included.
func (s Schema) Stored() Schema {
	return Schema{Columns: storedColumns(s.Columns)}
}

func storedColumns(cs []Column) []Column {
	cols := slices.Clone(cs)
	for i := range cols {
		switch t := &cols[i].Type; {
		case t.Kind == KindUUID:
			t.Kind = KindString
		case t.Nested():
			t.Fields = storedColumns(t.Fields)
		}
	}
	return cols
}
