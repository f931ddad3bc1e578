package ingest

import (
	"fmt"
	"math"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// ExtraColumn is the name of the column in which a table asks to keep the
// fields of a record that its schema does not have. It must be of type
// string; nullable (string?) to hold NULL for a record without extra
// fields, otherwise such a record gets "{}". A column of that name and
// another type is an ordinary column.
const ExtraColumn = "_extra"

// extras builds the _extra value of a record: a compact JSON object of the
// fields whose names are not table columns, in the record's order: a JSON
// object's unknown members, a CSV file's unknown header columns, a
// Parquet file's unknown columns. The table's own _extra column is never
// read from a field: a field named "_extra" in the input is an unknown
// field like any other and is kept under that name.
type extras struct {
	extra    int             // index of the _extra column; -1: the table has none
	nullable bool            // NULL, not "{}", when a record has no extra field
	known    map[string]bool // the table's other columns
	buf      []byte
	keys     [][]byte // dupName's scratch
}

func newExtras(s catalog.Schema) extras {
	e := extras{extra: -1}
	for i, c := range s.Columns {
		if c.Name == ExtraColumn && c.Type.Kind == catalog.KindString {
			e.extra, e.nullable = i, c.Nullable
		}
	}
	if e.extra < 0 {
		return e
	}
	e.known = map[string]bool{}
	for i, c := range s.Columns {
		if i != e.extra {
			e.known[c.Name] = true
		}
	}
	return e
}

// none is the _extra value of a record without extra fields.
func (e *extras) none() any {
	if e.nullable {
		return nil
	}
	return "{}"
}

// fromObject returns the _extra value of a JSON object, or why the record
// is ambiguous: an object kept in it holds a name twice. (The record's
// own names are the caller's to check.)
func (e *extras) fromObject(obj *fastjson.Object) (any, error) {
	e.buf = e.buf[:0]
	var dup []byte
	obj.Visit(func(k []byte, v *fastjson.Value) {
		if dup != nil || e.known[string(k)] {
			return
		}
		e.buf = e.field(e.buf, k)
		e.buf, dup = appendJSON(e.buf, v, &e.keys)
	})
	if dup != nil {
		return nil, duplicateKey(dup)
	}
	return e.end(), nil
}

// csvExtra is a CSV field that is not a table column.
type csvExtra struct {
	field int
	name  []byte
}

// extraFields returns the CSV header's fields that are not table columns;
// where[i] is the field of table column i. The names are copied: the
// csv.Reader reuses the header's slice. A name given twice fails the file:
// _extra would hold it twice in every row.
func (e *extras) extraFields(header []string, where []int) ([]csvExtra, error) {
	if e.extra < 0 {
		return nil, nil
	}
	used := map[int]bool{}
	for _, j := range where {
		used[j] = true
	}
	var out []csvExtra
	first := map[string]int{}
	for j, h := range header {
		if used[j] {
			continue
		}
		name := strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if k, ok := first[name]; ok {
			return nil, fmt.Errorf("CSV header names %q twice (fields %d and %d): the file is ambiguous", name, k+1, j+1)
		}
		first[name] = j
		out = append(out, csvExtra{field: j, name: []byte(name)})
	}
	return out, nil
}

// fromFields returns the _extra value of a CSV row: the extra fields as
// JSON strings, under their header names.
func (e *extras) fromFields(extra []csvExtra, fields []string) any {
	e.buf = e.buf[:0]
	for _, x := range extra {
		e.buf = e.field(e.buf, x.name)
		e.buf = appendJSONString(e.buf, []byte(fields[x.field]))
	}
	return e.end()
}

// field starts the next member of the object being built in dst.
func (e *extras) field(dst, name []byte) []byte {
	if len(dst) == 0 {
		dst = append(dst, '{')
	} else {
		dst = append(dst, ',')
	}
	dst = appendJSONString(dst, name)
	return append(dst, ':')
}

func (e *extras) end() any {
	if len(e.buf) == 0 {
		return e.none()
	}
	e.buf = append(e.buf, '}')
	return string(e.buf)
}

// parquetExtra is a column of a Parquet landing file that is not a table
// column.
type parquetExtra struct {
	at  int // index in the scanned row
	col catalog.Column
}

// parquetExtras returns the schema a Parquet landing file of schema file
// is read as when the table has an _extra column: the table's columns,
// _extra nullable (its slot holds the file's own _extra column, if any,
// an unknown column like any other), then the file's other unknown
// columns, nullable; and those unknown columns in the file's order.
func (d *decoder) parquetExtras(file catalog.Schema) (catalog.Schema, []parquetExtra) {
	s := catalog.Schema{Columns: append([]catalog.Column(nil), d.schema.Columns...)}
	s.Columns[d.extra].Nullable = true
	var extra []parquetExtra
	for _, c := range file.Columns {
		if d.known[c.Name] {
			continue
		}
		at := d.extra
		if c.Name != ExtraColumn {
			c.Nullable = true
			at = len(s.Columns)
			s.Columns = append(s.Columns, c)
		}
		extra = append(extra, parquetExtra{at: at, col: c})
	}
	return s, extra
}

// fromColumns returns the _extra value of a Parquet row: its non-NULL
// values of unknown columns, numbers and booleans as JSON's, the others
// as their canonical texts (see pqio.FormatValue).
func (e *extras) fromColumns(extra []parquetExtra, row []any) any {
	e.buf = e.buf[:0]
	for _, x := range extra {
		v := row[x.at]
		if v == nil {
			continue
		}
		e.buf = e.field(e.buf, []byte(x.col.Name))
		text := pqio.FormatValue(x.col.Type, v)
		switch f, isFloat := v.(float64); {
		case isFloat && (math.IsNaN(f) || math.IsInf(f, 0)):
			e.buf = appendJSONString(e.buf, []byte(text))
		case isFloat, x.col.Type.Kind == catalog.KindInt32, x.col.Type.Kind == catalog.KindInt64,
			x.col.Type.Kind == catalog.KindBool:
			e.buf = append(e.buf, text...)
		default:
			e.buf = appendJSONString(e.buf, []byte(text))
		}
	}
	return e.end()
}

// appendJSON appends v as compact JSON, or returns a name that an object
// in v holds twice (keys is dupName's scratch): kept as it is, such an
// object would be read differently by different readers. fastjson's own
// MarshalTo escapes control characters the way Go source does (\x01),
// which is not JSON.
func appendJSON(dst []byte, v *fastjson.Value, keys *[][]byte) ([]byte, []byte) {
	var dup []byte
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		return appendJSONString(dst, b), nil
	case fastjson.TypeObject:
		o, _ := v.Object()
		if dup = dupName(o, keys); dup != nil {
			return dst, dup
		}
		dst = append(dst, '{')
		first := true
		o.Visit(func(k []byte, x *fastjson.Value) {
			if dup != nil {
				return
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst, dup = appendJSON(dst, x, keys)
		})
		return append(dst, '}'), dup
	case fastjson.TypeArray:
		a, _ := v.Array()
		dst = append(dst, '[')
		for i, x := range a {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, dup = appendJSON(dst, x, keys); dup != nil {
				return dst, dup
			}
		}
		return append(dst, ']'), nil
	}
	return v.MarshalTo(dst), nil // numbers as written, true, false, null
}

// appendJSONString appends s (valid UTF-8: records are checked before
// decoding) as a JSON string.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default: // multi-byte characters pass through byte by byte
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
