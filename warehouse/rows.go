package warehouse

import (
	"context"
	"fmt"

	"github.com/sluice-data/sluice/catalog"
)

// batchRows is how many rows travel from the file reader to COPY at once;
// with batchesInFlight, what a load holds beyond the reader's row group.
const (
	batchRows       = 1024
	batchesInFlight = 4
)

// rowSource streams the rows of a table version's live files, file by
// file and row group by row group (catalog.ScanDataFile), into SQLite's
// inserts: a reader goroutine feeds it through a bounded channel, so the
// table is never held in memory. (PostgreSQL's COPY data is encoded in
// copy.go.)
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

// Next moves to the next row, false after the last one or an error.
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

// Values is the current row.
func (s *rowSource) Values() ([]any, error) { return s.batch[s.i], nil }

// Err is why Next returned false, nil after the last row.
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
