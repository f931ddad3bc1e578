package pqio

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/sluice-data/sluice/cloud"
)

// Sentinel errors of reading and writing Parquet data files; test with
// errors.Is. Every error that wraps one also names the file (its key) and,
// where there is one, the column.
var (
	// ErrUnsupportedType: the file holds a column whose type sluice cannot
	// represent yet: UINT64, TIME, INTERVAL, FLOAT16, a geospatial or
	// variant column, a decimal wider than 38 digits, a LIST or MAP group
	// of none of the layouts the Parquet format lists. The message reads
	// "<key>: column "<path>": type UINT64 is not supported yet".
	ErrUnsupportedType = errors.New("not supported yet")
	// ErrCorruptFile: the bytes are not a readable Parquet file: empty,
	// truncated, not Parquet at all, or a footer or page that does not
	// decode. A failure to read the object (network, permission, a
	// cancelled context) is not this error: it wraps the store's error.
	ErrCorruptFile = errors.New("corrupt or not a Parquet file")
	// ErrIncompatibleSchema: a file's schema cannot be read as the table's
	// (see CheckCompatible), or two schemas have no common type for a
	// column (see MergeSchemas), or a file holds a NULL in a column the
	// table declares not nullable.
	ErrIncompatibleSchema = errors.New("incompatible schema")
)

// Tuning of the Parquet files sluice writes and reads.
const (
	// parquetRowGroupRows caps the rows of one row group. parquet-go buffers
	// a row group's compressed pages in memory until it is flushed, so this
	// also bounds the writer's memory; 1Mi rows is near DuckDB's and Spark's
	// row group sizes for narrow event tables.
	parquetRowGroupRows = 1 << 20
	// parquetDictionaryMaxBytes is where a string column's dictionary stops
	// growing and the rest of the row group is written PLAIN, as parquet-mr
	// does with its 1 MiB dictionary page limit: a dictionary only pays for
	// columns with few distinct values.
	parquetDictionaryMaxBytes = 1 << 20
	// parquetReadBufferSize is the size of each read parquet-go makes while
	// scanning data pages: one ranged GET each on an object store.
	parquetReadBufferSize = 1 << 20
	// parquetMinSize is the smallest possible Parquet file: the 4-byte
	// header magic, the 4-byte footer length and the 4-byte footer magic.
	parquetMinSize = 12
)

// --- reading a file's schema and statistics --------------------------------

// fileColumn is one top-level column of a Parquet file, mapped to our
// types; or, in a nested column's leaves, one of its primitive columns,
// named by its dotted path.
type fileColumn struct {
	Column
	index int         // leaf column index in the file (a nested column's first leaf's)
	phys  format.Type // physical type
	// unit is the number of ticks per second of an INT64 timestamp (1e3,
	// 1e6 or 1e9); 0 otherwise.
	unit int64
	// minMax tells whether the footer's min/max statistics are meaningful
	// for this column: not for INT96 (no defined order) nor binary.
	minMax bool
	// leaves are a nested column's primitive columns, in file order (see
	// Column.Leaves); nil for a flat column.
	leaves []fileColumn
}

// InspectParquet reads the footer of the Parquet file at key (size bytes)
// and returns its schema in our types and its statistics: the footer's row
// count and, per column, the null count summed over row groups and the
// min/max (canonical text, see FormatValue) when every row group that holds
// a non-null value recorded them. A nested column's statistics are its
// leaves', keyed by their paths (see Column.Leaves); the nested whole has
// none.
//
// Only the footer is read, with one ranged GET in the common case (see
// storeReaderAt), so it is cheap on S3 and Azure. A file that is not
// Parquet, truncated or empty fails with ErrCorruptFile; a column of a type
// we do not support fails with ErrUnsupportedType naming the column.
func InspectParquet(ctx context.Context, st cloud.Store, key string, size int64) (Schema, FileStats, error) {
	// Like Arrow's and DuckDB's readers, read only the tail: the header
	// magic costs a request of its own on an object store, and a file whose
	// footer decodes is a Parquet file. ReadParquetRows checks the header.
	f, _, err := openParquet(ctx, st, key, size, parquet.SkipMagicBytes(true))
	if err != nil {
		return Schema{}, FileStats{}, err
	}
	schema, _, stats, err := describeParquet(key, f)
	return schema, stats, err
}

