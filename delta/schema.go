package delta

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-data/sluice/internal/pqio"
)

// schemaType is a type of the log's schemaString (Schema Serialization
// Format): a primitive's name, or a struct, array or map object.
type schemaType struct {
	prim string
	obj  *schemaObject
}

type schemaObject struct {
	Type              string        `json:"type"`
	Fields            []schemaField `json:"fields"`
	ElementType       schemaType    `json:"elementType"`
	ContainsNull      bool          `json:"containsNull"`
	KeyType           schemaType    `json:"keyType"`
	ValueType         schemaType    `json:"valueType"`
	ValueContainsNull bool          `json:"valueContainsNull"`
}

type schemaField struct {
	Name     string     `json:"name"`
	Type     schemaType `json:"type"`
	Nullable bool       `json:"nullable"`
}

func (t *schemaType) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &t.prim)
	}
	t.obj = new(schemaObject)
	return json.Unmarshal(b, t.obj)
}

// primitives are the Delta primitive types sluice writes, by their names.
var primitives = map[string]pqio.Kind{
	"long": pqio.KindInt64, "integer": pqio.KindInt32, "double": pqio.KindFloat64, "boolean": pqio.KindBool,
	"string": pqio.KindString, "binary": pqio.KindBinary, "date": pqio.KindDate, "timestamp": pqio.KindTimestamp,
}

var decimalType = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$`)

// DataSchema maps the table's schema, less its partition columns (which
// Delta keeps in the log, not in the data files), to the schema sluice
// writes data files in. A column of a type sluice does not write as
// Delta's readers expect it (byte, short, float, timestamp_ntz, variant)
// is refused naming it, with ErrUnsupportedFeature.
func (m *Metadata) DataSchema() (pqio.Schema, error) {
	var root schemaObject
	if err := json.Unmarshal([]byte(m.SchemaString), &root); err != nil {
		return pqio.Schema{}, fmt.Errorf("%w: schemaString: %v", ErrCorruptLog, err)
	}
	if root.Type != "struct" {
		return pqio.Schema{}, fmt.Errorf("%w: schemaString is a %q, not a struct", ErrCorruptLog, root.Type)
	}
	var s pqio.Schema
	for _, f := range root.Fields {
		if slices.ContainsFunc(m.PartitionColumns, func(p string) bool { return strings.EqualFold(p, f.Name) }) {
			continue
		}
		t, err := f.Type.pqio(f.Name)
		if err != nil {
			return pqio.Schema{}, err
		}
		s.Columns = append(s.Columns, pqio.Column{Name: f.Name, Type: t, Nullable: f.Nullable})
	}
	return s, nil
}

// pqio maps one type; path names the column in an error.
func (t schemaType) pqio(path string) (pqio.Type, error) {
	if t.obj == nil {
		if k, ok := primitives[t.prim]; ok {
			return pqio.Type{Kind: k}, nil
		}
		if m := decimalType.FindStringSubmatch(t.prim); m != nil {
			p, _ := strconv.Atoi(m[1])
			s, _ := strconv.Atoi(m[2])
			return pqio.Type{Kind: pqio.KindDecimal, Precision: p, Scale: s}, nil
		}
		return pqio.Type{}, fmt.Errorf("%w: column %s is of type %s, which sluice does not write", ErrUnsupportedFeature, path, t.prim)
	}
	o := t.obj
	switch o.Type {
	case "struct":
		fields := make([]pqio.Column, len(o.Fields))
		for i, f := range o.Fields {
			ft, err := f.Type.pqio(path + "." + f.Name)
			if err != nil {
				return pqio.Type{}, err
			}
			fields[i] = pqio.Column{Name: f.Name, Type: ft, Nullable: f.Nullable}
		}
		return pqio.StructOf(fields...), nil
	case "array":
		et, err := o.ElementType.pqio(path + ".element")
		if err != nil {
			return pqio.Type{}, err
		}
		return pqio.ListOf(et, o.ContainsNull), nil
	case "map":
		kt, err := o.KeyType.pqio(path + ".key")
		if err != nil {
			return pqio.Type{}, err
		}
		vt, err := o.ValueType.pqio(path + ".value")
		if err != nil {
			return pqio.Type{}, err
		}
		return pqio.MapOf(kt, vt, o.ValueContainsNull), nil
	}
	return pqio.Type{}, fmt.Errorf("%w: column %s is of type %s, which sluice does not write", ErrUnsupportedFeature, path, o.Type)
}
