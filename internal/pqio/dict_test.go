package pqio

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"
)

// A string column whose first batch is nearly all distinct is written
// without a dictionary, one of a few values keeps it, and both read back
// as written; writers sharing Codecs keep the first file's decision even
// when a later file's first batch would decide otherwise.
func TestParquetWriterDropsTheDictionaryOfDistinctStrings(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	schema := pqSchema(t, "id:int64,payload:string?,agent:string,short:string?")
	codecs := NewCodecs()
	write := func(key string, rows [][]any) map[string][]format.Encoding {
		t.Helper()
		w, err := NewParquetWriter(schema, codecs)
		if err != nil {
			t.Fatal(err)
		}
		for len(rows) > 0 { // in batches, as ingest gives them
			n := min(len(rows), 700)
			if err := w.Write(ctx, rows[:n]); err != nil {
				t.Fatal(err)
			}
			rows = rows[n:]
		}
		size, _, err := w.Close(ctx, st, key)
		if err != nil {
			t.Fatal(err)
		}
		f, _, err := openParquet(ctx, st, key, size)
		if err != nil {
			t.Fatal(err)
		}
		enc := map[string][]format.Encoding{}
		for _, rg := range f.Metadata().RowGroups {
			for _, c := range rg.Columns {
				name := strings.Join(c.MetaData.PathInSchema, ".")
				for _, e := range c.MetaData.Encoding {
					if !slices.Contains(enc[name], e) {
						enc[name] = append(enc[name], e)
					}
				}
			}
		}
		return enc
	}
	var rows [][]any
	for i := range 5000 {
		var short any = fmt.Sprint("s", i%7)
		if i%5 == 0 {
			short = nil
		}
		var payload any = fmt.Sprintf(`{"ip":"10.1.%d.%d","path":"/api/v1/items/%d","q":"caf\u00e9 \"x\""}`, i%256, i/256, i)
		if i%11 == 0 {
			payload = nil
		}
		rows = append(rows, []any{int64(i), payload, []string{"Mozilla/5.0 (X11; Linux x86_64)", "curl/8.5.0", "okhttp/4.12"}[i%3], short})
	}
	enc := write("a.parquet", rows)
	for col, dict := range map[string]bool{"payload": false, "agent": true, "short": true} {
		if got := slices.Contains(enc[col], format.RLEDictionary); got != dict {
			t.Errorf("column %s: encodings %v, want a dictionary: %v", col, enc[col], dict)
		}
	}
	if !slices.Contains(enc["payload"], format.DeltaLengthByteArray) {
		t.Errorf("column payload: encodings %v, want DELTA_LENGTH_BYTE_ARRAY", enc["payload"])
	}
	got, err := ReadParquetRows(ctx, st, "a.parquet", pqSize(t, st, "a.parquet"), schema)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read back %d rows that differ from the %d written", len(got), len(rows))
	}
	// DuckDB reads the same values.
	var want []string
	for _, r := range rows {
		cells := []string{fmt.Sprint(r[0])}
		for _, v := range r[1:] {
			if v == nil {
				v = "NULL"
			}
			cells = append(cells, v.(string))
		}
		want = append(want, strings.Join(cells, "\t"))
	}
	slices.Sort(want)
	if duck := duckRows(t, fmt.Sprintf("select id, payload, agent, short from read_parquet('%s')", filepath.Join(dir, "a.parquet"))); !slices.Equal(duck, want) {
		t.Fatalf("DuckDB reads %d rows that differ from the %d written", len(duck), len(want))
	}

	// The next file's payloads repeat, its agents do not: the decisions
	// of the first file hold.
	for i, row := range rows {
		row[1] = "same"
		row[2] = fmt.Sprint("agent ", i)
	}
	enc = write("b.parquet", rows)
	if slices.Contains(enc["payload"], format.RLEDictionary) || !slices.Contains(enc["agent"], format.RLEDictionary) {
		t.Errorf("second file: payload %v, agent %v: want the first file's decisions (no dictionary, dictionary)", enc["payload"], enc["agent"])
	}
	got, err = ReadParquetRows(ctx, st, "b.parquet", pqSize(t, st, "b.parquet"), schema)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("second file: read back %d rows that differ from the %d written", len(got), len(rows))
	}

	// A writer given no rows still writes an empty file that reads back.
	w, err := NewParquetWriter(schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	size, _, err := w.Close(ctx, st, "empty.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadParquetRows(ctx, st, "empty.parquet", size, schema); err != nil || len(got) != 0 {
		t.Fatalf("empty file: %d rows, %v; want none", len(got), err)
	}
}
