package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"

	"github.com/sluice-data/sluice/cloud"
)

// Sentinel errors of reading and writing Parquet data files; test with
// errors.Is. Every error that wraps one also names the file (its key) and,
// where there is one, the column.
var (
	// ErrUnsupportedType: the file holds a column whose type sluice cannot
	// represent yet: a nested type (LIST, MAP, struct, repeated field),
	// UINT64, TIME, INTERVAL, FLOAT16, a geospatial or variant column, a
	// decimal wider than 38 digits. The message reads "<key>: column
	// "<name>": nested type LIST is not supported yet".
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

// fileColumn is one top-level column of a Parquet file, mapped to our types.
type fileColumn struct {
	Column
	index int         // leaf column index in the file
	phys  format.Type // physical type
	// unit is the number of ticks per second of an INT64 timestamp (1e3,
	// 1e6 or 1e9); 0 otherwise.
	unit int64
	// minMax tells whether the footer's min/max statistics are meaningful
	// for this column: not for INT96 (no defined order) nor binary.
	minMax bool
}

// InspectParquet reads the footer of the Parquet file at key (size bytes)
// and returns its schema in our types and its statistics: the footer's row
// count and, per column, the null count summed over row groups and the
// min/max (canonical text, see FormatValue) when every row group that holds
// a non-null value recorded them.
//
// Only the footer is read, with one ranged GET in the common case (see
// storeReaderAt), so it is cheap on S3 and Azure. A file that is not
// Parquet, truncated or empty fails with ErrCorruptFile; a column of a type
// we do not support (nested types among them) fails with
// ErrUnsupportedType naming the column.
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

// openParquet opens the file at key over ranged reads. Options add to the
// defaults (no page index, no bloom filters: sluice uses neither).
func openParquet(ctx context.Context, st cloud.Store, key string, size int64, opts ...parquet.FileOption) (*parquet.File, *storeReaderAt, error) {
	if size < parquetMinSize {
		return nil, nil, fmt.Errorf("%s: %w: %d bytes is too small (a Parquet file has at least %d)", key, ErrCorruptFile, size, parquetMinSize)
	}
	r := newStoreReaderAt(ctx, st, key, size)
	opts = append([]parquet.FileOption{
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(parquetReadBufferSize),
	}, opts...)
	var f *parquet.File
	err := noPanic(func() (err error) {
		f, err = parquet.OpenFile(r, size, opts...)
		return err
	})
	if err != nil {
		return nil, nil, readError(key, r, err)
	}
	return f, r, nil
}

// readError tells a failed read of the object (the store's error, which
// names the key) from bytes that are not a valid Parquet file.
func readError(key string, r *storeReaderAt, err error) error {
	if ioErr := r.ioErr(); ioErr != nil {
		return ioErr
	}
	if r.truncated() {
		return fmt.Errorf("%s: %w: the object is shorter than the %d bytes expected (truncated?)", key, ErrCorruptFile, r.size)
	}
	return fmt.Errorf("%s: %w: %s", key, ErrCorruptFile, oneLine(err.Error()))
}

// noPanic runs fn and turns a panic into an error: parquet-go may panic on
// malformed input, and a bad file must fail its own work, not the process.
func noPanic(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed data: %v", p)
		}
	}()
	return fn()
}

// oneLine flattens a cause to one line of at most 200 bytes: parquet-go's
// thrift errors can spell out a long path through garbage.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const limit = 200
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
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
		cs, err := columnStats(key, md, &cols[i])
		if err != nil {
			return Schema{}, nil, FileStats{}, err
		}
		stats.Columns[cols[i].Name] = cs
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
	i := 1
	for range n {
		if i >= len(elems) {
			return nil, fmt.Errorf("%s: %w: the footer's schema lists %d columns but holds fewer", key, ErrCorruptFile, n)
		}
		e := &elems[i]
		if seen[e.Name] {
			return nil, fmt.Errorf("%s: %w: column %q appears twice", key, ErrCorruptFile, e.Name)
		}
		seen[e.Name] = true
		if nested := nestedKind(e); nested != "" {
			return nil, fmt.Errorf("%s: column %q: nested type %s is %w", key, e.Name, nested, ErrUnsupportedType)
		}
		c, err := mapLeaf(e)
		if err != nil {
			return nil, fmt.Errorf("%s: column %q: %w", key, e.Name, err)
		}
		c.index = len(cols)
		cols = append(cols, c)
		i++
	}
	return cols, nil
}

