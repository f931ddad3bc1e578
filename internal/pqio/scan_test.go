package pqio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
)

// batchGoValue turns a value of a ColumnBatch, in the table's Parquet
// representation, into the Go value ScanParquet gives.
func batchGoValue(t *testing.T, typ Type, v parquet.Value) any {
	t.Helper()
	if v.IsNull() {
		return nil
	}
	switch typ.Kind {
	case KindString, KindUUID:
		return string(v.ByteArray())
	case KindBinary:
		return bytes.Clone(v.ByteArray())
	case KindInt32:
		return v.Int32()
	case KindInt64:
		return v.Int64()
	case KindFloat64:
		return v.Double()
	case KindBool:
		return v.Boolean()
	case KindDate:
		return time.Unix(int64(v.Int32())*86400, 0).UTC()
	case KindTimestamp:
		return time.UnixMicro(v.Int64()).UTC()
	case KindDecimal:
		switch v.Kind() {
		case parquet.Int32:
			return formatDecimalInt64(int64(v.Int32()), typ.Scale)
		case parquet.Int64:
			return formatDecimalInt64(v.Int64(), typ.Scale)
		case parquet.FixedLenByteArray:
			if len(v.ByteArray()) != decimalBytes(typ.Precision) {
				t.Fatalf("%s stored in %d bytes, want %d", typ, len(v.ByteArray()), decimalBytes(typ.Precision))
			}
			return decimalFromBytes(v.ByteArray(), typ.Scale)
		}
	}
	t.Fatalf("a %s value of kind %s", typ, v.Kind())
	return nil
}

// batchRows reads a file with ScanParquetBatches into rows of Go values;
// batches counts the calls of fn.
func batchRows(t *testing.T, st cloud.Store, key string, schema Schema) (rows [][]any, err error) {
	rows, _, err = countBatches(t, st, key, schema)
	return rows, err
}

func countBatches(t *testing.T, st cloud.Store, key string, schema Schema) (rows [][]any, batches int, err error) {
	t.Helper()
	err = ScanParquetBatches(context.Background(), st, key, pqSize(t, st, key), func(Schema) Schema { return schema }, func(b *ColumnBatch) error {
		batches++
		if b.Rows < 1 || b.Rows > batchRowsMax || len(b.Columns) != len(schema.Columns) {
			t.Fatalf("a batch of %d rows and %d columns", b.Rows, len(b.Columns))
		}
		for r := range b.Rows {
			row := make([]any, len(schema.Columns))
			for j, col := range b.Columns {
				if col != nil {
					row[j] = batchGoValue(t, schema.Columns[j].Type, col[r])
				}
			}
			rows = append(rows, row)
		}
		return nil
	})
	return rows, batches, err
}

// rowsEqual compares rows read two ways, an empty binary equal to nil
// bytes.
func rowsEqual(t *testing.T, got, want [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d rows in batches, %d row by row", len(got), len(want))
	}
	for i := range want {
		for j := range want[i] {
			g, w := got[i][j], want[i][j]
			if gb, ok := g.([]byte); ok {
				if wb, ok := w.([]byte); ok && bytes.Equal(gb, wb) {
					continue
				}
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("row %d column %d: %#v in batches, %#v row by row", i, j, g, w)
			}
		}
	}
}

