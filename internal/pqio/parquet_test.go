package pqio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/sluice-data/sluice/cloud"
)

// sparkDir holds Parquet files written by Spark (see its README.md),
// relative to this package's folder.
const sparkDir = "../../testdata/spark-written"

// --- a store that counts requests -------------------------------------------------

// countingStore wraps a real store and counts reads, so tests can check how
// much a read costs on an object store.
type countingStore struct {
	cloud.Store

	mu     sync.Mutex
	gets   int // Get calls
	ranges int // GetRange calls
}

// newTestStore is a local-disk store in a fresh temporary folder.
func newTestStore(t testing.TB) *countingStore { return openTestStore(t, t.TempDir()) }

func openTestStore(t testing.TB, dir string) *countingStore {
	t.Helper()
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &countingStore{Store: st}
}

func (s *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, cloud.ObjectInfo, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.Store.Get(ctx, key)
}

func (s *countingStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	s.mu.Lock()
	s.ranges++
	s.mu.Unlock()
	return s.Store.GetRange(ctx, key, off, length)
}

func (s *countingStore) requests() (gets, ranges int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets, s.ranges
}

// --- helpers -------------------------------------------------------------------

func pqSchema(t testing.TB, s string) Schema {
	t.Helper()
	sc, err := ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func pqSize(t testing.TB, st cloud.Store, key string) int64 {
	t.Helper()
	info, err := st.Stat(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// putRaw stores a Parquet file written by parquet-go directly from a group
// schema, for the shapes sluice itself never writes.
func putRaw(t *testing.T, st cloud.Store, key string, group parquet.Node, rows []parquet.Row, opts ...parquet.WriterOption) int64 {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, append([]parquet.WriterOption{parquet.NewSchema("raw", group)}, opts...)...)
	if len(rows) > 0 {
		if _, err := w.WriteRows(rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), key, bytes.NewReader(buf.Bytes()), int64(buf.Len()), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return int64(buf.Len())
}

// --- writing and reading back ----------------------------------------------------

func TestParquetRoundTripOfEveryTypeKeepsValuesNullsAndColumnOrder(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	schema := pqSchema(t, "z:string?,a:int32,m:int64?,u:uuid?,f:float64?,b:bool?,d:date?,ts:timestamp?,"+
		"dec:decimal(10,2)?,dsmall:decimal(5,3),dbig:decimal(38,6)?,d20:decimal(20,0)?,bin:binary?")
	ts := time.Date(2024, 1, 31, 23, 59, 58, 123456000, time.UTC)
	rows := [][]any{
		{"zeta", int32(math.MinInt32), int64(math.MaxInt64), "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a", 1.5, true, day(2024, 1, 31), ts,
			"-123.45", "0.001", "-12345678901234567890123456789012.345678", "99999999999999999999", []byte{0, 1, 2}},
		{nil, int32(7), nil, nil, nil, nil, nil, nil, nil, "99.999", nil, nil, nil},
		{"", int32(0), int64(math.MinInt64), "00000000-0000-0000-0000-000000000000", math.Inf(-1), false, day(1969, 12, 31),
			time.Date(1900, 1, 1, 0, 0, 0, 1000, time.UTC), "0.00", "-99.999", "12345678901234567890123456789012.345678", "-99999999999999999999", []byte{}},
		{"ünïcode", int32(math.MaxInt32), int64(-1), nil, -0.25, nil, day(9999, 12, 31), time.Unix(0, 0).UTC(), "99999999.99", "-0.001", "0.000001", "0", nil},
	}
	n, stats, err := WriteParquet(ctx, st, "t/part-0.parquet", schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	if n != pqSize(t, st, "t/part-0.parquet") {
		t.Errorf("WriteParquet returned %d bytes, the object has %d", n, pqSize(t, st, "t/part-0.parquet"))
	}
	if stats.Rows != 4 {
		t.Errorf("stats.Rows = %d, want 4", stats.Rows)
	}

	got, err := ReadParquetRows(ctx, st, "t/part-0.parquet", n, schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, want %d", len(got), len(rows))
	}
	for i := range rows {
		for j, c := range schema.Columns {
			want, have := rows[i][j], got[i][j]
			if b, ok := want.([]byte); ok && len(b) == 0 {
				want = []byte{} // an empty binary reads back empty, not nil
			}
			if !reflect.DeepEqual(want, have) {
				t.Errorf("row %d column %s: got %#v, want %#v", i, c.Name, have, want)
			}
		}
	}

	// The file's columns are the table's, in its order (not sorted by name).
	fschema, istats, err := InspectParquet(ctx, st, "t/part-0.parquet", n)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range fschema.Columns {
		names = append(names, c.Name)
	}
	if want := "z,a,m,u,f,b,d,ts,dec,dsmall,dbig,d20,bin"; strings.Join(names, ",") != want {
		t.Errorf("file columns = %s, want %s", strings.Join(names, ","), want)
	}
	// uuid is written as STRING (readers see text), so the file says string.
	wantSchema := strings.Replace(schema.String(), "u:uuid?", "u:string?", 1)
	if fschema.String() != wantSchema {
		t.Errorf("file schema = %s\nwant          %s", fschema, wantSchema)
	}
	if !reflect.DeepEqual(stats, istats) {
		t.Errorf("WriteParquet stats %+v differ from InspectParquet's %+v", stats, istats)
	}
	if err := CheckCompatible(schema, fschema, "t/part-0.parquet"); err != nil {
		t.Errorf("a file sluice wrote is incompatible with its own table: %v", err)
	}

	// The physical layout: zstd, dictionary-encoded strings, the logical types.
	f, err := os.Open(st.URL("t/part-0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := parquet.OpenFile(f, n)
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata()
	// Readers prune pages by the page index, which carries every page's
	// bounds (page headers do not repeat them).
	for i, ci := range pf.ColumnIndexes() {
		if len(ci.MinValues) == 0 || len(ci.MinValues) != len(ci.MaxValues) || len(ci.NullPages) != len(ci.MinValues) {
			t.Errorf("column %d: page index has %d min and %d max values for %d pages", i, len(ci.MinValues), len(ci.MaxValues), len(ci.NullPages))
		}
	}
	if got, want := len(pf.ColumnIndexes()), len(md.Schema)-1; got != want {
		t.Errorf("page index covers %d columns, want %d", got, want)
	}
	for i, oi := range pf.OffsetIndexes() {
		for k, loc := range oi.PageLocations {
			h := readPageHeader(t, f, loc.Offset)
			st := h.DataPageHeader.V.Statistics
			if h.DataPageHeaderV2.Valid {
				st = h.DataPageHeaderV2.V.Statistics
			}
			if st.MinValue != nil || st.MaxValue != nil || st.Min != nil || st.Max != nil {
				t.Errorf("column %d page %d: the header repeats the bounds %q..%q", i, k, st.MinValue, st.MaxValue)
			}
		}
	}
	for i, e := range md.Schema[1:] {
		meta := md.RowGroups[0].Columns[i].MetaData
		if meta.Codec.String() != "ZSTD" {
			t.Errorf("column %s: codec %s, want ZSTD", e.Name, meta.Codec)
		}
		lt := e.LogicalType.String()
		switch e.Name {
		case "z":
			var dict bool
			for _, enc := range meta.Encoding {
				dict = dict || strings.Contains(enc.String(), "DICTIONARY")
			}
			if !dict || lt != "STRING" {
				t.Errorf("column z: encodings %v, logical type %s; want a dictionary and STRING", meta.Encoding, lt)
			}
		case "u":
			if lt != "STRING" {
				t.Errorf("column u (uuid): logical type %s, want STRING", lt)
			}
		case "ts":
			if lt != "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)" {
				t.Errorf("column ts: logical type %s", lt)
			}
		case "d":
			if lt != "DATE" {
				t.Errorf("column d: logical type %s, want DATE", lt)
			}
		case "dec", "dsmall", "dbig", "d20":
			wantPhys := map[string]string{"dec": "INT64", "dsmall": "INT32", "dbig": "FIXED_LEN_BYTE_ARRAY", "d20": "FIXED_LEN_BYTE_ARRAY"}[e.Name]
			if e.Type.V.String() != wantPhys || !strings.HasPrefix(lt, "DECIMAL") {
				t.Errorf("column %s: %s %s, want %s DECIMAL", e.Name, e.Type.V, lt, wantPhys)
			}
		}
	}
}

func TestParquetStatsCountRowsNullsAndBounds(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	schema := pqSchema(t, "id:int64,name:string?,d:date?,ts:timestamp?,amount:decimal(12,2)?,x:float64?,b:bool?,bin:binary?,empty:int32?")
	rows := [][]any{
		{int64(3), "carol", day(2024, 2, 1), time.Date(2024, 2, 1, 10, 0, 0, 0, time.UTC), "-5.50", 2.5, true, []byte("x"), nil},
		{int64(-7), nil, day(2023, 12, 31), nil, "1000.00", nil, false, nil, nil},
		{int64(11), "alice", nil, time.Date(2023, 1, 1, 0, 0, 0, 1000, time.UTC), "-12.00", -1.0, nil, []byte("y"), nil},
		{int64(0), "bob", day(2024, 1, 1), nil, nil, 0.0, nil, nil, nil},
	}
	_, stats, err := WriteParquet(ctx, st, "s.parquet", schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Rows != 4 {
		t.Errorf("rows = %d, want 4", stats.Rows)
	}
	want := map[string]struct {
		nulls    int64
		min, max string
	}{
		"id":     {0, "-7", "11"},
		"name":   {1, "alice", "carol"},
		"d":      {1, "2023-12-31", "2024-02-01"},
		"ts":     {2, "2023-01-01T00:00:00.000001Z", "2024-02-01T10:00:00.000000Z"},
		"amount": {1, "-12.00", "1000.00"},
		"x":      {1, "-1", "2.5"},
		"b":      {2, "false", "true"},
		"bin":    {2, "<nil>", "<nil>"}, // binary: no min/max
		"empty":  {4, "<nil>", "<nil>"}, // all nulls: nothing to bound
	}
	for name, w := range want {
		cs, ok := stats.Columns[name]
		if !ok {
			t.Errorf("no stats for column %s", name)
			continue
		}
		if cs.NullCount != w.nulls || str(cs.Min) != w.min || str(cs.Max) != w.max {
			t.Errorf("column %s: nulls %d min %s max %s; want nulls %d min %s max %s",
				name, cs.NullCount, str(cs.Min), str(cs.Max), w.nulls, w.min, w.max)
		}
	}
}

func TestParquetStatsAggregateOverRowGroups(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	group := parquet.Group{"a": parquet.Optional(parquet.Int(64)), "s": parquet.Optional(parquet.String())}
	val := func(v parquet.Value, def, col int) parquet.Value { return v.Level(0, def, col) }
	null := func(col int) parquet.Value { return parquet.NullValue().Level(0, 0, col) }
	rows := []parquet.Row{
		{val(parquet.Int64Value(5), 1, 0), val(parquet.ByteArrayValue([]byte("m")), 1, 1)},
		{val(parquet.Int64Value(9), 1, 0), null(1)},
		{null(0), null(1)},
		{val(parquet.Int64Value(-2), 1, 0), val(parquet.ByteArrayValue([]byte("b")), 1, 1)},
		{val(parquet.Int64Value(4), 1, 0), val(parquet.ByteArrayValue([]byte("z")), 1, 1)},
	}
	size := putRaw(t, st, "rg.parquet", group, rows, parquet.MaxRowsPerRowGroup(2))
	_, stats, err := InspectParquet(ctx, st, "rg.parquet", size)
	if err != nil {
		t.Fatal(err)
	}
	a, s := stats.Columns["a"], stats.Columns["s"]
	if stats.Rows != 5 || a.NullCount != 1 || str(a.Min) != "-2" || str(a.Max) != "9" ||
		s.NullCount != 2 || str(s.Min) != "b" || str(s.Max) != "z" {
		t.Errorf("rows %d; a: nulls %d [%s,%s]; s: nulls %d [%s,%s]; want 5; 1 [-2,9]; 2 [b,z]",
			stats.Rows, a.NullCount, str(a.Min), str(a.Max), s.NullCount, str(s.Min), str(s.Max))
	}
}

func TestWriteParquetWithNoRowsWritesTheSchema(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	schema := pqSchema(t, "b:string?,a:int64")
	n, stats, err := WriteParquet(ctx, st, "empty.parquet", schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := InspectParquet(ctx, st, "empty.parquet", n)
	if err != nil || got.String() != schema.String() || stats.Rows != 0 {
		t.Errorf("schema %s, rows %d, %v; want %s, 0 rows", got, stats.Rows, err, schema)
	}
	rows, err := ReadParquetRows(ctx, st, "empty.parquet", n, schema)
	if err != nil || len(rows) != 0 {
		t.Errorf("read %d rows, %v; want none", len(rows), err)
	}
}

func TestParquetDateColumnStaysDate(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	schema := pqSchema(t, "d:date,ts:timestamp")
	n, _, err := WriteParquet(ctx, st, "d.parquet", schema, [][]any{{day(2024, 3, 1), time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)}})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := InspectParquet(ctx, st, "d.parquet", n)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "d:date,ts:timestamp" {
		t.Errorf("schema = %s, want d:date,ts:timestamp", got)
	}
	// Read as a table whose d is a timestamp: refused, naming the column.
	_, err = ReadParquetRows(ctx, st, "d.parquet", n, pqSchema(t, "d:timestamp,ts:timestamp"))
	if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), `column "d"`) || !strings.Contains(err.Error(), "d.parquet") {
		t.Errorf("reading a date as a timestamp: %v; want ErrIncompatibleSchema naming d.parquet and column \"d\"", err)
	}
}

func TestWriteParquetRefusesBadRows(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	schema := pqSchema(t, "id:int64,name:string?,amount:decimal(5,2)?")
	for name, row := range map[string][]any{
		"a NULL in a required column":    {nil, "x", nil},
		"an int where int64 is due":      {7, "x", nil},
		"too few values":                 {int64(1)},
		"a decimal that does not fit":    {int64(1), nil, "1234.5"},
		"a decimal with too many digits": {int64(1), nil, "1.234"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := WriteParquet(ctx, st, "bad.parquet", schema, [][]any{{int64(0), nil, nil}, row})
			if err == nil || !strings.Contains(err.Error(), "row 1") {
				t.Errorf("got %v, want an error naming row 1", err)
			}
			if _, serr := st.Stat(ctx, "bad.parquet"); !errors.Is(serr, cloud.ErrNotFound) {
				t.Errorf("a failed write left an object behind: %v", serr)
			}
		})
	}
}

func TestParquetNullInRequiredTableColumnIsRefusedAtRead(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	n, _, err := WriteParquet(ctx, st, "n.parquet", pqSchema(t, "id:int64?"), [][]any{{int64(1)}, {nil}})
	if err != nil {
		t.Fatal(err)
	}
	// The schema check lets a nullable file column into a required table column...
	if err := CheckCompatible(pqSchema(t, "id:int64"), pqSchema(t, "id:int64?"), "n.parquet"); err != nil {
		t.Fatal(err)
	}
	// ...and the NULL itself is refused.
	_, err = ReadParquetRows(ctx, st, "n.parquet", n, pqSchema(t, "id:int64"))
	if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), `column "id"`) || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("got %v, want ErrIncompatibleSchema naming column id and row 1", err)
	}
}

func TestReadParquetRowsWidensToTheTableSchema(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	file := pqSchema(t, "i:int32?,j:int32?,k:int64?,dec:decimal(5,2)?,s:uuid?")
	n, _, err := WriteParquet(ctx, st, "w.parquet", file, [][]any{
		{int32(-3), int32(4), int64(-9000000000000000000), "-1.50", "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a"},
		{nil, nil, nil, nil, nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	table := pqSchema(t, "extra:string?,s:string?,dec:decimal(10,4)?,k:decimal(25,1)?,j:float64?,i:int64?")
	got, err := ReadParquetRows(ctx, st, "w.parquet", n, table)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{nil, "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a", "-1.5000", "-9000000000000000000.0", 4.0, int64(-3)},
		{nil, nil, nil, nil, nil, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
}

func TestParquetLogicalTypesOfOtherWriters(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	group := parquet.Group{
		"i8":     parquet.Int(8),
		"i16":    parquet.Int(16),
		"u8":     parquet.Uint(8),
		"u16":    parquet.Uint(16),
		"u32":    parquet.Uint(32),
		"tsnano": parquet.Timestamp(parquet.Nanosecond),
		"tsms":   parquet.TimestampAdjusted(parquet.Millisecond, false),
		"js":     parquet.JSON(),
		"en":     parquet.Enum(),
		"id":     parquet.UUID(),
		"decb":   parquet.Decimal(3, 30, parquet.ByteArrayType),
		"f32":    parquet.Leaf(parquet.FloatType),
	}
	// Leaf columns in parquet.Group's (sorted) order.
	vals := map[string]parquet.Value{
		"decb":   parquet.ByteArrayValue([]byte{0xff, 0x85}), // -123 → -0.123
		"en":     parquet.ByteArrayValue([]byte("RED")),
		"f32":    parquet.FloatValue(0.5),
		"i16":    parquet.Int32Value(-300),
		"i8":     parquet.Int32Value(-5),
		"id":     parquet.FixedLenByteArrayValue([]byte{0x0b, 0x0e, 0x6d, 0x2c, 0x4f, 0x5a, 0x4c, 0x1e, 0x9d, 0x8b, 0x1f, 0x2e, 0x3d, 0x4c, 0x5b, 0x6a}),
		"js":     parquet.ByteArrayValue([]byte(`{"a":1}`)),
		"tsms":   parquet.Int64Value(-1), // 1969-12-31T23:59:59.999
		"tsnano": parquet.Int64Value(1_700_000_000_123_456_789),
		"u16":    parquet.Int32Value(65535),
		"u32":    parquet.Int32Value(-1), // 4294967295
		"u8":     parquet.Int32Value(255),
	}
	sch := parquet.NewSchema("raw", group)
	var row parquet.Row
	for i, path := range sch.Columns() {
		row = append(row, vals[path[0]].Level(0, 0, i))
	}
	size := putRaw(t, st, "other.parquet", group, []parquet.Row{row})
	got, stats, err := InspectParquet(ctx, st, "other.parquet", size)
	if err != nil {
		t.Fatal(err)
	}
	want := "decb:decimal(30,3),en:string,f32:float64,i16:int32,i8:int32,id:uuid,js:string,tsms:timestamp,tsnano:timestamp,u16:int32,u32:int64,u8:int32"
	if got.String() != want {
		t.Fatalf("schema = %s\nwant     %s", got, want)
	}
	rows, err := ReadParquetRows(ctx, st, "other.parquet", size, got)
	if err != nil {
		t.Fatal(err)
	}
	wantRow := []any{"-0.123", "RED", 0.5, int32(-300), int32(-5), "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a", `{"a":1}`,
		time.Date(1969, 12, 31, 23, 59, 59, 999000000, time.UTC), time.Date(2023, 11, 14, 22, 13, 20, 123456000, time.UTC),
		int32(65535), int64(4294967295), int32(255)}
	if !reflect.DeepEqual(rows, [][]any{wantRow}) {
		t.Errorf("rows = %#v\nwant   %#v", rows, [][]any{wantRow})
	}
	if s := stats.Columns["u32"]; str(s.Min) != "4294967295" || str(s.Max) != "4294967295" {
		t.Errorf("UINT32 stats [%s,%s], want the unsigned value", str(s.Min), str(s.Max))
	}
	if s := stats.Columns["decb"]; str(s.Min) != "-0.123" {
		t.Errorf("BYTE_ARRAY decimal min %s, want -0.123", str(s.Min))
	}
}

func TestParquetUnsupportedTypesNameFileAndColumn(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	for name, tc := range map[string]struct {
		node parquet.Node
		msg  string
	}{
		"list":   {parquet.Optional(parquet.List(parquet.Int(32))), `part-0001.parquet: column "arr": nested type LIST is not supported yet`},
		"map":    {parquet.Map(parquet.String(), parquet.Int(64)), `part-0001.parquet: column "arr": nested type MAP is not supported yet`},
		"struct": {parquet.Group{"x": parquet.Int(32)}, `part-0001.parquet: column "arr": nested type struct is not supported yet`},
		"uint64": {parquet.Uint(64), `part-0001.parquet: column "arr": type UINT64 (values above 2^63-1 do not fit int64) is not supported yet`},
	} {
		t.Run(name, func(t *testing.T) {
			size := putRaw(t, st, "part-0001.parquet", parquet.Group{"arr": tc.node, "ok": parquet.Int(32)}, nil)
			_, _, err := InspectParquet(ctx, st, "part-0001.parquet", size)
			if !errors.Is(err, ErrUnsupportedType) || err.Error() != tc.msg {
				t.Errorf("got  %v\nwant %s (wrapping ErrUnsupportedType)", err, tc.msg)
			}
		})
	}
}

func TestParquetCorruptFilesFailWithOneLineNamingTheKey(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	good, err := os.ReadFile(filepath.Join(sparkDir, "data-reader-primitives/part-00000-4f2f0b9f-50b3-4e7b-96a1-e2bb0f246b06-c000.snappy.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, b []byte) int64 {
		if _, err := st.Put(ctx, key, bytes.NewReader(b), int64(len(b)), cloud.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		return int64(len(b))
	}
	cases := map[string]int64{
		"truncated.parquet": put("truncated.parquet", good[:len(good)/2]),
		"text.parquet":      put("text.parquet", bytes.Repeat([]byte("this is not parquet\n"), 50)),
		"empty.parquet":     put("empty.parquet", nil),
		"tiny.parquet":      put("tiny.parquet", []byte("PAR1")),
		"footer.parquet":    put("footer.parquet", append(append([]byte("PAR1"), bytes.Repeat([]byte{0xff}, 100)...), 50, 0, 0, 0, 'P', 'A', 'R', '1')),
	}
	// An object shorter than the size the caller believes.
	cases["short.parquet"] = put("short.parquet", good[:100]) + 1000
	// A footer that decodes over data pages that do not: only a read of
	// the rows finds out.
	garbled := bytes.Clone(good)
	for i := 4; i < 200; i++ {
		garbled[i] = 0xAA
	}
	gsize := put("garbled.parquet", garbled)
	gschema, _, err := InspectParquet(ctx, st, "garbled.parquet", gsize)
	if err != nil {
		t.Fatalf("garbled pages, intact footer: InspectParquet: %v", err)
	}
	_, err = ReadParquetRows(ctx, st, "garbled.parquet", gsize, gschema)
	checkCorrupt(t, "garbled.parquet", err)

	schema := pqSchema(t, "as_int:int32?")
	for key, size := range cases {
		t.Run(key, func(t *testing.T) {
			_, _, err := InspectParquet(ctx, st, key, size)
			checkCorrupt(t, key, err)
			_, err = ReadParquetRows(ctx, st, key, size, schema)
			checkCorrupt(t, key, err)
		})
	}
}

func checkCorrupt(t *testing.T, key string, err error) {
	t.Helper()
	if !errors.Is(err, ErrCorruptFile) {
		t.Errorf("got %v, want ErrCorruptFile", err)
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, key+": ") {
		t.Errorf("error %q: want one line starting with the key", msg)
	}
	t.Log(msg)
}

func TestParquetReadFailuresAreNotCorruption(t *testing.T) {
	st := newTestStore(t)
	_, _, err := InspectParquet(context.Background(), st, "missing.parquet", 1000)
	if !errors.Is(err, cloud.ErrNotFound) || errors.Is(err, ErrCorruptFile) {
		t.Errorf("missing object: %v; want cloud.ErrNotFound, not ErrCorruptFile", err)
	}
	n, _, err := WriteParquet(context.Background(), st, "x.parquet", pqSchema(t, "a:int32"), [][]any{{int32(1)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ReadParquetRows(ctx, st, "x.parquet", n, pqSchema(t, "a:int32"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrCorruptFile) {
		t.Errorf("cancelled read: %v; want context.Canceled, not ErrCorruptFile", err)
	}
}

func TestInspectParquetReadsOnlyTheFooterInOneRequest(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	// Incompressible strings make a file much larger than the read-ahead.
	rows := make([][]any, 60000)
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprintf("%x", uint64(i)*0x9E3779B97F4A7C15)}
	}
	n, _, err := WriteParquet(ctx, st, "big.parquet", pqSchema(t, "id:int64,h:string"), rows)
	if err != nil {
		t.Fatal(err)
	}
	if n < 2*footerReadAhead {
		t.Fatalf("file is %d bytes; the test needs more than %d", n, 2*footerReadAhead)
	}
	g0, r0 := st.requests()
	_, stats, err := InspectParquet(ctx, st, "big.parquet", n)
	if err != nil {
		t.Fatal(err)
	}
	g1, r1 := st.requests()
	if g1 != g0 || r1-r0 != 1 {
		t.Errorf("InspectParquet made %d Get and %d GetRange requests, want 0 and 1", g1-g0, r1-r0)
	}
	if stats.Rows != 60000 {
		t.Errorf("rows = %d", stats.Rows)
	}
	got, err := ReadParquetRows(ctx, st, "big.parquet", n, pqSchema(t, "id:int64,h:string"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("read back %d rows that differ from the %d written", len(got), len(rows))
	}
}

// --- Spark-written fixtures ---------------------------------------------------------

// sparkExpect is what InspectParquet must say of the files of one folder:
// a schema, or an unsupported column.
type sparkExpect struct {
	schema      string
	unsupported string // `column "x": nested type ...`
}

func sparkExpectations() map[string]sparkExpect {
	decimals := []string{}
	for _, ps := range [][2]int{{4, 0}, {7, 0}, {7, 6}, {12, 0}, {12, 6}, {15, 0}, {15, 6}, {15, 12}, {18, 0}, {18, 6}, {18, 12},
		{25, 0}, {25, 6}, {25, 12}, {25, 18}, {25, 24}, {35, 0}, {35, 6}, {35, 12}, {35, 18}, {35, 24}, {35, 30},
		{38, 0}, {38, 6}, {38, 12}, {38, 18}, {38, 24}, {38, 30}, {38, 36}} {
		decimals = append(decimals, fmt.Sprintf("decimal_%d_%d:decimal(%d,%d)?", ps[0], ps[1], ps[0], ps[1]))
	}
	ts := sparkExpect{schema: "id:int32?,time:timestamp?"}
	return map[string]sparkExpect{
		"125-iterator-bug":                  {schema: "col1:int32?"},
		"125-iterator-bug/_delta_log":       {unsupported: `column "txn": nested type struct is not supported yet`},
		"data-reader-date-types-UTC":        {schema: "timestamp:timestamp?,date:date?"},
		"data-reader-escaped-chars":         {schema: "_1:string?"},
		"data-reader-partition-values":      {unsupported: `column "as_list_of_records": nested type LIST is not supported yet`},
		"data-reader-primitives":            {schema: "as_int:int32?,as_long:int64?,as_byte:int32?,as_short:int32?,as_boolean:bool?,as_float:float64?,as_double:float64?,as_string:string?,as_binary:binary?,as_big_decimal:decimal(1,0)?"},
		"decimal-various-scale-precision":   {schema: strings.Join(decimals, ",")},
		"kernel-timestamp-INT96":            ts,
		"kernel-timestamp-TIMESTAMP_MICROS": ts,
		"kernel-timestamp-TIMESTAMP_MILLIS": ts,
		"parquet-all-types":                 {unsupported: `column "nested_struct": nested type struct is not supported yet`},
		"parquet-all-types-legacy-format":   {unsupported: `column "nested_struct": nested type struct is not supported yet`},
		"type-widening":                     {}, // two schemas: see TestSparkTypeWideningMerges
	}
}

// sparkFiles lists the .parquet files under sparkDir by folder (the first
// path element, or "125-iterator-bug/_delta_log" for Delta checkpoints).
func sparkFiles(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(sparkDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		rel, _ := filepath.Rel(sparkDir, p)
		rel = filepath.ToSlash(rel)
		folder, _, _ := strings.Cut(rel, "/")
		if strings.Contains(rel, "/_delta_log/") {
			folder += "/_delta_log"
		}
		out[folder] = append(out[folder], rel)
		return nil
	})
	if err != nil {
		t.Fatalf("listing the Spark fixtures %s: %v", sparkDir, err)
	}
	return out
}

func sparkStore(t *testing.T) *countingStore {
	abs, err := filepath.Abs(sparkDir)
	if err != nil {
		t.Fatal(err)
	}
	return openTestStore(t, abs)
}

func TestSparkWrittenFilesInspect(t *testing.T) {
	ctx := context.Background()
	st := sparkStore(t)
	expect := sparkExpectations()
	files := sparkFiles(t)
	for folder := range files {
		if _, ok := expect[folder]; !ok {
			t.Errorf("folder %s has no expectation: add one", folder)
		}
	}
	for folder, keys := range files {
		want := expect[folder]
		for _, key := range keys {
			t.Run(key, func(t *testing.T) {
				schema, stats, err := InspectParquet(ctx, st, key, pqSize(t, st, key))
				switch {
				case want.unsupported != "":
					if !errors.Is(err, ErrUnsupportedType) || err.Error() != key+": "+want.unsupported {
						t.Errorf("got %v\nwant %s: %s (ErrUnsupportedType)", err, key, want.unsupported)
					}
				case err != nil:
					t.Errorf("InspectParquet: %v", err)
				case want.schema != "" && schema.String() != want.schema:
					t.Errorf("schema = %s\nwant     %s", schema, want.schema)
				default:
					if len(stats.Columns) != len(schema.Columns) {
						t.Errorf("stats for %d columns, schema has %d", len(stats.Columns), len(schema.Columns))
					}
				}
			})
		}
	}
}

func TestSparkDateAndTimestampFixture(t *testing.T) {
	ctx := context.Background()
	st := sparkStore(t)
	var all [][]any
	for _, key := range sparkFiles(t)["data-reader-date-types-UTC"] {
		schema, _, err := InspectParquet(ctx, st, key, pqSize(t, st, key))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := ReadParquetRows(ctx, st, key, pqSize(t, st, key), schema)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rows...)
		// The date column is not readable as a timestamp, nor the reverse.
		err = CheckCompatible(pqSchema(t, "timestamp:timestamp?,date:timestamp?"), schema, key)
		if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), `column "date"`) {
			t.Errorf("date read as timestamp: %v", err)
		}
	}
	if len(all) == 0 {
		t.Fatal("no rows")
	}
	want := [][]any{{time.Date(2020, 1, 1, 8, 9, 10, 0, time.UTC), day(2020, 1, 1)}}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("rows = %v, want %v", all, want)
	}
}

func TestSparkTimestampEncodingsReadAsTheSameInstants(t *testing.T) {
	ctx := context.Background()
	st := sparkStore(t)
	files := sparkFiles(t)
	schema := pqSchema(t, "id:int32?,time:timestamp?")
	read := func(folder string) map[string]string {
		out := map[string]string{}
		for _, key := range files[folder] {
			rows, err := ReadParquetRows(ctx, st, key, pqSize(t, st, key), schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				out[FormatValue(Type{Kind: KindInt32}, r[0])] = FormatValue(Type{Kind: KindTimestamp}, r[1])
			}
		}
		return out
	}
	int96 := read("kernel-timestamp-INT96")
	millis := read("kernel-timestamp-TIMESTAMP_MILLIS")
	micros := read("kernel-timestamp-TIMESTAMP_MICROS")
	if len(int96) == 0 {
		t.Fatal("no rows")
	}
	// The instants Delta recorded in the folders' _delta_log stats.
	want := map[string]string{
		"0": "2020-02-01T08:09:10.000000Z",
		"1": "1999-01-01T09:00:00.000000Z",
		"2": "2000-01-01T09:00:00.000000Z",
		"3": "1969-01-01T00:00:00.000000Z",
		"4": "", // NULL
	}
	for name, got := range map[string]map[string]string{"INT96": int96, "TIMESTAMP_MILLIS": millis, "TIMESTAMP_MICROS": micros} {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: id → time = %v\nwant %v", name, got, want)
		}
	}

	// Footer statistics: none for INT96 (no defined order), exact for the others.
	for folder, wantMin := range map[string]string{"kernel-timestamp-INT96": "<nil>", "kernel-timestamp-TIMESTAMP_MILLIS": want["1"], "kernel-timestamp-TIMESTAMP_MICROS": want["1"]} {
		for _, key := range files[folder] {
			if !strings.Contains(key, "part-00000-") || !strings.Contains(key, "2021-10-01") {
				continue
			}
			_, stats, err := InspectParquet(ctx, st, key, pqSize(t, st, key))
			if err != nil {
				t.Fatal(err)
			}
			if got := str(stats.Columns["time"].Min); got != wantMin {
				t.Errorf("%s: time min %s, want %s", key, got, wantMin)
			}
		}
	}
}

func TestSparkTypeWideningMerges(t *testing.T) {
	ctx := context.Background()
	st := sparkStore(t)
	keys := sparkFiles(t)["type-widening"]
	if len(keys) != 2 {
		t.Fatalf("type-widening: %d files, want 2", len(keys))
	}
	var schemas []Schema
	for _, key := range keys {
		s, _, err := InspectParquet(ctx, st, key, pqSize(t, st, key))
		if err != nil {
			t.Fatal(err)
		}
		schemas = append(schemas, s)
	}
	// Order by age: the older file has the narrow types (byte_long is int32).
	if c, _ := schemas[0].Column("byte_long"); c.Type.Kind != KindInt32 {
		schemas[0], schemas[1] = schemas[1], schemas[0]
		keys[0], keys[1] = keys[1], keys[0]
	}
	old, cur := schemas[0], schemas[1]

	// Delta widens date → timestamp_ntz; sluice never reads a date as a
	// timestamp, so that column alone has no common type.
	_, err := MergeSchemas(old, cur)
	if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), `column "date_timestamp_ntz": date and timestamp`) {
		t.Errorf("merge with date → timestamp: %v; want ErrIncompatibleSchema naming date_timestamp_ntz", err)
	}

	drop := func(s Schema) Schema {
		var out Schema
		for _, c := range s.Columns {
			if c.Name != "date_timestamp_ntz" {
				out.Columns = append(out.Columns, c)
			}
		}
		return out
	}
	merged, err := MergeSchemas(drop(old), drop(cur))
	if err != nil {
		t.Fatal(err)
	}
	want := "byte_long:int64?,int_long:int64?,float_double:float64?,byte_double:float64?,short_double:float64?,int_double:float64?," +
		"decimal_decimal_same_scale:decimal(20,2)?,decimal_decimal_greater_scale:decimal(20,5)?," +
		"byte_decimal:decimal(11,1)?,short_decimal:decimal(11,1)?,int_decimal:decimal(11,1)?,long_decimal:decimal(21,1)?"
	if merged.String() != want {
		t.Errorf("merged = %s\nwant     %s", merged, want)
	}
	// The merged schema is the newer file's, and both files read as it.
	if merged.String() != drop(cur).String() {
		t.Errorf("merged %s differs from the widened file's %s", merged, drop(cur))
	}
	withNull := merged
	withNull.Columns = append(append([]Column(nil), merged.Columns...), Column{Name: "date_timestamp_ntz", Type: Type{Kind: KindDate}, Nullable: true})
	if err := CheckCompatible(withNull, old, keys[0]); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadParquetRows(ctx, st, keys[0], pqSize(t, st, keys[0]), withNull)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for i, c := range withNull.Columns {
			if r[i] == nil {
				continue
			}
			if err := checkGoValue(c.Type, r[i]); err != nil {
				t.Errorf("column %s: %v", c.Name, err)
			}
			if c.Type.Kind == KindDecimal {
				if _, err := canonicalDecimal(c.Type, r[i].(string)); err != nil || !strings.Contains(r[i].(string), ".") {
					t.Errorf("column %s: %q is not canonical %s", c.Name, r[i], c.Type)
				}
			}
		}
	}
	wantOld := []any{int64(1), int64(2), float64(float32(3.4)), 5.0, 6.0, 7.0, "123.45", "67.89000", "1.0", "2.0", "3.0", "4.0", day(2024, 9, 9)}
	if !reflect.DeepEqual(rows, [][]any{wantOld}) {
		t.Errorf("the older file read as the merged schema: %v\nwant %v", rows, wantOld)
	}

	// The newer file's footer statistics, as Delta recorded them.
	_, stats, err := InspectParquet(ctx, st, keys[1], pqSize(t, st, keys[1]))
	if err != nil {
		t.Fatal(err)
	}
	for col, want := range map[string]string{
		"byte_long":                     "9223372036854775807",
		"float_double":                  "1.234567890123",
		"decimal_decimal_greater_scale": "12345678901.23456",
		"long_decimal":                  "123456789012345678.9",
		"date_timestamp_ntz":            "2024-09-09T12:34:56.123456Z", // Delta's JSON keeps only milliseconds
	} {
		if got := str(stats.Columns[col].Min); got != want {
			t.Errorf("newer file: %s min %s, want %s", col, got, want)
		}
	}
}

// --- schema rules -------------------------------------------------------------

func TestCheckCompatible(t *testing.T) {
	for name, tc := range map[string]struct {
		table, file string
		refused     string // a substring of the error, "" if accepted
	}{
		"the same schema":                        {"a:int64,b:string?", "a:int64,b:string?", ""},
		"int32 widens to int64":                  {"a:int64", "a:int32", ""},
		"int32 widens to float64":                {"a:float64", "a:int32", ""},
		"int64 does not fit float64 exactly":     {"a:float64", "a:int64", `column "a": the file has int64, the table float64`},
		"int64 does not narrow to int32":         {"a:int32", "a:int64", `column "a"`},
		"a wider decimal":                        {"a:decimal(20,5)", "a:decimal(10,2)", ""},
		"a decimal losing scale":                 {"a:decimal(20,1)", "a:decimal(10,2)", `column "a": the file has decimal(10,2), the table decimal(20,1)`},
		"a decimal losing integer digits":        {"a:decimal(10,4)", "a:decimal(10,2)", `column "a"`},
		"int32 into a wide decimal":              {"a:decimal(11,1)", "a:int32", ""},
		"int32 into a narrow decimal":            {"a:decimal(10,1)", "a:int32", `column "a"`},
		"int64 into decimal(19,0)":               {"a:decimal(19,0)", "a:int64", ""},
		"int64 into decimal(20,2)":               {"a:decimal(20,2)", "a:int64", `column "a"`},
		"uuid and string either way":             {"a:uuid,b:string", "a:string,b:uuid", ""},
		"a date is not a timestamp":              {"d:timestamp", "d:date", `column "d": the file has date, the table timestamp (a date is never read as a timestamp`},
		"a timestamp is not a date":              {"d:date", "d:timestamp", `column "d": the file has timestamp, the table date`},
		"string is not int":                      {"a:int64", "a:string", `column "a": the file has string, the table int64`},
		"a file column the table lacks":          {"a:int64", "a:int64,x:bool", `column "x" (bool) is not in the table`},
		"a required table column the file lacks": {"a:int64,r:int32", "a:int64", `column "r" (int32, not nullable) is missing from the file`},
		"a nullable table column the file lacks": {"a:int64,n:int32?", "a:int64", ""},
		"a nullable file column, required table": {"a:int64", "a:int64?", ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckCompatible(pqSchema(t, tc.table), pqSchema(t, tc.file), "f.parquet")
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Errorf("accepted, want refused with %q", tc.refused)
			case tc.refused != "" && (!errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.refused) || !strings.HasPrefix(err.Error(), "f.parquet: ")):
				t.Errorf("error %v\nwant ErrIncompatibleSchema, naming f.parquet, containing %q", err, tc.refused)
			}
		})
	}
}

