package pqio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
)

// Type is a logical type; Precision and Scale are set for decimals only.
type Type struct {
	Kind      Kind
	Precision int
	Scale     int
}

// String renders the type as in a schema string: "int64", "decimal(10,2)".
func (t Type) String() string {
	if t.Kind == KindDecimal {
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	}
	return string(t.Kind)
}

// ParseType parses one type name of a schema string.
func ParseType(s string) (Type, error) {
	s = strings.TrimSpace(s)
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
	return Type{}, fmt.Errorf("unknown type %q (want string, uuid, int32, int64, float64, bool, date, timestamp, decimal(p,s) or binary)", s)
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

// Column is one column of a table schema.
type Column struct {
	Name     string `json:"name"`
	Type     Type   `json:"type"`
	Nullable bool   `json:"nullable,omitempty"`
}

// Schema is a table's ordered list of columns. Column order is the order
// readers see and writers write.
type Schema struct {
	Columns []Column `json:"columns"`
}

// ParseSchema parses a schema string: "name:type,name:type?,...". A trailing
// '?' makes a column nullable. decimal(p,s) may contain a comma. Column
// names must be unique regardless of case (see Schema.Validate).
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
		names[i] = c.Name
	}
	return NameClash("column", names)
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

// splitTopLevel splits on commas that are not inside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
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