// describeParquet maps an open file's schema to ours and aggregates its
// footer statistics.
func describeParquet(key string, f *parquet.File) (Schema, []fileColumn, FileStats, error) {
	md := f.Metadata()
	cols, err := fileColumns(key, md)
	if err != nil {
		return Schema{}, nil, FileStats{}, err
	}
	var schema Schema
	for _, c := range cols {
		schema.Columns = append(schema.Columns, c.Column)
	}
	stats := FileStats{Rows: md.NumRows, Columns: make(map[string]ColumnStats, len(cols))}
	for i := range cols {
		leaves := []fileColumn{cols[i]}
		if cols[i].leaves != nil {
			leaves = cols[i].leaves
		}
		for j := range leaves {
			cs, err := columnStats(key, md, &leaves[j])
			if err != nil {
				return Schema{}, nil, FileStats{}, err
			}
			stats.Columns[leaves[j].Name] = cs
		}
	}
	return schema, cols, stats, nil
}

// fileColumns walks the footer's flattened schema tree (root first, each
// group followed by its children) and maps each top-level column.
func fileColumns(key string, md *format.FileMetaData) ([]fileColumn, error) {
	elems := md.Schema
	if len(elems) == 0 {
		return nil, fmt.Errorf("%s: %w: the footer has no schema", key, ErrCorruptFile)
	}
	n := int(elems[0].NumChildren.V)
	var cols []fileColumn
	seen := map[string]bool{}
	w := &schemaWalk{key: key, elems: elems, pos: 1}
	for range n {
		e, err := w.next()
		if err != nil {
			return nil, fmt.Errorf("%s: %w: the footer's schema lists %d columns but holds fewer", key, ErrCorruptFile, n)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("%s: %w: column %q appears twice", key, ErrCorruptFile, e.Name)
		}
		seen[e.Name] = true
		if !isGroupElem(e) && !isRepeated(e) {
			c, err := mapLeaf(e)
			if err != nil {
				return nil, fmt.Errorf("%s: column %q: %w", key, e.Name, err)
			}
			c.index = w.leaf
			w.leaf++
			cols = append(cols, c)
			continue
		}
		first, firstPath := w.leaf, len(w.paths)
		fc, err := w.field(e, e.Name)
		if err != nil {
			return nil, err
		}
		c := fileColumn{Column: fc, index: first}
		c.leaves = append([]fileColumn(nil), w.paths[firstPath:]...)
		cols = append(cols, c)
	}
	return cols, nil
}

