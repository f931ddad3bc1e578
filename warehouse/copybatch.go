package warehouse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// A flat table's files are read column by column (pqio.ScanParquetBatches)
// and their values encoded from their Parquet form: no row of interfaces
// per row, no value boxed, and a decimal encoded from its unscaled integer
// rather than formatted as text and parsed back. A table with a nested
// column is read row by row (copy.go), its values encoded by pgx.

// valueEncoder appends a non-null value's length and binary form to buf,
// from the value's Parquet representation in the table (see
// pqio.ColumnBatch).
type valueEncoder func(buf []byte, v parquet.Value) ([]byte, error)

// valueEncoders are the encoders of schema's columns from their Parquet
// values, nil when a column has none (a nested one): the table is then
// read row by row.
func valueEncoders(schema catalog.Schema) []valueEncoder {
	out := make([]valueEncoder, len(schema.Columns))
	for i, c := range schema.Columns {
		if out[i] = parquetEncoder(c.Type); out[i] == nil {
			return nil
		}
	}
	return out
}

// parquetEncoder is the encoder of a flat type's Parquet values as its
// PostgreSQL type (pgType), the same bytes as fastEncoder's from the Go
// value; nil for a nested type.
func parquetEncoder(t catalog.Type) valueEncoder {
	be := binary.BigEndian
	switch t.Kind {
	case catalog.KindInt32:
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			return be.AppendUint32(be.AppendUint32(buf, 4), uint32(v.Int32())), nil
		}
	case catalog.KindInt64:
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			return be.AppendUint64(be.AppendUint32(buf, 8), uint64(v.Int64())), nil
		}
	case catalog.KindFloat64:
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			return be.AppendUint64(be.AppendUint32(buf, 8), math.Float64bits(v.Double())), nil
		}
	case catalog.KindBool:
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			b := byte(0)
			if v.Boolean() {
				b = 1
			}
			return append(be.AppendUint32(buf, 1), b), nil
		}
	case catalog.KindDate:
		// Days since 1970-01-01 to days since 2000-01-01.
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			return be.AppendUint32(be.AppendUint32(buf, 4), uint32(v.Int32()-pgEpoch/86400)), nil
		}
	case catalog.KindTimestamp:
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			return be.AppendUint64(be.AppendUint32(buf, 8), uint64(v.Int64()-pgEpoch*1_000_000)), nil
		}
	case catalog.KindUUID:
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			u, err := uuid.ParseBytes(v.ByteArray())
			if err != nil {
				return buf, err
			}
			return append(be.AppendUint32(buf, 16), u[:]...), nil
		}
	case catalog.KindDecimal:
		scale := t.Scale
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			switch v.Kind() {
			case parquet.Int32:
				return appendNumericInt64(buf, int64(v.Int32()), scale), nil
			case parquet.Int64:
				return appendNumericInt64(buf, v.Int64(), scale), nil
			case parquet.FixedLenByteArray, parquet.ByteArray:
				return appendNumericBytes(buf, v.ByteArray(), scale)
			}
			return buf, fmt.Errorf("a decimal stored as %s, which sluice cannot encode for PostgreSQL", v.Kind())
		}
	case catalog.KindString:
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			s := v.ByteArray()
			// As fastEncoder says: name the column rather than let COPY
			// fail with a byte offset.
			if bytes.IndexByte(s, 0) >= 0 {
				return buf, errors.New("a NUL character, which PostgreSQL text cannot hold")
			}
			if !utf8.Valid(s) {
				return buf, errors.New("invalid UTF-8, which PostgreSQL text cannot hold")
			}
			return append(be.AppendUint32(buf, uint32(len(s))), s...), nil
		}
	case catalog.KindBinary:
		return func(buf []byte, v parquet.Value) ([]byte, error) {
			b := v.ByteArray()
			return append(be.AppendUint32(buf, uint32(len(b))), b...), nil
		}
	}
	return nil
}