// nestedKind names the nested type of a top-level schema element, or ""
// for a plain (optional or required) leaf.
func nestedKind(e *format.SchemaElement) string {
	isGroup := !e.Type.Valid || e.NumChildren.V > 0
	switch e.LogicalType.Value.(type) {
	case *format.ListType:
		return "LIST"
	case *format.MapType:
		return "MAP"
	case *format.VariantType:
		return "VARIANT"
	}
	if ct, ok := e.ConvertedType.Get(); ok && isGroup {
		switch ct {
		case deprecated.List:
			return "LIST"
		case deprecated.Map, deprecated.MapKeyValue:
			return "MAP"
		}
	}
	if isGroup {
		return "struct"
	}
	if rt, ok := e.RepetitionType.Get(); ok && rt == format.Repeated {
		return "repeated " + e.Type.V.String()
	}
	return ""
}

// mapLeaf maps one primitive column to our type. Its errors wrap
// ErrUnsupportedType and read "type UINT64 is not supported yet".
func mapLeaf(e *format.SchemaElement) (fileColumn, error) {
	phys := e.Type.V
	c := fileColumn{phys: phys, minMax: true}
	c.Name = e.Name
	c.Nullable = e.RepetitionType.V == format.Optional
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
	switch lt.(type) {
	case *format.TimeType:
		return unsupported("TIME")
	case *format.NullType:
		return unsupported("UNKNOWN (always null)")
	case *format.Float16Type:
		return unsupported("FLOAT16")
	case *format.GeometryType:
		return unsupported("GEOMETRY")
	case *format.GeographyType:
		return unsupported("GEOGRAPHY")
	case *format.VariantType:
		return unsupported("VARIANT")
	}
	if conv(deprecated.TimeMillis) || conv(deprecated.TimeMicros) {
		return unsupported("TIME")
	}
	if conv(deprecated.Interval) {
		return unsupported("INTERVAL")
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
			return func(v parquet.Value) any { return time.UnixMicro(floorDiv(v.Int64(), 1000)).UTC() }
		default:
			return func(v parquet.Value) any { return time.UnixMicro(v.Int64()).UTC() }
		}
	case KindString:
		return func(v parquet.Value) any { return string(v.ByteArray()) }
	case KindUUID:
		if c.phys == format.FixedLenByteArray {
			return func(v parquet.Value) any { return formatUUID(v.ByteArray()) }
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
func FloorDiv(a, b int64) int64 { return floorDiv(a, b) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// FormatUUID renders 16 bytes (Parquet's UUID logical type) as the
// canonical 8-4-4-4-12 text; other lengths as plain hex.
func FormatUUID(b []byte) string { return formatUUID(b) }

func formatUUID(b []byte) string {
	if len(b) != 16 {
		return hex.EncodeToString(b)
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// decimalFromBytes decodes a big-endian two's complement unscaled value.
func decimalFromBytes(b []byte, scale int) string {
	if len(b) == 0 {
		return formatDecimalInt64(0, scale)
	}
	if len(b) <= 8 {
		var u uint64
		for _, x := range b {
			u = u<<8 | uint64(x)
		}
		shift := 64 - 8*uint(len(b))
		return formatDecimalInt64(int64(u<<shift)>>shift, scale)
	}
	n := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return formatDecimal(n, scale)
}

// --- schema compatibility --------------------------------------------------

// readableAs tells whether values of type from convert to type to without
// loss, and so whether a file column of type from can be read as a table
// column of type to.
//
//   - the same type; string and uuid either way (both are text; a uuid
//     table reading a string file relies on ingest's validation upstream);
//   - int32 → int64;
//   - int32 → float64: every int32 is exact in a float64. int64 → float64
//     is refused: above 2^53 it rounds, silently;
//   - float → double is already collapsed: both map to float64;
//   - decimal(p1,s1) → decimal(p2,s2) when s2 >= s1 and p2-s2 >= p1-s1
//     (no digit lost on either side of the point);
//   - int32 → decimal(p,s) with p-s >= 10, int64 → with p-s >= 19;
//   - never date ↔ timestamp: a date has no time zone and no time of day,
//     and reading one as midnight UTC silently invents both.
func readableAs(from, to Type) bool {
	if from == to {
		return true
	}
	text := func(k Kind) bool { return k == KindString || k == KindUUID }
	switch {
	case text(from.Kind) && text(to.Kind):
		return true
	case from.Kind == KindInt32 && (to.Kind == KindInt64 || to.Kind == KindFloat64):
		return true
	case from.Kind == KindDecimal && to.Kind == KindDecimal:
		return to.Scale >= from.Scale && to.Precision-to.Scale >= from.Precision-from.Scale
	case from.Kind == KindInt32 && to.Kind == KindDecimal:
		return to.Precision-to.Scale >= 10
	case from.Kind == KindInt64 && to.Kind == KindDecimal:
		return to.Precision-to.Scale >= 19
	}
	return false
}

// CheckCompatible tells whether a file whose schema is file can be read as
// the table schema table; fileKey names the file in the error. Refused,
// with an error wrapping ErrIncompatibleSchema that names the file and
// every offending column with both types:
//
//   - a file column of a type that does not convert losslessly to the
//     table column's (see the list below), e.g. date vs timestamp either
//     way, string vs int;
//   - a file column the table does not have;
//   - a required table column the file does not have.
//
// Accepted: the same type; string and uuid either way; int32 → int64;
// int32 → float64 (exact; int64 → float64 is not, above 2^53); decimals
// that keep every digit (the scale does not shrink, nor the digits before
// the point); int32/int64 → a decimal with at least 10/19 digits before
// the point; a table column missing from the file when it is nullable (it
// reads as NULL).
//
// A nullable file column into a non-nullable table column passes this
// schema check: Spark writes every column nullable, so refusing would
// refuse every Spark file. The data decides: ReadParquetRows fails on an
// actual NULL there.
func CheckCompatible(table, file Schema, fileKey string) error {
	var problems []string
	for _, fc := range file.Columns {
		tc, ok := table.Column(fc.Name)
		if !ok {
			problems = append(problems, fmt.Sprintf("column %q (%s) is not in the table", fc.Name, fc.Type))
			continue
		}
		if !readableAs(fc.Type, tc.Type) {
			why := ""
			if (fc.Type.Kind == KindDate && tc.Type.Kind == KindTimestamp) || (fc.Type.Kind == KindTimestamp && tc.Type.Kind == KindDate) {
				why = " (a date is never read as a timestamp, nor the reverse)"
			}
			problems = append(problems, fmt.Sprintf("column %q: the file has %s, the table %s%s", fc.Name, fc.Type, tc.Type, why))
		}
	}
	for _, tc := range table.Columns {
		if _, ok := file.Column(tc.Name); !ok && !tc.Nullable {
			problems = append(problems, fmt.Sprintf("column %q (%s, not nullable) is missing from the file", tc.Name, tc.Type))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w: %s", fileKey, ErrIncompatibleSchema, strings.Join(problems, "; "))
	}
	return nil
}

// MergeSchemas returns the narrowest schema that both a and b can be read
// as (see CheckCompatible), for adopting folders whose files were written
// with different schemas over time: a's columns in a's order, then b's
// columns that a lacks, in b's order. A column missing from either side
// becomes nullable, and a column nullable on either side stays so.
//
// Per column: the type that the other reads as (int32 and int64 → int64;
// int32 and float64 → float64; decimal(10,2) and decimal(20,5) →
// decimal(20,5)); otherwise the decimal that holds both (decimal(10,2) and
// decimal(8,4) → decimal(12,4); int64 and decimal(10,2) → decimal(21,2)),
// up to 38 digits; string with uuid → string. Anything else (date with
// timestamp, int64 with float64, string with int32) fails with an error
// wrapping ErrIncompatibleSchema that names the column and both types.
func MergeSchemas(a, b Schema) (Schema, error) {
	var out Schema
	var problems []string
	for _, ca := range a.Columns {
		cb, ok := b.Column(ca.Name)
		if !ok {
			ca.Nullable = true
			out.Columns = append(out.Columns, ca)
			continue
		}
		t, ok := commonType(ca.Type, cb.Type)
		if !ok {
			problems = append(problems, fmt.Sprintf("column %q: %s and %s have no common type", ca.Name, ca.Type, cb.Type))
			continue
		}
		out.Columns = append(out.Columns, Column{Name: ca.Name, Type: t, Nullable: ca.Nullable || cb.Nullable})
	}
	for _, cb := range b.Columns {
		if _, ok := a.Column(cb.Name); !ok {
			cb.Nullable = true
			out.Columns = append(out.Columns, cb)
		}
	}
	if len(problems) > 0 {
		return Schema{}, fmt.Errorf("merge schemas: %w: %s", ErrIncompatibleSchema, strings.Join(problems, "; "))
	}
	return out, nil
}

// commonType is MergeSchemas' rule for one column.
func commonType(a, b Type) (Type, bool) {
	if a.Kind == KindUUID && b.Kind == KindString || a.Kind == KindString && b.Kind == KindUUID {
		return Type{Kind: KindString}, true
	}
	if readableAs(b, a) {
		return a, true
	}
	if readableAs(a, b) {
		return b, true
	}
	// Two decimals, or an integer and a decimal: a decimal wide enough for both.
	intDigits := func(t Type) (int, int, bool) {
		switch t.Kind {
		case KindDecimal:
			return t.Precision - t.Scale, t.Scale, true
		case KindInt32:
			return 10, 0, true
		case KindInt64:
			return 19, 0, true
		}
		return 0, 0, false
	}
	if a.Kind != KindDecimal && b.Kind != KindDecimal {
		return Type{}, false
	}
	ia, sa, okA := intDigits(a)
	ib, sb, okB := intDigits(b)
	if !okA || !okB {
		return Type{}, false
	}
	s := max(sa, sb)
	p := max(ia, ib) + s
	if p > 38 {
		return Type{}, false
	}
	return Type{Kind: KindDecimal, Precision: p, Scale: s}, true
}

// widener returns the conversion of a value of type from to type to (for
// which readableAs holds), nil when none is needed.
func widener(from, to Type) func(any) any {
	switch {
	case from == to, from.Kind == to.Kind && from.Kind != KindDecimal:
		return nil
	case (from.Kind == KindString || from.Kind == KindUUID) && (to.Kind == KindString || to.Kind == KindUUID):
		return nil
	case from.Kind == KindInt32 && to.Kind == KindInt64:
		return func(v any) any { return int64(v.(int32)) }
	case from.Kind == KindInt32 && to.Kind == KindFloat64:
		return func(v any) any { return float64(v.(int32)) }
	case from.Kind == KindInt32 && to.Kind == KindDecimal:
		return func(v any) any { return rescaleDecimal(strconv.FormatInt(int64(v.(int32)), 10), 0, to.Scale) }
	case from.Kind == KindInt64 && to.Kind == KindDecimal:
		return func(v any) any { return rescaleDecimal(strconv.FormatInt(v.(int64), 10), 0, to.Scale) }
	case from.Kind == KindDecimal && to.Kind == KindDecimal:
		return func(v any) any { return rescaleDecimal(v.(string), from.Scale, to.Scale) }
	}
	return nil
}

// --- reading rows ------------------------------------------------------------

// ReadParquetRows reads every row of the Parquet file at key (size bytes)
// as the table schema: columns in the table's order, values converted to
// the table's types (int32 → int64, decimal scale widened, INT96 and
// millisecond timestamps to microseconds in UTC), NULL for a nullable table
// column the file lacks. A file that cannot be read as the table fails with
// ErrIncompatibleSchema before any row is read; see ScanParquet to stream.
func ReadParquetRows(ctx context.Context, st cloud.Store, key string, size int64, schema Schema) ([][]any, error) {
	var rows [][]any
	err := ScanParquet(ctx, st, key, size, schema, func(row []any) error {
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// ScanParquet is ReadParquetRows calling fn once per row instead of
// collecting them, so a file of any size streams in bounded memory. Each
// row is a fresh slice that fn may keep. An error from fn stops the scan and
// is returned as is. The context is checked between batches of rows.
func ScanParquet(ctx context.Context, st cloud.Store, key string, size int64, schema Schema, fn func(row []any) error) error {
	return ScanParquetAs(ctx, st, key, size, func(Schema) Schema { return schema }, fn)
}

// ScanParquetAs is ScanParquet with the schema to read as chosen by
// schemaFor from the file's own (see InspectParquet), for a reader whose
// columns depend on what the file holds, without opening it twice.
func ScanParquetAs(ctx context.Context, st cloud.Store, key string, size int64, schemaFor func(file Schema) Schema, fn func(row []any) error) error {
	f, r, err := openParquet(ctx, st, key, size)
	if err != nil {
		return err
	}
	fileSchema, cols, _, err := describeParquet(key, f)
	if err != nil {
		return err
	}
	schema := schemaFor(fileSchema)
	if err := CheckCompatible(schema, fileSchema, key); err != nil {
		return err
	}
	// Per file column: where it goes in the table row, and how it converts.
	type plan struct {
		to       int
		nullable bool
		decode   func(parquet.Value) any
		widen    func(any) any
	}
	plans := make([]plan, len(cols))
	for i, c := range cols {
		to := -1
		for j, tc := range schema.Columns {
			if tc.Name == c.Name {
				to = j
			}
		}
		tc := schema.Columns[to]
		plans[i] = plan{to: to, nullable: tc.Nullable, decode: c.decoder(), widen: widener(c.Type, tc.Type)}
	}

	var fnErr error
	rowNum := int64(0)
	buf := make([]parquet.Row, 256)
	err = noPanic(func() error {
		for g, rg := range f.RowGroups() {
			if err := ctx.Err(); err != nil {
				return err
			}
			rows := rg.Rows()
			for {
				if err := ctx.Err(); err != nil {
					rows.Close()
					return err
				}
				n, rerr := rows.ReadRows(buf)
				for _, prow := range buf[:n] {
					out := make([]any, len(schema.Columns))
					for _, v := range prow {
						ci := v.Column()
						if ci < 0 || ci >= len(plans) {
							rows.Close()
							return fmt.Errorf("row group %d: value of unknown column %d", g, ci)
						}
						p := &plans[ci]
						if v.IsNull() {
							if !p.nullable {
								rows.Close()
								return &nullError{key: key, column: cols[ci].Name, row: rowNum}
							}
							continue
						}
						x := p.decode(v)
						if p.widen != nil {
							x = p.widen(x)
						}
						out[p.to] = x
					}
					rowNum++
					if err := fn(out); err != nil {
						fnErr = err
						rows.Close()
						return err
					}
				}
				if errors.Is(rerr, io.EOF) {
					break
				}
				if rerr != nil {
					rows.Close()
					return fmt.Errorf("row group %d: %w", g, rerr)
				}
			}
			if err := rows.Close(); err != nil {
				return fmt.Errorf("row group %d: %w", g, err)
			}
		}
		return nil
	})
	var ne *nullError
	switch {
	case err == nil:
		return nil
	case fnErr != nil && errors.Is(err, fnErr):
		return fnErr
	case errors.As(err, &ne):
		return err
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("%s: %w", key, err)
	default:
		return readError(key, r, err)
	}
}

// nullError is a NULL found in a column the table declares not nullable.
type nullError struct {
	key    string
	column string
	row    int64
}

func (e *nullError) Error() string {
	return fmt.Sprintf("%s: column %q: NULL in row %d but the table column is not nullable: %s", e.key, e.column, e.row, ErrIncompatibleSchema)
}

func (e *nullError) Unwrap() error { return ErrIncompatibleSchema }

// --- writing -----------------------------------------------------------------

// WriteParquet writes rows (each in schema's column order, values in their
// Go representation, nil for NULL) as one zstd-compressed Parquet file at
// key, and returns its size and statistics (read back from the footer it
// wrote, so they are exactly what InspectParquet will say).
//
// The file's columns are the schema's, in its order. The file is staged in
// a local temporary file and uploaded with one Put, so a reader never sees
// it half-written. See ParquetWriter to stream rows in batches.
func WriteParquet(ctx context.Context, st cloud.Store, key string, schema Schema, rows [][]any) (bytes int64, stats FileStats, err error) {
	w, err := NewParquetWriter(schema, nil)
	if err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	defer w.Abort()
	if err := w.Write(ctx, rows); err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	return w.Close(ctx, st, key)
}

// ParquetWriter streams rows into one Parquet data file, staged in a local
// temporary file until Close uploads it. Types map as follows:
//
//	string        BYTE_ARRAY (STRING), dictionary-encoded
//	uuid          BYTE_ARRAY (STRING): DuckDB, Spark and Redshift read a
//	              STRING column as text, while a FIXED_LEN_BYTE_ARRAY(16)
//	              UUID column is raw bytes to many of them (Spark reads it as
//	              binary); sluice's own readers map it back to uuid through
//	              the table schema. DELTA_LENGTH_BYTE_ARRAY, see uuidEncoding
//	int32, int64  INT32, INT64
//	float64       DOUBLE
//	bool          BOOLEAN
//	date          INT32 (DATE)
//	timestamp     INT64 (TIMESTAMP(MICROS, isAdjustedToUTC=true))
//	decimal(p,s)  DECIMAL(p,s) on INT32 (p <= 9), INT64 (p <= 18) or the
//	              smallest FIXED_LEN_BYTE_ARRAY that holds p digits
//	binary        BYTE_ARRAY
//
// Statistics (min/max/nulls) are in the footer per column chunk and in the
// page index per page (see ParquetWriterOptions), string and binary bounds
// truncated to StatsTruncateBytes. A ParquetWriter is not safe for
// concurrent use.
type ParquetWriter struct {
	schema Schema
	tmp    *os.File
	w      *parquet.GenericWriter[any]
	enc    []func(any) (parquet.Value, error)
	// colVals holds one batch's values, a slice per column.
	colVals   [][]parquet.Value
	rows      int64
	groupRows int // rows in the row group being built
	done      bool
	// pending estimates the uncompressed bytes of the row group being
	// built, which parquet-go holds in memory until it is flushed.
	pending int64
	results []colResult // forColumns'
}

// Buffered estimates the bytes of rows the writer holds in memory: the
// row group being built, uncompressed.
func (pw *ParquetWriter) Buffered() int64 { return pw.pending }

// FlushRowGroup ends the row group being built, compressing it into the
// file, so that the memory it held is free. Callers that keep several
// writers open (one per partition) use it to stay within a budget.
func (pw *ParquetWriter) FlushRowGroup() error {
	if pw.done || pw.pending == 0 {
		return nil
	}
	if err := noPanic(pw.w.Flush); err != nil {
		return fmt.Errorf("parquet writer: %w", err)
	}
	pw.pending, pw.groupRows = 0, 0
	return nil
}

// NewParquetWriter starts a Parquet file of schema in a local temporary
// file. Call Close to upload it, or Abort to discard it. Writers of one
// run pass the same codecs, so that each column's compression level is
// learnt once; nil learns it afresh for this file.
func NewParquetWriter(schema Schema, codecs *Codecs) (*ParquetWriter, error) {
	ps, enc, err := parquetFields(schema, nil, codecs.For)
	if err != nil {
		return nil, fmt.Errorf("parquet writer: %w", err)
	}
	tmp, err := os.CreateTemp("", "sluice-*.parquet")
	if err != nil {
		return nil, fmt.Errorf("parquet writer: %w", err)
	}
	opts := append(ParquetWriterOptions(), ps, parquet.MaxRowsPerRowGroup(parquetRowGroupRows))
	w := parquet.NewGenericWriter[any](tmp, opts...)
	return &ParquetWriter{schema: schema, tmp: tmp, w: w, enc: enc}, nil
}

// Write adds rows to the file. A row of the wrong width, a value of the
// wrong Go type or a NULL in a non-nullable column fails the call, naming
// the row (counted from 0 over the writer's life) and the column; the rows
// before it in the call may have been written.
func (pw *ParquetWriter) Write(ctx context.Context, rows [][]any) error {
	if pw.done {
		return errors.New("parquet writer: write after Close or Abort")
	}
	// Column by column: each column's values of a batch go to its column
	// writer in one call, without building parquet.Rows that parquet-go
	// would only take apart again. A batch is encoded whole before any of
	// it is written, so a bad value stops the call after the rows before
	// it, never in the middle of a row.
	const batchRows = 1024
	cols := pw.schema.Columns
	if pw.colVals == nil {
		pw.colVals = make([][]parquet.Value, len(cols))
		for i := range pw.colVals {
			pw.colVals[i] = make([]parquet.Value, 0, batchRows)
		}
	}
	writers := pw.w.ColumnWriters()
	for len(rows) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(rows), batchRows, parquetRowGroupRows-pw.groupRows)
		good := n
		var bad error
		for k, row := range rows[:n] {
			if len(row) != len(cols) {
				good, bad = k, fmt.Errorf("row %d: %d values, the schema has %d columns", pw.rows+int64(k), len(row), len(cols))
				break
			}
		}
		// The columns are encoded, and then written, several at once: a
		// column's values go to their own column writer, which encodes
		// and compresses its pages; no two columns share anything.
		var pending int64
		for _, r := range pw.forColumns(func(i int) colResult {
			k, bytes, err := pw.encodeColumn(i, rows[:good], pw.rows)
			return colResult{k, bytes, err}
		}) {
			pending += r.bytes
			// The first bad row wins (a column's bad row is below the
			// good it was given), and at one row the first column.
			if r.err != nil && r.k < good {
				good, bad = r.k, r.err
			}
		}
		if good < n {
			// Rows from the bad one on are not written: count again.
			pending = 0
			for i := range cols {
				for _, v := range pw.colVals[i][:good] {
					pending += valueBytes(v)
				}
			}
		}
		if good > 0 {
			var err error
			for _, r := range pw.forColumns(func(i int) colResult {
				return colResult{err: noPanic(func() error {
					if _, err := writers[i].WriteRowValues(pw.colVals[i][:good]); err != nil {
						return fmt.Errorf("column %q: %w", cols[i].Name, err)
					}
					return nil
				})}
			}) {
				if r.err != nil && err == nil {
					err = r.err
				}
			}
			pw.pending += pending
			if err != nil {
				return fmt.Errorf("parquet writer: %w", err)
			}
			pw.rows += int64(good)
			pw.groupRows += good
			if pw.groupRows >= parquetRowGroupRows {
				if err := pw.FlushRowGroup(); err != nil {
					return err
				}
			}
		}
		if bad != nil {
			return bad
		}
		rows = rows[n:]
	}
	return nil
}

// colResult is what forColumns' work on one column gives.
type colResult struct {
	k     int
	bytes int64
	err   error
}

// forColumns runs fn for every column, columnWorkers at once, and returns
// each column's result; fn must touch nothing another column's call does.
func (pw *ParquetWriter) forColumns(fn func(i int) colResult) []colResult {
	n := len(pw.schema.Columns)
	if len(pw.results) != n {
		pw.results = make([]colResult, n)
	}
	res := pw.results
	workers := min(columnWorkers, n)
	if workers <= 1 {
		for i := range n {
			res[i] = fn(i)
		}
		return res
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				res[i] = fn(i)
			}
		})
	}
	wg.Wait()
	return res
}

// columnWorkers is how many columns of a batch a ParquetWriter encodes and
// writes at once.
var columnWorkers = runtime.NumCPU()

// encodeColumn converts column i of rows (the first counted as row first
// of the writer's life) into pw.colVals[i], and returns the bytes they
// will hold in the column buffer. At a bad value it stops and returns its
// row within rows and the error naming it.
//
// Only an optional column's non-null values get a level (definition level
// 1, by SetDefinitionLevel): parquet-go's column buffers read nothing else
// of a value's levels or column index, and the zero levels are a required
// value's and a NULL's. Value.Level on every value was about half of
// BenchmarkParquetWriterWrite (see SetDefinitionLevel).
func (pw *ParquetWriter) encodeColumn(i int, rows [][]any, first int64) (int, int64, error) {
	c := pw.schema.Columns[i]
	kind := c.Type.Kind
	vals := pw.colVals[i][:0]
	var bytes int64
	for k, row := range rows {
		// The common Go types inline, the rest (and a value of the wrong
		// type, which it names) through the column's encoder.
		var pv parquet.Value
		size := int64(8)
		ok := false
		switch x := row[i].(type) {
		case string:
			if ok = kind == KindString || kind == KindUUID; ok {
				pv = parquet.ByteArrayValue(stringBytes(x))
				size = int64(len(x)) + 4
			}
		case int64:
			if ok = kind == KindInt64; ok {
				pv = parquet.Int64Value(x)
			}
		case int32:
			if ok = kind == KindInt32; ok {
				pv = parquet.Int32Value(x)
			}
		case time.Time:
			if ok = kind == KindTimestamp; ok {
				pv = parquet.Int64Value(x.UnixMicro())
			}
		case nil:
			if !c.Nullable {
				pw.colVals[i] = vals
				return k, bytes, fmt.Errorf("row %d: column %q: NULL in a column that is not nullable", first+int64(k), c.Name)
			}
			vals = append(vals, parquet.Value{})
			bytes += 8
			continue
		}
		if !ok {
			var err error
			if pv, err = pw.enc[i](row[i]); err != nil {
				pw.colVals[i] = vals
				return k, bytes, fmt.Errorf("row %d: column %q: %w", first+int64(k), c.Name, err)
			}
			size = valueBytes(pv)
		}
		vals = append(vals, pv)
		if c.Nullable {
			SetDefinitionLevel(&vals[len(vals)-1], 1)
		}
		bytes += size
	}
	pw.colVals[i] = vals
	return len(rows), bytes, nil
}

// valueBytes estimates the bytes a value holds in a column buffer.
func valueBytes(v parquet.Value) int64 {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return int64(len(v.ByteArray())) + 4
	}
	return 8
}

// Close finishes the file, stores it under key with cloud.PutFile (on local
// disk the temporary file itself, hard-linked; elsewhere one Put streamed
// from it) and returns its size and its footer's statistics.
// The temporary file is removed whatever happens.
func (pw *ParquetWriter) Close(ctx context.Context, st cloud.Store, key string) (int64, FileStats, error) {
	if pw.done {
		return 0, FileStats{}, fmt.Errorf("write %s: parquet writer already closed", key)
	}
	defer pw.Abort()
	if err := noPanic(pw.w.Close); err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	size, err := pw.tmp.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	if size, err = TruncateFooterStats(pw.tmp, size); err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	var stats FileStats
	err = noPanic(func() error {
		f, err := parquet.OpenFile(pw.tmp, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
		if err != nil {
			return err
		}
		_, _, stats, err = describeParquet(key, f)
		return err
	})
	if err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: reading back the footer: %w", key, err)
	}
	if _, err := cloud.PutFile(ctx, st, key, pw.tmp, size, cloud.PutOptions{}); err != nil {
		return 0, FileStats{}, fmt.Errorf("write %s: %w", key, err)
	}
	return size, stats, nil
}

// Abort discards the file. It is safe to call after Close, and more than
// once.
func (pw *ParquetWriter) Abort() {
	if pw.done {
		return
	}
	pw.done = true
	name := pw.tmp.Name()
	_ = pw.tmp.Close()
	_ = os.Remove(name)
}

// columnNode returns the Parquet node of a table column and the encoder of
// its non-null values.
func columnNode(c Column) (parquet.Node, func(any) (parquet.Value, error), error) {
	t := c.Type
	check := func(f func(any) parquet.Value) func(any) (parquet.Value, error) {
		return func(v any) (parquet.Value, error) {
			if err := checkGoValue(t, v); err != nil {
				return parquet.Value{}, err
			}
			return f(v), nil
		}
	}
	var n parquet.Node
	var enc func(any) (parquet.Value, error)
	switch t.Kind {
	case KindString:
		n = parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
		enc = check(func(v any) parquet.Value { return parquet.ByteArrayValue(stringBytes(v.(string))) })
	case KindUUID:
		// Text, not FIXED_LEN_BYTE_ARRAY(16) UUID: see ParquetWriter.
		n = parquet.Encoded(parquet.String(), uuidEncoding)
		enc = check(func(v any) parquet.Value { return parquet.ByteArrayValue(stringBytes(v.(string))) })
	case KindInt32:
		n = parquet.Leaf(parquet.Int32Type)
		enc = check(func(v any) parquet.Value { return parquet.Int32Value(v.(int32)) })
	case KindInt64:
		n = parquet.Leaf(parquet.Int64Type)
		enc = check(func(v any) parquet.Value { return parquet.Int64Value(v.(int64)) })
	case KindFloat64:
		n = parquet.Leaf(parquet.DoubleType)
		enc = check(func(v any) parquet.Value { return parquet.DoubleValue(v.(float64)) })
	case KindBool:
		n = parquet.Leaf(parquet.BooleanType)
		enc = check(func(v any) parquet.Value { return parquet.BooleanValue(v.(bool)) })
	case KindDate:
		n = parquet.Date()
		// The UTC day of the value: a date is held as UTC midnight.
		enc = check(func(v any) parquet.Value {
			return parquet.Int32Value(int32(floorDiv(v.(time.Time).Unix(), 86400)))
		})
	case KindTimestamp:
		n = parquet.Timestamp(parquet.Microsecond)
		enc = check(func(v any) parquet.Value { return parquet.Int64Value(v.(time.Time).UnixMicro()) })
	case KindDecimal:
		p := t.Precision
		if p < 1 || p > 38 || t.Scale < 0 || t.Scale > p {
			return nil, nil, fmt.Errorf("invalid type %s", t)
		}
		var typ parquet.Type
		switch {
		case p <= 9:
			typ = parquet.Int32Type
		case p <= 18:
			typ = parquet.Int64Type
		default:
			typ = parquet.FixedLenByteArrayType(decimalBytes(p))
		}
		n = parquet.Decimal(t.Scale, p, typ)
		size := decimalBytes(p)
		enc = func(v any) (parquet.Value, error) {
			if err := checkGoValue(t, v); err != nil {
				return parquet.Value{}, err
			}
			u, err := decimalUnscaled(t, v.(string))
			if err != nil {
				return parquet.Value{}, err
			}
			switch {
			case p <= 9:
				return parquet.Int32Value(int32(u.Int64())), nil
			case p <= 18:
				return parquet.Int64Value(u.Int64()), nil
			default:
				return parquet.FixedLenByteArrayValue(twosComplement(u, size)), nil
			}
		}
	case KindBinary:
		n = parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), &parquet.Plain)
		enc = check(func(v any) parquet.Value { return parquet.ByteArrayValue(v.([]byte)) })
	default:
		return nil, nil, fmt.Errorf("unknown type %s", t)
	}
	if c.Nullable {
		n = parquet.Optional(n)
	} else {
		n = parquet.Required(n)
	}
	return n, enc, nil
}

// uuidEncoding is the encoding of a uuid column's text:
// DELTA_LENGTH_BYTE_ARRAY, which stores the lengths (all 36) apart, a few
// bytes per page, and the texts one after the other. PLAIN puts a 4-byte
// length before each text, and zstd level 1 then finds a short match in
// almost every value: on a page of random UUIDs it compressed 155 MB/s to
// 19.7 bytes a value, against 447 MB/s to 18.4 bytes for the texts alone.
// That compression was 30% of an ingest's CPU (bench/ingest.sh). The
// Parquet format prefers this encoding to PLAIN for byte arrays, and
// DuckDB, Spark, Arrow and Trino read it.
var uuidEncoding = &parquet.DeltaLengthByteArray

// decimalBytes is the smallest number of bytes whose two's complement holds
// every unscaled value of precision p (as Spark sizes its FIXED decimals).
func decimalBytes(p int) int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	for n := 1; ; n++ {
		// The largest positive value of n bytes is 2^(8n-1) - 1.
		if new(big.Int).Lsh(big.NewInt(1), uint(8*n-1)).Cmp(limit) >= 0 {
			return n
		}
	}
}

// twosComplement renders u as a size-byte big-endian two's complement.
func twosComplement(u *big.Int, size int) []byte {
	out := make([]byte, size)
	if u.Sign() >= 0 {
		u.FillBytes(out)
		return out
	}
	// -x in two's complement is 2^(8·size) - x.
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*size))
	m.Add(m, u)
	m.FillBytes(out)
	return out
}

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
