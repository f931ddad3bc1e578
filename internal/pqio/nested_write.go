package pqio

import (
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// --- writing nested columns ------------------------------------------------------

// This file holds what writes nested columns: their Parquet nodes, the
// Shredder that turns rows into leaf values with their levels (for the
// writer and for a rewrite's verification), and the copy of Parquet rows
// from a file stored as the writer would store them (SameLayout,
// ParquetWriter.WriteRows).

// nestedNode is the Parquet node of a nested table column: structs as
// groups in field order, lists in the three-level LIST layout
// (list/element), maps as MAP of key_value; every leaf compressed by the
// codec its path gives. Each node carries its column's field id: a
// struct's, list's or map's on its group, a list element's on element, a
// map key's and value's on key and value (the layout Iceberg writes).
func nestedNode(c Column, path string, codec func(string) compress.Codec) (parquet.Node, error) {
	var n parquet.Node
	switch c.Type.Kind {
	case KindStruct:
		g := make(orderedGroup, len(c.Type.Fields))
		for i, f := range c.Type.Fields {
			fn, err := nestedNode(f, path+"."+f.Name, codec)
			if err != nil {
				return nil, err
			}
			g[i] = &namedField{Node: fn, name: f.Name}
		}
		n = g
	case KindList:
		en, err := nestedNode(c.Type.Fields[0], path+".element", codec)
		if err != nil {
			return nil, err
		}
		n = parquet.List(en)
	case KindMap:
		kn, err := nestedNode(c.Type.Fields[0], path+".key", codec)
		if err != nil {
			return nil, err
		}
		vn, err := nestedNode(c.Type.Fields[1], path+".value", codec)
		if err != nil {
			return nil, err
		}
		n = parquet.Map(kn, vn)
	default:
		ln, _, err := columnNode(c)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", path, err)
		}
		return parquet.Compressed(ln, codec(path)), nil
	}
	if c.Nullable {
		return withFieldID(parquet.Optional(n), c.ID), nil
	}
	return withFieldID(parquet.Required(n), c.ID), nil
}

// Shredder turns rows of a schema into Parquet rows: every leaf's values
// with their repetition and definition levels and leaf index, as the
// ParquetWriter writes them. A rewrite hashes them to verify what it
// wrote (levels included, so that [[1],[2]] and [[1,2]] differ).
type Shredder struct {
	trees  []*levelNode
	leaves [][]parquet.Value
}

// NewShredder returns the Shredder of schema.
func NewShredder(schema Schema) (*Shredder, error) {
	s := &Shredder{}
	leaf := 0
	for _, c := range schema.Columns {
		t, err := newLevelTree(c, leaf)
		if err != nil {
			return nil, err
		}
		s.trees = append(s.trees, t)
		leaf = t.end
	}
	s.leaves = make([][]parquet.Value, leaf)
	return s, nil
}

// Leaves is the number of leaf columns.
func (s *Shredder) Leaves() int { return len(s.leaves) }

// Shred appends row's leaf values to dst, in leaf order, and returns it.
// Byte arrays may share memory with row's values.
func (s *Shredder) Shred(row []any, dst parquet.Row) (parquet.Row, error) {
	if len(row) != len(s.trees) {
		return dst, fmt.Errorf("%d values, the schema has %d columns", len(row), len(s.trees))
	}
	for l := range s.leaves {
		s.leaves[l] = s.leaves[l][:0]
	}
	for i, t := range s.trees {
		if err := t.shred(row[i], 0, s.leaves); err != nil {
			return dst, err
		}
	}
	for _, vs := range s.leaves {
		dst = append(dst, vs...)
	}
	return dst, nil
}

// HasNested tells whether a schema has a struct, list or map column.
func HasNested(s Schema) bool { return hasNested(s) }

// SameLayout tells whether the open file f (key names it) stores table's
// columns exactly as a file sluice writes for it would: the same columns
// in the same order, the same types and nullability at every level, and
// every leaf in the physical type and unit sluice writes. Its rows, leaf
// values with their levels (parquet.Row), then copy unchanged into such a
// file, with no conversion.
func SameLayout(table Schema, key string, f *parquet.File) bool {
	cols, err := fileColumns(key, f.Metadata())
	if err != nil || len(cols) != len(table.Columns) {
		return false
	}
	stored := table.Stored()
	for i, tc := range stored.Columns {
		c := cols[i]
		if c.Name != tc.Name || c.Nullable != tc.Nullable || !c.Type.Equal(tc.Type) {
			return false
		}
		leaves := c.leaves
		if leaves == nil {
			leaves = []fileColumn{c}
		}
		for _, l := range leaves {
			if !writtenPhysical(l) {
				return false
			}
		}
	}
	return true
}

// writtenPhysical tells whether a leaf's physical type (and unit) is the
// one ParquetWriter writes for its type.
func writtenPhysical(l fileColumn) bool {
	switch l.Type.Kind {
	case KindInt32, KindDate:
		return l.phys == format.Int32
	case KindInt64:
		return l.phys == format.Int64
	case KindFloat64:
		return l.phys == format.Double
	case KindBool:
		return l.phys == format.Boolean
	case KindTimestamp:
		return l.phys == format.Int64 && l.unit == 1e6
	case KindString, KindBinary:
		return l.phys == format.ByteArray
	case KindDecimal:
		switch p := l.Type.Precision; {
		case p <= 9:
			return l.phys == format.Int32
		case p <= 18:
			return l.phys == format.Int64
		default:
			return false // FIXED_LEN_BYTE_ARRAY of a length we would have to check
		}
	}
	return false
}

// WriteRows adds Parquet rows, leaf values with their levels, in the
// layout of the writer's schema (see SameLayout), as they are.
func (pw *ParquetWriter) WriteRows(rows []parquet.Row) error {
	if pw.done {
		return errors.New("parquet writer: write after Close or Abort")
	}
	for _, r := range rows {
		for i := range r {
			pw.pending += valueBytes(r[i])
		}
	}
	if err := noPanic(func() error {
		_, err := pw.w.WriteRows(rows)
		return err
	}); err != nil {
		return fmt.Errorf("parquet writer: row %d: %w", pw.rows, err)
	}
	pw.rows += int64(len(rows))
	pw.groupRows += len(rows)
	if pw.groupRows >= parquetRowGroupRows {
		return pw.FlushRowGroup()
	}
	return nil
}
