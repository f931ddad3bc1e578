package pqio

import (
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// --- an ordered group node -----------------------------------------------------

// orderedGroup is a Parquet group node whose fields keep the order they are
// given in. parquet.Group is a map and sorts its fields by name, which would
// write a table's columns z,a,m as a,m,z; readers that map columns by
// position (and people reading a schema) expect the table's order.
type orderedGroup []parquet.Field

// namedField is one field of an orderedGroup.
type namedField struct {
	parquet.Node
	name string
}

func (f *namedField) Name() string { return f.name }

// Value returns the field of a Go value of the group (a map keyed by column
// name or a struct with a matching field): parquet-go calls it only when
// writing Go values, which sluice does not (it writes parquet.Rows).
func (f *namedField) Value(base reflect.Value) reflect.Value {
	for base.Kind() == reflect.Interface || base.Kind() == reflect.Pointer {
		if base.IsNil() {
			return reflect.Value{}
		}
		base = base.Elem()
	}
	switch base.Kind() {
	case reflect.Map:
		return base.MapIndex(reflect.ValueOf(f.name))
	case reflect.Struct:
		return base.FieldByName(exportedName(f.name))
	}
	return reflect.Value{}
}

func (g orderedGroup) ID() int { return 0 }

func (g orderedGroup) String() string {
	var b strings.Builder
	_ = parquet.PrintSchema(&b, "", g)
	return b.String()
}

func (g orderedGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }

// GoType is a struct with one exported field per column, in order, tagged
// with the column's name.
func (g orderedGroup) GoType() reflect.Type {
	fields := make([]reflect.StructField, len(g))
	used := map[string]bool{}
	for i, f := range g {
		name := exportedName(f.Name())
		for used[name] {
			name += "_"
		}
		used[name] = true
		fields[i] = reflect.StructField{
			Name: name,
			Type: f.GoType(),
			Tag:  reflect.StructTag(`parquet:` + strconv.Quote(f.Name())),
		}
	}
	return reflect.StructOf(fields)
}

// exportedName makes a Go exported identifier of a column name.
func exportedName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case i == 0 && unicode.IsLetter(r):
			b.WriteRune(unicode.ToUpper(r))
		case i == 0:
			b.WriteString("X")
			if unicode.IsDigit(r) {
				b.WriteRune(r)
			} else {
				b.WriteRune('_')
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	if b.Len() == 0 {
		return "X"
	}
	return b.String()
}

// stringBytes is s's bytes without a copy. parquet-go copies a value's
// bytes into its page buffers and never writes to them, and a string's
// bytes never change, so sharing them is safe and saves an allocation per
// string cell.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
