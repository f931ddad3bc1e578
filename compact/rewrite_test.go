package compact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// storeOpener opens data files of st with pqio.NewReaderAt, as the
// orchestrator does.
func storeOpener(st cloud.Store) Opener {
	return func(ctx context.Context, f catalog.DataFile) (io.ReaderAt, int64, error) {
		return pqio.NewReaderAt(ctx, st, f.Path, f.Bytes), f.Bytes, nil
	}
}

func parseSchema(t testing.TB, s string) catalog.Schema {
	t.Helper()
	sc, err := catalog.ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// writeFile writes rows as one Parquet file at key and returns it as a data
// file of partition.
func writeFile(t testing.TB, st cloud.Store, key, partition string, schema catalog.Schema, rows [][]any) catalog.DataFile {
	t.Helper()
	n, stats, err := pqio.WriteParquet(context.Background(), st, key, schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	day := strings.TrimPrefix(partition, "date=")
	return catalog.DataFile{Path: key, Partition: partition, Bytes: n, FileStats: stats,
		PartitionValues: map[string]*string{"date": &day}}
}

// readRows reads files as schema and renders each row as text, sorted.
func readRows(t testing.TB, st cloud.Store, schema catalog.Schema, files []catalog.DataFile) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		rows, err := pqio.ReadParquetRows(context.Background(), st, f.Path, f.Bytes, schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			parts := make([]string, len(r))
			for i, v := range r {
				if v == nil {
					parts[i] = "NULL"
				} else {
					parts[i] = pqio.FormatValue(schema.Columns[i].Type, v)
				}
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
	slices.Sort(out)
	return out
}

// tempStore is a local store in a fresh temporary folder.
func tempStore(t testing.TB) cloud.Store {
	t.Helper()
	st, err := cloud.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// eventInputs writes n input files in/0.parquet... of 100 event rows each,
// ids counting on from file to file.
func eventInputs(t testing.TB, st cloud.Store, schema catalog.Schema, n int) []catalog.DataFile {
	t.Helper()
	var inputs []catalog.DataFile
	for i := range n {
		inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in/%d.parquet", i), "", schema, eventRows(i*100, 100)))
	}
	return inputs
}

// listKeys lists every object of st.
func listKeys(t testing.TB, st cloud.Store) []string {
	t.Helper()
	var keys []string
	if err := st.List(context.Background(), "", func(o cloud.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

const eventSchema = "id:int64,name:string,at:timestamp,amount:decimal(12,2)?,score:float64?,flag:bool?,day:date,n:int32?"

func eventRows(base, n int) [][]any {
	rows := make([][]any, n)
	day := time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		k := base + i
		var amount, score, flag, small any
		if k%5 != 0 {
			amount = fmt.Sprintf("%d.%02d", k%1000, k%100)
		}
		if k%7 != 0 {
			score = float64(k) / 3
		}
		if k%3 != 0 {
			flag = k%2 == 0
		}
		if k%11 != 0 {
			small = int32(k % 1000)
		}
		rows[i] = []any{int64(k), fmt.Sprintf("name-%d", k%50), day.Add(time.Duration(k) * time.Second), amount, score, flag, day, small}
	}
	return rows
}

// Many small files become a few files holding the same multiset of rows, in
// the table's column order and types, and the verification passes.
func TestRewriteManySmallFiles(t *testing.T) {
	privateTempDir(t)
	ctx := context.Background()
	st := tempStore(t)
	schema := parseSchema(t, eventSchema)
	var inputs []catalog.DataFile
	for i := range 60 {
		inputs = append(inputs, writeFile(t, st, fmt.Sprintf("date=2024-01-31/in-%03d.parquet", i), "date=2024-01-31", schema, eventRows(i*500, 500)))
	}
	res, err := Rewrite(ctx, storeOpener(st), st, schema, "date=2024-01-31", inputs, RewriteOptions{ReadConcurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.RowsIn != 30000 || res.RowsOut != 30000 || len(res.Outputs) != 1 {
		t.Fatalf("rows in %d out %d, %d outputs; want 30000, 30000, 1", res.RowsIn, res.RowsOut, len(res.Outputs))
	}
	out := res.Outputs[0]
	if !strings.HasPrefix(out.Path, "date=2024-01-31/part-") || out.Partition != "date=2024-01-31" ||
		out.PartitionValues["date"] == nil || *out.PartitionValues["date"] != "2024-01-31" || out.Rows != 30000 {
		t.Fatalf("output %+v", out)
	}
	got, _, err := pqio.InspectParquet(ctx, st, out.Path, out.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != schema.String() {
		t.Fatalf("output schema %s, want %s", got, schema)
	}
	if a, b := readRows(t, st, schema, inputs), readRows(t, st, schema, res.Outputs); !slices.Equal(a, b) {
		t.Fatalf("rows differ: %d in, %d out", len(a), len(b))
	}
	var sumIn int64
	for _, f := range inputs {
		sumIn += f.Bytes
	}
	if res.BytesIn != sumIn || res.BytesOut != out.Bytes {
		t.Fatalf("bytes in %d (want %d), out %d (want %d)", res.BytesIn, sumIn, res.BytesOut, out.Bytes)
	}
	noTempFiles(t)
}

// Pages take the typed path, for every physical type it builds values of:
// booleans, int32, int64, double, byte arrays plain and dictionary-encoded,
// fixed-length byte arrays. Into required table columns from inputs
// written with the columns nullable (as DuckDB and Spark write them) or
// required; into nullable ones from both, with NULLs alone, in short and
// long runs, and pages of NULLs only. Pages are longer than one batch of
// values: the rows come out the same and the verification passes.
func TestRewriteTypedPagesOfEveryKind(t *testing.T) {
	required := parseSchema(t, "i:int32,l:int64,f:float64,s:string,u:uuid,big:decimal(20,2),d:date,ts:timestamp,b:bool")
	nullable := parseSchema(t, "i:int32?,l:int64?,f:float64?,s:string?,u:uuid?,big:decimal(20,2)?,d:date?,ts:timestamp?,b:bool?")
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	rows := func(base, n int, nulls bool) [][]any {
		out := make([][]any, n)
		for i := range out {
			k := base + i
			out[i] = []any{int32(k % 70000), int64(k) * 7919, float64(k) / 7, fmt.Sprintf("kind-%d", k%9),
				fmt.Sprintf("00000000-0000-4000-8000-%012d", k), fmt.Sprintf("%d.%02d", k*1000003, k%100),
				day, day.Add(time.Duration(k) * time.Millisecond), k%3 == 0}
			if !nulls {
				continue
			}
			for c := range out[i] {
				switch {
				case c == 0 && k < base+n/2, // half the file: a page of NULLs only
					c == 1 && k%2 == 0, // every other row
					c == 3 && k%7 < 3,  // runs of three
					c == 5 && k%5000 < 1500,
					c == 7 && k%11 == 10,
					c == 8 && k%13 < 4:
					out[i][c] = nil
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		table catalog.Schema
		nulls bool
	}{
		{"required table", required, false},
		{"nullable table with NULLs", nullable, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := tempStore(t)
			var inputs []catalog.DataFile
			for i := range 4 {
				fs, nulls := required, false
				if i%2 == 0 {
					fs, nulls = nullable, tc.nulls
				}
				inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in-%d.parquet", i), "", fs, rows(i*10000, 10000, nulls)))
			}
			res, err := Rewrite(ctx, storeOpener(st), st, tc.table, "", inputs, RewriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.RowsOut != 40000 {
				t.Fatalf("rows out %d, want 40000", res.RowsOut)
			}
			a, b := readRows(t, st, tc.table, inputs), readRows(t, st, tc.table, res.Outputs)
			if !slices.Equal(a, b) {
				t.Fatalf("rows differ: %d in, %d out", len(a), len(b))
			}
			if nulls := strings.Count(strings.Join(b, "\n"), "NULL"); tc.nulls != (nulls > 0) {
				t.Fatalf("%d NULLs out", nulls)
			}
		})
	}
}

// Outputs stay near the target size: a small target splits the rows over
// several files, none far above it.
func TestRewriteRespectsTargetFileSize(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	schema := parseSchema(t, "id:int64,payload:string")
	rnd := rand.New(rand.NewPCG(1, 2))
	var inputs []catalog.DataFile
	for i := range 40 {
		rows := make([][]any, 1000)
		for j := range rows {
			rows[j] = []any{int64(i*1000 + j), fmt.Sprintf("%016x%016x", rnd.Uint64(), rnd.Uint64())}
		}
		inputs = append(inputs, writeFile(t, st, fmt.Sprintf("p/in-%02d.parquet", i), "", schema, rows))
	}
	const target = 256 << 10
	res, err := Rewrite(ctx, storeOpener(st), st, schema, "", inputs, RewriteOptions{TargetFileSize: target, RowGroupBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) < 2 {
		t.Fatalf("%d outputs for %d bytes at a %d-byte target", len(res.Outputs), res.BytesOut, target)
	}
	for _, f := range res.Outputs {
		if f.Bytes > target*5/4 {
			t.Errorf("%s: %d bytes, target %d", f.Path, f.Bytes, target)
		}
		if strings.Contains(f.Path, "/") {
			t.Errorf("%s: an unpartitioned output in a folder", f.Path)
		}
	}
	if a, b := readRows(t, st, schema, inputs), readRows(t, st, schema, res.Outputs); !slices.Equal(a, b) {
		t.Fatalf("rows differ: %d in, %d out", len(a), len(b))
	}
}

// Files written with older, narrower schemas convert to the table's:
// a nullable column added later, int32 → int64, int32 → float64, decimal
// widening, int32 → decimal.
func TestRewriteConvertsCompatibleSchemas(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	table := parseSchema(t, "id:int64,v:float64,d:decimal(20,4)?,w:decimal(12,1),note:string?")
	old := parseSchema(t, "w:int32,id:int32,v:int32,d:decimal(10,2)?")
	oldRows := [][]any{{int32(7), int32(1), int32(-3), "12.34"}, {int32(-8), int32(2), int32(4), nil}, {int32(0), int32(3), int32(5), "-0.01"}}
	newRows := [][]any{{int64(1 << 40), 2.5, "123456.7890", "99.9", "x"}, {int64(5), -1.25, nil, "-1.0", nil}}
	inputs := []catalog.DataFile{
		writeFile(t, st, "old.parquet", "", old, oldRows),
		writeFile(t, st, "new.parquet", "", table, newRows),
	}
	res, err := Rewrite(ctx, storeOpener(st), st, table, "", inputs, RewriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := readRows(t, st, table, res.Outputs)
	want := []string{
		"1099511627776|2.5|123456.7890|99.9|x",
		"1|-3|12.3400|7.0|NULL",
		"2|4|NULL|-8.0|NULL",
		"3|5|-0.0100|0.0|NULL",
		"5|-1.25|NULL|-1.0|NULL",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sc, _, err := pqio.InspectParquet(ctx, st, res.Outputs[0].Path, res.Outputs[0].Bytes)
	if err != nil || sc.String() != table.String() {
		t.Fatalf("output schema %s (%v), want %s", sc, err, table)
	}
}

// An incompatible input (a date where the table has a timestamp) fails
// naming the file and the column, and leaves no output behind, even when
// other inputs were written before it.
func TestRewriteRefusesIncompatibleInput(t *testing.T) {
	privateTempDir(t)
	ctx := context.Background()
	dir := t.TempDir()
	st, err := cloud.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	table := parseSchema(t, "id:int64,at:timestamp")
	day := time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	var inputs []catalog.DataFile
	for i := range 5 {
		inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in/good-%d.parquet", i), "", table, [][]any{{int64(i), day}}))
	}
	inputs = append(inputs, writeFile(t, st, "in/bad.parquet", "", parseSchema(t, "id:int64,at:date"), [][]any{{int64(9), day}}))
	before := listKeys(t, st)
	// A small target closes an output file before the bad input is reached.
	_, err = Rewrite(ctx, storeOpener(st), st, table, "", inputs, RewriteOptions{TargetFileSize: 1})
	if !errors.Is(err, pqio.ErrIncompatibleSchema) || !strings.Contains(err.Error(), "in/bad.parquet") || !strings.Contains(err.Error(), `"at"`) {
		t.Fatalf("err = %v; want ErrIncompatibleSchema naming in/bad.parquet and column at", err)
	}
	if after := listKeys(t, st); !slices.Equal(before, after) {
		t.Fatalf("objects after the failed rewrite:\n%v\nbefore:\n%v", after, before)
	}
	noTempFiles(t)
}

// privateTempDir gives the test a temporary folder of its own (TMPDIR),
// for noTempFiles.
func privateTempDir(t *testing.T) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
}

// noTempFiles fails the test if a rewrite left a temporary file (an
// output or a page buffer) in its private temporary folder.
func noTempFiles(t *testing.T) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(os.TempDir(), "sluice-*"))
	if err != nil || len(left) > 0 {
		t.Fatalf("temporary files left: %v (%v)", left, err)
	}
}

// Spark's files: many tiny files of one table; INT96 timestamps read as the
// table's microseconds; type widening's date column refused against a
// timestamp.
func TestRewriteSparkFixtures(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join("..", "testdata", "spark-written")
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("Spark fixtures: %v", err)
	}
	src, err := cloud.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	files := func(prefix string) []catalog.DataFile {
		var out []catalog.DataFile
		if err := src.List(ctx, prefix, func(o cloud.ObjectInfo) error {
			if strings.HasSuffix(o.Key, ".parquet") && !strings.Contains(o.Key, "_delta_log") {
				out = append(out, catalog.DataFile{Path: o.Key, Bytes: o.Size})
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name, schema string
		wantErr      string
	}{
		{name: "125-iterator-bug/", schema: "col1:int32?"},
		{name: "kernel-timestamp-INT96/", schema: "id:int32?,time:timestamp?"},
		{name: "kernel-timestamp-TIMESTAMP_MILLIS/", schema: "id:int32?,time:timestamp?"},
		{name: "type-widening/", wantErr: "date_timestamp_ntz",
			schema: "byte_long:int64?,int_long:int64?,float_double:float64?,byte_double:float64?,short_double:float64?,int_double:float64?," +
				"decimal_decimal_same_scale:decimal(20,2)?,decimal_decimal_greater_scale:decimal(20,5)?,byte_decimal:decimal(11,1)?," +
				"short_decimal:decimal(11,1)?,int_decimal:decimal(11,1)?,long_decimal:decimal(21,1)?,date_timestamp_ntz:timestamp?"},
	} {
		t.Run(strings.TrimSuffix(tc.name, "/"), func(t *testing.T) {
			out := tempStore(t)
			schema := parseSchema(t, tc.schema)
			inputs := files(tc.name)
			res, err := Rewrite(ctx, storeOpener(src), out, schema, "", inputs, RewriteOptions{})
			if tc.wantErr != "" {
				if !errors.Is(err, pqio.ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrIncompatibleSchema naming %s", err, tc.wantErr)
				}
				if keys := listKeys(t, out); len(keys) != 0 {
					t.Fatalf("left behind: %v", keys)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) != 1 {
				t.Fatalf("%d outputs", len(res.Outputs))
			}
			if a, b := readRows(t, src, schema, inputs), readRows(t, out, schema, res.Outputs); !slices.Equal(a, b) || len(a) == 0 {
				t.Fatalf("rows differ:\n%v\n%v", a, b)
			}
			sc, _, err := pqio.InspectParquet(ctx, out, res.Outputs[0].Path, res.Outputs[0].Bytes)
			if err != nil || sc.String() != schema.String() {
				t.Fatalf("output schema %s (%v), want %s", sc, err, schema)
			}
		})
	}
}

// A cancelled context stops the rewrite and leaves nothing behind.
func TestRewriteCancelled(t *testing.T) {
	privateTempDir(t)
	st := tempStore(t)
	schema := parseSchema(t, eventSchema)
	inputs := eventInputs(t, st, schema, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Rewrite(ctx, storeOpener(st), st, schema, "", inputs, RewriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if keys := listKeys(t, st); len(keys) != 10 {
		t.Fatalf("objects: %v", keys)
	}
	noTempFiles(t)
}
