package ingest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqcompress "github.com/parquet-go/parquet-go/compress"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// BenchmarkColumnBuffers compares the two halves an ingest could put
// between its decoder and a Parquet file, on the same decoded events
// records (bench/ingest.sh's shape, 262,144 distinct rows an op, one
// file):
//
//   - rows: the records as rows of Go values, as the decoder gives them
//     today, written by pqio.ParquetWriter (sluice's writer, parquet-go);
//   - arrow: the same values appended to Apache Arrow builders, the
//     per-column buffers a decoder could fill instead, and written by
//     Arrow's own Parquet writer (pqarrow) in record batches of 65,536.
//
// Both compress with the same zstd (libzstd with cgo, klauspost/compress
// without), each column at the level its first pages choose
// (pqio.Codecs), and both end with the file on local disk, synced. The
// decoding itself is outside the timer: it is the same work whichever
// buffer a value lands in. What a decoder writing straight into builders
// would save is the boxing of a value in an any, which the arena makes
// an append to a chunk (BenchmarkDecodeJSONLineEvents: no allocation).
func BenchmarkColumnBuffers(b *testing.B) {
	schema, err := catalog.ParseSchema(eventsSchema)
	if err != nil {
		b.Fatal(err)
	}
	d := newDecoder(schema, DefaultOptions())
	const perOp = 1 << 18
	lines := eventLines(perOp)
	rows := make([][]any, len(lines))
	for i, line := range lines {
		row := make([]any, len(schema.Columns))
		if err := d.jsonRow(line, row); err != nil {
			b.Fatal(err)
		}
		for j, v := range row {
			if s, ok := v.(string); ok {
				row[j] = strings.Clone(s) // the decoder's slab is reused
			}
		}
		rows[i] = row
	}
	ctx := context.Background()
	b.Run("rows", func(b *testing.B) {
		dir := b.TempDir()
		st, err := cloud.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		var size int64
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			w, err := pqio.NewParquetWriter(schema, pqio.NewCodecs())
			if err != nil {
				b.Fatal(err)
			}
			for k := 0; k < len(rows); k += 1024 {
				if err := w.Write(ctx, rows[k:k+1024]); err != nil {
					b.Fatal(err)
				}
			}
			if size, _, err = w.Close(ctx, st, fmt.Sprintf("f%d.parquet", i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perOp), "ns/row")
		b.ReportMetric(float64(size), "file-bytes")
	})
	for _, dict := range []bool{true, false} {
		name := "arrow"
		if !dict {
			name = "arrow-nodict"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			as, props := arrowEvents(b, schema, dict)
			var size int64
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				size = writeArrowFile(b, filepath.Join(dir, fmt.Sprintf("f%d.parquet", i)), as, props, rows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perOp), "ns/row")
			b.ReportMetric(float64(size), "file-bytes")
		})
	}
}

// arrowZstd is an Arrow Parquet codec that compresses column i's pages
// with the adaptive zstd codec pqio gives column i: pqarrow hands a codec
// the level set for the column, so the level written for column i is
// i+1, standing for the column, not for a zstd level.
type arrowZstd struct {
	codecs []pqcompress.Codec
}

func (c arrowZstd) Encode(dst, src []byte) []byte { return c.EncodeLevel(dst, src, 1) }

func (c arrowZstd) EncodeLevel(dst, src []byte, level int) []byte {
	out, err := c.codecs[level-1].Encode(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

func (c arrowZstd) CompressBound(n int64) int64 { return n + n/128 + 1024 }

func (c arrowZstd) Decode(dst, src []byte) []byte {
	out, err := c.codecs[0].Decode(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

// arrowEvents is the Arrow schema of the events table and the writer
// properties that make pqarrow write it as pqio does: zstd through pqio's
// codecs (arrowZstd, registered for zstd), row groups of the same rows;
// dictionaries on every column (pqarrow's default) or on none.
func arrowEvents(b *testing.B, schema catalog.Schema, dict bool) (*arrow.Schema, *parquet.WriterProperties) {
	b.Helper()
	codecs := pqio.NewCodecs()
	var zc arrowZstd
	fields := make([]arrow.Field, len(schema.Columns))
	opts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(1 << 20),
		parquet.WithDictionaryDefault(dict)}
	for i, c := range schema.Columns {
		var t arrow.DataType
		switch c.Type.Kind {
		case pqio.KindString, pqio.KindUUID:
			t = arrow.BinaryTypes.String
		case pqio.KindInt64:
			t = arrow.PrimitiveTypes.Int64
		case pqio.KindInt32:
			t = arrow.PrimitiveTypes.Int32
		case pqio.KindTimestamp:
			t = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		default:
			b.Fatalf("column %s: no Arrow type in this benchmark", c.Name)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: t, Nullable: c.Nullable}
		zc.codecs = append(zc.codecs, codecs.For(c.Name))
		opts = append(opts, parquet.WithCompressionLevelFor(c.Name, i+1))
	}
	compress.RegisterCodec(compress.Codecs.Zstd, zc)
	return arrow.NewSchema(fields, nil), parquet.NewWriterProperties(opts...)
}

// writeArrowFile appends rows to Arrow builders and writes them to a
// Parquet file at path with pqarrow, synced; it returns the file's size.
func writeArrowFile(b *testing.B, path string, as *arrow.Schema, props *parquet.WriterProperties, rows [][]any) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	fw, err := pqarrow.NewFileWriter(as, bw, props, pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer rb.Release()
	// Each batch's builders are sized for it up front, from the last
	// batch's string bytes (the first from its own), as a decoder could
	// size them: grown value by value they spent a sixth of the time
	// reallocating.
	const batch = 65536
	strBytes := make([]int, len(as.Fields()))
	for _, row := range rows[:min(len(rows), batch)] {
		for j, v := range row {
			if s, ok := v.(string); ok {
				strBytes[j] += len(s)
			}
		}
	}
	reserve := func() {
		rb.Reserve(batch)
		for j, fb := range rb.Fields() {
			if sb, ok := fb.(*array.StringBuilder); ok {
				sb.ReserveData(strBytes[j] + strBytes[j]/16)
			}
		}
		clear(strBytes)
	}
	reserve()
	flush := func() {
		rec := rb.NewRecordBatch()
		defer rec.Release()
		if err := fw.WriteBuffered(rec); err != nil {
			b.Fatal(err)
		}
	}
	for k, row := range rows {
		for j, v := range row {
			switch x := v.(type) {
			case nil:
				rb.Field(j).AppendNull()
			case string:
				rb.Field(j).(*array.StringBuilder).Append(x)
				strBytes[j] += len(x)
			case int64:
				rb.Field(j).(*array.Int64Builder).Append(x)
			case int32:
				rb.Field(j).(*array.Int32Builder).Append(x)
			case time.Time:
				rb.Field(j).(*array.TimestampBuilder).Append(arrow.Timestamp(x.UnixMicro()))
			default:
				b.Fatalf("column %d: a %T", j, v)
			}
		}
		if (k+1)%batch == 0 {
			flush()
			reserve()
		}
	}
	if len(rows)%batch != 0 {
		flush()
	}
	if err := fw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return st.Size()
}
