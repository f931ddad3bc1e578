package pqio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
)

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
