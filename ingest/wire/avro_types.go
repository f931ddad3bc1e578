package wire

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/sluice-data/sluice/internal/pqio"
)

// avroMaxPrecision is the widest decimal a sluice column holds (see
// pqio.ParseType).
const avroMaxPrecision = 38

// avroOp is how a value the Avro library decoded becomes a pqio value; it
// also fixes the value's binary encoding, which avroScan walks.
type avroOp int

const (
	avroBoolOp        avroOp = iota // boolean → bool
	avroIntOp                       // int → int32
	avroLongOp                      // long → int64
	avroFloatOp                     // float → float64
	avroDoubleOp                    // double → float64
	avroStringOp                    // string → string (valid UTF-8)
	avroUUIDOp                      // string (uuid) → canonical lower-case uuid text
	avroBytesOp                     // bytes → []byte
	avroFixedOp                     // fixed (duration included) → []byte
	avroEnumOp                      // enum → its symbol
	avroDecimalOp                   // bytes or fixed (decimal) → canonical decimal text
	avroDateOp                      // int (date) → time.Time at UTC midnight
	avroTimestampOp                 // long (timestamp-millis/micros) → time.Time in UTC
	avroLocalMillisOp               // long (local-timestamp-millis) → time.Time, read as UTC
	avroLocalMicrosOp               // long (local-timestamp-micros) → time.Time, read as UTC
	avroTimeMillisOp                // int (time-millis) → int64 microseconds since midnight
	avroTimeMicrosOp                // long (time-micros) → int64 microseconds since midnight
	avroRecordOp                    // record → map[string]any
	avroArrayOp                     // array → []any
	avroMapOp                       // map → []pqio.MapEntry
)

// avroOpName names what a converter expects, for errors.
func avroOpName(op avroOp) string {
	switch op {
	case avroBoolOp:
		return "boolean"
	case avroIntOp, avroTimeMillisOp:
		return "int"
	case avroLongOp, avroTimeMicrosOp, avroLocalMillisOp, avroLocalMicrosOp:
		return "long"
	case avroFloatOp, avroDoubleOp:
		return "float or double"
	case avroStringOp, avroUUIDOp, avroEnumOp:
		return "string"
	case avroBytesOp, avroFixedOp:
		return "bytes or fixed"
	case avroDecimalOp:
		return "decimal"
	case avroDateOp:
		return "date"
	case avroTimestampOp:
		return "timestamp"
	}
	return "value"
}

// avroNode is one non-union Avro type of a parsed schema: how its values
// are encoded and converted. It is immutable once built.
type avroNode struct {
	op      avroOp
	size    int        // fixed: its size in bytes (0 for a decimal on bytes)
	symbols int        // enum: the number of symbols
	prec    int        // decimal precision
	scale   int        // decimal scale
	pow     *big.Int   // decimal: 10^scale
	fields  []avroSlot // record: its fields, in order
	elem    *avroSlot  // array: its items; map: its values
	millis  bool       // timestamp: in milliseconds (else microseconds)
	names   []string   // enum: its symbols
}

// avroSlot is a place holding a value: a record's field, an array's item,
// a map's value. Its type may be a union of null and one other type.
type avroSlot struct {
	name string // the record field's name ("element", "value" otherwise)
	path string // the dotted path naming it in errors: "a.b", "tags.element"
	node *avroNode
	// union is the number of branches when the type is a union, else 0;
	// null is the null branch's index (-1 when there is none).
	union, null int
	// key is the name the library gives the non-null branch when it wraps
	// a union's value as map[string]any{key: value}; wrapped says that it
	// always does so for this branch (a record or a map, whose own values
	// are maps too).
	key     string
	wrapped bool
}

// avroMapper maps a parsed Avro schema to columns, converter nodes and the
// schema Decode hands the library.
type avroMapper struct {
	// open holds the full names of the records being mapped, to refuse
	// a record that contains itself.
	open map[string]bool
}

// avroUnsupported is an ErrUnsupported naming the field at path.
func avroUnsupported(path, format string, args ...any) error {
	return fmt.Errorf("%w: field %q: %s", ErrUnsupported, path, fmt.Sprintf(format, args...))
}

// avroDeref is the named schema a reference to one stands for.
func avroDeref(s avro.Schema) avro.Schema {
	for s.Type() == avro.Ref {
		s = s.(*avro.RefSchema).Schema()
	}
	return s
}

