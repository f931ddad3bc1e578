package pqio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// ColumnStats are one column's statistics over one data file. Min and Max
// are in the column type's canonical text form (see FormatValue) and are nil
// when unknown (all nulls, or the writer kept no statistics).
//
// A string bound holds at most StatsTruncateBytes bytes: a longer min is
// cut to a prefix (MinTruncated) and a longer max to a prefix rounded up
// (MaxTruncated), so both still bound every value, but a truncated bound
// is no value of the file: nothing may use it as one (an aggregate's
// min/max answered from statistics, say). MaxTruncated with a nil Max
// says that no prefix could be rounded up: there is no upper bound.
// Manifests written before truncation have neither flag: their bounds are
// exact.
type ColumnStats struct {
	Min          *string `json:"min,omitempty"`
	Max          *string `json:"max,omitempty"`
	MinTruncated bool    `json:"min_trunc,omitempty"`
	MaxTruncated bool    `json:"max_trunc,omitempty"`
	NullCount    int64   `json:"nulls"`
}

// FileStats are what reading a Parquet file's footer tells: its rows and
// per-column statistics, keyed by column name.
type FileStats struct {
	Rows    int64                  `json:"rows"`
	Columns map[string]ColumnStats `json:"cols,omitempty"`
}

// StatsTruncateBytes is the most bytes a string or binary min/max keeps,
// in the footers of the Parquet files sluice writes and in manifests, as
// parquet-mr's column index and Iceberg's truncate metrics keep a prefix:
// a bound is for pruning, and a 50 MB value as a bound made a 100 MB
// footer and a 100 MB manifest piece. A longer min becomes a prefix of it;
// a longer max becomes a prefix whose last character (byte, for binary) is
// rounded up, so that it is still above every value.
const StatsTruncateBytes = 64

// statsMaybeTruncated is the shortest footer bound that may be a truncated
// one. Parquet before format 2.10 cannot say that a bound was truncated
// (nor can parquet-go read is_max_value_exact), so a string bound read
// from a footer is taken as exact only when it is shorter than any prefix
// a writer truncating at StatsTruncateBytes leaves: a cut on a character
// boundary may drop up to utf8.UTFMax-1 bytes.
const statsMaybeTruncated = StatsTruncateBytes - (utf8.UTFMax - 1)

// truncateMinString returns a lower bound of s of at most n bytes: its
// longest prefix that ends on a character boundary and holds only valid
// UTF-8 (a manifest is JSON, which replaces invalid bytes by U+FFFD, a
// larger value). cut tells whether it is shorter than s.
func truncateMinString(s string, n int) (bound string, cut bool) {
	if len(s) <= n && utf8.ValidString(s) {
		return s, false
	}
	end := 0
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		if (r == utf8.RuneError && size <= 1) || end+size > n {
			break
		}
		end += size
	}
	return s[:end], true
}

// truncateMaxString returns an upper bound of s of at most n bytes and
// valid UTF-8: a prefix of s with its last character replaced by the next
// code point (UTF-8 orders bytes as code points, so it is above every
// string with that prefix). ok is false when there is none (every
// character of the prefix is U+10FFFF): the bound is unbounded.
func truncateMaxString(s string, n int) (bound string, cut, ok bool) {
	if len(s) <= n && utf8.ValidString(s) {
		return s, false, true
	}
	prefix, _ := truncateMinString(s, n)
	for len(prefix) > 0 {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		next := r + 1
		if next >= 0xD800 && next <= 0xDFFF { // surrogates are no characters
			next = 0xE000
		}
		if r == utf8.MaxRune || len(prefix)+utf8.RuneLen(next) > n {
			continue // round up the character before it instead
		}
		return prefix + string(next), true, true
	}
	return "", true, false
}

// truncateMaxBytes returns an upper bound of b of at most n bytes: a prefix
// with its last byte that is not 0xFF incremented and the bytes after it
// dropped. ok is false when every byte of the prefix is 0xFF.
func truncateMaxBytes(b []byte, n int) (bound []byte, ok bool) {
	if len(b) <= n {
		return b, true
	}
	p := bytes.Clone(b[:n])
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xFF {
			p[i]++
			return p[:i+1], true
		}
	}
	return nil, false
}

