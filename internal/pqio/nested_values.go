package pqio

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// --- nested values: shredding into leaves and assembling from them --------------

// This file writes and reads the values of nested columns as Parquet
// stores them (Dremel's record shredding): each leaf holds one value per
// place its path stops, with a repetition level (at which list the value
// starts a new entry, 0 for a new row) and a definition level (how many of
// the optional and repeated elements above it are present).
//
// The Go values are map[string]any for a struct (a field absent or nil is
// NULL), []any for a list and []MapEntry for a map (a map[string]any is
// accepted for a map with string keys, and written in key order).

// levelNode is one element of a column's type tree with its levels.
type levelNode struct {
	t        Type
	name     string
	path     string
	nullable bool
	def      int // the definition level of a present value of this node
	rep      int // a list's or map's: the repetition level of its entries
	children []*levelNode
	leaf     int // a primitive's leaf index in the file
	first    int // the first leaf under the node
	end      int // one past its last leaf
	enc      func(any) (parquet.Value, error)
	dec      func(parquet.Value) any
}

// newLevelTree builds the tree of column c whose first leaf is leaf.
func newLevelTree(c Column, leaf int) (*levelNode, error) {
	next := leaf
	var build func(c Column, path string, parentDef, parentRep int) (*levelNode, error)
	build = func(c Column, path string, parentDef, parentRep int) (*levelNode, error) {
		n := &levelNode{t: c.Type, name: c.Name, path: path, nullable: c.Nullable, def: parentDef, first: next}
		if c.Nullable {
			n.def++
		}
		if !c.Type.Nested() {
			_, enc, err := columnNode(Column{Name: c.Name, Type: c.Type})
			if err != nil {
				return nil, fmt.Errorf("column %q: %w", path, err)
			}
			n.enc, n.leaf = enc, next
			next++
			n.end = next
			return n, nil
		}
		childDef, childRep := n.def, parentRep
		if c.Type.Kind != KindStruct {
			n.rep = parentRep + 1
			childDef, childRep = n.def+1, n.rep
		}
		for _, f := range c.Type.Fields {
			ch, err := build(f, path+"."+f.Name, childDef, childRep)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, ch)
		}
		n.end = next
		return n, nil
	}
	return build(c, c.Name, 0, 0)
}

// shred appends v's leaf values to leaves (one slice per leaf of the
// file, indexed by leaf), starting with repetition level r.
func (n *levelNode) shred(v any, r int, leaves [][]parquet.Value) error {
	if v == nil {
		if !n.nullable {
			return fmt.Errorf("column %q: NULL in a column that is not nullable", n.path)
		}
		n.nulls(r, n.def-1, leaves)
		return nil
	}
	switch n.t.Kind {
	case KindStruct:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("column %q: %T for a struct, want map[string]any", n.path, v)
		}
		for _, ch := range n.children {
			if err := ch.shred(m[ch.name], r, leaves); err != nil {
				return err
			}
		}
		return nil
	case KindList:
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("column %q: %T for a list, want []any", n.path, v)
		}
		if len(items) == 0 {
			n.nulls(r, n.def, leaves)
		}
		for i, x := range items {
			if i > 0 {
				r = n.rep
			}
			if err := n.children[0].shred(x, r, leaves); err != nil {
				return err
			}
		}
		return nil
	case KindMap:
		entries, err := mapEntries(v)
		if err != nil {
			return fmt.Errorf("column %q: %w", n.path, err)
		}
		if len(entries) == 0 {
			n.nulls(r, n.def, leaves)
		}
		for i, e := range entries {
			if i > 0 {
				r = n.rep
			}
			if err := n.children[0].shred(e.Key, r, leaves); err != nil {
				return err
			}
			if err := n.children[1].shred(e.Value, r, leaves); err != nil {
				return err
			}
		}
		return nil
	}
	pv, err := n.enc(v)
	if err != nil {
		return fmt.Errorf("column %q: %w", n.path, err)
	}
	leaves[n.leaf] = append(leaves[n.leaf], pv.Level(r, n.def, n.leaf))
	return nil
}

// mapEntries is a map value's entries: []MapEntry as is, a map[string]any
// in key order.
func mapEntries(v any) ([]MapEntry, error) {
	switch m := v.(type) {
	case []MapEntry:
		return m, nil
	case map[string]any:
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]MapEntry, len(keys))
		for i, k := range keys {
			out[i] = MapEntry{Key: k, Value: m[k]}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T for a map, want []MapEntry or map[string]any", v)
}

// nulls gives every leaf under n one NULL at levels r and d.
func (n *levelNode) nulls(r, d int, leaves [][]parquet.Value) {
	for l := n.first; l < n.end; l++ {
		leaves[l] = append(leaves[l], parquet.Value{}.Level(r, d, l))
	}
}

// assembler reads one row's nested values back from its leaves' values.
type assembler struct {
	leaves [][]parquet.Value // this row's values per leaf
	pos    []int
}

func (a *assembler) peek(l int) (parquet.Value, bool) {
	if a.pos[l] >= len(a.leaves[l]) {
		return parquet.Value{}, false
	}
	return a.leaves[l][a.pos[l]], true
}