// slot maps the type of the field (or item, or map value) at path. It
// returns the slot, the column type and nullability, and the schema the
// library decodes it with.
func (m *avroMapper) slot(name, path string, s avro.Schema) (avroSlot, pqio.Type, bool, avro.Schema, error) {
	sl := avroSlot{name: name, path: path, null: -1}
	s = avroDeref(s)
	u, ok := s.(*avro.UnionSchema)
	if !ok {
		n, t, dec, err := m.node(path, s)
		sl.node = n
		return sl, t, false, dec, err
	}
	types := u.Types()
	sl.union = len(types)
	var other avro.Schema
	otherAt := -1
	for i, b := range types {
		if b.Type() == avro.Null {
			sl.null = i
			continue
		}
		if other != nil {
			names := make([]string, 0, len(types))
			for _, t := range types {
				names = append(names, avroUnionKey(avroDeref(t)))
			}
			return sl, pqio.Type{}, false, nil, avroUnsupported(path, "a union of several types (%s); sluice maps only a union of null and one type", strings.Join(names, ", "))
		}
		other, otherAt = b, i
	}
	if other == nil {
		return sl, pqio.Type{}, false, nil, avroUnsupported(path, "a union of null only holds no data")
	}
	n, t, dec, err := m.node(path, avroDeref(other))
	if err != nil {
		return sl, pqio.Type{}, false, nil, err
	}
	sl.node = n
	sl.key = avroUnionKey(dec)
	sl.wrapped = n.op == avroRecordOp || n.op == avroMapOp
	branches := make([]avro.Schema, len(types))
	for i := range types {
		branches[i] = avro.NewNullSchema()
	}
	branches[otherAt] = dec
	du, err := avro.NewUnionSchema(branches)
	if err != nil {
		return sl, pqio.Type{}, false, nil, avroUnsupported(path, "%s", avroOneLine(err.Error()))
	}
	return sl, t, sl.null >= 0, du, nil
}

// avroUnionKey is the name the library's generic decoding gives a union's
// branch of schema s: a named type's full name, else the type with its
// logical type ("long.timestamp-micros").
func avroUnionKey(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	k := string(s.Type())
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		k += "." + string(l.Logical().Type())
	}
	return k
}

// node maps one non-union type s (already dereferenced) at path.
func (m *avroMapper) node(path string, s avro.Schema) (*avroNode, pqio.Type, avro.Schema, error) {
	switch x := s.(type) {
	case *avro.PrimitiveSchema:
		return avroPrimitive(path, x)
	case *avro.FixedSchema:
		return avroFixed(path, x)
	case *avro.EnumSchema:
		dec, err := avro.NewEnumSchema(x.Name(), x.Namespace(), x.Symbols())
		if err != nil {
			return nil, pqio.Type{}, nil, avroUnsupported(path, "%s", avroOneLine(err.Error()))
		}
		return &avroNode{op: avroEnumOp, symbols: len(x.Symbols()), names: x.Symbols()}, pqio.Type{Kind: pqio.KindString}, dec, nil
	case *avro.RecordSchema:
		return m.record(path, x)
	case *avro.ArraySchema:
		sl, t, nullable, dec, err := m.slot("element", path+".element", x.Items())
		if err != nil {
			return nil, pqio.Type{}, nil, err
		}
		return &avroNode{op: avroArrayOp, elem: &sl}, pqio.ListOf(t, nullable), avro.NewArraySchema(dec), nil
	case *avro.MapSchema:
		sl, t, nullable, dec, err := m.slot("value", path+".value", x.Values())
		if err != nil {
			return nil, pqio.Type{}, nil, err
		}
		return &avroNode{op: avroMapOp, elem: &sl}, pqio.MapOf(pqio.Type{Kind: pqio.KindString}, t, nullable), avro.NewMapSchema(dec), nil
	case *avro.NullSchema:
		return nil, pqio.Type{}, nil, avroUnsupported(path, "the type null holds no data")
	}
	return nil, pqio.Type{}, nil, avroUnsupported(path, "the Avro type %s has no sluice column type", s.Type())
}