// mapLeaf maps one primitive column to our type, with its field id. Its
// errors wrap ErrUnsupportedType and read "type UINT64 is not supported
// yet".
func mapLeaf(e *format.SchemaElement) (fileColumn, error) {
	phys := e.Type.V
	c := fileColumn{phys: phys, minMax: true}
	c.Name = e.Name
	c.Nullable = e.RepetitionType.V == format.Optional
	c.ID = elemFieldID(e)
	unsupported := func(what string) (fileColumn, error) {
		return fileColumn{}, fmt.Errorf("type %s is %w", what, ErrUnsupportedType)
	}
	lt := e.LogicalType.Value
	ct, hasCT := e.ConvertedType.Get()
	conv := func(t deprecated.ConvertedType) bool { return hasCT && ct == t }

	// Decimals first: any physical type but booleans and floats may hold one.
	if dec, ok := lt.(*format.DecimalType); ok || conv(deprecated.Decimal) {
		p, s := int(e.Precision.V), int(e.Scale.V)
		if ok {
			p, s = int(dec.Precision), int(dec.Scale)
		}
		switch phys {
		case format.Int32, format.Int64, format.ByteArray, format.FixedLenByteArray:
		default:
			return unsupported(fmt.Sprintf("DECIMAL(%d,%d) on %s", p, s, phys))
		}
		if p < 1 || p > 38 || s < 0 || s > p {
			return unsupported(fmt.Sprintf("DECIMAL(%d,%d) (sluice reads precisions 1 to 38)", p, s))
		}
		c.Type = Type{Kind: KindDecimal, Precision: p, Scale: s}
		return c, nil
	}
	if what := unsupportedLogical(lt, conv); what != "" {
		return unsupported(what)
	}

	switch phys {
	case format.Boolean:
		c.Type.Kind = KindBool
	case format.Int32:
		switch {
		case isLogical[*format.DateType](lt) || conv(deprecated.Date):
			c.Type.Kind = KindDate
		case conv(deprecated.Uint32):
			c.Type.Kind = KindInt64
		default:
			if it, ok := lt.(*format.IntType); ok && !it.IsSigned && it.BitWidth == 32 {
				c.Type.Kind = KindInt64
			} else {
				// INT(8|16|32, signed), UINT(8|16) and plain INT32 all fit.
				c.Type.Kind = KindInt32
			}
		}
	case format.Int64:
		if ts, ok := lt.(*format.TimestampType); ok {
			// isAdjustedToUTC=false (Spark's TIMESTAMP_NTZ) is a wall-clock
			// time with no zone; it reads as that wall clock in UTC, which
			// is what Spark and DuckDB show for it.
			c.Type.Kind = KindTimestamp
			switch ts.Unit.Value.(type) {
			case *format.MilliSeconds:
				c.unit = 1e3
			case *format.MicroSeconds:
				c.unit = 1e6
			case *format.NanoSeconds:
				c.unit = 1e9
			default:
				return unsupported("TIMESTAMP of an unknown unit")
			}
			break
		}
		switch {
		case conv(deprecated.TimestampMillis):
			c.Type.Kind, c.unit = KindTimestamp, 1e3
		case conv(deprecated.TimestampMicros):
			c.Type.Kind, c.unit = KindTimestamp, 1e6
		case conv(deprecated.Uint64):
			return unsupported("UINT64 (values above 2^63-1 do not fit int64)")
		default:
			if it, ok := lt.(*format.IntType); ok && !it.IsSigned {
				return unsupported("UINT64 (values above 2^63-1 do not fit int64)")
			}
			c.Type.Kind = KindInt64
		}
	case format.Int96:
		// Spark's and Impala's legacy timestamps: nanoseconds of the day and a
		// Julian day, in UTC. They have no defined sort order, so their
		// statistics are meaningless.
		c.Type.Kind = KindTimestamp
		c.minMax = false
	case format.Float, format.Double:
		c.Type.Kind = KindFloat64
	case format.ByteArray:
		switch {
		case isLogical[*format.StringType](lt), isLogical[*format.EnumType](lt), isLogical[*format.JsonType](lt),
			conv(deprecated.UTF8), conv(deprecated.Enum), conv(deprecated.Json):
			c.Type.Kind = KindString
		default:
			// Plain BYTE_ARRAY and BSON.
			c.Type.Kind = KindBinary
			c.minMax = false
		}
	case format.FixedLenByteArray:
		if isLogical[*format.UUIDType](lt) && e.TypeLength.V == 16 {
			c.Type.Kind = KindUUID
			break
		}
		c.Type.Kind = KindBinary
		c.minMax = false
	default:
		return unsupported(phys.String())
	}
	return c, nil
}

// unsupportedLogical names the logical (or converted) type of a leaf that
// sluice cannot read whatever its physical type, "" for none.
func unsupportedLogical(lt format.LogicalTypeValue, conv func(deprecated.ConvertedType) bool) string {
	switch lt.(type) {
	case *format.TimeType:
		return "TIME"
	case *format.NullType:
		return "UNKNOWN (always null)"
	case *format.Float16Type:
		return "FLOAT16"
	case *format.GeometryType:
		return "GEOMETRY"
	case *format.GeographyType:
		return "GEOGRAPHY"
	case *format.VariantType:
		return "VARIANT"
	}
	if conv(deprecated.TimeMillis) || conv(deprecated.TimeMicros) {
		return "TIME"
	}
	if conv(deprecated.Interval) {
		return "INTERVAL"
	}
	return ""
}