func (a *assembler) skip(n *levelNode) {
	for l := n.first; l < n.end; l++ {
		a.pos[l]++
	}
}

// assemble reads the value of n at the leaves' current positions.
func (a *assembler) assemble(n *levelNode) (any, error) {
	v, ok := a.peek(n.first)
	if !ok {
		return nil, fmt.Errorf("column %q: fewer leaf values than its levels say", n.path)
	}
	d := v.DefinitionLevel()
	if d < n.def {
		a.skip(n)
		return nil, nil
	}
	switch n.t.Kind {
	case KindStruct:
		m := make(map[string]any, len(n.children))
		for _, ch := range n.children {
			x, err := a.assemble(ch)
			if err != nil {
				return nil, err
			}
			if x != nil {
				m[ch.name] = x
			}
		}
		return m, nil
	case KindList, KindMap:
		var items []any
		var entries []MapEntry
		if d > n.def {
			for {
				if n.t.Kind == KindList {
					x, err := a.assemble(n.children[0])
					if err != nil {
						return nil, err
					}
					items = append(items, x)
				} else {
					k, err := a.assemble(n.children[0])
					if err != nil {
						return nil, err
					}
					x, err := a.assemble(n.children[1])
					if err != nil {
						return nil, err
					}
					entries = append(entries, MapEntry{Key: k, Value: x})
				}
				next, ok := a.peek(n.first)
				if !ok || next.RepetitionLevel() != n.rep {
					break
				}
			}
		} else {
			a.skip(n) // an empty list or map
		}
		if n.t.Kind == KindList {
			if items == nil {
				items = []any{}
			}
			return items, nil
		}
		if entries == nil {
			entries = []MapEntry{}
		}
		return entries, nil
	}
	a.pos[n.leaf]++
	return n.dec(v), nil
}

// castNested converts a nested value of the file's type from to the
// table's type to (for which nestedProblems finds nothing): leaves widened,
// a struct's fields the file lacks NULL, a NULL where the table's type is
// not nullable an error naming the path.
func castNested(v any, from, to Type, path string) (any, error) {
	if v == nil || from.Equal(to) {
		return v, nil
	}
	if !to.Nested() {
		if w := widener(from, to); w != nil {
			return w(v), nil
		}
		return v, nil
	}
	field := func(x any, ff, tf Column, p string) (any, error) {
		y, err := castNested(x, ff.Type, tf.Type, p)
		if err == nil && y == nil && !tf.Nullable {
			err = fmt.Errorf("column %q: NULL but the table's type is not nullable there: %w", p, ErrIncompatibleSchema)
		}
		return y, err
	}
	switch to.Kind {
	case KindStruct:
		m := v.(map[string]any)
		out := make(map[string]any, len(to.Fields))
		for _, tf := range to.Fields {
			ff, ok := fieldOf(from, tf.Name)
			if !ok {
				ff = tf
			}
			y, err := field(m[tf.Name], ff, tf, path+"."+tf.Name)
			if err != nil {
				return nil, err
			}
			if y != nil {
				out[tf.Name] = y
			}
		}
		return out, nil
	case KindList:
		items := v.([]any)
		out := make([]any, len(items))
		for i, x := range items {
			y, err := field(x, from.Fields[0], to.Fields[0], path+".element")
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	entries := v.([]MapEntry)
	out := make([]MapEntry, len(entries))
	for i, e := range entries {
		k, err := field(e.Key, from.Fields[0], to.Fields[0], path+".key")
		if err != nil {
			return nil, err
		}
		x, err := field(e.Value, from.Fields[1], to.Fields[1], path+".value")
		if err != nil {
			return nil, err
		}
		out[i] = MapEntry{Key: k, Value: x}
	}
	return out, nil
}

// formatNested is FormatValue of a nested value: JSON text whose leaves are
// their canonical texts as JSON strings, NULL as null, a struct's fields in
// the type's order, a map as a list of {"key":...,"value":...}: two values
// have the same text exactly when they are equal, structure included
// ([[1],[2]] is not [[1,2]]).
func formatNested(t Type, v any) string {
	var b strings.Builder
	var write func(t Type, v any)
	write = func(t Type, v any) {
		if v == nil {
			b.WriteString("null")
			return
		}
		switch t.Kind {
		case KindStruct:
			m, _ := v.(map[string]any)
			b.WriteByte('{')
			for i, f := range t.Fields {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Quote(f.Name))
				b.WriteByte(':')
				write(f.Type, m[f.Name])
			}
			b.WriteByte('}')
		case KindList:
			items, _ := v.([]any)
			b.WriteByte('[')
			for i, x := range items {
				if i > 0 {
					b.WriteByte(',')
				}
				write(t.Fields[0].Type, x)
			}
			b.WriteByte(']')
		case KindMap:
			entries, _ := mapEntries(v)
			b.WriteByte('[')
			for i, e := range entries {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"key":`)
				write(t.Fields[0].Type, e.Key)
				b.WriteString(`,"value":`)
				write(t.Fields[1].Type, e.Value)
				b.WriteByte('}')
			}
			b.WriteByte(']')
		default:
			b.WriteString(strconv.Quote(FormatValue(t, v)))
		}
	}
	write(t, v)
	return b.String()
}