// record maps a record type: a struct of its fields, in order.
func (m *avroMapper) record(path string, x *avro.RecordSchema) (*avroNode, pqio.Type, avro.Schema, error) {
	full := x.FullName()
	if m.open[full] {
		return nil, pqio.Type{}, nil, avroUnsupported(path, "the record type %q contains itself (a recursive type has no sluice column type)", full)
	}
	if len(x.Fields()) == 0 {
		return nil, pqio.Type{}, nil, avroUnsupported(path, "the record type %q has no fields", full)
	}
	m.open[full] = true
	defer delete(m.open, full)
	n := &avroNode{op: avroRecordOp}
	cols := make([]pqio.Column, 0, len(x.Fields()))
	decFields := make([]*avro.Field, 0, len(x.Fields()))
	for _, f := range x.Fields() {
		p := f.Name()
		if path != "" {
			p = path + "." + f.Name()
		}
		sl, t, nullable, dec, err := m.slot(f.Name(), p, f.Type())
		if err != nil {
			return nil, pqio.Type{}, nil, err
		}
		df, err := avro.NewField(f.Name(), dec)
		if err != nil {
			return nil, pqio.Type{}, nil, avroUnsupported(p, "%s", avroOneLine(err.Error()))
		}
		n.fields = append(n.fields, sl)
		cols = append(cols, pqio.Column{Name: f.Name(), Type: t, Nullable: nullable})
		decFields = append(decFields, df)
	}
	dec, err := avro.NewRecordSchema(x.Name(), x.Namespace(), decFields)
	if err != nil {
		return nil, pqio.Type{}, nil, avroUnsupported(path, "%s", avroOneLine(err.Error()))
	}
	return n, pqio.StructOf(cols...), dec, nil
}

// avroPrimitive maps a primitive type and its logical type. The schema
// handed to the library keeps the logical types whose values it decodes
// exactly (date, timestamps, decimal, uuid) and drops the others, whose
// raw numbers are converted here: the library reads a local timestamp
// into the process's time zone, which loses the wall-clock value across
// daylight-saving changes.
func avroPrimitive(path string, x *avro.PrimitiveSchema) (*avroNode, pqio.Type, avro.Schema, error) {
	plain := avro.NewPrimitiveSchema(x.Type(), nil)
	var lt avro.LogicalType
	if l := x.Logical(); l != nil {
		lt = l.Type()
	}
	switch x.Type() {
	case avro.Boolean:
		return &avroNode{op: avroBoolOp}, pqio.Type{Kind: pqio.KindBool}, plain, nil
	case avro.Int:
		switch lt {
		case avro.Date:
			return &avroNode{op: avroDateOp}, pqio.Type{Kind: pqio.KindDate}, x, nil
		case avro.TimeMillis:
			// sluice has no time-of-day type: microseconds since midnight.
			return &avroNode{op: avroTimeMillisOp}, pqio.Type{Kind: pqio.KindInt64}, plain, nil
		}
		return &avroNode{op: avroIntOp}, pqio.Type{Kind: pqio.KindInt32}, plain, nil
	case avro.Long:
		switch lt {
		case avro.TimestampMillis, avro.TimestampMicros:
			return &avroNode{op: avroTimestampOp, millis: lt == avro.TimestampMillis}, pqio.Type{Kind: pqio.KindTimestamp}, x, nil
		case avro.LocalTimestampMillis:
			// A local timestamp has no time zone: its wall clock is taken as UTC.
			return &avroNode{op: avroLocalMillisOp}, pqio.Type{Kind: pqio.KindTimestamp}, plain, nil
		case avro.LocalTimestampMicros:
			return &avroNode{op: avroLocalMicrosOp}, pqio.Type{Kind: pqio.KindTimestamp}, plain, nil
		case avro.TimeMicros:
			return &avroNode{op: avroTimeMicrosOp}, pqio.Type{Kind: pqio.KindInt64}, plain, nil
		}
		return &avroNode{op: avroLongOp}, pqio.Type{Kind: pqio.KindInt64}, plain, nil
	case avro.Float:
		return &avroNode{op: avroFloatOp}, pqio.Type{Kind: pqio.KindFloat64}, plain, nil
	case avro.Double:
		return &avroNode{op: avroDoubleOp}, pqio.Type{Kind: pqio.KindFloat64}, plain, nil
	case avro.String:
		if lt == avro.UUID {
			return &avroNode{op: avroUUIDOp}, pqio.Type{Kind: pqio.KindUUID}, x, nil
		}
		return &avroNode{op: avroStringOp}, pqio.Type{Kind: pqio.KindString}, plain, nil
	case avro.Bytes:
		if d, ok := x.Logical().(*avro.DecimalLogicalSchema); ok && lt == avro.Decimal {
			return avroDecimal(path, 0, d, x)
		}
		return &avroNode{op: avroBytesOp}, pqio.Type{Kind: pqio.KindBinary}, plain, nil
	}
	return nil, pqio.Type{}, nil, avroUnsupported(path, "the Avro type %s has no sluice column type", x.Type())
}

