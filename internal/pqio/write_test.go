package pqio

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

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
