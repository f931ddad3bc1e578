package ingest

import (
	"fmt"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// --- JSON values into struct, list and map columns --------------------------------

// A nested column's JSON value is decoded by the column's type into the
// Go values pqio writes (map[string]any, []any, []pqio.MapEntry): a
// struct from an object, its fields by name (case-sensitive, as columns
// are); a list from an array; a map from an object, its names converted
// to the key type. Leaves convert as flat columns do (the same converter),
// and JSON null is NULL wherever the type is nullable. Whatever does not
// fit quarantines the record with the path of the value: "ctx.a",
// "items[3].b", "attrs[k]" (the value of key k), "attrs.key" (a key).
//
// A struct's fields that the type does not name are dropped, as a
// record's undeclared fields are when the table has no _extra column; a
// table with one asks to keep every field, and _extra keeps a record's
// top-level fields only, so there such a field quarantines the record.
//
// The flat scanner hands a nested column's value on as its text, already
// checked (RFC 8259 strings, no name given twice); it is parsed once here,
// by the column's own parser. The tree path hands on fastjson's value.

// nestedConv decodes one nested column's JSON values.
type nestedConv struct {
	root     *nestedNode
	keepAll  bool // the table has _extra: a struct's unknown field is bad
	parser   fastjson.Parser
	num      []byte   // converter.fromJSON's scratch
	keys     [][]byte // dupName's
	pathBuf  []byte
	segments []pathSeg // the path to the value being decoded, for reasons
}

// pathSeg is one step of a value's path: a name (".name"), a list index
// ("[3]") or a map key ("[k]"), rendered only for a reason.
type pathSeg struct {
	name  string
	key   []byte // a map key's text, valid while its value is decoded
	index int    // a list index, when name and key are empty
}

func named(s string) pathSeg { return pathSeg{name: s} }
func indexed(i int) pathSeg  { return pathSeg{index: i} }
func keyed(k []byte) pathSeg {
	if k == nil {
		k = []byte{} // the empty key: a key still
	}
	return pathSeg{key: k}
}

// nestedNode is one element of a nested column's type.
type nestedNode struct {
	col      catalog.Column // Name: the element's static path ("ctx.a")
	conv     converter      // a leaf's, or a map key's (key)
	key      *nestedNode    // a map's key
	children []*nestedNode  // a struct's fields, a list's element, a map's value
	names    []string       // a struct's field names
}

// newNestedConv returns the decoder of nested column c; base is the
// column's converter, whose unit, slab and boxes the leaves share.
func newNestedConv(c catalog.Column, base converter, keepAll bool) *nestedConv {
	return &nestedConv{root: newNestedNode(c, c.Name, base), keepAll: keepAll}
}

func newNestedNode(c catalog.Column, path string, base converter) *nestedNode {
	col := c
	col.Name = path
	n := &nestedNode{col: col}
	n.conv = base
	n.conv.col = col
	n.conv.nest = nil
	switch c.Type.Kind {
	case catalog.KindStruct:
		for _, f := range c.Type.Fields {
			n.children = append(n.children, newNestedNode(f, path+"."+f.Name, base))
			n.names = append(n.names, f.Name)
		}
	case catalog.KindList:
		n.children = []*nestedNode{newNestedNode(c.Type.Fields[0], path+".element", base)}
	case catalog.KindMap:
		n.key = newNestedNode(c.Type.Fields[0], path+".key", base)
		n.children = []*nestedNode{newNestedNode(c.Type.Fields[1], path+".value", base)}
	}
	return n
}

// token decodes the flat scanner's field of type t (absent and null are
// the caller's): a nested value's text, or a scalar, which is bad.
func (nc *nestedConv) token(t jsonType, b []byte) (any, error) {
	if t != jsonObject && t != jsonArray {
		return nil, nc.mismatch(nc.root, t)
	}
	v, err := nc.parser.ParseBytes(b)
	if err != nil { // the scanner checked it: not expected
		return nil, badValue(&nc.root.col, "malformed JSON: %s", err)
	}
	return nc.value(v)
}

// value decodes fastjson's value v (nil: the field is absent).
func (nc *nestedConv) value(v *fastjson.Value) (any, error) {
	nc.segments = append(nc.segments[:0], named(nc.root.col.Name))
	return nc.decode(nc.root, v)
}

// path is the dynamic path of the value being decoded.
func (nc *nestedConv) path() string {
	b := nc.pathBuf[:0]
	for i, s := range nc.segments {
		switch {
		case s.name != "":
			if i > 0 {
				b = append(b, '.')
			}
			b = append(b, s.name...)
		case s.key != nil:
			b = append(b, '[')
			b = append(b, s.key...)
			b = append(b, ']')
		default:
			b = strconv.AppendInt(append(b, '['), int64(s.index), 10)
			b = append(b, ']')
		}
	}
	nc.pathBuf = b
	return string(b)
}

// bad is a reason naming the value's path and type.
func (nc *nestedConv) bad(n *nestedNode, why string, args ...any) error {
	c := n.col
	c.Name = nc.path()
	return badValue(&c, why, args...)
}

func (nc *nestedConv) mismatch(n *nestedNode, t jsonType) error {
	want := "an object"
	if n.col.Type.Kind == catalog.KindList {
		want = "an array"
	}
	return nc.bad(n, "want %s, got %s", want, jsonKind(t))
}

// decode converts v by n's type.
func (nc *nestedConv) decode(n *nestedNode, v *fastjson.Value) (any, error) {
	t := typeOfJSON(v)
	switch {
	case t == jsonAbsent && n.col.Nullable:
		return nil, nil
	case t == jsonAbsent:
		return nil, nc.bad(n, "required but missing")
	case t == jsonNull && n.col.Nullable:
		return nil, nil
	case t == jsonNull:
		return nil, nc.bad(n, "null but the column is not nullable")
	}
	switch n.col.Type.Kind {
	case catalog.KindStruct:
		if t != jsonObject {
			return nil, nc.mismatch(n, t)
		}
		return nc.structValue(n, v)
	case catalog.KindList:
		if t != jsonArray {
			return nil, nc.mismatch(n, t)
		}
		return nc.listValue(n, v)
	case catalog.KindMap:
		if t != jsonObject {
			return nil, nc.mismatch(n, t)
		}
		return nc.mapValue(n, v)
	}
	x, err := n.conv.fromJSON(v, &nc.num, &nc.keys)
	if err != nil && nc.path() != n.col.Name {
		// The converter names the static path: say it again with the
		// list indices and map keys.
		c := n.conv
		c.col.Name = nc.path()
		_, err = c.fromJSON(v, &nc.num, &nc.keys)
	}
	return x, err
}

func (nc *nestedConv) structValue(n *nestedNode, v *fastjson.Value) (any, error) {
	o, _ := v.Object()
	if k := dupName(o, &nc.keys); k != nil {
		return nil, nc.bad(n, "duplicate key %s: the record is ambiguous", quote(string(k)))
	}
	vals := make([]*fastjson.Value, len(n.children))
	var unknown []byte
	o.Visit(func(k []byte, x *fastjson.Value) {
		for i, name := range n.names {
			if name == string(k) {
				vals[i] = x
				return
			}
		}
		if unknown == nil {
			unknown = k
		}
	})
	if unknown != nil && nc.keepAll {
		return nil, nc.bad(n, "field %s is not in the struct (_extra keeps a record's top-level fields only)", quote(string(unknown)))
	}
	m := make(map[string]any, len(n.children))
	depth := len(nc.segments)
	for i, ch := range n.children {
		nc.segments = append(nc.segments[:depth], named(n.names[i]))
		x, err := nc.decode(ch, vals[i])
		if err != nil {
			return nil, err
		}
		if x != nil {
			m[n.names[i]] = x
		}
	}
	nc.segments = nc.segments[:depth]
	return m, nil
}

func (nc *nestedConv) listValue(n *nestedNode, v *fastjson.Value) (any, error) {
	a, _ := v.Array()
	out := make([]any, len(a))
	depth := len(nc.segments)
	for i, x := range a {
		nc.segments = append(nc.segments[:depth], indexed(i))
		e, err := nc.decode(n.children[0], x)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	nc.segments = nc.segments[:depth]
	return out, nil
}

func (nc *nestedConv) mapValue(n *nestedNode, v *fastjson.Value) (any, error) {
	o, _ := v.Object()
	if k := dupName(o, &nc.keys); k != nil {
		return nil, nc.bad(n, "duplicate key %s: the record is ambiguous", quote(string(k)))
	}
	out := make([]pqio.MapEntry, 0, o.Len())
	var seen map[string]struct{} // the keys converted, for a key type other than string
	if n.key.col.Type.Kind != catalog.KindString {
		seen = make(map[string]struct{}, o.Len())
	}
	depth := len(nc.segments)
	var err error
	o.Visit(func(k []byte, x *fastjson.Value) {
		if err != nil {
			return
		}
		var key any
		nc.segments = append(nc.segments[:depth], named("key"))
		if key, err = nc.mapKey(n.key, k, seen); err != nil {
			return
		}
		nc.segments = append(nc.segments[:depth], keyed(k))
		var val any
		if val, err = nc.decode(n.children[0], x); err != nil {
			return
		}
		out = append(out, pqio.MapEntry{Key: key, Value: val})
	})
	nc.segments = nc.segments[:depth]
	return out, err
}

// mapKey converts an object's name to the map's key type, as a flat
// column converts a text field; two names that convert to one key (1 and
// 01 for an int64 key) make the record ambiguous.
func (nc *nestedConv) mapKey(n *nestedNode, k []byte, seen map[string]struct{}) (any, error) {
	var key any
	var err error
	if n.col.Type.Kind == catalog.KindString {
		key, err = n.conv.fromText(n.conv.slab.str(k))
	} else {
		key, err = n.conv.fromText(string(k))
	}
	if err != nil {
		if p := nc.path(); p != n.col.Name {
			kc := n.conv
			kc.col.Name = p
			_, err = kc.fromText(string(k))
		}
		return nil, err
	}
	if n.col.Type.Kind == catalog.KindString {
		return key, nil // the names are already distinct (dupName)
	}
	canon := pqio.FormatValue(n.col.Type, key)
	if _, dup := seen[canon]; dup {
		return nil, nc.bad(n, "key %s given twice (as %s): the record is ambiguous", quote(string(k)), quote(canon))
	}
	seen[canon] = struct{}{}
	return key, nil
}

// nestedBytes estimates the memory a nested value holds, as rowBytes does
// a flat row's.
func nestedBytes(v any) int64 {
	switch x := v.(type) {
	case map[string]any:
		n := int64(48 + 32*len(x))
		for _, e := range x {
			n += nestedBytes(e)
		}
		return n
	case []any:
		n := int64(24 + 16*len(x))
		for _, e := range x {
			n += nestedBytes(e)
		}
		return n
	case []pqio.MapEntry:
		n := int64(24 + 32*len(x))
		for _, e := range x {
			n += nestedBytes(e.Key) + nestedBytes(e.Value)
		}
		return n
	case string:
		return int64(len(x)) + 16
	case []byte:
		return int64(len(x)) + 24
	case nil:
		return 0
	}
	return 16
}

// checkNestedFormat refuses a format that cannot carry nested values for
// a table with a nested column: CSV.
func checkNestedFormat(s catalog.Schema, format string) error {
	for _, c := range s.Columns {
		if c.Type.Nested() {
			return fmt.Errorf("column %s (%s): %w: %s has no nested values (ingest this table from JSON lines or Parquet)", c.Name, c.Type, ErrNestedColumn, format)
		}
	}
	return nil
}

// check validates a nested value read from a Parquet landing file, as
// converter.checkValue does a flat one: every leaf's, by its path; it
// returns the value with uuids in their stored form.
func (nc *nestedConv) check(v any) (any, error) {
	nc.segments = append(nc.segments[:0], named(nc.root.col.Name))
	return nc.checkNode(nc.root, v)
}

func (nc *nestedConv) checkNode(n *nestedNode, v any) (any, error) {
	if v == nil {
		if !n.col.Nullable {
			return nil, nc.bad(n, "null but the column is not nullable")
		}
		return nil, nil
	}
	depth := len(nc.segments)
	defer func() { nc.segments = nc.segments[:depth] }()
	switch x := v.(type) {
	case map[string]any:
		for i, ch := range n.children {
			nc.segments = append(nc.segments[:depth], named(n.names[i]))
			e, err := nc.checkNode(ch, x[n.names[i]])
			if err != nil {
				return nil, err
			}
			if e != nil {
				x[n.names[i]] = e
			}
		}
		return x, nil
	case []any:
		for i, e := range x {
			nc.segments = append(nc.segments[:depth], indexed(i))
			var err error
			if x[i], err = nc.checkNode(n.children[0], e); err != nil {
				return nil, err
			}
		}
		return x, nil
	case []pqio.MapEntry:
		for i, e := range x {
			nc.segments = append(nc.segments[:depth], named("key"))
			k, err := nc.checkNode(n.key, e.Key)
			if err != nil {
				return nil, err
			}
			nc.segments = append(nc.segments[:depth], keyed([]byte(pqio.FormatValue(n.key.col.Type, k))))
			val, err := nc.checkNode(n.children[0], e.Value)
			if err != nil {
				return nil, err
			}
			x[i] = pqio.MapEntry{Key: k, Value: val}
		}
		return x, nil
	}
	x, err := n.conv.checkValue(v)
	if err != nil && nc.path() != n.col.Name {
		c := n.conv
		c.col.Name = nc.path()
		_, err = c.checkValue(v)
	}
	return x, err
}
