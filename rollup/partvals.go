package rollup

import (
	"context"
	"fmt"

	"github.com/sluice-data/sluice/catalog"
)

// scanData is scanFile over data file f, whose partition values fill
// the wanted columns the file lacks: Spark's Hive folders and a Delta
// log keep partition columns out of the files, and a reader sees them as
// columns. A column the file has is read from it; a wanted column that
// is neither in the file nor a partition column reads as NULL, as in
// scanFile.
func scanData(ctx context.Context, f dataFile, want []catalog.Column, cols []*colData, check func(catalog.Schema) error, fn func(cols []*colData, rows int) error) error {
	if len(f.pv) == 0 {
		return scanFile(ctx, f.st, f.key, f.size, want, cols, check, fn)
	}
	// fill[i] is want[i]'s value on one row when it comes from the
	// partition values, else nil; set once the file's schema is known.
	fill := make([]*colData, len(want))
	withFill := func(s catalog.Schema) error {
		if check != nil {
			if err := check(s); err != nil {
				return err
			}
		}
		for i, w := range want {
			fill[i] = nil
			v, isPart := f.pv[w.Name]
			if _, inFile := s.Column(w.Name); inFile || !isPart {
				continue
			}
			c, err := partitionValue(w, v)
			if err != nil {
				return fmt.Errorf("%s: %w", f.st.URL(f.key), err)
			}
			fill[i] = c
		}
		return nil
	}
	return scanFile(ctx, f.st, f.key, f.size, want, cols, withFill, func(cols []*colData, n int) error {
		for i, c := range fill {
			if c != nil {
				cols[i].repeat(c, n)
			}
		}
		return fn(cols, n)
	})
}

// partitionValue is column w's partition value v (nil: NULL), in its
// type's canonical text, decoded as one row.
func partitionValue(w catalog.Column, v *string) (*colData, error) {
	c := &colData{}
	c.reset(w.Type)
	s := ""
	if v != nil {
		s = *v
	}
	if err := c.appendText(w.Type, s); err != nil {
		return nil, fmt.Errorf("partition value %s=%q: %w", w.Name, s, err)
	}
	return c, nil
}

// repeat sets d to n rows of c's one value.
func (d *colData) repeat(c *colData, n int) {
	d.reset(c.typ)
	first := func(s []int64) int64 {
		if len(s) == 0 {
			return 0
		}
		return s[0]
	}
	x, hi, b := first(c.ints), first(c.his), c.value(0)
	f := 0.0
	if len(c.floats) > 0 {
		f = c.floats[0]
	}
	for range n {
		d.valid = append(d.valid, c.valid[0])
		d.ints = append(d.ints, x)
		d.floats = append(d.floats, f)
		if len(c.his) > 0 {
			d.his = append(d.his, hi)
		}
		d.bytes = append(d.bytes, b...)
		d.offs = append(d.offs, int32(len(d.bytes)))
	}
}
