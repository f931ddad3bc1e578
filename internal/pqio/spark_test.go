package pqio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

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
	// The current (three-level list/element, key_value) and the legacy
	// (bag/array, MAP_KEY_VALUE) layouts read as the same types.
	allTypes := sparkExpect{schema: "ByteType:int32?,ShortType:int32?,IntegerType:int32?,LongType:int64?,FloatType:float64?,DoubleType:float64?,decimal:decimal(10,2)?,BooleanType:bool?,StringType:string?,BinaryType:binary?,DateType:date?,TimestampType:timestamp?,TimestampNTZType:timestamp?,nested_struct:struct<aa:string?,ac:struct<aca:int32?>?>?,array_of_prims:list<int32?>?,array_of_arrays:list<list<int32?>?>?,array_of_structs:list<struct<ab:int64?>?>?,map_of_prims:map<int32,int64?>?,map_of_rows:map<int32,struct<ab:int64?>?>?,map_of_arrays:map<int64,list<int32?>?>?"}
	return map[string]sparkExpect{
		"125-iterator-bug":                  {schema: "col1:int32?"},
		"125-iterator-bug/_delta_log":       {schema: "txn:struct<appId:string?,version:int64?,lastUpdated:int64?>?,add:struct<path:string?,partitionValues:map<string,string?>?,size:int64?,modificationTime:int64?,dataChange:bool?,tags:map<string,string?>?,stats:string?>?,remove:struct<path:string?,deletionTimestamp:int64?,dataChange:bool?,extendedFileMetadata:bool?,partitionValues:map<string,string?>?,size:int64?,tags:map<string,string?>?>?,metaData:struct<id:string?,name:string?,description:string?,format:struct<provider:string?,options:map<string,string?>?>?,schemaString:string?,partitionColumns:list<string?>?,configuration:map<string,string?>?,createdTime:int64?>?,protocol:struct<minReaderVersion:int32?,minWriterVersion:int32?>?,cdc:struct<path:string?,partitionValues:map<string,string?>?,size:int64?,tags:map<string,string?>?>?"},
		"data-reader-date-types-UTC":        {schema: "timestamp:timestamp?,date:date?"},
		"data-reader-escaped-chars":         {schema: "_1:string?"},
		"data-reader-partition-values":      {schema: "as_list_of_records:list<struct<val:int32?>?>?,as_nested_struct:struct<aa:string?,ab:string?,ac:struct<aca:int32?,acb:int64?>?>?,value:string?"},
		"data-reader-primitives":            {schema: "as_int:int32?,as_long:int64?,as_byte:int32?,as_short:int32?,as_boolean:bool?,as_float:float64?,as_double:float64?,as_string:string?,as_binary:binary?,as_big_decimal:decimal(1,0)?"},
		"decimal-various-scale-precision":   {schema: strings.Join(decimals, ",")},
		"kernel-timestamp-INT96":            ts,
		"kernel-timestamp-TIMESTAMP_MICROS": ts,
		"kernel-timestamp-TIMESTAMP_MILLIS": ts,
		"parquet-all-types":                 allTypes,
		"parquet-all-types-legacy-format":   allTypes,
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
					// Statistics for every leaf, none for a nested whole.
					var leaves []string
					for _, c := range schema.Columns {
						for _, l := range c.Leaves() {
							leaves = append(leaves, l.Path)
						}
					}
					if len(stats.Columns) != len(leaves) {
						t.Errorf("stats for %d columns, schema has %d leaves", len(stats.Columns), len(leaves))
					}
					for _, l := range leaves {
						if _, ok := stats.Columns[l]; !ok {
							t.Errorf("no statistics for leaf %s", l)
						}
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
