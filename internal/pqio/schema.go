package pqio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is a column's logical type, as written in schema strings.
type Kind string

// The logical types of the schema-string contract (CONTRACT.md).
const (
	KindString    Kind = "string"
	KindUUID      Kind = "uuid" // a string that must parse as a UUID
	KindInt32     Kind = "int32"
	KindInt64     Kind = "int64"
	KindFloat64   Kind = "float64"
	KindBool      Kind = "bool"
	KindDate      Kind = "date"      // days since 1970-01-01, no time zone
	KindTimestamp Kind = "timestamp" // UTC, microseconds
	KindDecimal   Kind = "decimal"   // decimal(p,s)
	KindBinary    Kind = "binary"
	// The nested types: their children are Type.Fields.
	KindStruct Kind = "struct" // struct<name:type,...>
	KindList   Kind = "list"   // list<type>
	KindMap    Kind = "map"    // map<keytype,valuetype>
)

// Type is a logical type. Precision and Scale are set for decimals only;
// Fields for nested types only: a struct's fields in their order, a list's
// one field named "element", a map's two fields "key" (never nullable) and
// "value". A nested type's Go values are map[string]any (struct: a field
// absent or nil is NULL), []any (list) and []MapEntry (map, in stored
// order); see FormatValue for their canonical text.
type Type struct {
	Kind      Kind
	Precision int
	Scale     int
	Fields    []Column
}

// MapEntry is one key and value of a map column's value.
type MapEntry struct {
	Key, Value any
}

// ListOf is the type list<elem>, or list<elem?> when nullable.
func ListOf(elem Type, nullable bool) Type {
	return Type{Kind: KindList, Fields: []Column{{Name: "element", Type: elem, Nullable: nullable}}}
}

// MapOf is the type map<key,value>, or map<key,value?> when nullable.
func MapOf(key, value Type, nullable bool) Type {
	return Type{Kind: KindMap, Fields: []Column{{Name: "key", Type: key}, {Name: "value", Type: value, Nullable: nullable}}}
}

// StructOf is the type struct<fields...>.
func StructOf(fields ...Column) Type { return Type{Kind: KindStruct, Fields: fields} }

// Nested tells whether the type is a struct, list or map.
func (t Type) Nested() bool { return t.Kind == KindStruct || t.Kind == KindList || t.Kind == KindMap }

// Elem is a list's element field or a map's value field.
func (t Type) Elem() Column { return t.Fields[len(t.Fields)-1] }

// Key is a map's key type.
func (t Type) Key() Type { return t.Fields[0].Type }

// Equal tells whether two types are the same, nested fields (names, types
// and nullability) included. Field ids (Column.ID) are not compared: a
// table's schema without ids and a file written with them (by an Iceberg
// writer) hold the same types.
func (t Type) Equal(o Type) bool {
	if t.Kind != o.Kind || t.Precision != o.Precision || t.Scale != o.Scale || len(t.Fields) != len(o.Fields) {
		return false
	}
	for i, f := range t.Fields {
		g := o.Fields[i]
		if f.Name != g.Name || f.Nullable != g.Nullable || !f.Type.Equal(g.Type) {
			return false
		}
	}
	return true
}

// Leaf is one primitive column inside a (possibly nested) column: its
// dotted path ("s.a", "tags.element", "attrs.key") and its type. A flat
// column is its own one leaf, its path its name.
type Leaf struct {
	Path string
	Type Type
}

// Leaves returns the primitive columns of c in the order Parquet stores
// them: depth first, fields in order.
func (c Column) Leaves() []Leaf {
	var out []Leaf
	var walk func(path string, t Type)
	walk = func(path string, t Type) {
		if !t.Nested() {
			out = append(out, Leaf{Path: path, Type: t})
			return
		}
		for _, f := range t.Fields {
			walk(path+"."+f.Name, f.Type)
		}
	}
	walk(c.Name, c.Type)
	return out
}

// String renders the type as in a schema string: "int64", "decimal(10,2)",
// "struct<a:int64,b:string?>", "list<string?>", "map<string,int64>".
func (t Type) String() string {
	switch t.Kind {
	case KindDecimal:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case KindStruct:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.Name + ":" + fieldString(f)
		}
		return "struct<" + strings.Join(parts, ",") + ">"
	case KindList:
		if len(t.Fields) == 1 {
			return "list<" + fieldString(t.Fields[0]) + ">"
		}
	case KindMap:
		if len(t.Fields) == 2 {
			return "map<" + fieldString(t.Fields[0]) + "," + fieldString(t.Fields[1]) + ">"
		}
	}
	return string(t.Kind)
}

// fieldString is a field's type with its '?' when nullable.
func fieldString(f Column) string {
	if f.Nullable {
		return f.Type.String() + "?"
	}
	return f.Type.String()
}

// parseField parses "type" or "type?" of a nested type's child.
func parseField(name, s string) (Column, error) {
	s = strings.TrimSpace(s)
	nullable := strings.HasSuffix(s, "?")
	t, err := ParseType(strings.TrimSuffix(s, "?"))
	if err != nil {
		return Column{}, err
	}
	return Column{Name: name, Type: t, Nullable: nullable}, nil
}

