package pqio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
)

// Reading flat files column by column, for a consumer that encodes values
// straight from their Parquet form (a warehouse's binary COPY): row-wise
// reading (ScanParquet) reassembles every row from its columns and boxes
// every value in an interface, which cost more than decompressing the
// pages did. Here each column's values are read page by page into a
// reused batch of parquet.Value, converted only where the file's type is
// not the table's.

// batchRowsMax caps the rows of one ColumnBatch.
const batchRowsMax = 1024

// ColumnBatch is a run of consecutive rows of a file, held column by
// column. It is reused from one call of the scan's fn to the next.
type ColumnBatch struct {
	// Rows is the number of rows in the batch, at least 1.
	Rows int
	// Columns holds, for each column of the schema read as, the batch's
	// values in row order: NULL as a value whose IsNull holds, any other
	// in the table column's Parquet representation (the physical type
	// ParquetSchema writes it with: a uuid as its text, a date as INT32
	// days since 1970-01-01, a timestamp as INT64 microseconds since the
	// Unix epoch, a decimal as INT32, INT64 or FIXED_LEN_BYTE_ARRAY of
	// its unscaled value at the table's scale). A column the file lacks
	// is nil: NULL in every row. A byte array value points into the
	// file's page buffers and is valid only until fn returns.
	Columns [][]parquet.Value
}

// ScanParquetBatches is ScanParquetAs read column by column: fn is called
// with batches of rows in file order, their values converted to the
// table's types as ReadParquetRows converts them but kept as Parquet
// values (see ColumnBatch). The schema read as must be flat: a nested
// column fails the scan before any row is read (read it with
// ScanParquetAs). A NULL in a file column that the table declares not
// nullable fails with ErrIncompatibleSchema naming the row, as
// ScanParquetAs does. An error from fn stops the scan and is returned as
// is. The context is checked between batches.
func ScanParquetBatches(ctx context.Context, st cloud.Store, key string, size int64, schemaFor func(file Schema) Schema, fn func(b *ColumnBatch) error) error {
	f, r, err := openParquet(ctx, st, key, size)
	if err != nil {
		return err
	}
	fileSchema, cols, _, err := DescribeParquetFile(key, f)
	if err != nil {
		return err
	}
	schema := schemaFor(fileSchema)
	if err := CheckCompatible(schema, fileSchema, key); err != nil {
		return err
	}
	plans, err := newBatchPlans(key, schema, cols)
	if err != nil {
		return err
	}
	var fnErr error
	err = noPanic(func() error {
		s := batchScan{ctx: ctx, key: key, plans: plans, batch: newColumnBatch(plans)}
		for g, rg := range f.RowGroups() {
			if err := s.rowGroup(rg, func(b *ColumnBatch) error {
				if err := fn(b); err != nil {
					fnErr = err
					return err
				}
				return nil
			}); err != nil {
				if fnErr != nil || errors.Is(err, ctx.Err()) || isNullError(err) {
					return err
				}
				return fmt.Errorf("row group %d: %w", g, err)
			}
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil && errors.Is(err, fnErr):
		return fnErr
	case isNullError(err):
		return err
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("%s: %w", key, err)
	default:
		return readError(key, r, err)
	}
}

func isNullError(err error) bool {
	var ne *nullError
	return errors.As(err, &ne)
}

// batchPlan is how one file column fills one table column of a batch.
type batchPlan struct {
	leaf     int // the file's leaf index; -1: the file lacks the column
	conv     func(parquet.Value) (parquet.Value, error)
	nullable bool
	name     string
}

func newBatchPlans(key string, schema Schema, cols []ParquetColumn) ([]batchPlan, error) {
	ps, err := ParquetSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	fields := ps.Fields()
	plans := make([]batchPlan, len(schema.Columns))
	for j, tc := range schema.Columns {
		if tc.Type.Nested() {
			return nil, fmt.Errorf("%s: column %q: a nested column cannot be read in batches", key, tc.Name)
		}
		plans[j] = batchPlan{leaf: -1, nullable: tc.Nullable, name: tc.Name}
		for _, c := range cols {
			if c.Name != tc.Name {
				continue
			}
			conv, err := Converter(c, tc, fields[j].Type())
			if err != nil {
				return nil, fmt.Errorf("%s: column %q: %w", key, tc.Name, err)
			}
			plans[j].leaf, plans[j].conv = c.Leaf, conv
		}
	}
	return plans, nil
}

func newColumnBatch(plans []batchPlan) *ColumnBatch {
	b := &ColumnBatch{Columns: make([][]parquet.Value, len(plans))}
	for j, p := range plans {
		if p.leaf >= 0 {
			b.Columns[j] = make([]parquet.Value, batchRowsMax)
		}
	}
	return b
}

// batchScan reads the row groups of one file into batches.
type batchScan struct {
	ctx   context.Context
	key   string
	plans []batchPlan
	batch *ColumnBatch
	row   int64 // rows of the file read so far, for errors
}

// leafPages is the page being read of one column chunk: a batch never
// spans two pages of a column, so the values of a batch stay valid until
// the page is released, after fn has seen them.
type leafPages struct {
	pages  parquet.Pages
	page   parquet.Page
	values parquet.ValueReader
	left   int64 // values of page not yet read
}

func (l *leafPages) release() {
	if l.page != nil {
		parquet.Release(l.page)
		l.page, l.values = nil, nil
	}
}

// next makes sure the current page has values left, reading the next one
// when it has none.
func (l *leafPages) next() error {
	for l.left == 0 {
		l.release()
		p, err := l.pages.ReadPage()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("a column chunk has fewer values than the row group has rows")
			}
			return err
		}
		l.page, l.values, l.left = p, p.Values(), p.NumValues()
	}
	return nil
}