// avroFixed maps a fixed type: binary, or a decimal. A duration (months,
// days and milliseconds, little-endian) is its twelve bytes as they are.
func avroFixed(path string, x *avro.FixedSchema) (*avroNode, pqio.Type, avro.Schema, error) {
	if x.Size() == 0 {
		return nil, pqio.Type{}, nil, avroUnsupported(path, "the fixed type %q has size 0 and holds no data", x.FullName())
	}
	if d, ok := x.Logical().(*avro.DecimalLogicalSchema); ok {
		return avroDecimal(path, x.Size(), d, x)
	}
	dec, err := avro.NewFixedSchema(x.Name(), x.Namespace(), x.Size(), nil)
	if err != nil {
		return nil, pqio.Type{}, nil, avroUnsupported(path, "%s", avroOneLine(err.Error()))
	}
	return &avroNode{op: avroFixedOp, size: x.Size()}, pqio.Type{Kind: pqio.KindBinary}, dec, nil
}

// avroDecimal maps a decimal on bytes (size 0) or on a fixed of size bytes.
func avroDecimal(path string, size int, d *avro.DecimalLogicalSchema, s avro.Schema) (*avroNode, pqio.Type, avro.Schema, error) {
	p, sc := d.Precision(), d.Scale()
	if p > avroMaxPrecision {
		return nil, pqio.Type{}, nil, avroUnsupported(path, "decimal(%d,%d) is wider than sluice's widest decimal, decimal(%d,s)", p, sc, avroMaxPrecision)
	}
	if p < 1 || sc < 0 || sc > p {
		return nil, pqio.Type{}, nil, avroUnsupported(path, "decimal(%d,%d) is not a valid decimal", p, sc)
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(sc)), nil)
	t := pqio.Type{Kind: pqio.KindDecimal, Precision: p, Scale: sc}
	return &avroNode{op: avroDecimalOp, size: size, prec: p, scale: sc, pow: pow}, t, s, nil
}

// avroParseRefs parses the schemas refs into cache, so that the names
// they define resolve. A reference may use another: those that fail are
// retried while any other succeeds, so their order does not matter.
func avroParseRefs(refs []Reference, cache *avro.SchemaCache) error {
	pending := refs
	for len(pending) > 0 {
		var failed []Reference
		var firstErr error
		for _, r := range pending {
			if _, err := avro.ParseWithCache(r.Schema, "", cache); err != nil {
				failed = append(failed, r)
				if firstErr == nil {
					firstErr = fmt.Errorf("%w: reference %q: the Avro schema does not parse: %s", ErrUnsupported, r.Name, avroOneLine(err.Error()))
				}
			}
		}
		if len(failed) == len(pending) {
			return firstErr
		}
		pending = failed
	}
	return nil
}

// parseAvro parses a registered Avro schema, with the schemas that define
// the named types it refers to. The top-level type must be a record: its
// fields are the columns.
func parseAvro(text string, refs []Reference) (Schema, error) {
	cache := &avro.SchemaCache{}
	if err := avroParseRefs(refs, cache); err != nil {
		return nil, err
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, fmt.Errorf("%w: the Avro schema does not parse: %s", ErrUnsupported, avroOneLine(err.Error()))
	}
	rec, ok := avroDeref(s).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("%w: the top-level Avro type is %s, not a record (a record's fields are a table's columns)", ErrUnsupported, avroDeref(s).Type())
	}
	m := &avroMapper{open: map[string]bool{}}
	n, t, dec, err := m.record("", rec)
	if err != nil {
		return nil, err
	}
	if err := (pqio.Schema{Columns: t.Fields}).Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	return &avroSchema{cols: t.Fields, root: n, dec: dec}, nil
}

// avroOneLine is s on one line, cut to a readable length.
func avroOneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