// The batches hold the values ScanParquet reads, converted alike: every
// flat type, NULLs, a column the file lacks, widened types, other
// writers' logical types and Spark's files (INT96, millisecond
// timestamps, decimals of every width).
func TestScanParquetBatchesReadsWhatScanParquetReads(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	every := pqSchema(t, "z:string?,a:int32,m:int64?,u:uuid?,f:float64?,b:bool?,d:date?,ts:timestamp?,"+
		"dec:decimal(10,2)?,dsmall:decimal(5,3),dbig:decimal(38,6)?,d20:decimal(20,0)?,bin:binary?")
	ts := time.Date(2024, 1, 31, 23, 59, 58, 123456000, time.UTC)
	_, _, err := WriteParquet(ctx, st, "every.parquet", every, [][]any{
		{"zeta", int32(math.MinInt32), int64(math.MaxInt64), "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a", 1.5, true, day(2024, 1, 31), ts,
			"-123.45", "0.001", "-12345678901234567890123456789012.345678", "99999999999999999999", []byte{0, 1, 2}},
		{nil, int32(7), nil, nil, nil, nil, nil, nil, nil, "99.999", nil, nil, nil},
		{"", int32(0), int64(math.MinInt64), "00000000-0000-0000-0000-000000000000", math.Inf(-1), false, day(1969, 12, 31),
			time.Date(1900, 1, 1, 0, 0, 0, 1000, time.UTC), "0.00", "-99.999", "12345678901234567890123456789012.345678", "-99999999999999999999", []byte{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := WriteParquet(ctx, st, "narrow.parquet", pqSchema(t, "i:int32?,j:int32?,k:int64?,dec:decimal(5,2)?,s:uuid?"), [][]any{
		{int32(-3), int32(4), int64(-9000000000000000000), "-1.50", "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a"},
		{nil, nil, nil, nil, nil},
	}); err != nil {
		t.Fatal(err)
	}
	type file struct {
		st     cloud.Store
		key    string
		schema Schema
	}
	files := []file{
		{st, "every.parquet", every},
		{st, "narrow.parquet", pqSchema(t, "extra:string?,s:string?,dec:decimal(10,4)?,k:decimal(25,1)?,j:float64?,i:int64?")},
		{st, "narrow.parquet", pqSchema(t, "i:decimal(13,3)?,j:int64?,k:decimal(19,0)?,dec:decimal(38,10)?,s:uuid?")},
	}
	spark := sparkStore(t)
	sparkFolders := sparkFiles(t)
	for _, folder := range []string{"decimal-various-scale-precision", "kernel-timestamp-INT96", "kernel-timestamp-TIMESTAMP_MILLIS",
		"data-reader-primitives", "data-reader-date-types-UTC"} {
		if len(sparkFolders[folder]) == 0 {
			t.Fatalf("no Spark fixture in %s", folder)
		}
		for _, key := range sparkFolders[folder] {
			schema, _, err := InspectParquet(ctx, spark, key, pqSize(t, spark, key))
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, file{spark, key, schema})
		}
	}
	for _, f := range files {
		t.Run(f.key, func(t *testing.T) {
			want, err := ReadParquetRows(ctx, f.st, f.key, pqSize(t, f.st, f.key), f.schema)
			if err != nil {
				t.Fatal(err)
			}
			got, err := batchRows(t, f.st, f.key, f.schema)
			if err != nil {
				t.Fatal(err)
			}
			rowsEqual(t, got, want)
		})
	}
}

// A batch never spans two pages of a column: with pages of a few rows,
// ending at other rows in every column, and several row groups, every
// row still reads back in order.
func TestScanParquetBatchesCrossPagesAndRowGroups(t *testing.T) {
	st := newTestStore(t)
	schema := pqSchema(t, "id:int64,s:string?,dec:decimal(12,2),big:decimal(38,4)?,u:uuid,b:bool?,bin:binary?")
	ps, enc, err := parquetFields(schema, nil, (*Codecs)(nil).For)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]any
	var prows []parquet.Row
	for i := range 5000 {
		row := []any{int64(i), strings.Repeat("x", i%37), fmt.Sprintf("%d.%02d", i-2500, i%100), nil,
			fmt.Sprintf("00000000-0000-4000-8000-%012d", i), i%3 == 0, []byte{byte(i)}}
		if i%5 == 0 {
			row[1], row[6] = nil, nil
		}
		if i%2 == 0 {
			row[3] = fmt.Sprintf("-%d12345678901234567890123456789.%04d", i, i)
		}
		if i%7 == 0 {
			row[5] = nil
		}
		want = append(want, row)
		var pr parquet.Row
		for j, v := range row {
			if v == nil {
				pr = append(pr, parquet.NullValue().Level(0, 0, j))
				continue
			}
			pv, err := enc[j](v)
			if err != nil {
				t.Fatal(err)
			}
			def := 0
			if schema.Columns[j].Nullable {
				def = 1
			}
			pr = append(pr, pv.Level(0, def, j))
		}
		prows = append(prows, pr)
	}
	putRaw(t, st, "pages.parquet", ps, prows, parquet.PageBufferSize(300), parquet.MaxRowsPerRowGroup(1700), parquet.Compression(&parquet.Zstd))
	got, batches, err := countBatches(t, st, "pages.parquet", schema)
	if err != nil {
		t.Fatal(err)
	}
	if batches < 50 {
		t.Errorf("%d batches: the pages did not cut them", batches)
	}
	for i := range want {
		for _, j := range []int{2, 3} {
			if s, ok := want[i][j].(string); ok {
				if want[i][j], err = canonicalDecimal(schema.Columns[j].Type, s); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	rowsEqual(t, got, want)
	f, _, err := openParquet(context.Background(), st, "pages.parquet", pqSize(t, st, "pages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.RowGroups()) < 3 {
		t.Errorf("the file has %d row groups, want several", len(f.RowGroups()))
	}
}

func TestScanParquetBatchesRefuses(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	n, _, err := WriteParquet(ctx, st, "n.parquet", pqSchema(t, "id:int64?"), [][]any{{int64(1)}, {nil}})
	if err != nil {
		t.Fatal(err)
	}
	as := func(s string) func(Schema) Schema { return func(Schema) Schema { return pqSchema(t, s) } }
	none := func(*ColumnBatch) error { return nil }

	t.Run("a NULL in a column the table says is not nullable, naming the column and row", func(t *testing.T) {
		err := ScanParquetBatches(ctx, st, "n.parquet", n, as("id:int64"), none)
		if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), `column "id"`) || !strings.Contains(err.Error(), "row 1") {
			t.Errorf("got %v, want ErrIncompatibleSchema naming column id and row 1", err)
		}
	})
	t.Run("a nested column, before any row", func(t *testing.T) {
		err := ScanParquetBatches(ctx, st, "n.parquet", n, as("id:int64?,l:list<int32>?"), func(*ColumnBatch) error {
			t.Fatal("a batch was read")
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), `column "l": a nested column`) {
			t.Errorf("got %v, want the nested column named", err)
		}
	})
	t.Run("a file of another type", func(t *testing.T) {
		err := ScanParquetBatches(ctx, st, "n.parquet", n, as("id:string?"), none)
		if !errors.Is(err, ErrIncompatibleSchema) {
			t.Errorf("got %v, want ErrIncompatibleSchema", err)
		}
	})
	t.Run("fn's error, as is", func(t *testing.T) {
		stop := errors.New("stop")
		if err := ScanParquetBatches(ctx, st, "n.parquet", n, as("id:int64?"), func(*ColumnBatch) error { return stop }); err != stop {
			t.Errorf("got %v, want fn's error", err)
		}
	})
	t.Run("a cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := ScanParquetBatches(cctx, st, "n.parquet", n, as("id:int64?"), none); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}
