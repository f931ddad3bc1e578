package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// Errors of Rows the caller can act on: a wrong column or partition is the
// user's to fix, a table with deletes is not readable here.
var (
	// ErrUnknownColumn: RowOptions.Columns names no column of the table.
	ErrUnknownColumn = errors.New("no such column")
	// ErrUnknownPartition: RowOptions.Partition is no partition of the
	// version read.
	ErrUnknownPartition = errors.New("no such partition")
	// ErrDeletes: rows of a live file are deleted by other files
	// (Iceberg delete files), which this reader does not apply: showing
	// the file's rows would show deleted ones.
	ErrDeletes = errors.New("the table has rows deleted by delete files, which sluice does not apply when reading")
)

// RowOptions say which rows Rows reads.
type RowOptions struct {
	// Version is the version to read; zero: the newest (so a Delta
	// table's version 0 is read here only while it is its newest).
	Version int64
	// Limit is the most rows read; zero or less: every row.
	Limit int
	// Columns are the columns read, in this order; empty: every column
	// of the table (its partition columns found only in folder names
	// included).
	Columns []string
	// Partition reads one partition only: its Hive folder
	// ("date=2024-01-31"). Empty: every partition.
	Partition string
}

// Rows reads rows of t: it calls fn once with the column names ([]any of
// strings), then with each row (values as pqio reads them: see
// pqio.FormatValue's list of Go types; nested values as map[string]any,
// []any and []pqio.MapEntry) until Limit rows are out. Files are read one
// at a time, in path order, each streamed, and reading stops as soon as
// Limit rows are out. It returns the columns read. An error from fn stops
// the read and is returned as is.
func Rows(ctx context.Context, t *Table, o RowOptions, fn func(row []any) error) (cols []catalog.Column, err error) {
	where := cloud.Redact(t.loc)
	m, err := t.at(ctx, o.Version)
	if err != nil {
		return nil, err
	}
	schema := catalog.ReadSchema(m)
	idx, err := projection(schema, o.Columns, where)
	if err != nil {
		return nil, err
	}
	cols = make([]catalog.Column, len(idx))
	names := make([]any, len(idx))
	for i, j := range idx {
		cols[i], names[i] = schema.Columns[j], schema.Columns[j].Name
	}
	files, err := t.Files(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	files, err = inPartition(files, o.Partition, where, m.Version)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(files, func(f catalog.DataFile) bool { return f.HasDeletes }); i >= 0 {
		return nil, fmt.Errorf("%s: %w (%s has them)", where, ErrDeletes, t.fileURL(files[i]))
	}
	if err := fn(names); err != nil {
		return cols, err
	}
	n := 0
	for _, f := range files {
		if o.Limit > 0 && n >= o.Limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return cols, err
		}
		if err := readFile(ctx, t, schema, f, func(row []any) error {
			if o.Limit > 0 && n >= o.Limit {
				return errEnough
			}
			out := make([]any, len(idx))
			for i, j := range idx {
				out[i] = row[j]
			}
			n++
			return fn(out)
		}); err != nil && !errors.Is(err, errEnough) {
			return cols, err
		}
	}
	return cols, nil
}

// errEnough stops a file's scan once the limit is reached.
var errEnough = errors.New("enough rows")

// at reads version v of t, the newest for 0.
func (t *Table) at(ctx context.Context, v int64) (*catalog.Manifest, error) {
	if v == 0 {
		return t.Latest(ctx)
	}
	return t.Version(ctx, v)
}

// projection gives the indexes in schema of the columns named (all
// columns when none is), refusing a name that is none of them with
// ErrUnknownColumn, listing the table's.
func projection(schema catalog.Schema, names []string, where string) ([]int, error) {
	if len(names) == 0 {
		idx := make([]int, len(schema.Columns))
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	idx := make([]int, len(names))
	for i, name := range names {
		j := slices.IndexFunc(schema.Columns, func(c catalog.Column) bool { return c.Name == name })
		if j < 0 {
			all := make([]string, len(schema.Columns))
			for k, c := range schema.Columns {
				all[k] = fmt.Sprintf("%q", c.Name)
			}
			return nil, fmt.Errorf("%s: column %q: %w (the table's columns: %s)", where, name, ErrUnknownColumn, strings.Join(all, ", "))
		}
		idx[i] = j
	}
	return idx, nil
}

// inPartition keeps the files of partition p (all of them when p is
// empty), refusing a partition without files with ErrUnknownPartition.
func inPartition(files []catalog.DataFile, p, where string, version int64) ([]catalog.DataFile, error) {
	if p == "" {
		return files, nil
	}
	var out []catalog.DataFile
	for _, f := range files {
		if f.Partition == p {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: partition %q: %w at version %d (a Hive folder, as sluice files lists it: date=2024-01-31)", where, p, ErrUnknownPartition, version)
	}
	return out, nil
}

// readFile streams the rows of data file f as schema: a column the file
// lacks that is one of its partition fields (Spark and Delta keep those
// in folder names and logs) gets the file's partition value, any other
// reads as NULL.
func readFile(ctx context.Context, t *Table, schema catalog.Schema, f catalog.DataFile, fn func(row []any) error) error {
	st, key, err := t.dataFileStore(ctx, f)
	if err != nil {
		return fmt.Errorf("open %s: %w", cloud.Redact(t.fileURL(f)), err)
	}
	err = catalog.ScanDataFile(ctx, st, key, f, schema, fn)
	if err != nil && !errors.Is(err, errEnough) {
		return fmt.Errorf("read %s: %w", cloud.Redact(t.fileURL(f)), err)
	}
	return err
}
