package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// hexPage is n bytes of lowercase hex: ids as text, which zstd compresses
// to about half.
func hexPage(rng *rand.Rand, n int) []byte {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[rng.IntN(16)]
	}
	return b
}

func zstdDecode(t *testing.T, b []byte) []byte {
	t.Helper()
	out, err := parquet.LookupCompressionCodec(format.Zstd).Decode(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The codec stores an expected page as the bytes it was given, and only
// that page, only once it has learned the column's ratio, and only when
// those bytes are compressed about as well as it compresses the column.
func TestReusingCodecReusesOnlyTheExpectedPage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// The codec sluice writes zstd with (cgo, adaptive level).
	c := &reusingCodec{Codec: pqio.NewCodecs().For("id")}
	page := hexPage(rng, 64<<10)
	compressed, err := pqio.NewCodecs().For("id").Encode(nil, page)
	if err != nil {
		t.Fatal(err)
	}

	// Not learned yet: the expected page is compressed like any other.
	c.expect(page, compressed)
	out, err := c.Encode(nil, page)
	if err != nil || c.reused != 0 || !bytes.Equal(zstdDecode(t, out), page) {
		t.Fatalf("before learning: reused %d, err %v", c.reused, err)
	}
	for c.in < reuseLearnBytes {
		if _, err := c.Encode(nil, hexPage(rng, 64<<10)); err != nil {
			t.Fatal(err)
		}
	}

	// Learned: the expected page is stored as given...
	c.expect(page, compressed)
	out, err = c.Encode(make([]byte, 0, 10), page)
	if err != nil || c.reused != 1 || !bytes.Equal(out, compressed) {
		t.Fatalf("expected page: reused %d, %d bytes out (want its %d), err %v", c.reused, len(out), len(compressed), err)
	}
	// ...once: the next page with the same bytes is compressed.
	out, err = c.Encode(nil, page)
	if err != nil || c.reused != 1 || !bytes.Equal(zstdDecode(t, out), page) {
		t.Fatalf("page after the expected one: reused %d, err %v", c.reused, err)
	}

	// Other bytes than expected are compressed, never stored as given.
	other := hexPage(rng, 64<<10)
	c.expect(page, compressed)
	out, err = c.Encode(nil, other)
	if err != nil || c.reused != 1 || !bytes.Equal(zstdDecode(t, out), other) {
		t.Fatalf("other page: reused %d, err %v", c.reused, err)
	}

	// A page compressed far worse than the codec does is compressed again.
	stored, err := (&parquet.Uncompressed).Encode(nil, page)
	if err != nil {
		t.Fatal(err)
	}
	if c.accepts(len(stored), len(page)) {
		t.Fatal("accepts a page stored uncompressed")
	}
	c.expect(page, stored)
	out, err = c.Encode(nil, page)
	if err != nil || c.reused != 1 || bytes.Equal(out, stored) || !bytes.Equal(zstdDecode(t, out), page) {
		t.Fatalf("poorly compressed page: reused %d, err %v", c.reused, err)
	}
}

// v1Row is the schema of writeV1File's files, in the table's column order.
type v1Row struct {
	ID     *int64   `parquet:"id,optional"`
	Name   *string  `parquet:"name,optional,plain"`
	Amount *float64 `parquet:"amount,optional"`
}

// writeV1File writes rows (id, name, amount?) as DuckDB writes Parquet:
// every column optional, version 1 data pages, zstd, strings PLAIN, one
// page per row group.
func writeV1File(t *testing.T, st cloud.Store, key string, rows [][]any) catalog.DataFile {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[any](&buf, append(pqio.ParquetWriterOptions(), parquet.SchemaOf(v1Row{}), parquet.DataPageVersion(1))...)
	for _, r := range rows {
		row := parquet.Row{parquet.Int64Value(r[0].(int64)).Level(0, 1, 0), parquet.ByteArrayValue([]byte(r[1].(string))).Level(0, 1, 1)}
		if r[2] == nil {
			row = append(row, parquet.Value{}.Level(0, 0, 2))
		} else {
			row = append(row, parquet.DoubleValue(r[2].(float64)).Level(0, 1, 2))
		}
		if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), key, bytes.NewReader(buf.Bytes()), int64(buf.Len()), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, stats, err := pqio.InspectParquet(context.Background(), st, key, int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return catalog.DataFile{Path: key, Bytes: int64(buf.Len()), FileStats: stats}
}

// Inputs written as DuckDB writes them: the pages of numbers are stored
// as read once their codec has learned (the ids', and the amounts', whose
// NULLs are levelled as parquet-go wrote them), the hex names, which had no
// dictionary, are written DELTA_LENGTH_BYTE_ARRAY and compressed anew, and
// the output holds the inputs' rows (the verification passed, and they
// read back the same).
func TestRewriteReusesPlainPages(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	const files = 24
	schema, inputs := reusableInputs(t, st, files)
	start := time.Now()
	res, err := Rewrite(ctx, storeOpener(st), st, schema, "", inputs, RewriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pages reused, %d bytes in, %d out, %s", res.PagesReused, res.BytesIn, res.BytesOut, time.Since(start))
	// Each input file holds one page per column; an id page is 32 KiB,
	// and the codec learns from the first 256 KiB of a column.
	if res.PagesReused < files/2 || res.PagesReused > 2*files {
		t.Fatalf("%d pages reused, want between %d and %d", res.PagesReused, files/2, 2*files)
	}
	for _, out := range res.Outputs {
		pf, err := pqio.OpenParquetFile(out.Path, pqio.NewReaderAt(ctx, st, out.Path, out.Bytes), out.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, rg := range pf.Metadata().RowGroups {
			if enc := rg.Columns[1].MetaData.Encoding; !slices.Contains(enc, format.DeltaLengthByteArray) || slices.Contains(enc, format.Plain) {
				t.Fatalf("%s: the names are %v, want DELTA_LENGTH_BYTE_ARRAY", out.Path, enc)
			}
		}
	}
	if a, b := readRows(t, st, schema, inputs), readRows(t, st, schema, res.Outputs); !slices.Equal(a, b) {
		t.Fatalf("rows differ: %d in, %d out", len(a), len(b))
	}
}

// reusableInputs writes files input files of 4,000 rows each as DuckDB
// writes them (writeV1File): an id and a hex name without NULLs, whose
// pages a rewrite reuses, and an amount with NULLs.
func reusableInputs(t *testing.T, st cloud.Store, files int) (catalog.Schema, []catalog.DataFile) {
	t.Helper()
	schema := parseSchema(t, "id:int64?,name:string?,amount:float64?")
	rng := rand.New(rand.NewPCG(5, 6))
	var inputs []catalog.DataFile
	const perFile = 4000
	for f := range files {
		rows := make([][]any, perFile)
		for i := range rows {
			k := f*perFile + i
			var amount any
			if k%4 != 0 {
				amount = float64(rng.IntN(100000)) / 100
			}
			rows[i] = []any{int64(k)*7919 + int64(rng.IntN(1000)), fmt.Sprintf("%x", rng.Uint64()), amount}
		}
		inputs = append(inputs, writeV1File(t, st, fmt.Sprintf("in-%02d.parquet", f), rows))
	}
	return schema, inputs
}

// A rewrite that fails with pages of its output in their buffers (the
// reused ones are written as soon as they are read) leaves no temporary
// file behind.
func TestFailedRewriteLeavesNoTemporaryFiles(t *testing.T) {
	privateTempDir(t)
	st := tempStore(t)
	schema, inputs := reusableInputs(t, st, 12)
	bad := writeFile(t, st, "bad.parquet", "", parseSchema(t, "id:string?,name:string?,amount:float64?"), [][]any{{"x", "y", 1.5}})
	_, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", append(inputs, bad), RewriteOptions{})
	if !errors.Is(err, pqio.ErrIncompatibleSchema) {
		t.Fatalf("err = %v, want ErrIncompatibleSchema", err)
	}
	noTempFiles(t)
}