// parseNested parses struct<...>, list<...> and map<...>; ok is false when
// s is none of them.
func parseNested(s string) (t Type, ok bool, err error) {
	kind, inner, found := strings.Cut(s, "<")
	kind = strings.TrimSpace(kind)
	if !found || (kind != string(KindStruct) && kind != string(KindList) && kind != string(KindMap)) {
		return Type{}, false, nil
	}
	if !strings.HasSuffix(inner, ">") {
		return Type{}, true, fmt.Errorf("type %q: no closing '>'", s)
	}
	inner = inner[:len(inner)-1]
	parts := splitTopLevel(inner)
	switch Kind(kind) {
	case KindList:
		if len(parts) != 1 || strings.TrimSpace(parts[0]) == "" {
			return Type{}, true, fmt.Errorf("type %q: want list<type>", s)
		}
		f, err := parseField("element", parts[0])
		if err != nil {
			return Type{}, true, fmt.Errorf("list element: %w", err)
		}
		return Type{Kind: KindList, Fields: []Column{f}}, true, nil
	case KindMap:
		if len(parts) != 2 {
			return Type{}, true, fmt.Errorf("type %q: want map<keytype,valuetype>", s)
		}
		k, err := parseField("key", parts[0])
		if err != nil {
			return Type{}, true, fmt.Errorf("map key: %w", err)
		}
		if k.Nullable {
			return Type{}, true, fmt.Errorf("type %q: a map's key cannot be nullable (Parquet stores keys as required)", s)
		}
		v, err := parseField("value", parts[1])
		if err != nil {
			return Type{}, true, fmt.Errorf("map value: %w", err)
		}
		return Type{Kind: KindMap, Fields: []Column{k, v}}, true, nil
	}
	var fields []Column
	for _, p := range parts {
		if len(parts) == 1 && strings.TrimSpace(p) == "" {
			break
		}
		name, typ, ok := strings.Cut(p, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return Type{}, true, fmt.Errorf("type %q: field %q: want name:type", s, strings.TrimSpace(p))
		}
		f, err := parseField(name, typ)
		if err != nil {
			return Type{}, true, fmt.Errorf("field %q: %w", name, err)
		}
		fields = append(fields, f)
	}
	if len(fields) == 0 {
		return Type{}, true, fmt.Errorf("type %q: a struct needs at least one field", s)
	}
	t = Type{Kind: KindStruct, Fields: fields}
	if err := t.validateNames(); err != nil {
		return Type{}, true, fmt.Errorf("type %q: %w", s, err)
	}
	return t, true, nil
}

// validateNames checks that no struct inside t has two fields whose names
// are the same once case is folded, nor a field without a name.
func (t Type) validateNames() error {
	if t.Kind == KindStruct {
		names := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			if f.Name == "" {
				return fmt.Errorf("struct field %d has no name", i+1)
			}
			if err := checkNameText("struct field", f.Name); err != nil {
				return err
			}
			names[i] = f.Name
		}
		if err := NameClash("struct field", names); err != nil {
			return err
		}
	}
	for _, f := range t.Fields {
		if err := f.Type.validateNames(); err != nil {
			return fmt.Errorf("field %q: %w", f.Name, err)
		}
	}
	return nil
}

// ParseType parses one type name of a schema string, nested types
// included: "struct<a:int64,b:string?>", "list<int64?>",
// "map<string,list<int32>>".
func ParseType(s string) (Type, error) {
	s = strings.TrimSpace(s)
	if t, ok, err := parseNested(s); ok {
		return t, err
	}
	switch Kind(s) {
	case KindString, KindUUID, KindInt32, KindInt64, KindFloat64, KindBool,
		KindDate, KindTimestamp, KindBinary:
		return Type{Kind: Kind(s)}, nil
	}
	if strings.HasPrefix(s, "decimal(") && strings.HasSuffix(s, ")") {
		ps := strings.Split(s[len("decimal("):len(s)-1], ",")
		if len(ps) == 2 {
			p, err1 := strconv.Atoi(strings.TrimSpace(ps[0]))
			sc, err2 := strconv.Atoi(strings.TrimSpace(ps[1]))
			if err1 == nil && err2 == nil && p >= 1 && p <= 38 && sc >= 0 && sc <= p {
				return Type{Kind: KindDecimal, Precision: p, Scale: sc}, nil
			}
		}
		return Type{}, fmt.Errorf("type %q: want decimal(p,s) with 1 <= p <= 38 and 0 <= s <= p", s)
	}
	return Type{}, fmt.Errorf("unknown type %q (want string, uuid, int32, int64, float64, bool, date, timestamp, decimal(p,s), binary, struct<name:type,...>, list<type> or map<keytype,valuetype>)", s)
}