func TestMergeSchemas(t *testing.T) {
	for name, tc := range map[string]struct {
		a, b, want string
		refused    string
	}{
		"the same":                      {"a:int64,b:string", "a:int64,b:string", "a:int64,b:string", ""},
		"int32 and int64":               {"a:int32", "a:int64", "a:int64", ""},
		"int64 and int32":               {"a:int64", "a:int32", "a:int64", ""},
		"int32 and float64":             {"a:int32", "a:float64", "a:float64", ""},
		"decimals of different scale":   {"a:decimal(10,2)", "a:decimal(8,4)", "a:decimal(12,4)", ""},
		"int64 and a decimal":           {"a:int64", "a:decimal(10,2)", "a:decimal(21,2)", ""},
		"uuid and string":               {"a:uuid", "a:string", "a:string", ""},
		"columns missing become null":   {"a:int64,b:int32", "c:bool,a:int64", "a:int64,b:int32?,c:bool?", ""},
		"nullable on either side":       {"a:int64", "a:int64?", "a:int64?", ""},
		"date and timestamp":            {"d:date", "d:timestamp", "", `column "d": date and timestamp have no common type`},
		"int64 and float64":             {"a:int64", "a:float64", "", `column "a": int64 and float64`},
		"string and int":                {"a:string", "a:int32", "", `column "a"`},
		"decimals too wide for 38":      {"a:decimal(38,0)", "a:decimal(38,10)", "", `column "a"`},
		"several problems, one message": {"a:string,b:date", "a:int32,b:timestamp", "", `column "a": string and int32 have no common type; column "b"`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := MergeSchemas(pqSchema(t, tc.a), pqSchema(t, tc.b))
			if tc.refused != "" {
				if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("got %v (%s), want ErrIncompatibleSchema containing %q", err, got, tc.refused)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Errorf("got %s, %v; want %s", got, err, tc.want)
			}
			// Both sides read as the merged schema.
			for _, s := range []string{tc.a, tc.b} {
				if err := CheckCompatible(got, pqSchema(t, s), "x"); err != nil {
					t.Errorf("%s does not read as the merged %s: %v", s, got, err)
				}
			}
		})
	}
}

