package wire

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/hamba/avro/v2"

	"github.com/sluice-data/sluice/internal/pqio"
)

// avroAPI is the configuration of the library's reader every payload is
// read with. It does not cap byte and string lengths (the library's
// default cap is 1 MiB): the walk checks each against the payload's
// length first. It is not the library's DefaultConfig, so nothing else
// registers types with it.
var avroAPI = avro.Config{MaxByteSliceSize: -1}.Freeze()

// avroSchema is a parsed Avro schema: its columns, the converter tree of
// its top-level record, and the schema the library decodes payloads with
// (the registered one rebuilt without references and without the logical
// types converted here). It is immutable, so Decode is safe for
// concurrent use.
type avroSchema struct {
	cols []pqio.Column
	root *avroNode
	dec  avro.Schema
}

// Columns returns the columns of the top-level record's fields.
func (s *avroSchema) Columns() []pqio.Column { return slices.Clone(s.cols) }

// Decode decodes one Avro payload (binary encoding, no container) into
// its top-level fields' values by column name, in one walk of the
// encoding with the library's reader (avroDecodePayload): every length
// and count checked against the payload before anything is allocated
// for it, and the payload's end checked to be the record's.
func (s *avroSchema) Decode(payload []byte) (map[string]any, error) {
	vals, err := s.DecodeFields(payload)
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, len(vals))
	for i, v := range vals {
		m[s.root.fields[i].name] = v
	}
	return m, nil
}

// DecodeFields is Decode's values in the order of Columns.
func (s *avroSchema) DecodeFields(payload []byte) ([]any, error) {
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(avroAPI))
	r.Reset(payload)
	return avroDecodePayload(r, s.root, len(payload))
}

// avroBad is an ErrBadRecord saying why in one line.
func avroBad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRecord, avroOneLine(fmt.Sprintf(format, args...)))
}

// avroBadValue is an ErrBadRecord for the value of the field at path.
func avroBadValue(path, format string, args ...any) error {
	return avroBad("field %q: %s", path, fmt.Sprintf(format, args...))
}

// avroQuote quotes s, cut to a length an error line can hold.
func avroQuote(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

// --- the walk ------------------------------------------------------------------

// avroScan walks a payload's encoding with the library's reader, building
// its values as it goes (avro_direct.go). Every length and count is
// checked before anything is allocated for it: the library's own decoder
// trusts an array's block count and grows the slice to it before reading
// an item, so a count of 2^62 asks for exabytes, and a count of -2^63 (or
// counts whose sum overflows) makes it write outside the slice and crash
// the process. Every item
// takes at least one byte (Parse refuses the types that take none), so a
// count, like a length, larger than the payload is a bad record, and so
// is a payload the walk does not end exactly at.
type avroScan struct {
	r   *avro.Reader
	n   int64 // the payload's length
	err error // the first problem found, besides the reader's own
	// at is the path of the innermost field being read when the reader
	// failed.
	at string
}

// finish returns the walk's first problem, or an error for a payload
// that does not end where the record does.
func (sc *avroScan) finish() error {
	r, n := sc.r, sc.n
	if sc.err != nil {
		return sc.err
	}
	if err := r.Error; err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return avroBad("the %d-byte payload ends before its record does, in field %q (truncated, or not this schema's)", n, sc.at)
		}
		return avroBadValue(sc.at, "does not decode as Avro: %v", err)
	}
	extra := 0
	for r.Peek(); r.Error == nil; r.Peek() {
		r.SkipNBytes(1)
		extra++
	}
	if extra > 0 {
		return avroBad("%d trailing bytes after the record (the %d-byte payload is not one record of this schema)", extra, n)
	}
	return nil
}

// stopped tells whether the walk has failed.
func (sc *avroScan) stopped() bool { return sc.err != nil || sc.r.Error != nil }
