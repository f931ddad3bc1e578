package pqio

import (
	"fmt"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// --- nested columns of a file's schema ------------------------------------------

// This file maps a footer's nested groups to struct, list and map types,
// by the backward-compatibility rules of the Parquet format's
// LogicalTypes.md: the three-level LIST (Spark's list/element, parquet-mr's
// legacy bag/array), the two-level ones (a repeated primitive or group
// directly inside the LIST group), a repeated field outside any LIST (a
// list of required elements), and MAP (MAP_KEY_VALUE in old files) of a
// repeated key_value group. Only optional and repeated elements add
// levels, so every layout of one type has the same repetition and
// definition levels as the layout sluice writes (see columnNode), and its
// leaf values carry over as they are.

// schemaWalk reads a footer's flattened schema tree in order.
type schemaWalk struct {
	key   string
	elems []format.SchemaElement
	pos   int
	leaf  int          // the next leaf's index
	paths []fileColumn // the leaves seen, in order, their names their paths
}

func (w *schemaWalk) next() (*format.SchemaElement, error) {
	if w.pos >= len(w.elems) {
		return nil, fmt.Errorf("%s: %w: the footer's schema holds fewer elements than its groups list", w.key, ErrCorruptFile)
	}
	e := &w.elems[w.pos]
	w.pos++
	return e, nil
}

func isGroupElem(e *format.SchemaElement) bool { return !e.Type.Valid || e.NumChildren.V > 0 }

func isRepeated(e *format.SchemaElement) bool {
	rt, ok := e.RepetitionType.Get()
	return ok && rt == format.Repeated
}

func isList(e *format.SchemaElement) bool {
	if _, ok := e.LogicalType.Value.(*format.ListType); ok {
		return true
	}
	ct, ok := e.ConvertedType.Get()
	return ok && ct == deprecated.List
}

func isMap(e *format.SchemaElement) bool {
	if _, ok := e.LogicalType.Value.(*format.MapType); ok {
		return true
	}
	ct, ok := e.ConvertedType.Get()
	return ok && (ct == deprecated.Map || ct == deprecated.MapKeyValue)
}

// field maps the element e (already read) and its subtree at path to a
// field: its type, whether it is nullable and its field id. A repeated
// element outside a LIST or MAP group is a list of required elements (the
// id is the list's; its element has none).
func (w *schemaWalk) field(e *format.SchemaElement, path string) (Column, error) {
	c := Column{Name: e.Name, ID: elemFieldID(e)}
	if isRepeated(e) {
		t, err := w.inner(e, path+".element")
		if err != nil {
			return Column{}, err
		}
		c.Type = ListOf(t, false)
		return c, nil
	}
	c.Nullable = e.RepetitionType.V == format.Optional
	t, err := w.inner(e, path)
	c.Type = t
	return c, err
}

// inner maps e as if it were required: a leaf, a LIST, a MAP or a struct.
func (w *schemaWalk) inner(e *format.SchemaElement, path string) (Type, error) {
	if _, ok := e.LogicalType.Value.(*format.VariantType); ok {
		return Type{}, fmt.Errorf("%s: column %q: nested type VARIANT is %w", w.key, path, ErrUnsupportedType)
	}
	if !isGroupElem(e) {
		lc, err := mapLeaf(e)
		if err != nil {
			return Type{}, fmt.Errorf("%s: column %q: %w", w.key, path, err)
		}
		lc.Name = path
		lc.index = w.leaf
		w.leaf++
		w.paths = append(w.paths, lc)
		return lc.Type, nil
	}
	n := int(e.NumChildren.V)
	switch {
	case isList(e) && n == 1:
		return w.list(e, path)
	case isMap(e) && n == 1:
		return w.mapType(e, path)
	case isList(e) || isMap(e):
		return Type{}, fmt.Errorf("%s: column %q: a LIST or MAP group with %d children (want 1) is %w", w.key, path, n, ErrUnsupportedType)
	}
	return w.structType(e, n, path)
}

func (w *schemaWalk) structType(e *format.SchemaElement, n int, path string) (Type, error) {
	if n == 0 {
		return Type{}, fmt.Errorf("%s: column %q: an empty group is %w", w.key, path, ErrUnsupportedType)
	}
	t := Type{Kind: KindStruct}
	for range n {
		ce, err := w.next()
		if err != nil {
			return Type{}, err
		}
		f, err := w.field(ce, path+"."+ce.Name)
		if err != nil {
			return Type{}, err
		}
		t.Fields = append(t.Fields, f)
	}
	if err := t.validateNames(); err != nil {
		return Type{}, fmt.Errorf("%s: %w: column %q: %w", w.key, ErrUnsupportedType, path, err)
	}
	return t, nil
}

// list maps a LIST group's one child r, by LogicalTypes.md's rules. The
// element's field id is the element's: the repeated element's of the two
// levels, the repeated group's one child's of the three.
func (w *schemaWalk) list(e *format.SchemaElement, path string) (Type, error) {
	r, err := w.next()
	if err != nil {
		return Type{}, err
	}
	if !isRepeated(r) {
		return Type{}, fmt.Errorf("%s: column %q: a LIST whose child %q is not repeated is %w", w.key, path, r.Name, ErrUnsupportedType)
	}
	elemPath := path + ".element"
	switch {
	case !isGroupElem(r):
		// Two levels: the repeated primitive is the (required) element.
		t, err := w.inner(r, elemPath)
		return listWithID(ListOf(t, false), elemFieldID(r)), err
	case r.NumChildren.V > 1 || r.Name == "array" || r.Name == e.Name+"_tuple":
		// Two levels: the repeated group is the (required) struct element.
		t, err := w.structType(r, int(r.NumChildren.V), elemPath)
		return listWithID(ListOf(t, false), elemFieldID(r)), err
	}
	// Three levels: the repeated group's one child is the element.
	ce, err := w.next()
	if err != nil {
		return Type{}, err
	}
	if isRepeated(ce) {
		return Type{}, fmt.Errorf("%s: column %q: a repeated list element is %w", w.key, elemPath, ErrUnsupportedType)
	}
	f, err := w.field(ce, elemPath)
	return listWithID(ListOf(f.Type, f.Nullable), f.ID), err
}

// listWithID is the list type t with its element's field id set to id.
func listWithID(t Type, id int) Type {
	t.Fields[0].ID = id
	return t
}

// mapType maps a MAP group's repeated key_value group; the key's and the
// value's field ids are their elements'.
func (w *schemaWalk) mapType(e *format.SchemaElement, path string) (Type, error) {
	kv, err := w.next()
	if err != nil {
		return Type{}, err
	}
	if !isRepeated(kv) || !isGroupElem(kv) || kv.NumChildren.V != 2 {
		return Type{}, fmt.Errorf("%s: column %q: a MAP without a repeated group of a key and a value is %w", w.key, path, ErrUnsupportedType)
	}
	ke, err := w.next()
	if err != nil {
		return Type{}, err
	}
	if ke.RepetitionType.V != format.Required {
		return Type{}, fmt.Errorf("%s: column %q: a MAP whose key is not required is %w", w.key, path+".key", ErrUnsupportedType)
	}
	k, err := w.inner(ke, path+".key")
	if err != nil {
		return Type{}, err
	}
	ve, err := w.next()
	if err != nil {
		return Type{}, err
	}
	if isRepeated(ve) {
		return Type{}, fmt.Errorf("%s: column %q: a repeated map value is %w", w.key, path+".value", ErrUnsupportedType)
	}
	v, err := w.field(ve, path+".value")
	t := MapOf(k, v.Type, v.Nullable)
	t.Fields[0].ID, t.Fields[1].ID = elemFieldID(ke), v.ID
	return t, err
}
