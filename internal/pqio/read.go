package pqio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
)

// --- reading rows ------------------------------------------------------------

// ReadParquetRows reads every row of the Parquet file at key (size bytes)
// as the table schema: columns in the table's order, values converted to
// the table's types (int32 → int64, decimal scale widened, INT96 and
// millisecond timestamps to microseconds in UTC), NULL for a nullable table
// column the file lacks. A nested column's value is assembled from its
// leaves in any layout the Parquet format lists (see nested.go) as
// map[string]any, []any and []MapEntry (see Type), its leaves widened
// alike and a struct field the file lacks NULL. A file that cannot be read as the table fails with
// ErrIncompatibleSchema before any row is read; see ScanParquet to stream.
func ReadParquetRows(ctx context.Context, st cloud.Store, key string, size int64, schema Schema) ([][]any, error) {
	var rows [][]any
	err := ScanParquet(ctx, st, key, size, schema, func(row []any) error {
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// ScanParquet is ReadParquetRows calling fn once per row instead of
// collecting them, so a file of any size streams in bounded memory. Each
// row is a fresh slice that fn may keep. An error from fn stops the scan and
// is returned as is. The context is checked between batches of rows.
func ScanParquet(ctx context.Context, st cloud.Store, key string, size int64, schema Schema, fn func(row []any) error) error {
	return ScanParquetAs(ctx, st, key, size, func(Schema) Schema { return schema }, fn)
}

// ScanParquetAs is ScanParquet with the schema to read as chosen by
// schemaFor from the file's own (see InspectParquet), for a reader whose
// columns depend on what the file holds, without opening it twice.
func ScanParquetAs(ctx context.Context, st cloud.Store, key string, size int64, schemaFor func(file Schema) Schema, fn func(row []any) error) error {
	f, r, err := openParquet(ctx, st, key, size)
	if err != nil {
		return err
	}
	return scanFile(ctx, key, f, schemaFor, fn, func(err error) error { return readError(key, r, err) })
}

// ScanParquetFile is ScanParquet over a file already open (see
// OpenParquetFile), read as schema.
func ScanParquetFile(ctx context.Context, key string, f *parquet.File, schema Schema, fn func(row []any) error) error {
	return scanFile(ctx, key, f, func(Schema) Schema { return schema }, fn, func(err error) error {
		return fmt.Errorf("%s: %w: %s", key, ErrCorruptFile, cloud.OneLine(err.Error(), errLineLimit))
	})
}

// scanFile is ScanParquetAs over an open file; readErr makes the error of
// a failed read.
func scanFile(ctx context.Context, key string, f *parquet.File, schemaFor func(file Schema) Schema, fn func(row []any) error, readErr func(error) error) error {
	fileSchema, cols, _, err := describeParquet(key, f)
	if err != nil {
		return err
	}
	schema := schemaFor(fileSchema)
	if err := CheckCompatible(schema, fileSchema, key); err != nil {
		return err
	}
	rp, err := newReadPlan(cols, schema)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	byLeaf, names, nested := rp.byLeaf, rp.names, rp.nested
	var asm assembler
	if nested != nil {
		asm.leaves, asm.pos = make([][]parquet.Value, len(byLeaf)), make([]int, len(byLeaf))
	}

	var fnErr error
	rowNum := int64(0)
	buf := make([]parquet.Row, 256)
	err = noPanic(func() error {
		for g, rg := range f.RowGroups() {
			if err := ctx.Err(); err != nil {
				return err
			}
			rows := rg.Rows()
			for {
				if err := ctx.Err(); err != nil {
					rows.Close()
					return err
				}
				n, rerr := rows.ReadRows(buf)
				for _, prow := range buf[:n] {
					out := make([]any, len(schema.Columns))
					for l := range asm.leaves {
						asm.leaves[l], asm.pos[l] = asm.leaves[l][:0], 0
					}
					for _, v := range prow {
						ci := v.Column()
						if ci < 0 || ci >= len(byLeaf) {
							rows.Close()
							return fmt.Errorf("row group %d: value of unknown column %d", g, ci)
						}
						p := byLeaf[ci]
						if p == nil {
							asm.leaves[ci] = append(asm.leaves[ci], v)
							continue
						}
						if v.IsNull() {
							if !p.nullable {
								rows.Close()
								return &nullError{key: key, column: names[ci], row: rowNum}
							}
							continue
						}
						x := p.decode(v)
						if p.widen != nil {
							x = p.widen(x)
						}
						out[p.to] = x
					}
					for i := range nested {
						x, err := nested[i].read(&asm)
						if err != nil {
							rows.Close()
							var ne *nullError
							if errors.As(err, &ne) {
								ne.key, ne.row = key, rowNum
								return ne
							}
							return fmt.Errorf("row group %d: row %d: %w", g, rowNum, err)
						}
						out[nested[i].to] = x
					}
					rowNum++
					if err := fn(out); err != nil {
						fnErr = err
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
		}
		return nil
	})
	var ne *nullError
	switch {
	case err == nil:
		return nil
	case fnErr != nil && errors.Is(err, fnErr):
		return fnErr
	case errors.As(err, &ne):
		return err
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("%s: %w", key, err)
	default:
		return readErr(err)
	}
}

// nullError is a NULL found in a column the table declares not nullable.
type nullError struct {
	key    string
	column string
	row    int64
}

func (e *nullError) Error() string {
	return fmt.Sprintf("%s: column %q: NULL in row %d but the table column is not nullable: %s", e.key, e.column, e.row, ErrIncompatibleSchema)
}

func (e *nullError) Unwrap() error { return ErrIncompatibleSchema }

// plan is how a flat file column fills its table column: where it goes in
// the table row, and how it converts.
type plan struct {
	to       int
	nullable bool
	decode   func(parquet.Value) any
	widen    func(any) any
}

// readPlan is how a file's columns fill the table's row.
type readPlan struct {
	// byLeaf is the plan of each flat column's leaf; a nested column's
	// leaves have none: their values are gathered per row and assembled
	// into the column's value (nested).
	byLeaf []*plan
	names  []string // the column of each leaf, by name, for errors
	nested []nestedPlan
}

func newReadPlan(cols []fileColumn, schema Schema) (readPlan, error) {
	leafCount := 0
	for _, c := range cols {
		leafCount = max(leafCount, c.index+max(len(c.leaves), 1))
	}
	rp := readPlan{byLeaf: make([]*plan, leafCount), names: make([]string, leafCount)}
	for _, c := range cols {
		rp.names[c.index] = c.Name
		to := -1
		for j, tc := range schema.Columns {
			if tc.Name == c.Name {
				to = j
			}
		}
		tc := schema.Columns[to]
		if c.leaves != nil {
			np, err := newNestedPlan(c, tc, to)
			if err != nil {
				return readPlan{}, err
			}
			rp.nested = append(rp.nested, np)
			continue
		}
		rp.byLeaf[c.index] = &plan{to: to, nullable: tc.Nullable, decode: c.decoder(), widen: widener(c.Type, tc.Type)}
	}
	return rp, nil
}

// nestedPlan is how a nested file column fills its table column.
type nestedPlan struct {
	to       int
	tree     *levelNode // the file's type, with its leaves' decoders
	from, as Type
	nullable bool
	name     string
}

func newNestedPlan(c fileColumn, tc Column, to int) (nestedPlan, error) {
	tree, err := newLevelTree(c.Column, c.index)
	if err != nil {
		return nestedPlan{}, err
	}
	var setDec func(n *levelNode)
	setDec = func(n *levelNode) {
		if n.children == nil {
			n.dec = c.leaves[n.leaf-c.index].decoder()
		}
		for _, ch := range n.children {
			setDec(ch)
		}
	}
	setDec(tree)
	return nestedPlan{to: to, tree: tree, from: c.Type, as: tc.Type, nullable: tc.Nullable, name: c.Name}, nil
}

// read assembles the column's value of the row in a and converts it to the
// table's type.
func (p *nestedPlan) read(a *assembler) (any, error) {
	v, err := a.assemble(p.tree)
	if err != nil {
		return nil, err
	}
	if v == nil {
		if !p.nullable {
			return nil, &nullError{column: p.name}
		}
		return nil, nil
	}
	return castNested(v, p.from, p.as, p.name)
}
