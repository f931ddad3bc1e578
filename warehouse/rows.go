package warehouse

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluice-data/sluice/catalog"
)

// batchRows is how many rows travel from the file reader to COPY at once;
// with batchesInFlight, what a load holds beyond the reader's row group.
const (
	batchRows       = 1024
	batchesInFlight = 4
)

// rowSource streams the rows of a table version's live files, file by
// file and row group by row group (catalog.ScanDataFile), into COPY: a
// pgx.CopyFromSource fed by a reader goroutine through a bounded channel,
// so the table is never held in memory.
type rowSource struct {
	ch     <-chan [][]any
	errc   <-chan error
	cancel context.CancelFunc
	batch  [][]any
	i      int
	err    error
	rows   int64
}

// converter turns a value in catalog's Go representation into the one a
// warehouse driver binds for the column.
type converter = func(any) (any, error)

// newRowSource starts reading files as schema, each value turned by the
// column's converter. Call close when done.
func newRowSource(ctx context.Context, t catalog.Readable, schema catalog.Schema, files []catalog.DataFile, conv []converter) *rowSource {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan [][]any, batchesInFlight)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		errc <- readFiles(ctx, t, schema, files, conv, ch)
	}()
	return &rowSource{ch: ch, errc: errc, cancel: cancel}
}

func readFiles(ctx context.Context, t catalog.Readable, schema catalog.Schema, files []catalog.DataFile, conv []converter, ch chan<- [][]any) error {
	batch := make([][]any, 0, batchRows)
	send := func() error {
		select {
		case ch <- batch:
			batch = make([][]any, 0, batchRows)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, f := range files {
		st, key, err := t.DataFileStore(ctx, f)
		if err != nil {
			return fmt.Errorf("open %s: %w", t.FileURL(f), err)
		}
		err = catalog.ScanDataFile(ctx, st, key, f, schema, func(row []any) error {
			for i, v := range row {
				if v == nil {
					if !schema.Columns[i].Nullable {
						return fmt.Errorf("column %q: NULL in a column that is not nullable", schema.Columns[i].Name)
					}
					continue
				}
				x, err := conv[i](v)
				if err != nil {
					return fmt.Errorf("column %q: %w", schema.Columns[i].Name, err)
				}
				row[i] = x
			}
			batch = append(batch, row)
			if len(batch) == batchRows {
				return send()
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read %s: %w", t.FileURL(f), err)
		}
	}
	if len(batch) > 0 {
		return send()
	}
	return nil
}

// folderColumn is the first column of the published schema whose values
// are a partition's (a Hive folder's, a Delta log's), not the files':
// "" when there is none.
func folderColumn(m *catalog.Manifest) string {
	schema := catalog.ReadSchema(m)
	for _, f := range m.Spec.Fields {
		if _, ok := schema.Column(f.Name); ok && f.Transform == "identity" {
			return f.Name
		}
	}
	return ""
}

// pgConverters turn a value in catalog's Go representation into one pgx
// encodes in binary COPY as the column's PostgreSQL type.
func pgConverters(schema catalog.Schema) []converter {
	out := make([]converter, len(schema.Columns))
	for i, c := range schema.Columns {
		switch c.Type.Kind {
		case catalog.KindUUID:
			out[i] = func(v any) (any, error) {
				u, err := uuid.Parse(v.(string))
				if err != nil {
					return nil, err
				}
				return [16]byte(u), nil
			}
		case catalog.KindDecimal:
			out[i] = func(v any) (any, error) { return numeric(v.(string)) }
		case catalog.KindString:
			out[i] = func(v any) (any, error) {
				s := v.(string)
				// PostgreSQL text holds neither NUL nor invalid UTF-8:
				// say so with the column's name rather than let COPY fail
				// with a byte offset.
				if strings.IndexByte(s, 0) >= 0 {
					return nil, errors.New("a NUL character, which PostgreSQL text cannot hold")
				}
				if !utf8.ValidString(s) {
					return nil, errors.New("invalid UTF-8, which PostgreSQL text cannot hold")
				}
				return s, nil
			}
		default:
			out[i] = func(v any) (any, error) { return v, nil }
		}
	}
	return out
}

// numeric converts a decimal in canonical form ("-123.45") exactly.
func numeric(s string) (pgtype.Numeric, error) {
	whole, frac, _ := strings.Cut(s, ".")
	var n big.Int
	if _, ok := n.SetString(whole+frac, 10); !ok {
		return pgtype.Numeric{}, fmt.Errorf("decimal %q: not a number", s)
	}
	return pgtype.Numeric{Int: &n, Exp: -int32(len(frac)), Valid: true}, nil
}

// Next implements pgx.CopyFromSource.
func (s *rowSource) Next() bool {
	s.i++
	for s.i >= len(s.batch) {
		b, ok := <-s.ch
		if !ok {
			s.err = <-s.errc
			s.batch = nil
			return false
		}
		s.batch, s.i = b, 0
	}
	s.rows++
	return true
}

// Values implements pgx.CopyFromSource.
func (s *rowSource) Values() ([]any, error) { return s.batch[s.i], nil }

// Err implements pgx.CopyFromSource.
func (s *rowSource) Err() error { return s.err }

// close stops the reader and waits for it.
func (s *rowSource) close() {
	s.cancel()
	for range s.ch {
	}
}

// liveFiles lists the data files of version m, the ones every warehouse
// loads, and their bytes in all.
func liveFiles(ctx context.Context, t catalog.Readable, m *catalog.Manifest) ([]catalog.DataFile, int64, error) {
	files, err := t.Files(ctx, m)
	if err != nil {
		return nil, 0, fmt.Errorf("list files: %w", err)
	}
	var size int64
	for _, f := range files {
		size += f.Bytes
	}
	return files, size, nil
}