// --- values -------------------------------------------------------------------

func TestValueTextRoundTrips(t *testing.T) {
	dec := func(p, s int) Type { return Type{Kind: KindDecimal, Precision: p, Scale: s} }
	for _, tc := range []struct {
		t    Type
		v    any
		text string
	}{
		{Type{Kind: KindString}, "héllo, world", "héllo, world"},
		{Type{Kind: KindUUID}, "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a", "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a"},
		{Type{Kind: KindInt32}, int32(-2147483648), "-2147483648"},
		{Type{Kind: KindInt64}, int64(9223372036854775807), "9223372036854775807"},
		{Type{Kind: KindFloat64}, 0.1, "0.1"},
		{Type{Kind: KindFloat64}, 1e21, "1e+21"},
		{Type{Kind: KindFloat64}, -2.0, "-2"},
		{Type{Kind: KindBool}, true, "true"},
		{Type{Kind: KindDate}, day(1969, 7, 20), "1969-07-20"},
		{Type{Kind: KindTimestamp}, time.Date(2024, 1, 31, 23, 59, 58, 123456000, time.UTC), "2024-01-31T23:59:58.123456Z"},
		{Type{Kind: KindTimestamp}, time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), "1900-01-01T00:00:00.000000Z"},
		{dec(10, 2), "-123.45", "-123.45"},
		{dec(10, 2), "0.05", "0.05"},
		{dec(5, 0), "-42", "-42"},
		{dec(38, 38), "0.12345678901234567890123456789012345678", "0.12345678901234567890123456789012345678"},
		{Type{Kind: KindBinary}, []byte{0, 0xff, 'a'}, "AP9h"},
	} {
		if got := FormatValue(tc.t, tc.v); got != tc.text {
			t.Errorf("FormatValue(%s, %#v) = %q, want %q", tc.t, tc.v, got, tc.text)
		}
		back, err := ParseValue(tc.t, tc.text)
		if err != nil || !reflect.DeepEqual(back, tc.v) {
			t.Errorf("ParseValue(%s, %q) = %#v, %v; want %#v", tc.t, tc.text, back, err, tc.v)
		}
	}
}

