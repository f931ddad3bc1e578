package compact

import (
	"bytes"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Compressing is most of what a rewrite costs, and many input pages come
// out of it exactly as they went in: a PLAIN page of a column without
// NULLs encodes to the same bytes whether DuckDB or parquet-go wrote it.
// (Numbers and times: a text column without a dictionary is written
// DELTA_LENGTH_BYTE_ARRAY, which zstd compresses faster and smaller than
// PLAIN; see pqio.ParquetSchemaNoDict.) Such a page, when its input
// compressed it with zstd, is not compressed again: the rewrite writes its
// values as a page of their own, and the column's codec, told which bytes
// to expect, stores the input's compressed bytes when parquet-go hands it
// exactly those. Any other page (other bytes, a split page, another codec)
// is compressed as before, so the output is the same either way but for
// the compression of the pages reused. A reused page keeps the compression
// its writer chose: the codec reuses pages only once it has compressed
// reuseLearnBytes of the column itself, and only pages compressed no more
// than reuseSlack worse than those. The values are still decoded, hashed
// and written as every other value is; the read-back proves the page by
// its bytes (see reuseProof).

// reusingCodec is the codec of one output column of one rewrite: the
// column's own codec, except for the page it expects.
type reusingCodec struct {
	compress.Codec        // every page but the expected one
	want           []byte // the expected page's uncompressed bytes
	body           []byte // and its compressed bytes; nil: no page expected
	reused         int    // pages stored from their input's bytes
	scratch        []byte // want's buffer (expectPage)
	// in and out are the bytes of the pages this codec compressed, before
	// and after: the ratio a reused page is held to.
	in, out int64
}

const (
	// reuseLearnBytes of a column's pages are compressed by its codec
	// before any is reused.
	reuseLearnBytes = 256 << 10
	// reuseSlack (in percent) is how much worse than the codec's own
	// ratio a page may be compressed and still be reused: enough to take
	// DuckDB's zstd pages of timestamps (bench/compact.sh's data), which
	// come out a little larger than sluice's codec makes them.
	reuseSlack = 15
)

// expect makes the next page whose uncompressed bytes are want be stored
// as body. The caller clears it (done) once the page is written.
func (c *reusingCodec) expect(want, body []byte) { c.want, c.body = want, body }

// accepts reports whether a page of uncompressed bytes compressed to body
// bytes may be reused: the codec has learned its column's ratio, and the
// page is compressed no more than reuseSlack worse.
func (c *reusingCodec) accepts(body, uncompressed int) bool {
	return c.in >= reuseLearnBytes && int64(body)*c.in*100 <= (100+reuseSlack)*c.out*int64(uncompressed)
}

// done forgets the expected page.
func (c *reusingCodec) done() { c.want, c.body = nil, nil }

// Encode stores the expected page as its input's bytes and compresses any
// other page.
func (c *reusingCodec) Encode(dst, src []byte) ([]byte, error) {
	if c.body != nil && bytes.Equal(src, c.want) && c.accepts(len(c.body), len(src)) {
		c.reused++
		dst = append(dst[:0], c.body...)
		c.done()
		return dst, nil
	}
	c.done()
	dst, err := c.Codec.Encode(dst, src)
	if err == nil {
		c.in += int64(len(src))
		c.out += int64(len(dst))
	}
	return dst, err
}

// rawPage is one data page of an input column chunk as stored.
type rawPage struct {
	body         []byte // compressed
	uncompressed int
	values       int
}

// maxReusedPage bounds the pages reused: a page parquet-go would split
// (it starts a new page past its page buffer size) never matches.
const maxReusedPage = parquet.DefaultPageBufferSize

// reusablePages returns the data pages of a column chunk (of a flat
// column whose non-null values have definition level maxDef, 0 or 1) whose
// pages a rewrite may reuse, read from data, the whole input file; nil
// when it may not: a chunk not compressed with zstd, with a dictionary or
// an encoding other than PLAIN for its values and RLE for its levels, with
// pages other than v1 data pages, or with a page too large. A chunk that
// does not parse is left to parquet-go, which reports it as it reads it.
func reusablePages(data []byte, meta *format.ColumnMetaData, maxDef int) []rawPage {
	if meta.Codec != format.Zstd || meta.DictionaryPageOffset != 0 || maxDef > 1 {
		return nil
	}
	start, size := meta.DataPageOffset, meta.TotalCompressedSize
	if start < 4 || size <= 0 || start > int64(len(data)) || size > int64(len(data))-start {
		return nil
	}
	chunk := data[start : start+size]
	var pages []rawPage
	values := int64(0)
	for len(chunk) > 0 {
		h, hn, err := readPageHeader(chunk)
		if err != nil {
			return nil
		}
		chunk = chunk[hn:]
		n := int(h.CompressedPageSize)
		if n < 0 || n > len(chunk) || h.Type != format.DataPage || !h.DataPageHeader.Valid {
			return nil
		}
		dh := h.DataPageHeader.V
		if dh.Encoding != format.Plain || (maxDef > 0 && dh.DefinitionLevelEncoding != format.RLE) || h.UncompressedPageSize <= 0 || h.UncompressedPageSize > maxReusedPage {
			return nil
		}
		pages = append(pages, rawPage{body: chunk[:n], uncompressed: int(h.UncompressedPageSize), values: int(dh.NumValues)})
		values += int64(dh.NumValues)
		chunk = chunk[n:]
	}
	if values != meta.NumValues {
		return nil
	}
	return pages
}

// readPageHeader decodes the page header at the start of b and returns
// it with its length in bytes.
func readPageHeader(b []byte) (format.PageHeader, int, error) {
	r := bytes.NewReader(b)
	var h format.PageHeader
	var proto thrift.CompactProtocol
	if err := thrift.NewDecoder(proto.NewReader(r)).Decode(&h); err != nil {
		return h, 0, err
	}
	return h, len(b) - r.Len(), nil
}

// expectPage prepares the codec for page, whose uncompressed bytes it
// decompresses into its own scratch buffer, so that what it expects can
// never be another column's bytes. It reports false, preparing nothing,
// for a page that does not decompress to its stated size: parquet-go
// reports that page as it reads it.
func (c *reusingCodec) expectPage(page rawPage) bool {
	if cap(c.scratch) < page.uncompressed {
		c.scratch = make([]byte, page.uncompressed)
	}
	u, err := parquet.LookupCompressionCodec(format.Zstd).Decode(c.scratch[:page.uncompressed], page.body)
	if err != nil || len(u) != page.uncompressed {
		return false
	}
	c.scratch = u
	c.expect(u, page.body)
	return true
}

// writesPlain reports whether a writer encodes the values of column f
// PLAIN: its node says so, or says nothing and parquet-go's default for
// its kind is PLAIN (for byte arrays it is DELTA_LENGTH_BYTE_ARRAY).
func writesPlain(f parquet.Field) bool {
	if e := f.Encoding(); e != nil {
		return e.Encoding() == format.Plain
	}
	return f.Type().Kind() != parquet.ByteArray
}