// MarshalJSON writes the type as its schema-string name.
func (t Type) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON reads a schema-string type name.
func (t *Type) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseType(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Column is one column of a table schema, or one child of a nested type
// (a struct's field, a list's element, a map's key or value).
type Column struct {
	Name     string `json:"name"`
	Type     Type   `json:"type"`
	Nullable bool   `json:"nullable,omitempty"`
	// ID is the column's Parquet field id (the field_id of its schema
	// element in a file's footer), by which Iceberg readers resolve
	// columns; 0 means none (Iceberg's ids start at 1). Files are written
	// with the ids a schema has, and read with those their footer has. A
	// nested type's children carry theirs in their own Column. Type.Equal
	// and the schema's text (String) leave ids out: a column is the same
	// column with or without one. A Type's JSON is its schema-string text,
	// so only top-level ids survive a schema's JSON.
	ID int `json:"id,omitempty"`
}

// Schema is a table's ordered list of columns. Column order is the order
// readers see and writers write.
type Schema struct {
	Columns []Column `json:"columns"`
}

// ParseSchema parses a schema string: "name:type,name:type?,...". A trailing
// '?' makes a column (or, inside a nested type, a field, a list's element
// or a map's value) nullable. decimal(p,s), struct<...> and map<...> may
// contain commas. Column names must be unique regardless of case (see
// Schema.Validate), and so must a struct's field names.
func ParseSchema(s string) (Schema, error) {
	var sc Schema
	for _, part := range splitTopLevel(s) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, typ, ok := strings.Cut(part, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return Schema{}, fmt.Errorf("schema: column %q: want name:type", part)
		}
		typ = strings.TrimSpace(typ)
		nullable := strings.HasSuffix(typ, "?")
		typ = strings.TrimSuffix(typ, "?")
		t, err := ParseType(typ)
		if err != nil {
			return Schema{}, fmt.Errorf("schema: column %q: %w", name, err)
		}
		sc.Columns = append(sc.Columns, Column{Name: name, Type: t, Nullable: nullable})
	}
	if len(sc.Columns) == 0 {
		return Schema{}, errors.New("schema: no columns")
	}
	if err := sc.Validate(); err != nil {
		return Schema{}, fmt.Errorf("schema: %w", err)
	}
	return sc, nil
}

// Validate checks the column names: none empty, and no two the same once
// case is folded. Spark, Hive and most warehouses fold the case of column
// names, so a table with columns "a" and "A" could be neither read nor
// written by them, and a Parquet file with both is ambiguous to them.
func (s Schema) Validate() error {
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		if c.Name == "" {
			return fmt.Errorf("column %d has no name", i+1)
		}
		if err := checkNameText("column", c.Name); err != nil {
			return err
		}
		names[i] = c.Name
		if err := c.Type.validateNames(); err != nil {
			return fmt.Errorf("column %q: %w", c.Name, err)
		}
	}
	return NameClash("column", names)
}

// checkNameText refuses a name that is not UTF-8 text, or holds a control
// character: manifests are JSON, which would store such a name as U+FFFD
// and so silently rename the column, and no engine can name it in SQL.
func checkNameText(kind, name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("%s %q: the name is not UTF-8 text", kind, name)
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%s %q: the name holds a control character", kind, name)
	}
	return nil
}

// NameClash returns an error naming the first two of names, both of kind
// ("column", "partition key"), that are the same once case is folded
// (identical ones included), or nil when there are none.
func NameClash(kind string, names []string) error {
	if a, b, ok := caseClash(names); ok {
		return clashError(kind, a, b)
	}
	return nil
}

// foldCase is a column name as case-folding engines compare it: Spark and
// Hive lower-case names.
func foldCase(name string) string { return strings.ToLower(name) }

// caseClash returns the first two of names that are the same once case is
// folded (identical ones included), in their order.
func caseClash(names []string) (a, b string, ok bool) {
	seen := make(map[string]string, len(names))
	for _, n := range names {
		if prev, dup := seen[foldCase(n)]; dup {
			return prev, n, true
		}
		seen[foldCase(n)] = n
	}
	return "", "", false
}

// clashError says that names a and b, both of kind ("column", "partition
// key"), clash: the same name twice, or two names differing only in case.
func clashError(kind, a, b string) error {
	if a == b {
		return fmt.Errorf("%s %q appears twice", kind, a)
	}
	return fmt.Errorf("%ss %q and %q differ only in case (Spark, Hive and most warehouses fold case, so they would be one column)", kind, a, b)
}

// splitTopLevel splits on commas that are not inside parentheses or
// angle brackets.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(', '<':
			depth++
		case ')', '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// String renders the schema as a schema string that ParseSchema reads back.
func (s Schema) String() string {
	parts := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		parts[i] = c.Name + ":" + c.Type.String()
		if c.Nullable {
			parts[i] += "?"
		}
	}
	return strings.Join(parts, ",")
}

// ColumnFold returns the column whose name is name once case is folded,
// and whether there is one.
func (s Schema) ColumnFold(name string) (Column, bool) {
	for _, c := range s.Columns {
		if foldCase(c.Name) == foldCase(name) {
			return c, true
		}
	}
	return Column{}, false
}

// Column returns the column named name and whether it exists.
func (s Schema) Column(name string) (Column, bool) {
	for _, c := range s.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}
