package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-data/sluice/catalog"
)

// recorder keeps the bytes a csv.Reader consumed, so each record's raw
// text can be quarantined as it was.
//
// It also bounds a record's memory: encoding/csv reads a whole record,
// however long, before it returns it, so a record past --max-record-bytes
// (a quote that opened a field and never closed, a file that is no CSV)
// could take memory far beyond --memory. When the bytes of one record
// exceed limit, Read fails with errCSVRecordTooLong, and the file fails
// whole: the reader cannot find where the next record starts.
type recorder struct {
	r   io.Reader
	buf []byte
	// drop is how many bytes at buf's start the last take returned: they
	// stay until the next take, as the caller reads them until then.
	drop  int
	base  int64 // input offset of buf[drop]
	eof   bool  // r has returned io.EOF
	limit int   // the most bytes buf may hold past drop; 0 for no limit
}

// errCSVRecordTooLong is Read's error for a record longer than the limit.
var errCSVRecordTooLong = errors.New("a CSV record is longer than the record limit (--max-record-bytes)")

// csvReadSlack is how far past the record limit buf may grow: what
// csv.Reader's own buffer may have read ahead of the record's end.
const csvReadSlack = 64 << 10

func (rc *recorder) Read(p []byte) (int, error) {
	if rc.limit > 0 && len(rc.buf)-rc.drop > rc.limit+csvReadSlack {
		return 0, errCSVRecordTooLong
	}
	n, err := rc.r.Read(p)
	rc.buf = append(rc.buf, p[:n]...)
	if err == io.EOF {
		rc.eof = true
	}
	return n, err
}

// atEOF tells whether the bytes last taken ran to the end of the input.
func (rc *recorder) atEOF() bool { return rc.eof && len(rc.buf) == rc.drop }

// take returns the bytes from where the last take ended to offset end,
// and forgets them on the next call: until then they stay as they are
// (moving the rest over them now would overwrite what it returns).
func (rc *recorder) take(end int64) []byte {
	rest := copy(rc.buf, rc.buf[rc.drop:])
	rc.buf = rc.buf[:rest]
	n := int(end - rc.base)
	rc.drop, rc.base = n, end
	return rc.buf[:n:n]
}

func (d *decoder) decodeCSV(ctx context.Context, r io.Reader, emit emitFunc) error {
	if err := checkNestedFormat(d.schema, "CSV"); err != nil {
		return err
	}
	rec := &recorder{r: r, limit: d.maxBytes}
	cr := csv.NewReader(rec)
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return fmt.Errorf("CSV header: %w", err)
	}
	if err := unclosedQuote(cr, rec.take(cr.InputOffset()), rec.atEOF(), len(header)); err != nil {
		return fmt.Errorf("CSV header: %w", err)
	}
	where, extraFields, err := d.csvColumns(header)
	if err != nil {
		return err
	}
	var n int64
	for {
		fields, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		n++
		if n%4096 == 0 {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
		}
		raw := rec.take(cr.InputOffset())
		if err == nil || errors.Is(err, csv.ErrFieldCount) {
			if err := unclosedQuote(cr, raw, rec.atEOF(), len(fields)); err != nil {
				return err
			}
		}
		raw = trimEOL(raw)
		var line int64
		var bad error
		var pe *csv.ParseError
		switch {
		case err == nil:
			l, _ := cr.FieldPos(0)
			line = int64(l)
		case errors.As(err, &pe) && errors.Is(err, csv.ErrFieldCount):
			line = int64(pe.StartLine)
			bad = badRecord("CSV row has %d fields, the header %d", len(fields), len(header))
		case errors.As(err, &pe) && pe.Err != nil && (errors.Is(pe.Err, csv.ErrQuote) || errors.Is(pe.Err, csv.ErrBareQuote)):
			line = int64(pe.StartLine)
			bad = badRecord("malformed CSV: %s", pe.Err)
		case errors.Is(err, errCSVRecordTooLong):
			return fmt.Errorf("CSV record %d after the header: %w (%d bytes)", n, err, d.maxBytes)
		default:
			return err
		}
		size := len(raw)
		if size > d.maxBytes {
			raw = raw[:d.maxBytes]
		}
		if bad == nil {
			bad = d.checkRaw(raw, size)
		}
		var row []any
		if bad == nil {
			row = d.newRow()
			for i := range d.conv {
				c := &d.conv[i]
				s := ""
				if where[i] >= 0 {
					s = fields[where[i]]
				}
				switch {
				case s == "" && c.col.Nullable:
					row[i] = nil
				case s == "" && c.col.Type.Kind != catalog.KindString:
					bad = badValue(&c.col, "empty but the column is not nullable")
				default:
					row[i], bad = c.fromText(s)
				}
				if bad != nil {
					row = nil
					break
				}
			}
			if row != nil && d.extra >= 0 {
				row[d.extra] = d.fromFields(extraFields, fields)
			}
		}
		if e := emit(line, raw, row, bad); e != nil {
			return e
		}
	}
}

