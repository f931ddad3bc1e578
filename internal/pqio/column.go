package pqio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
)

// ScanParquetColumn calls fn with every value of one column of the Parquet
// file at key (size bytes), in row order: nil for NULL, otherwise the
// value converted to col's type as ReadParquetRows converts it. Only that
// column's pages are read, so looking up one column of a wide file costs
// that column's bytes, not the file's. A file without the column calls fn
// with nil for every row, as a nullable column added later reads; a file
// whose column does not read as col's type fails with
// ErrIncompatibleSchema. An error from fn stops the scan and is returned
// as is. The context is checked every 1,024 values.
func ScanParquetColumn(ctx context.Context, st cloud.Store, key string, size int64, col Column, fn func(v any) error) error {
	f, r, err := openParquet(ctx, st, key, size)
	if err != nil {
		return err
	}
	cols, err := fileColumns(key, f.Metadata()) // the columns only: no statistics
	if err != nil {
		return err
	}
	var fc *fileColumn
	for i := range cols {
		if cols[i].Name == col.Name {
			fc = &cols[i]
		}
	}
	if fc == nil {
		for range f.NumRows() {
			if err := fn(nil); err != nil {
				return err
			}
		}
		return nil
	}
	if !readableAs(fc.Type, col.Type) {
		return fmt.Errorf("%s: %w: column %q: the file has %s, the table %s", key, ErrIncompatibleSchema, col.Name, fc.Type, col.Type)
	}
	decode, widen := fc.decoder(), widener(fc.Type, col.Type)
	var fnErr error
	vals := make([]parquet.Value, 1024)
	err = noPanic(func() error {
		for g, rg := range f.RowGroups() {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := 0
			if err := scanChunk(rg.ColumnChunks()[fc.index], vals, func(v parquet.Value) error {
				if n++; n%len(vals) == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				var x any
				if !v.IsNull() {
					x = decode(v)
					if widen != nil {
						x = widen(x)
					}
				}
				if err := fn(x); err != nil {
					fnErr = err
					return err
				}
				return nil
			}); err != nil {
				if fnErr != nil {
					return err
				}
				return fmt.Errorf("row group %d: column %q: %w", g, col.Name, err)
			}
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil && errors.Is(err, fnErr):
		return fnErr
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("%s: %w", key, err)
	default:
		return readError(key, r, err)
	}
}

// scanChunk calls fn with every value of a column chunk, in order, read
// into vals a batch at a time.
func scanChunk(c parquet.ColumnChunk, vals []parquet.Value, fn func(parquet.Value) error) error {
	r := parquet.NewColumnChunkValueReader(c)
	defer r.Close()
	for {
		n, err := r.ReadValues(vals)
		for _, v := range vals[:n] {
			if ferr := fn(v); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
