package compact

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// shuffledInputs writes files of event rows numbered 0 to files×perFile,
// the rows shuffled across the files.
func shuffledInputs(t *testing.T, st cloud.Store, schema catalog.Schema, files, perFile int) []catalog.DataFile {
	t.Helper()
	all := eventRows(0, files*perFile)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var inputs []catalog.DataFile
	for i := range files {
		inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in/%02d.parquet", i), "", schema, all[i*perFile:(i+1)*perFile]))
	}
	return inputs
}

// sortTempDir points TMPDIR at a fresh folder for the test and returns it.
func sortTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

// leftInTemp lists what a rewrite left in the temporary folder.
func leftInTemp(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// nameID is the sort key of an event row read back: its name, its id.
type nameID struct {
	name string
	id   int64
}

func (a nameID) compare(b nameID) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return int(a.id - b.id)
}

func TestSortedRewriteOrdersRowsWithinAndAcrossFilesThroughSpills(t *testing.T) {
	tmp := sortTempDir(t)
	defer func(n int) { sortFanIn = n }(sortFanIn)
	sortFanIn = 3 // five runs or more: a merge pass before the last merge
	defer func(n int64) { sortBufferCap = n }(sortBufferCap)
	sortBufferCap = 64 << 10
	st := tempStore(t)
	schema := parseSchema(t, eventSchema)
	inputs := shuffledInputs(t, st, schema, 20, 1000)
	want := readRows(t, st, schema, inputs)

	res, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{
		Outputs: 3, MemoryBudget: 4 << 20, Order: Ordering{Columns: []string{"name", "id"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The sort's 64 KiB hold about a thousand rows, encoded: the 20,000
	// rows went through runs on disk and a merge pass.
	// Four runs or more need a merge pass, which writes one more: five.
	if res.SortRuns < 5 {
		t.Fatalf("%d sorted runs spilled; want the rows spilled in 4 runs or more, and a merge pass", res.SortRuns)
	}
	if left := leftInTemp(t, tmp); len(left) > 0 {
		t.Fatalf("the rewrite left %v in the temporary folder", left)
	}
	if got := readRows(t, st, schema, res.Outputs); !slices.Equal(got, want) {
		t.Fatalf("the outputs hold %d rows, not the %d rows of the inputs", len(got), len(want))
	}
	if len(res.Outputs) != 3 {
		t.Fatalf("%d outputs, want the 3 planned", len(res.Outputs))
	}
	// In order within each file, and each file's keys after the last
	// file's: disjoint, increasing ranges.
	var prev *nameID
	for i, f := range res.Outputs {
		rows, err := pqio.ReadParquetRows(context.Background(), st, f.Path, f.Bytes, schema)
		if err != nil {
			t.Fatal(err)
		}
		for r, row := range rows {
			k := nameID{name: row[1].(string), id: row[0].(int64)}
			if prev != nil && prev.compare(k) >= 0 {
				t.Fatalf("output %d row %d: %v after %v; want strictly increasing (name, id)", i, r, k, *prev)
			}
			prev = &k
		}
		checkSortingColumns(t, st, f, "name", "id")
	}
}

// checkSortingColumns checks that every row group of f records it is
// sorted by cols, ascending, NULLs first.
func checkSortingColumns(t *testing.T, st cloud.Store, f catalog.DataFile, cols ...string) {
	t.Helper()
	pf, err := pqio.OpenParquetFile(f.Path, pqio.NewReaderAt(context.Background(), st, f.Path, f.Bytes), f.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	leaves := pf.Schema().Columns()
	for g, rg := range pf.Metadata().RowGroups {
		var got []string
		for _, sc := range rg.SortingColumns {
			got = append(got, strings.Join(leaves[sc.ColumnIdx], ".")+map[bool]string{true: " desc"}[sc.Descending]+map[bool]string{false: " nulls last"}[sc.NullsFirst])
		}
		if !slices.Equal(got, cols) {
			t.Fatalf("%s row group %d: sorting_columns %v, want %v", f.Path, g, got, cols)
		}
	}
}

func TestSortedRewriteInMemoryWritesNoRun(t *testing.T) {
	tmp := sortTempDir(t)
	st := tempStore(t)
	schema := parseSchema(t, eventSchema)
	inputs := shuffledInputs(t, st, schema, 4, 200)
	res, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{Order: Ordering{Columns: []string{"id"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SortRuns != 0 || res.RowsOut != 800 {
		t.Fatalf("%d runs spilled, %d rows out; want none spilled and 800 rows", res.SortRuns, res.RowsOut)
	}
	if left := leftInTemp(t, tmp); len(left) > 0 {
		t.Fatalf("the rewrite left %v in the temporary folder", left)
	}
}

func TestSortedRewriteFailingAfterSpillsRemovesItsRuns(t *testing.T) {
	tmp := sortTempDir(t)
	st := tempStore(t)
	schema := parseSchema(t, eventSchema)
	inputs := shuffledInputs(t, st, schema, 10, 1000)
	// The last input's id is a string: incompatible, read after the
	// others have spilled.
	bad := writeFile(t, st, "in/zz.parquet", "", parseSchema(t, "id:string"), [][]any{{"x"}})
	inputs = append(inputs, bad)
	_, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{
		MemoryBudget: 4 << 20, Order: Ordering{Columns: []string{"id"}}})
	if !errors.Is(err, pqio.ErrIncompatibleSchema) {
		t.Fatalf("err = %v, want the incompatible input's", err)
	}
	if left := leftInTemp(t, tmp); len(left) > 0 {
		t.Fatalf("the failed rewrite left %v in the temporary folder", left)
	}
	for _, k := range listKeys(t, st) {
		if !strings.HasPrefix(k, "in/") {
			t.Fatalf("the failed rewrite left output %s", k)
		}
	}
}

func TestZOrderedRewritePrunesOnEitherColumn(t *testing.T) {
	sortTempDir(t)
	st := tempStore(t)
	schema := parseSchema(t, "x:int64,y:int64,pad:string")
	r := rand.New(rand.NewPCG(3, 4))
	var inputs []catalog.DataFile
	for f := range 8 {
		rows := make([][]any, 4000)
		for i := range rows {
			rows[i] = []any{r.Int64N(1024), r.Int64N(1024), strconv.Itoa(r.IntN(1000))}
		}
		inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in/%d.parquet", f), "", schema, rows))
	}
	want := readRows(t, st, schema, inputs)
	res, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{
		Outputs: 16, MemoryBudget: 4 << 20, Order: Ordering{Columns: []string{"x", "y"}, ZOrder: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := readRows(t, st, schema, res.Outputs); !slices.Equal(got, want) {
		t.Fatalf("the outputs hold %d rows, not the %d rows of the inputs", len(got), len(want))
	}
	if len(res.Outputs) != 16 {
		t.Fatalf("%d outputs, want 16", len(res.Outputs))
	}
	// Each of 16 files covers whole cells of the curve, a quarter of
	// each column's range: a filter on one value of x, or of y, reads
	// about 4 of them, where files of shuffled rows would all be read.
	for _, col := range []string{"x", "y"} {
		hits := 0
		for v := int64(0); v < 1024; v += 16 {
			hit := 0
			for _, f := range res.Outputs {
				s := f.FileStats.Columns[col]
				lo, _ := strconv.ParseInt(*s.Min, 10, 64)
				hi, _ := strconv.ParseInt(*s.Max, 10, 64)
				if lo <= v && v <= hi {
					hit++
				}
			}
			hits += hit
		}
		if avg := float64(hits) / 64; avg > 5 {
			t.Errorf("%s = v: %.1f of 16 files may hold v, on average; want at most 5", col, avg)
		} else {
			t.Logf("%s = v: %.1f of 16 files may hold v, on average", col, avg)
		}
	}
	for _, f := range res.Outputs {
		checkSortingColumns(t, st, f) // a z-order is no lexicographic sort
	}
}

func TestOrderingIsCheckedAgainstTheTable(t *testing.T) {
	schema := parseSchema(t, eventSchema)
	for _, tc := range []struct {
		name  string
		order Ordering
		want  string
	}{
		{"a column the table lacks", Ordering{Columns: []string{"nope"}}, `the table has no column "nope"`},
		{"a column listed twice", Ordering{Columns: []string{"id", "id"}}, `column "id" is listed twice`},
		{"an empty name", Ordering{Columns: ParseColumns("id,,name")}, "an empty column name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.order.check(schema)
			if !errors.Is(err, ErrOrdering) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrOrdering saying %q", err, tc.want)
			}
		})
	}
	m := &catalog.Manifest{Properties: map[string]string{PropSortBy: "a", PropZOrderBy: "b"}}
	if _, err := TableOrdering(m); err == nil {
		t.Fatal("both ordering properties set: no error")
	}
	m.Properties = map[string]string{PropZOrderBy: " a , b "}
	if o, err := TableOrdering(m); err != nil || o.String() != "z-order by a,b" {
		t.Fatalf("TableOrdering = %v, %v; want z-order by a,b", o, err)
	}
}

// TestOrderKeyFollowsValueOrder is differential: for random pairs of
// values of each kind, a smaller value never has a larger order key, and
// a smaller key always belongs to a smaller value. Strings of the same
// first 8 bytes may share a key; numbers never do.
func TestOrderKeyFollowsValueOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type kindCase struct {
		kind   parquet.Kind
		signed bool
		gen    func() parquet.Value
		cmp    func(a, b parquet.Value) int
		strict bool
	}
	edge64 := []int64{-1 << 63, -1, 0, 1, 1<<63 - 1}
	cases := map[string]kindCase{
		"int32": {parquet.Int32, false, func() parquet.Value {
			return parquet.Int32Value(int32(r.Uint32()) >> r.IntN(32))
		}, func(a, b parquet.Value) int { return cmpInt(int64(a.Int32()), int64(b.Int32())) }, true},
		"int64 and timestamps": {parquet.Int64, false, func() parquet.Value {
			if r.IntN(10) == 0 {
				return parquet.Int64Value(edge64[r.IntN(len(edge64))])
			}
			return parquet.Int64Value(int64(r.Uint64()) >> r.IntN(64))
		}, func(a, b parquet.Value) int { return cmpInt(a.Int64(), b.Int64()) }, true},
		"double": {parquet.Double, false, func() parquet.Value {
			return parquet.DoubleValue((r.Float64() - 0.5) * float64(int64(1)<<r.IntN(60)))
		}, func(a, b parquet.Value) int { return cmpFloat(a.Double(), b.Double()) }, true},
		"strings": {parquet.ByteArray, false, func() parquet.Value {
			b := make([]byte, r.IntN(13))
			for i := range b {
				b[i] = "ab\x00\xff"[r.IntN(4)]
			}
			return parquet.ByteArrayValue(b)
		}, func(a, b parquet.Value) int { return strings.Compare(string(a.ByteArray()), string(b.ByteArray())) }, false},
		"fixed-size decimals": {parquet.FixedLenByteArray, true, func() parquet.Value {
			var b [8]byte
			x := int64(r.Uint64()) >> r.IntN(64)
			for i := range b {
				b[i] = byte(x >> (56 - 8*i))
			}
			return parquet.FixedLenByteArrayValue(b[:])
		}, func(a, b parquet.Value) int { return cmpInt(beInt(a.ByteArray()), beInt(b.ByteArray())) }, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			for range 20000 {
				a, b := c.gen(), c.gen()
				vc := c.cmp(a, b)
				kc := cmpUint(orderKey(&a, c.kind, c.signed), orderKey(&b, c.kind, c.signed))
				if (vc < 0 && kc > 0) || (vc > 0 && kc < 0) || (kc != 0 && vc == 0) || (c.strict && vc != 0 && kc == 0) {
					t.Fatalf("values %v, %v compare %d; their keys %d", a, b, vc, kc)
				}
			}
		})
	}
	null := parquet.NullValue()
	low := parquet.Int64Value(-1 << 62)
	if orderKey(&null, parquet.Int64, false) > orderKey(&low, parquet.Int64, false) {
		t.Fatal("a NULL's key is above a value's; want NULLs first")
	}
	// Bits interleave most significant first.
	if got := interleave(nil, []uint64{1 << 63, 1 << 62}); got[0] != 0b1001_0000 {
		t.Fatalf("interleave of a's top bit and b's second: first byte %08b, want 10010000", got[0])
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// beInt is a big-endian two's complement number of 8 bytes.
func beInt(b []byte) int64 {
	var x int64
	for _, c := range b {
		x = x<<8 | int64(c)
	}
	return x
}

// TestSortKeyFollowsRowOrder is differential: the bytes of sortKeyFunc's
// keys order random rows of (string, nullable int64) as comparing the
// string, then the number, NULLs first, does; strings hold zeros and
// share prefixes.
func TestSortKeyFollowsRowOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	kinds := []parquet.Kind{parquet.ByteArray, parquet.Int64}
	keyOf := sortKeyFunc([]int{0, 1}, kinds, []bool{false, false})
	gen := func() parquet.Row {
		b := make([]byte, r.IntN(4))
		for i := range b {
			b[i] = "a\x00\xff"[r.IntN(3)]
		}
		n := parquet.NullValue()
		if r.IntN(4) > 0 {
			n = parquet.Int64Value(int64(r.IntN(5)) - 2)
		}
		return parquet.Row{parquet.ByteArrayValue(b), n}
	}
	want := func(a, b parquet.Row) int {
		if c := strings.Compare(string(a[0].ByteArray()), string(b[0].ByteArray())); c != 0 {
			return c
		}
		switch an, bn := a[1].IsNull(), b[1].IsNull(); {
		case an && bn:
			return 0
		case an:
			return -1
		case bn:
			return 1
		}
		return cmpInt(a[1].Int64(), b[1].Int64())
	}
	for range 20000 {
		a, b := gen(), gen()
		ka, kb := keyOf(nil, a), keyOf(nil, b)
		if got, w := strings.Compare(string(ka), string(kb)), want(a, b); got != w {
			t.Fatalf("rows %v and %v compare %d; their keys %x and %x compare %d", a, b, w, ka, kb, got)
		}
	}
}