func isLogical[T format.LogicalTypeValue](v format.LogicalTypeValue) bool {
	_, ok := v.(T)
	return ok
}

// columnStats aggregates one column's footer statistics over row groups.
func columnStats(key string, md *format.FileMetaData, c *fileColumn) (ColumnStats, error) {
	var cs ColumnStats
	var lo, hi any
	known := c.minMax
	decode := c.decoder()
	for g := range md.RowGroups {
		rg := &md.RowGroups[g]
		if c.index >= len(rg.Columns) {
			return ColumnStats{}, fmt.Errorf("%s: %w: row group %d has %d column chunks, want %d", key, ErrCorruptFile, g, len(rg.Columns), c.index+1)
		}
		meta := &rg.Columns[c.index].MetaData
		st := &meta.Statistics
		cs.NullCount += st.NullCount
		if !known {
			continue
		}
		minB, maxB := st.MinValue, st.MaxValue
		if minB == nil || maxB == nil {
			// The deprecated fields hold a signed order, which is right for
			// signed numbers and booleans only (not for strings, decimals in
			// bytes or unsigned integers).
			minB, maxB = nil, nil
			if signedOrder(c) {
				minB, maxB = st.Min, st.Max
			}
		}
		if minB == nil || maxB == nil {
			if st.NullCount > 0 && st.NullCount >= meta.NumValues {
				continue // all nulls: nothing to bound
			}
			known = false
			continue
		}
		var vmin, vmax any
		if err := noPanic(func() error {
			vmin, vmax = statValue(c, minB, decode), statValue(c, maxB, decode)
			return nil
		}); err != nil || vmin == nil || vmax == nil {
			known = false
			continue
		}
		if lo == nil || CompareValues(c.Type, vmin, lo) < 0 {
			lo = vmin
		}
		if hi == nil || CompareValues(c.Type, vmax, hi) > 0 {
			hi = vmax
		}
	}
	if known && lo != nil && hi != nil {
		l, h := FormatValue(c.Type, lo), FormatValue(c.Type, hi)
		cs.Min, cs.Max = &l, &h
		if c.Type.Kind == KindString {
			boundStrings(&cs)
		}
	}
	return cs, nil
}

// boundStrings truncates a string column's bounds to StatsTruncateBytes
// and marks those that are, or may be, truncated: a footer bound as long
// as a truncated one may have been cut by its writer (see
// statsMaybeTruncated), and a foreign file's footer may hold a value of
// any size.
func boundStrings(cs *ColumnStats) {
	if len(*cs.Min) >= statsMaybeTruncated || !utf8.ValidString(*cs.Min) {
		l, _ := truncateMinString(*cs.Min, StatsTruncateBytes)
		cs.Min, cs.MinTruncated = &l, true
	}
	if len(*cs.Max) >= statsMaybeTruncated || !utf8.ValidString(*cs.Max) {
		cs.MaxTruncated = true
		if h, _, ok := truncateMaxString(*cs.Max, StatsTruncateBytes); ok {
			cs.Max = &h
		} else {
			cs.Max = nil
		}
	}
}

func signedOrder(c *fileColumn) bool {
	switch c.phys {
	case format.Boolean, format.Float, format.Double, format.Int64:
		return true
	case format.Int32:
		return c.Type.Kind != KindInt64 // not UINT32
	}
	return false
}

