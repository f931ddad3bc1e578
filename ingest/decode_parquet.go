package ingest

import (
	"context"
	"encoding/json"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

func (d *decoder) decodeParquet(ctx context.Context, st cloud.Store, key string, size int64, emit emitFunc) error {
	var n int64
	var raw []byte
	var extra []parquetExtra
	scanAs := func(file catalog.Schema) catalog.Schema {
		if d.extra < 0 {
			return d.schema
		}
		var scan catalog.Schema
		scan, extra = d.parquetExtras(file)
		return scan
	}
	return pqio.ScanParquetAs(ctx, st, key, size, scanAs, func(row []any) error {
		n++
		var bad error
		if d.extra >= 0 {
			row[d.extra] = d.fromColumns(extra, row)
			row = row[:len(d.conv):len(d.conv)]
		}
		for i := range d.conv {
			var v any
			if v, bad = d.conv[i].checkValue(row[i]); bad != nil {
				break
			}
			row[i] = v
		}
		raw = raw[:0]
		if bad != nil {
			raw = d.renderRow(raw, row)
			row = nil
		}
		return emit(n, raw, row, bad)
	})
}

// renderRow renders a Parquet row as a JSON object of canonical texts, the
// raw form a quarantined Parquet record keeps.
func (d *decoder) renderRow(dst []byte, row []any) []byte {
	m := make(map[string]any, len(row))
	for i, c := range d.schema.Columns {
		if row[i] == nil {
			m[c.Name] = nil
			continue
		}
		m[c.Name] = pqio.FormatValue(c.Type, row[i])
	}
	b, _ := json.Marshal(m)
	return append(dst, b...)
}
