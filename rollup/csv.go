package rollup

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

func isCSV(key string) bool { return strings.HasSuffix(strings.ToLower(key), ".csv") }

// csvBatch is how many CSV records scanCSV hands fn at a time.
const csvBatch = 4096

// scanCSV is scanFile for a CSV file with a header line: the wanted
// columns are found by name and each value is parsed as its wanted type
// (an empty field is NULL), so a snapshot's key reads as the events' key
// type or fails naming the line. check is given the schema the header and
// the wanted types make.
func scanCSV(ctx context.Context, st cloud.Store, key string, _ int64, want []catalog.Column, check func(catalog.Schema) error, fn func(cols []*colData, rows int) error) error {
	rc, _, err := st.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", st.URL(key), err)
	}
	defer rc.Close()
	r := csv.NewReader(rc)
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return fmt.Errorf("read %s: header: %w", st.URL(key), err)
	}
	at := map[string]int{}
	for i, h := range header {
		if i == 0 {
			// A byte-order mark, as Excel and PowerShell write UTF-8
			// CSV, is not part of the first column's name.
			h = strings.TrimPrefix(h, "\uFEFF")
		}
		at[strings.TrimSpace(h)] = i
	}
	var schema catalog.Schema
	idx := make([]int, len(want))
	for i, w := range want {
		j, ok := at[w.Name]
		idx[i] = -1
		if ok {
			idx[i] = j
			schema.Columns = append(schema.Columns, w)
		}
	}
	if check != nil {
		if err := check(schema); err != nil {
			return err
		}
	}
	cols := make([]*colData, len(want))
	for i := range cols {
		cols[i] = &colData{}
	}
	reset := func() {
		for i, w := range want {
			cols[i].reset(w.Type)
		}
	}
	reset()
	n := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", st.URL(key), err)
		}
		line, _ := r.FieldPos(0)
		for i, w := range want {
			field := ""
			if idx[i] >= 0 && idx[i] < len(rec) {
				field = rec[idx[i]]
			}
			if err := cols[i].appendText(w.Type, field); err != nil {
				return fmt.Errorf("%s line %d: column %q: %w", st.URL(key), line, w.Name, err)
			}
		}
		if n++; n == csvBatch {
			if err := fn(cols, n); err != nil {
				return err
			}
			reset()
			n = 0
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	if n > 0 {
		return fn(cols, n)
	}
	return nil
}

// appendText appends one CSV field, parsed as typ; "" is NULL.
func (d *colData) appendText(typ catalog.Type, s string) error {
	if s == "" {
		d.valid = append(d.valid, false)
		d.ints = append(d.ints, 0)
		d.floats = append(d.floats, 0)
		if typ.Kind == catalog.KindDecimal {
			d.his = append(d.his, 0)
		}
		d.offs = append(d.offs, int32(len(d.bytes)))
		return nil
	}
	v, err := pqio.ParseValue(typ, s)
	if err != nil {
		return err
	}
	x := int64(0)
	switch v := v.(type) {
	case int32:
		x = int64(v)
	case int64:
		x = v
	case string:
		if typ.Kind == catalog.KindDecimal {
			hi, lo, err := decimalText(typ, v)
			if err != nil {
				return err
			}
			d.valid = append(d.valid, true)
			d.ints, d.his = append(d.ints, lo), append(d.his, hi)
			d.offs = append(d.offs, int32(len(d.bytes)))
			return nil
		}
		d.bytes = append(d.bytes, v...)
	case float64:
		d.valid = append(d.valid, true)
		d.ints = append(d.ints, 0)
		d.floats = append(d.floats, v)
		d.offs = append(d.offs, int32(len(d.bytes)))
		return nil
	case bool:
		x = int64(boolInt(v))
	case time.Time:
		if typ.Kind == catalog.KindDate {
			x = dayOfDate(v)
		} else {
			x = v.UnixMicro()
		}
	case []byte:
		d.bytes = append(d.bytes, v...)
	default:
		return fmt.Errorf("%s values are not read from CSV", typ)
	}
	d.valid = append(d.valid, true)
	d.ints = append(d.ints, x)
	d.offs = append(d.offs, int32(len(d.bytes)))
	return nil
}
