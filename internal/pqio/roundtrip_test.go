package pqio

import (
	"context"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
)

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
		"in a list":   {parquet.Optional(parquet.List(parquet.Uint(64))), `part-0001.parquet: column "arr.element": type UINT64 (values above 2^63-1 do not fit int64) is not supported yet`},
		"in a map":    {parquet.Map(parquet.String(), parquet.Uint(64)), `part-0001.parquet: column "arr.value": type UINT64 (values above 2^63-1 do not fit int64) is not supported yet`},
		"in a struct": {parquet.Group{"x": parquet.Int(32), "y": parquet.Group{"t": parquet.Time(parquet.Millisecond)}}, `part-0001.parquet: column "arr.y.t": type TIME is not supported yet`},
		"uint64":      {parquet.Uint(64), `part-0001.parquet: column "arr": type UINT64 (values above 2^63-1 do not fit int64) is not supported yet`},
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