// copyFileBatches encodes the rows of data file f, at key in st, read
// column by column. Columns the file lacks read as NULL or, when f's
// partition holds them, as its value, as catalog.ScanDataFile fills them.
func (e *encoder) copyFileBatches(st cloud.Store, key string, f catalog.DataFile) error {
	fill, err := e.partitionFill(f)
	if err != nil {
		return err
	}
	scanAs := func(file catalog.Schema) catalog.Schema {
		var cols []catalog.Column
		for i, c := range e.schema.Columns {
			if _, ok := file.Column(c.Name); ok {
				continue
			}
			if cols == nil {
				cols = append([]catalog.Column(nil), e.schema.Columns...)
			}
			cols[i].Nullable = true
		}
		if cols == nil {
			return e.schema
		}
		return catalog.Schema{Columns: cols}
	}
	ncols := uint16(len(e.schema.Columns))
	return pqio.ScanParquetBatches(e.ctx, st, key, f.Bytes, scanAs, func(b *pqio.ColumnBatch) error {
		for r := range b.Rows {
			e.buf = binary.BigEndian.AppendUint16(e.buf, ncols)
			for i, col := range b.Columns {
				if col == nil {
					if fill[i] == nil {
						return fmt.Errorf("column %q: NULL in a column that is not nullable", e.schema.Columns[i].Name)
					}
					e.buf = append(e.buf, fill[i]...)
					continue
				}
				if col[r].IsNull() {
					e.buf = binary.BigEndian.AppendUint32(e.buf, math.MaxUint32) // -1: NULL
					continue
				}
				var err error
				if e.buf, err = e.venc[i](e.buf, col[r]); err != nil {
					return fmt.Errorf("column %q: %w", e.schema.Columns[i].Name, err)
				}
			}
			e.rows++
			if len(e.buf) >= copyChunk {
				if err := e.send(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// partitionFill is the encoded field of each column in a row of f that
// lacks it: f's partition value, or NULL; nil for a column that is not
// nullable and has no partition value in f.
func (e *encoder) partitionFill(f catalog.DataFile) ([][]byte, error) {
	fill := make([][]byte, len(e.schema.Columns))
	for i, c := range e.schema.Columns {
		s, ok := f.PartitionValues[c.Name]
		if !ok || s == nil {
			if c.Nullable {
				fill[i] = binary.BigEndian.AppendUint32(nil, math.MaxUint32) // -1: NULL
			}
			continue
		}
		v, err := pqio.ParseValue(c.Type, *s)
		if err != nil {
			return nil, fmt.Errorf("partition value %s=%q: %w", c.Name, *s, err)
		}
		if fill[i], err = e.enc[i](nil, v); err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
	}
	return fill, nil
}

// appendNumericInt64 appends the binary numeric of the decimal whose
// unscaled value is u at scale.
func appendNumericInt64(buf []byte, u int64, scale int) []byte {
	abs := uint64(u)
	if u < 0 {
		abs = -abs // two's complement: right for math.MinInt64 too
	}
	return appendNumeric128(buf, u < 0, 0, abs, scale)
}

// appendNumericBytes appends the binary numeric of the decimal whose
// unscaled value is b, a big-endian two's complement integer, at scale.
func appendNumericBytes(buf []byte, b []byte, scale int) ([]byte, error) {
	if len(b) == 0 {
		return buf, errors.New("a decimal of no bytes")
	}
	neg := b[0]&0x80 != 0
	var hi, lo uint64
	if neg {
		hi, lo = math.MaxUint64, math.MaxUint64 // sign-extended
	}
	for i, x := range b {
		// Bytes beyond 16 must only extend the sign.
		if len(b)-i > 16 && ((neg && x != 0xff) || (!neg && x != 0)) {
			return buf, fmt.Errorf("a decimal of %d bytes, more than 38 digits", len(b))
		}
		hi, lo = hi<<8|lo>>56, lo<<8|uint64(x)
	}
	if neg != (hi>>63 != 0) {
		return buf, fmt.Errorf("a decimal of %d bytes, more than 38 digits", len(b))
	}
	if neg { // the absolute value: two's complement of 128 bits
		var c uint64
		lo, c = bits.Add64(^lo, 1, 0)
		hi, _ = bits.Add64(^hi, 0, c)
	}
	return appendNumeric128(buf, neg, hi, lo, scale), nil
}

// pow10 are the powers of ten a base-10000 digit splits into.
var pow10 = [5]uint64{1, 10, 100, 1000, 10000}

// appendNumeric128 appends the binary numeric of the decimal whose
// unscaled absolute value is hi·2⁶⁴+lo at scale, negative when neg: its
// base-10000 digits aligned on the decimal point, most significant
// first, without leading or trailing zero digits, the weight of the
// first, the sign and the scale as the display scale (dscale), the form
// appendNumeric gives the same number's text.
func appendNumeric128(buf []byte, neg bool, hi, lo uint64, scale int) []byte {
	// Digits least significant first. 2¹²⁸ has 39 decimal digits: at
	// most 3 in a partial group after the point, 36 in 9 whole groups.
	var d [12]uint16
	n := 0
	if r := scale % 4; r != 0 {
		var rem uint64
		hi, lo, rem = divmod128(hi, lo, pow10[r])
		d[0], n = uint16(rem*pow10[4-r]), 1
	}
	for hi != 0 || lo != 0 {
		var rem uint64
		if hi == 0 {
			lo, rem = lo/10000, lo%10000
		} else {
			hi, lo, rem = divmod128(hi, lo, 10000)
		}
		d[n], n = uint16(rem), n+1
	}
	weight := n - (scale+3)/4 - 1
	low := 0
	for low < n && d[low] == 0 {
		low++
	}
	for n > low && d[n-1] == 0 {
		n, weight = n-1, weight-1
	}
	sign := uint16(0)
	if n == low {
		weight = 0
	} else if neg {
		sign = 0x4000
	}
	be := binary.BigEndian
	buf = be.AppendUint32(buf, uint32(8+2*(n-low)))
	buf = be.AppendUint16(buf, uint16(n-low))
	buf = be.AppendUint16(buf, uint16(int16(weight)))
	buf = be.AppendUint16(buf, sign)
	buf = be.AppendUint16(buf, uint16(scale))
	for i := n - 1; i >= low; i-- {
		buf = be.AppendUint16(buf, d[i])
	}
	return buf
}

// divmod128 divides hi·2⁶⁴+lo by d (not 0).
func divmod128(hi, lo, d uint64) (qhi, qlo, rem uint64) {
	qhi, rem = hi/d, hi%d
	qlo, rem = bits.Div64(rem, lo, d)
	return qhi, qlo, rem
}