// TruncateFooterStats rewrites, in place, the footer of the Parquet file f
// (size bytes, unencrypted) so that no BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY
// column chunk's min/max holds more than StatsTruncateBytes bytes (see
// StatsTruncateBytes; strings are cut on a character boundary). It returns
// the file's new size. parquet-go truncates the page index (see
// ParquetWriterOptions) but writes a chunk's whole min and max into the
// footer; the footer is the file's last part, so it is rewritten without
// moving anything else.
//
// A max that no bound of that length rounds up is dropped with its min
// (the chunk then has no min/max), and so are bounds that the cut left
// shorter than a reader would take for truncated (see columnStats): a
// footer bound is a bound either way, but a manifest must never take a
// truncated one for exact.
func TruncateFooterStats(f *os.File, size int64) (int64, error) {
	if size < parquetMinSize {
		return 0, fmt.Errorf("truncate footer stats: %d bytes is too small for a Parquet file", size)
	}
	var tail [8]byte
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return 0, fmt.Errorf("truncate footer stats: %w", err)
	}
	if string(tail[4:]) != "PAR1" {
		return 0, fmt.Errorf("truncate footer stats: %w: no PAR1 magic at the end", ErrCorruptFile)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	start := size - 8 - n
	if start < 4 {
		return 0, fmt.Errorf("truncate footer stats: %w: a footer of %d bytes in a file of %d", ErrCorruptFile, n, size)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, start); err != nil {
		return 0, fmt.Errorf("truncate footer stats: %w", err)
	}
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), buf, &md); err != nil {
		return 0, fmt.Errorf("truncate footer stats: %w: %v", ErrCorruptFile, err)
	}
	if !truncateMetadataStats(&md) {
		return size, nil
	}
	out, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		return 0, fmt.Errorf("truncate footer stats: %w", err)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(out)))
	out = append(out, "PAR1"...)
	if _, err := f.WriteAt(out, start); err != nil {
		return 0, fmt.Errorf("truncate footer stats: %w", err)
	}
	newSize := start + int64(len(out))
	if err := f.Truncate(newSize); err != nil {
		return 0, fmt.Errorf("truncate footer stats: %w", err)
	}
	return newSize, nil
}

// truncateMetadataStats truncates the byte-array min/max of every column
// chunk of md; it tells whether it changed any.
func truncateMetadataStats(md *format.FileMetaData) bool {
	// Leaves in schema order are the chunks' order in a row group.
	var utf8Leaf []bool
	for _, e := range md.Schema {
		if e.NumChildren.V == 0 && e.Type.Valid {
			utf8Leaf = append(utf8Leaf, isUTF8(&e))
		}
	}
	changed := false
	for g := range md.RowGroups {
		for j := range md.RowGroups[g].Columns {
			meta := &md.RowGroups[g].Columns[j].MetaData
			if meta.Type != format.ByteArray && meta.Type != format.FixedLenByteArray {
				continue
			}
			text := j < len(utf8Leaf) && utf8Leaf[j]
			if truncateChunkStats(&meta.Statistics, text) {
				changed = true
			}
		}
	}
	return changed
}

// truncateChunkStats truncates one chunk's min/max; text columns keep
// valid UTF-8. The deprecated min/max, in signed byte order (wrong for
// byte arrays), are dropped when too long: no prefix of them is a bound.
func truncateChunkStats(st *format.Statistics, text bool) bool {
	changed := false
	if len(st.Min) > StatsTruncateBytes || len(st.Max) > StatsTruncateBytes {
		st.Min, st.Max, changed = nil, nil, true
	}
	if len(st.MinValue) > StatsTruncateBytes {
		if text {
			s, _ := truncateMinString(string(st.MinValue), StatsTruncateBytes)
			st.MinValue = []byte(s)
		} else {
			st.MinValue = bytes.Clone(st.MinValue[:StatsTruncateBytes])
		}
		changed = true
		if len(st.MinValue) < statsMaybeTruncated { // cut at invalid UTF-8
			st.MinValue, st.MaxValue = nil, nil
			return changed
		}
	}
	if len(st.MaxValue) > StatsTruncateBytes {
		var b []byte
		ok := false
		if text {
			var s string
			s, _, ok = truncateMaxString(string(st.MaxValue), StatsTruncateBytes)
			b = []byte(s)
		} else {
			b, ok = truncateMaxBytes(st.MaxValue, StatsTruncateBytes)
		}
		if !ok || len(b) < statsMaybeTruncated {
			st.MinValue, st.MaxValue = nil, nil
		} else {
			st.MaxValue = b
		}
		changed = true
	}
	return changed
}

// isUTF8 tells whether a leaf holds text (STRING, ENUM, JSON).
func isUTF8(e *format.SchemaElement) bool {
	switch e.LogicalType.Value.(type) {
	case *format.StringType, *format.EnumType, *format.JsonType:
		return true
	}
	if ct, ok := e.ConvertedType.Get(); ok {
		switch ct {
		case deprecated.UTF8, deprecated.Enum, deprecated.Json:
			return true
		}
	}
	return false
}
