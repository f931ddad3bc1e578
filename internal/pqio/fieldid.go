package pqio

import (
	"fmt"
	"math"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// --- Parquet field ids -----------------------------------------------------------

// Iceberg readers resolve a Parquet file's columns by field id, the
// field_id of each schema element in the footer, not by name. A column
// (or a nested type's child) whose Column.ID is set is written with it as
// its field id, and a file's field ids are read into Column.ID; a column
// with none (0) writes none, so that a schema without ids writes the same
// bytes as before ids existed.

// withFieldID is n with the field id id, or n itself when id is 0.
// parquet-go's wrappers (Optional, Required, Encoded, Compressed, List,
// Map and the orderedGroup's namedField) embed the node they wrap, so the
// id set here reaches the footer through any of them.
func withFieldID(n parquet.Node, id int) parquet.Node {
	if id == 0 {
		return n
	}
	return parquet.FieldID(n, id)
}

// elemFieldID is the field id a footer's schema element e gives its
// column, 0 when it has none.
func elemFieldID(e *format.SchemaElement) int { return int(e.FieldID) }

// checkFieldIDs refuses field ids that a footer cannot hold or that would
// make readers resolving columns by id read the wrong one: a negative id,
// one past int32 (the footer's type) and one given to two columns or
// nested children.
func checkFieldIDs(schema Schema) error {
	seen := map[int]string{}
	var walk func(path string, c Column) error
	walk = func(path string, c Column) error {
		switch {
		case c.ID < 0 || c.ID > math.MaxInt32:
			return fmt.Errorf("column %q: field id %d is out of range (1 to %d, or 0 for none)", path, c.ID, math.MaxInt32)
		case c.ID > 0:
			if prev, dup := seen[c.ID]; dup {
				return fmt.Errorf("field id %d is given to both %q and %q", c.ID, prev, path)
			}
			seen[c.ID] = path
		}
		for _, f := range c.Type.Fields {
			if err := walk(path+"."+f.Name, f); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range schema.Columns {
		if err := walk(c.Name, c); err != nil {
			return err
		}
	}
	return nil
}

// mergeID is the field id of a column merged from two columns of the same
// name (see MergeSchemas) with ids a and b: the one they agree on, or the
// only one given; none when they give different ones, since then the two
// are not known to be the same column.
func mergeID(a, b int) int {
	switch {
	case a == b, b == 0:
		return a
	case a == 0:
		return b
	}
	return 0
}

// WithoutIDs is s with every field id, nested ones too, removed: the
// schema of a table whose own files carry none (a sluice table, whose
// Iceberg mirror numbers its columns itself), whatever ids the files it
// was inferred from had.
func (s Schema) WithoutIDs() Schema {
	out := Schema{Columns: make([]Column, len(s.Columns))}
	for i, c := range s.Columns {
		out.Columns[i] = c.withoutIDs()
	}
	return out
}

func (c Column) withoutIDs() Column {
	c.ID = 0
	if c.Type.Fields != nil {
		fields := make([]Column, len(c.Type.Fields))
		for i, f := range c.Type.Fields {
			fields[i] = f.withoutIDs()
		}
		c.Type.Fields = fields
	}
	return c
}