// csvColumns maps a CSV header onto the table: where[i] is the field of
// table column i, -1 when absent, and extra the fields _extra keeps.
func (d *decoder) csvColumns(header []string) (where []int, extra []csvExtra, err error) {
	where = make([]int, len(d.conv))
	var missing []string
	for i, c := range d.conv {
		where[i] = -1
		if i == d.extra {
			continue // never read from a field of its own: see extras
		}
		for j, h := range header {
			if strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) != c.col.Name {
				continue
			}
			if where[i] >= 0 {
				// Every row would be ambiguous, as a JSON record
				// naming a column twice is (see dupName).
				return nil, nil, fmt.Errorf("CSV header names column %q twice (fields %d and %d): the file is ambiguous", c.col.Name, where[i]+1, j+1)
			}
			where[i] = j
		}
		if where[i] < 0 && !c.col.Nullable {
			missing = append(missing, c.col.Name)
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("CSV header lacks required column(s) %s", strings.Join(missing, ", "))
	}
	extra, err = d.extraFields(header, where)
	return where, extra, err
}

// unclosedQuote fails a file whose last record, raw, ends inside a quoted
// field: read with LazyQuotes, such a field runs from its opening quote to
// the end of the file, swallowing every line after it into one value. The
// file was most likely cut short, as a truncated gzip stream is, so it
// fails whole and is retried by the next run rather than taken with its
// records lost. atEOF tells whether raw ran to the end of the file; only
// then can a field be left open (elsewhere a quote closes before a comma or
// a line ending). cr has just returned raw's record, of n fields.
func unclosedQuote(cr *csv.Reader, raw []byte, atEOF bool, n int) error {
	if !atEOF {
		return nil
	}
	if !endsInQuote(raw) {
		return nil
	}
	line, col := cr.FieldPos(n - 1) // the open field runs to the end: the last
	return fmt.Errorf("CSV line %d, column %d: the quoted field opened there is never closed: it runs to the end of the file, which may be cut short", line, col)
}

// endsInQuote reads raw, the bytes of one CSV record that run to the end
// of the file, as encoding/csv does with LazyQuotes, and reports whether
// its last field is a quoted one left open. Lazily, a quote inside a
// quoted field that is not followed by a comma, a line ending or the end
// is kept as text, and the field goes on.
func endsInQuote(raw []byte) bool {
	i := 0
	for i < len(raw) && (raw[i] == '\n' || raw[i] == '\r') {
		i++ // empty lines before the record, which the reader skips
	}
	for i < len(raw) {
		if raw[i] != '"' {
			j := bytes.IndexAny(raw[i:], ",\n")
			if j < 0 || raw[i+j] == '\n' {
				return false
			}
			i += j + 1
			continue
		}
		end, closed := closingQuote(raw, i+1)
		if !closed {
			return true
		}
		if end >= len(raw) || raw[end] != ',' {
			return false // the record's end
		}
		i = end + 1
	}
	return false
}

// closingQuote returns the index after the quote that closes the quoted
// field whose text starts at raw[i], read as encoding/csv does with
// LazyQuotes; closed is false when no quote does.
func closingQuote(raw []byte, i int) (end int, closed bool) {
	for {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			return 0, false
		}
		i += j + 1
		switch rest := raw[i:]; {
		case len(rest) > 0 && rest[0] == '"':
			i++ // an escaped quote
		case len(rest) == 0, rest[0] == ',', rest[0] == '\n', string(rest) == "\r", rest[0] == '\r' && rest[1] == '\n':
			return i, true
		}
	}
}
