package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// fileSum is the checksum of a Parquet file written with the table schema.
func fileSum(t *testing.T, st cloud.Store, schema catalog.Schema, f catalog.DataFile) uint64 {
	t.Helper()
	ps, err := pqio.ParquetSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pqio.OpenParquetFile(f.Path, pqio.NewReaderAt(context.Background(), st, f.Path, f.Bytes), f.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := fileChecksum(context.Background(), pf, tableHashers(ps, schema), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// The checksum ignores row order and file boundaries, and catches one
// changed value, a swapped pair of values and a duplicated row.
func TestChecksum(t *testing.T) {
	st := tempStore(t)
	schema := parseSchema(t, "a:int64,b:int64,s:string?")
	rows := make([][]any, 200)
	for i := range rows {
		var s any
		if i%4 != 0 {
			s = fmt.Sprint("s", i%9)
		}
		rows[i] = []any{int64(i), int64(i * 2), s}
	}
	shuffled := slices.Clone(rows)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	base := fileSum(t, st, schema, writeFile(t, st, "base.parquet", "", schema, rows))
	if got := fileSum(t, st, schema, writeFile(t, st, "shuffled.parquet", "", schema, shuffled)); got != base {
		t.Fatalf("shuffled rows: %x, want %x", got, base)
	}
	split := fileSum(t, st, schema, writeFile(t, st, "h1.parquet", "", schema, shuffled[:77])) +
		fileSum(t, st, schema, writeFile(t, st, "h2.parquet", "", schema, shuffled[77:]))
	if split != base {
		t.Fatalf("rows split over two files: %x, want %x", split, base)
	}
	changed := slices.Clone(rows)
	changed[10] = []any{int64(10), int64(21), changed[10][2]}
	swapped := slices.Clone(rows)
	swapped[10] = []any{int64(20), int64(10), swapped[10][2]}
	nulled := slices.Clone(rows)
	nulled[5] = []any{int64(5), int64(10), nil}
	dup := append(slices.Clone(rows[:199]), rows[0])
	for name, rs := range map[string][][]any{"changed": changed, "swapped": swapped, "nulled": nulled, "duplicated": dup} {
		if got := fileSum(t, st, schema, writeFile(t, st, name+".parquet", "", schema, rs)); got == base {
			t.Errorf("%s: checksum unchanged", name)
		}
	}
}

// A corrupted output fails the verification with ErrVerify, and the
// outputs are deleted.
func TestRewriteVerifyCatchesCorruption(t *testing.T) {
	privateTempDir(t)
	ctx := context.Background()
	st := tempStore(t)
	schema := parseSchema(t, eventSchema)
	inputs := eventInputs(t, st, schema, 4)
	before := listKeys(t, st)
	testHookCorrupt = func(col int, v *parquet.Value) {
		if col == 0 && v.Kind() == parquet.Int64 && v.Int64() == 150 {
			*v = parquet.Int64Value(151)
		}
	}
	defer func() { testHookCorrupt = nil }()
	_, err := Rewrite(ctx, storeOpener(st), st, schema, "", inputs, RewriteOptions{})
	if !errors.Is(err, ErrVerify) {
		t.Fatalf("err = %v, want ErrVerify", err)
	}
	if after := listKeys(t, st); !slices.Equal(before, after) {
		t.Fatalf("objects after a failed verification: %v", after)
	}
	noTempFiles(t)
}

// The read-back hashes typed page values (and a dictionary's entries once);
// its checksum must be the one of every value read as a parquet.Value.
func TestPageChecksumMatchesValues(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	schema := parseSchema(t, eventSchema+",wide:decimal(30,4)?,kind:string?,u:uuid?")
	rows := eventRows(0, 5000)
	for i := range rows {
		var wide, kind, u any
		if i%6 != 0 {
			wide = fmt.Sprintf("%d.%04d", i*1000003, i%10000)
		}
		if i%4 != 0 {
			kind = fmt.Sprint("kind-", i%7)
		}
		if i%5 != 0 {
			u = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		}
		rows[i] = append(rows[i], wide, kind, u)
	}
	f := writeFile(t, st, "all.parquet", "", schema, rows)
	ps, err := pqio.ParquetSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	hashers := tableHashers(ps, schema)
	pf, err := pqio.OpenParquetFile(f.Path, pqio.NewReaderAt(ctx, st, f.Path, f.Bytes), f.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum, n, err := fileChecksum(ctx, pf, hashers, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var h rowHashes
	vals := make([]parquet.Value, 100)
	var ph pageHashes
	paged := 0
	for _, rg := range pf.RowGroups() {
		rn := int(rg.NumRows())
		h.begin(rn)
		for j, c := range rg.ColumnChunks() {
			if ph.covers(pf.Root().Columns()[j], hashers[j]) {
				paged++
			}
			off, err := mixChunkValues(&h, j, c, rn, hashers[j], vals)
			if err != nil || off != rn {
				t.Fatalf("column %d: %d values of %d: %v", j, off, rn, err)
			}
		}
		h.end()
	}
	if n != int64(len(rows)) || h.n != n {
		t.Fatalf("%d rows read, %d by values, want %d", n, h.n, len(rows))
	}
	if paged < len(schema.Columns)-1 {
		t.Fatalf("%d of %d columns hashed from pages", paged, len(schema.Columns))
	}
	if sum != h.sum {
		t.Fatalf("page checksum %016x, value checksum %016x", sum, h.sum)
	}
}

// The typed path and the page hashes read a boolean page's packed bits from
// bit 0; parquet-go's boolean page Data ignores the offset of a sliced
// page. Pages read from a file must therefore start at bit 0: over several
// pages with NULLs, every page's bits give the values its value reader
// gives.
func TestBooleanPagesStartAtBitZero(t *testing.T) {
	st := tempStore(t)
	schema := parseSchema(t, "b:bool?")
	var rows [][]any
	for k := range 300000 {
		var v any = k%7 == 0 || k%5 == 1
		if k%11 == 3 {
			v = nil
		}
		rows = append(rows, []any{v})
	}
	f := writeFile(t, st, "bools.parquet", "", schema, rows)
	rc, _, err := st.Get(context.Background(), f.Path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	pages, seen := 0, 0
	for _, rg := range pf.RowGroups() {
		ps := rg.ColumnChunks()[0].Pages()
		for {
			p, err := ps.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]parquet.Value, p.NumValues())
			if n, err := p.Values().ReadValues(vals); n != len(vals) || (err != nil && err != io.EOF) {
				t.Fatalf("page %d: read %d of %d values: %v", pages, n, len(vals), err)
			}
			data := p.Data()
			bits := data.Boolean()
			k := 0
			for _, v := range vals {
				if v.IsNull() {
					continue
				}
				if got := bit(bits, k); got != v.Boolean() {
					t.Fatalf("page %d, value %d: bit %v, value %v", pages, k, got, v.Boolean())
				}
				k++
			}
			seen += len(vals)
			pages++
		}
		ps.Close()
	}
	if pages < 2 || seen != len(rows) {
		t.Fatalf("%d pages of %d values, want several pages of %d", pages, seen, len(rows))
	}
}