// statValue decodes a PLAIN-encoded statistics value; nil if it is malformed
// (or a NaN float, which bounds nothing).
func statValue(c *fileColumn, b []byte, decode func(parquet.Value) any) any {
	var v parquet.Value
	switch c.phys {
	case format.Boolean:
		if len(b) != 1 {
			return nil
		}
		v = parquet.BooleanValue(b[0]&1 == 1)
	case format.Int32:
		if len(b) != 4 {
			return nil
		}
		v = parquet.Int32Value(int32(binary.LittleEndian.Uint32(b)))
	case format.Int64:
		if len(b) != 8 {
			return nil
		}
		v = parquet.Int64Value(int64(binary.LittleEndian.Uint64(b)))
	case format.Float:
		if len(b) != 4 {
			return nil
		}
		v = parquet.FloatValue(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case format.Double:
		if len(b) != 8 {
			return nil
		}
		v = parquet.DoubleValue(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case format.ByteArray:
		v = parquet.ByteArrayValue(b)
	case format.FixedLenByteArray:
		v = parquet.FixedLenByteArrayValue(b)
	default:
		return nil
	}
	out := decode(v)
	if f, ok := out.(float64); ok && math.IsNaN(f) {
		return nil
	}
	return out
}

// decoder returns the function that converts one non-null value of the
// column, as parquet-go reads it, to our Go representation of the column's
// own type. Byte slices are copied: parquet-go reuses its buffers.
func (c *fileColumn) decoder() func(parquet.Value) any {
	switch c.Type.Kind {
	case KindBool:
		return func(v parquet.Value) any { return v.Boolean() }
	case KindInt32:
		return func(v parquet.Value) any { return v.Int32() }
	case KindInt64:
		if c.phys == format.Int32 { // UINT32
			return func(v parquet.Value) any { return int64(uint32(v.Int32())) }
		}
		return func(v parquet.Value) any { return v.Int64() }
	case KindFloat64:
		if c.phys == format.Float {
			return func(v parquet.Value) any { return float64(v.Float()) }
		}
		return func(v parquet.Value) any { return v.Double() }
	case KindDate:
		return func(v parquet.Value) any { return time.Unix(int64(v.Int32())*86400, 0).UTC() }
	case KindTimestamp:
		if c.phys == format.Int96 {
			return func(v parquet.Value) any { return int96Time(v.Int96()) }
		}
		switch c.unit {
		case 1e3:
			return func(v parquet.Value) any { return time.UnixMilli(v.Int64()).UTC() }
		case 1e9:
			return func(v parquet.Value) any { return time.UnixMicro(FloorDiv(v.Int64(), 1000)).UTC() }
		default:
			return func(v parquet.Value) any { return time.UnixMicro(v.Int64()).UTC() }
		}
	case KindString:
		return func(v parquet.Value) any { return string(v.ByteArray()) }
	case KindUUID:
		if c.phys == format.FixedLenByteArray {
			return func(v parquet.Value) any { return FormatUUID(v.ByteArray()) }
		}
		return func(v parquet.Value) any { return string(v.ByteArray()) }
	case KindDecimal:
		scale := c.Type.Scale
		switch c.phys {
		case format.Int32:
			return func(v parquet.Value) any { return formatDecimalInt64(int64(v.Int32()), scale) }
		case format.Int64:
			return func(v parquet.Value) any { return formatDecimalInt64(v.Int64(), scale) }
		default:
			return func(v parquet.Value) any { return decimalFromBytes(v.ByteArray(), scale) }
		}
	default: // KindBinary
		return func(v parquet.Value) any { return bytes.Clone(v.ByteArray()) }
	}
}

// julianUnixEpoch is the Julian day number of 1970-01-01.
const julianUnixEpoch = 2440588

// int96Time converts an INT96 timestamp (8 bytes of nanoseconds of the day,
// then 4 bytes of Julian day, little endian) to a UTC time at microsecond
// precision.
func int96Time(i deprecated.Int96) time.Time {
	return time.UnixMicro(Int96Micros(i)).UTC()
}

// Int96Micros converts an INT96 timestamp (Spark's legacy encoding: 8
// bytes of nanoseconds of the day, then 4 bytes of Julian day, little
// endian) to microseconds since the Unix epoch, rounding toward the past.
func Int96Micros(i deprecated.Int96) int64 {
	nanos := int64(uint64(i[1])<<32 | uint64(i[0]))
	days := int64(i[2]) - julianUnixEpoch
	return days*86400_000_000 + FloorDiv(nanos, 1000)
}

// FloorDiv divides rounding toward negative infinity, as time units are
// converted (a nanosecond before the epoch is in the microsecond before
// it).
func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// FormatUUID renders 16 bytes (Parquet's UUID logical type) as the
// canonical 8-4-4-4-12 text; other lengths as plain hex.
func FormatUUID(b []byte) string {
	if len(b) != 16 {
		return hex.EncodeToString(b)
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
