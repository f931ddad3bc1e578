package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// nestedSchema has a struct (with a list inside), a list of strings, a map,
// a list of lists and a list of structs of lists of maps, with NULLs
// allowed at most levels and not at some.
const nestedSchema = "id:int64,ts:timestamp," +
	"s:struct<a:int64,b:string?,c:list<int32?>?>?," +
	"tags:list<string?>?," +
	"attrs:map<string,int64?>?," +
	"ll:list<list<int64>>?," +
	"deep:list<struct<x:int32?,ys:list<map<string,string?>?>?>?>?"

// nestedRow is row k of the generated nested table: NULLs at every level,
// empty lists and maps, and deep nesting, varying with k.
func nestedRow(k int) []any {
	var s, tags, attrs, ll, deep any
	if k%9 != 0 {
		st := map[string]any{"a": int64(k)}
		if k%4 != 0 {
			st["b"] = fmt.Sprint("b-", k%13)
		}
		switch k % 5 {
		case 0:
		case 1:
			st["c"] = []any{}
		default:
			st["c"] = []any{int32(k), nil, int32(-k)}[:k%3+1]
		}
		s = st
	}
	if k%7 != 0 {
		t := []any{}
		for i := range k % 4 {
			if (k+i)%5 == 0 {
				t = append(t, nil)
			} else {
				t = append(t, fmt.Sprintf("tag-%d-%d", k%17, i))
			}
		}
		tags = t
	}
	if k%6 != 0 {
		var es []pqio.MapEntry
		for i := range k % 3 {
			var v any
			if (k+i)%4 != 0 {
				v = int64(k * i)
			}
			es = append(es, pqio.MapEntry{Key: fmt.Sprint("k", i), Value: v})
		}
		if es == nil {
			es = []pqio.MapEntry{}
		}
		attrs = es
	}
	switch k % 4 {
	case 1:
		ll = []any{[]any{int64(1)}, []any{int64(2)}}
	case 2:
		ll = []any{[]any{int64(1), int64(2)}}
	case 3:
		ll = []any{[]any{}, []any{int64(k)}}
	}
	if k%8 != 0 {
		d := []any{}
		for i := range k % 3 {
			if (k+i)%5 == 0 {
				d = append(d, nil)
				continue
			}
			el := map[string]any{}
			if i%2 == 0 {
				el["x"] = int32(i)
			}
			if (k+i)%3 != 0 {
				el["ys"] = []any{nil, []pqio.MapEntry{}, []pqio.MapEntry{{Key: "q", Value: fmt.Sprint(k)}, {Key: "r", Value: nil}}}[:i%3+1]
			}
			d = append(d, el)
		}
		deep = d
	}
	ts := time.Date(2024, 3, 1+k%2, 0, 0, 0, 0, time.UTC).Add(time.Duration(k) * time.Second)
	return []any{int64(k), ts, s, tags, attrs, ll, deep}
}

// duckNested runs sql in DuckDB (tools/duckquery.mjs) and returns its rows.
func duckNested(t *testing.T, sql string) []string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("node", filepath.Join(filepath.Dir(file), "..", "tools", "duckquery.mjs"))
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckquery: %v: %s (run \"make tools\" if DuckDB is missing)", err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n")
}

// duckDigest is DuckDB's row count and order-independent sum of the hashes
// of every row's to_json (of the columns given, all when empty) over a
// table's live files.
func duckDigest(t *testing.T, tbl *catalog.Table, cols string) string {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, "'"+strings.ReplaceAll(filepath.Join(tbl.Location(), f.Path), "'", "''")+"'")
	}
	row := "to_json(t)"
	if cols != "" {
		row = "to_json(struct_pack(" + cols + "))"
	}
	return strings.Join(duckNested(t, fmt.Sprintf("select count(*), sum(hash(%s)::hugeint) from read_parquet([%s], union_by_name=true) t",
		row, strings.Join(paths, ","))), "\n")
}