// rowGroup calls fn with the batches of one row group.
func (s *batchScan) rowGroup(rg parquet.RowGroup, fn func(*ColumnBatch) error) error {
	chunks := rg.ColumnChunks()
	leaves := make([]*leafPages, len(s.plans))
	defer func() {
		for _, l := range leaves {
			if l != nil {
				l.release()
				l.pages.Close()
			}
		}
	}()
	for j, p := range s.plans {
		if p.leaf < 0 {
			continue
		}
		if p.leaf >= len(chunks) {
			return fmt.Errorf("column %q: no column chunk %d", p.name, p.leaf)
		}
		leaves[j] = &leafPages{pages: chunks[p.leaf].Pages()}
	}
	for left := rg.NumRows(); left > 0; {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		n := min(left, batchRowsMax)
		for j, l := range leaves {
			if l == nil {
				continue
			}
			if err := l.next(); err != nil {
				return fmt.Errorf("column %q: %w", s.plans[j].name, err)
			}
			n = min(n, l.left)
		}
		s.batch.Rows = int(n)
		for j, l := range leaves {
			if l == nil {
				continue
			}
			if err := s.readColumn(j, l, int(n)); err != nil {
				return err
			}
		}
		if err := fn(s.batch); err != nil {
			return err
		}
		s.row += n
		left -= n
	}
	return nil
}

// readColumn reads the next n values of column j's page into the batch,
// converted to the table's type.
func (s *batchScan) readColumn(j int, l *leafPages, n int) error {
	p := &s.plans[j]
	vals := s.batch.Columns[j][:n]
	for got := 0; got < n; {
		k, err := l.values.ReadValues(vals[got:])
		got += k
		if got < n && err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("column %q: a page has fewer values than its header says", p.name)
			}
			return fmt.Errorf("column %q: %w", p.name, err)
		}
		if k == 0 && err == nil {
			return fmt.Errorf("column %q: %w", p.name, io.ErrNoProgress)
		}
	}
	l.left -= int64(n)
	for i := range vals {
		if vals[i].IsNull() {
			if !p.nullable {
				return &nullError{key: s.key, column: p.name, row: s.row + int64(i)}
			}
			continue
		}
		if p.conv != nil {
			v, err := p.conv(vals[i])
			if err != nil {
				return fmt.Errorf("column %q: row %d: %w", p.name, s.row+int64(i), err)
			}
			vals[i] = v
		}
	}
	return nil
}
