package catalog

import (
	"context"
	"fmt"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// ScanDataFile streams the rows of data file f, at key in st, as schema
// (a ReadSchema): a column the file lacks that is one of its partition
// fields (Spark and Delta keep those in folder names and logs) gets f's
// partition value, any other reads as NULL. fn owns each row.
func ScanDataFile(ctx context.Context, st cloud.Store, key string, f DataFile, schema Schema, fn func(row []any) error) error {
	fill := make([]any, len(schema.Columns))
	for i, c := range schema.Columns {
		s, ok := f.PartitionValues[c.Name]
		if !ok || s == nil {
			continue
		}
		v, err := pqio.ParseValue(c.Type, *s)
		if err != nil {
			return fmt.Errorf("partition value %s=%q: %w", c.Name, *s, err)
		}
		fill[i] = v
	}
	var missing []int // columns the file lacks: read as NULL, then filled
	scanAs := func(file Schema) Schema {
		missing = missing[:0]
		var cols []Column
		for i, c := range schema.Columns {
			if _, ok := file.Column(c.Name); ok {
				continue
			}
			if cols == nil {
				cols = append([]Column(nil), schema.Columns...)
			}
			missing = append(missing, i)
			cols[i].Nullable = true
		}
		if cols == nil {
			return schema
		}
		return Schema{Columns: cols}
	}
	return pqio.ScanParquetAs(ctx, st, key, f.Bytes, scanAs, func(row []any) error {
		for _, i := range missing {
			row[i] = fill[i]
		}
		return fn(row)
	})
}