// nestedTable writes files small files of rowsPer rows of nestedRow into
// two day folders under dir and imports them as a table.
func nestedTable(t *testing.T, dir string, files, rowsPer int) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	schema, err := catalog.ParseSchema(nestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	st := tempStoreAt(t, dir)
	k := 0
	for i := range files {
		var rows [][]any
		for range rowsPer {
			rows = append(rows, nestedRow(k))
			k++
		}
		day := rows[0][1].(time.Time).Format("2006-01-02")
		if _, _, err := pqio.WriteParquet(ctx, st, fmt.Sprintf("date=%s/part-%05d.parquet", day, i), schema, rows); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := catalog.Open(ctx, dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	if _, err := tbl.Import(ctx, dir, catalog.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	return tbl
}

func tempStoreAt(t *testing.T, dir string) cloud.Store {
	t.Helper()
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A table with struct, list and map columns (NULLs at every level, empty
// lists and maps, lists of structs of lists of maps) in 1,000 small files
// compacts into one file per day, verified, and DuckDB reads the same rows
// before and after.
func TestCompactNestedTableOfSmallFiles(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "nested")
	tbl := nestedTable(t, dir, 1000, 5)
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Schema.String(); got != nestedSchema {
		t.Fatalf("imported as %s, want %s", got, nestedSchema)
	}
	before := duckDigest(t, tbl, "")
	t.Logf("DuckDB before: %s", before)
	res, err := Run(ctx, tbl, Options{Plan: PlanOptions{MinInputFiles: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	m, _ = tbl.Latest(ctx)
	if files, rows, _ := m.Totals(); files != 2 || rows != 5000 {
		t.Fatalf("%d files, %d rows after compaction, want 2 files (one a day), 5000 rows", files, rows)
	}
	if after := duckDigest(t, tbl, ""); after != before || !strings.HasPrefix(before, "5000\t") {
		t.Fatalf("DuckDB reads %s after compaction, %s before", after, before)
	}
	// The outputs' statistics are per leaf, none for a nested whole.
	files, _ := tbl.Files(ctx, m)
	for _, f := range files {
		if _, ok := f.FileStats.Columns["deep.element.ys.element.value"]; !ok {
			t.Errorf("%s: no statistics for leaf deep.element.ys.element.value: %v", f.Path, f.FileStats.Columns)
		}
		if _, ok := f.FileStats.Columns["deep"]; ok {
			t.Errorf("%s: statistics for the nested column deep as a whole", f.Path)
		}
	}
}

// Inputs stored as the output is are copied as Parquet rows; a changed
// repetition level there ([[1],[2]] written as [[1,2]]: the same leaf
// values, the second one continuing the inner list) fails the
// verification with ErrVerify, nothing left behind.
func TestCompactNestedRowCopyCorruptionFailsVerify(t *testing.T) {
	ctx := context.Background()
	schema := parseSchema(t, nestedSchema)
	// The leaf index of ll.element.element: the leaves of the columns
	// before ll, counted.
	leaf := 0
	for _, c := range schema.Columns[:5] {
		leaf += len(c.Leaves())
	}
	if schema.Columns[5].Leaves()[0].Path != "ll.element.element" {
		t.Fatalf("column 5 is %s", schema.Columns[5].Name)
	}
	st := tempStore(t)
	var inputs []catalog.DataFile
	for i := range 4 {
		var rows [][]any
		for k := i * 10; k < i*10+10; k++ {
			rows = append(rows, nestedRow(k))
		}
		inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in/%d.parquet", i), "", schema, rows))
	}
	before := listKeys(t, st)
	hit := false
	testHookCorruptLeaves = func(row parquet.Row) {
		if row[0].Int64() != 21 {
			return
		}
		for i := range row {
			if v := row[i]; v.Column() == leaf && v.RepetitionLevel() == 1 {
				row[i] = v.Level(2, v.DefinitionLevel(), leaf)
				hit = true
			}
		}
	}
	defer func() { testHookCorruptLeaves = nil }()
	_, err := Rewrite(ctx, storeOpener(st), st, schema, "", inputs, RewriteOptions{})
	if !hit {
		t.Fatal("the inputs were not copied as Parquet rows")
	}
	if !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("err = %v, want ErrVerify for the checksum", err)
	}
	if after := listKeys(t, st); !slices.Equal(before, after) {
		t.Fatalf("objects after a failed verification: %v", after)
	}
	noTempFiles(t)
}

// A changed nested value in what is written fails the verification with
// ErrVerify, nothing is left behind: an element moved from one inner list
// to another ([[1],[2]] written as [[1,2]], the same leaf values with other
// repetition levels), and a NULL moved up a level.
func TestCompactNestedCorruptionFailsVerify(t *testing.T) {
	schema := parseSchema(t, nestedSchema)
	for name, corrupt := range map[string]func(row []any){
		"an element moved between lists": func(row []any) {
			if row[0].(int64) == 21 { // ll = [[1],[2]]
				row[5] = []any{[]any{int64(1), int64(2)}}
			}
		},
		"a struct's NULL field for a NULL struct": func(row []any) {
			if row[0].(int64) == 22 && row[2] != nil {
				row[2] = nil
			}
		},
		"an empty map for a NULL one": func(row []any) {
			if row[0].(int64) == 30 { // attrs = NULL
				row[4] = []pqio.MapEntry{}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := tempStore(t)
			var inputs []catalog.DataFile
			for i := range 4 {
				var rows [][]any
				for k := i * 10; k < i*10+10; k++ {
					rows = append(rows, nestedRow(k))
				}
				inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in/%d.parquet", i), "", schema, rows))
			}
			before := listKeys(t, st)
			testHookCorruptRow = corrupt
			defer func() { testHookCorruptRow = nil }()
			_, err := Rewrite(ctx, storeOpener(st), st, schema, "", inputs, RewriteOptions{})
			if !errors.Is(err, ErrVerify) {
				t.Fatalf("err = %v, want ErrVerify", err)
			}
			t.Log(err)
			if after := listKeys(t, st); !slices.Equal(before, after) {
				t.Fatalf("objects after a failed verification: %v", after)
			}
			noTempFiles(t)
		})
	}
	// Uncorrupted, the same inputs rewrite and read back as written.
	ctx := context.Background()
	st := tempStore(t)
	var inputs []catalog.DataFile
	for i := range 4 {
		var rows [][]any
		for k := i * 10; k < i*10+10; k++ {
			rows = append(rows, nestedRow(k))
		}
		inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in/%d.parquet", i), "", schema, rows))
	}
	res, err := Rewrite(ctx, storeOpener(st), st, schema, "", inputs, RewriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readRows(t, st, schema, res.Outputs), readRows(t, st, schema, inputs); !slices.Equal(got, want) {
		t.Fatalf("rows after the rewrite differ:\n%v\n%v", got, want)
	}
}

// Spark's nested fixtures (the current and the legacy layouts, and a
// partitioned table) compact to the rows DuckDB read before: each file is
// there twice, so that every partition has two files to pack into one.
func TestCompactSparkNestedFixtures(t *testing.T) {
	for name, nested := range map[string]string{
		"parquet-all-types":               "nested_struct,array_of_prims,array_of_arrays,array_of_structs,map_of_prims,map_of_rows,map_of_arrays",
		"parquet-all-types-legacy-format": "nested_struct,array_of_prims,array_of_arrays,array_of_structs,map_of_prims,map_of_rows,map_of_arrays",
		"data-reader-partition-values":    "as_list_of_records,as_nested_struct,value",
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), name)
			src := filepath.Join("..", "testdata", "spark-written", name)
			parts := 0
			err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.Contains(p, "_delta_log") {
					return err
				}
				rel, _ := filepath.Rel(src, p)
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				names := []string{rel}
				if strings.HasSuffix(p, ".parquet") {
					names = append(names, strings.TrimSuffix(rel, ".parquet")+"-again.parquet")
					parts++
				}
				for _, n := range names {
					if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755); err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := catalog.Open(ctx, dir, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			if _, err := tbl.Import(ctx, dir, catalog.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			m, _ := tbl.Latest(ctx)
			files, _ := tbl.Files(ctx, m)
			st := tbl.Store()
			rowsBefore := readRows(t, st, m.Schema, files)
			before := duckDigest(t, tbl, nested)
			res, err := Run(ctx, tbl, Options{Plan: PlanOptions{MinInputFiles: 2}})
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			m, _ = tbl.Latest(ctx)
			if n, _, _ := m.Totals(); int(n) != parts {
				t.Fatalf("%d live files after compaction, want %d (one a partition)\n%s", n, parts, res.Plan)
			}
			files, _ = tbl.Files(ctx, m)
			if after := duckDigest(t, tbl, nested); after != before {
				t.Errorf("DuckDB reads the nested columns as %s after compaction, %s before", after, before)
			}
			if rowsAfter := readRows(t, st, m.Schema, files); !slices.Equal(rowsAfter, rowsBefore) {
				t.Errorf("rows after compaction:\n%s\nbefore:\n%s", strings.Join(rowsAfter, "\n"), strings.Join(rowsBefore, "\n"))
			}
		})
	}
}

// Inputs of one bin may take different paths: one stored as the output
// is (copied as Parquet rows), one whose struct leaf is narrower (read,
// widened and shredded again); the verification holds across both.
func TestCompactNestedMixedInputs(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	schema := parseSchema(t, nestedSchema)
	narrow := parseSchema(t, strings.Replace(nestedSchema, "s:struct<a:int64,", "s:struct<a:int32,", 1))
	var rows, narrowRows [][]any
	for k := range 40 {
		rows = append(rows, nestedRow(k))
		r := nestedRow(1000 + k)
		if s, ok := r[2].(map[string]any); ok {
			s["a"] = int32(s["a"].(int64))
		}
		narrowRows = append(narrowRows, r)
	}
	inputs := []catalog.DataFile{
		writeFile(t, st, "in/wide.parquet", "", schema, rows),
		writeFile(t, st, "in/narrow.parquet", "", narrow, narrowRows),
	}
	res, err := Rewrite(ctx, storeOpener(st), st, schema, "", inputs, RewriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 1 || res.RowsOut != 80 {
		t.Fatalf("%d outputs, %d rows; want 1, 80", len(res.Outputs), res.RowsOut)
	}
	if got, want := readRows(t, st, schema, res.Outputs), readRows(t, st, schema, inputs); !slices.Equal(got, want) {
		t.Fatalf("rows after the rewrite differ:\n%v\n%v", got, want)
	}
}