func TestParseValueCanonicalizesAndRefuses(t *testing.T) {
	dec := Type{Kind: KindDecimal, Precision: 6, Scale: 2}
	for in, want := range map[string]string{"1.5": "1.50", "-0": "0.00", "+7": "7.00", "0012.300": "12.30", ".5": "0.50", "-0.001000": ""} {
		got, err := ParseValue(dec, in)
		if want == "" {
			if err == nil {
				t.Errorf("ParseValue(%s, %q) = %v, want an error", dec, in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("ParseValue(%s, %q) = %v, %v; want %q", dec, in, got, err, want)
		}
	}
	for _, tc := range []struct {
		t Type
		s string
	}{
		{dec, "12345.00"}, // 5 integer digits, decimal(6,2) holds 4
		{dec, "1.234"},
		{dec, "1e3"},
		{dec, "abc"},
		{Type{Kind: KindInt32}, "2147483648"},
		{Type{Kind: KindDate}, "2024-02-30"},
		{Type{Kind: KindTimestamp}, "2024-01-01 10:00:00"},
		{Type{Kind: KindBool}, "yes"},
		{Type{Kind: KindBinary}, "not base64!"},
	} {
		if v, err := ParseValue(tc.t, tc.s); err == nil {
			t.Errorf("ParseValue(%s, %q) = %#v, want an error", tc.t, tc.s, v)
		}
	}
	ts, err := ParseValue(Type{Kind: KindTimestamp}, "2024-01-01T02:00:00.1234567+02:00")
	if err != nil || !ts.(time.Time).Equal(time.Date(2024, 1, 1, 0, 0, 0, 123456000, time.UTC)) || ts.(time.Time).Location() != time.UTC {
		t.Errorf("an offset timestamp parses to %v, %v; want UTC truncated to microseconds", ts, err)
	}
}

func TestCompareValues(t *testing.T) {
	dec := Type{Kind: KindDecimal, Precision: 10, Scale: 2}
	for _, tc := range []struct {
		t    Type
		a, b any
		want int
	}{
		{dec, "-10.00", "9.99", -1},
		{dec, "100.00", "99.99", 1},
		{dec, "1.50", "1.50", 0},
		{Type{Kind: KindString}, "B", "a", -1},
		{Type{Kind: KindInt64}, int64(-1), int64(1), -1},
		{Type{Kind: KindFloat64}, math.NaN(), -1.0, -1},
		{Type{Kind: KindBool}, true, false, 1},
		{Type{Kind: KindDate}, day(2024, 1, 1), day(2023, 12, 31), 1},
		{Type{Kind: KindBinary}, []byte{1}, []byte{1, 0}, -1},
		{Type{Kind: KindInt32}, nil, int32(0), -1},
		{Type{Kind: KindInt32}, nil, nil, 0},
	} {
		if got := CompareValues(tc.t, tc.a, tc.b); got != tc.want {
			t.Errorf("CompareValues(%s, %#v, %#v) = %d, want %d", tc.t, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestDecimalFixedSizesMatchSpark(t *testing.T) {
	// Spark's sizes, as in decimal-various-scale-precision.
	for p, want := range map[int]int{1: 1, 9: 4, 10: 5, 18: 8, 20: 9, 21: 9, 25: 11, 35: 15, 38: 16} {
		if got := decimalBytes(p); got != want {
			t.Errorf("decimalBytes(%d) = %d, want %d", p, got, want)
		}
	}
}

// A bad value stops the write: the error names the first bad row, and at
// that row the first bad column, whether the columns are encoded one at a
// time or several at once; the rows before it are written whole.
func TestParquetWriterKeepsRowsBeforeTheFirstBadValueWhole(t *testing.T) {
	defer func(n int) { columnWorkers = n }(columnWorkers)
	ctx := context.Background()
	schema := pqSchema(t, "id:int64,name:string?,u:uuid")
	type cell struct{ row, col int }
	for _, workers := range []int{1, 3} {
		columnWorkers = workers
		for _, tc := range []struct {
			bad []cell
			row int
			col string
		}{
			{[]cell{{1500, 2}}, 1500, "u"},
			{[]cell{{1500, 2}, {1700, 0}}, 1500, "u"},
			{[]cell{{1500, 2}, {1500, 1}}, 1500, "name"},
			{[]cell{{2100, 2}, {1100, 1}, {1100, 2}}, 1100, "name"},
			{[]cell{{3, 0}, {3, 2}, {2, 2}}, 2, "u"},
		} {
			st := newTestStore(t)
			var rows [][]any
			for i := range 3000 {
				rows = append(rows, []any{int64(i), fmt.Sprint("n", i), "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a"})
			}
			for _, c := range tc.bad {
				rows[c.row][c.col] = struct{}{} // no column's type
			}
			w, err := NewParquetWriter(schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = w.Write(ctx, rows)
			want := fmt.Sprintf("row %d: column %q", tc.row, tc.col)
			if err == nil || !strings.Contains(err.Error(), want) {
				w.Abort()
				t.Fatalf("%d workers, bad values at %v: got %v, want an error naming %s", workers, tc.bad, err, want)
			}
			n, _, err := w.Close(ctx, st, "part.parquet")
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadParquetRows(ctx, st, "part.parquet", n, schema)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.row {
				t.Fatalf("%d workers, bad values at %v: read %d rows, want the %d before the first", workers, tc.bad, len(got), tc.row)
			}
			for i, r := range got {
				if r[0] != int64(i) || r[1] != fmt.Sprint("n", i) || r[2] != rows[i][2] {
					t.Fatalf("row %d = %v, want %v", i, r, rows[i])
				}
			}
		}
	}
}

// readPageHeader decodes the Thrift page header at off in f.
func readPageHeader(t *testing.T, f io.ReaderAt, off int64) format.PageHeader {
	t.Helper()
	r := bufio.NewReader(io.NewSectionReader(f, off, 1<<20))
	var h format.PageHeader
	if err := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r)).Decode(&h); err != nil {
		t.Fatalf("page header at %d: %v", off, err)
	}
	return h
}

// A uuid column's texts are stored DELTA_LENGTH_BYTE_ARRAY (uuidEncoding),
// by the writer and by a rewrite's schema, and read back as written.
func TestUUIDColumnsAreDeltaLengthEncoded(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	schema := pqSchema(t, "u:uuid,name:string?")
	var rows [][]any
	for i := range 3000 {
		rows = append(rows, []any{fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i*7919), fmt.Sprint("n", i%7)})
	}
	n, _, err := WriteParquet(ctx, st, "u.parquet", schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadParquetRows(ctx, st, "u.parquet", n, schema)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read back %d rows that differ from the %d written", len(got), len(rows))
	}
	f, _, err := openParquet(ctx, st, "u.parquet", n)
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range f.Metadata().RowGroups {
		if enc := rg.Columns[0].MetaData.Encoding; !slices.Contains(enc, format.DeltaLengthByteArray) || slices.Contains(enc, format.Plain) {
			t.Fatalf("the uuid column's encodings are %v, want DELTA_LENGTH_BYTE_ARRAY alone", enc)
		}
	}

	// A rewrite's texts without a dictionary are so too; its other
	// columns without one PLAIN; a uuid column never has one.
	schema = pqSchema(t, "u:uuid,name:string?,n:int64")
	for _, tc := range []struct {
		noDict []bool
		want   []format.Encoding
	}{
		{[]bool{true, true, true}, []format.Encoding{format.DeltaLengthByteArray, format.DeltaLengthByteArray, format.Plain}},
		{[]bool{false, false, false}, []format.Encoding{format.DeltaLengthByteArray, format.RLEDictionary, format.Plain}},
	} {
		ps, err := ParquetSchemaNoDict(schema, tc.noDict, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range tc.want {
			if got := ps.Fields()[i].Encoding(); got == nil && want != format.Plain || got != nil && got.Encoding() != want {
				t.Errorf("without a dictionary %v: a rewrite writes column %s as %v, want %v", tc.noDict, ps.Fields()[i].Name(), got, want)
			}
		}
	}
}
