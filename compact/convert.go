package compact

import (
	"fmt"
	"math/big"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// --- conversions -------------------------------------------------------------

// converter returns the conversion of a non-null value of file column c to
// the table column tc, whose Parquet type is to; nil when the value is
// already in the table's representation.
func converter(c pqio.ParquetColumn, tc catalog.Column, to parquet.Type) (func(parquet.Value) (parquet.Value, error), error) {
	from := c.Type
	switch tc.Type.Kind {
	case catalog.KindBool, catalog.KindDate:
		if c.Kind == to.Kind() {
			return nil, nil
		}
	case catalog.KindInt32:
		if c.Kind == parquet.Int32 {
			return nil, nil
		}
	case catalog.KindInt64:
		switch {
		case c.Kind == parquet.Int64:
			return nil, nil
		case from.Kind == catalog.KindInt64 && c.Kind == parquet.Int32: // UINT32
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(int64(uint32(v.Int32()))), nil }, nil
		case from.Kind == catalog.KindInt32:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(int64(v.Int32())), nil }, nil
		}
	case catalog.KindFloat64:
		switch {
		case c.Kind == parquet.Double:
			return nil, nil
		case c.Kind == parquet.Float:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.DoubleValue(float64(v.Float())), nil }, nil
		case from.Kind == catalog.KindInt32:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.DoubleValue(float64(v.Int32())), nil }, nil
		}
	case catalog.KindTimestamp:
		switch {
		case c.Kind == parquet.Int96:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.Int64Value(pqio.Int96Micros(v.Int96())), nil
			}, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e6:
			return nil, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e3:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(v.Int64() * 1000), nil }, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e9:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.Int64Value(pqio.FloorDiv(v.Int64(), 1000)), nil
			}, nil
		}
	case catalog.KindString, catalog.KindUUID:
		switch {
		case c.Kind == parquet.ByteArray:
			return nil, nil
		case from.Kind == catalog.KindUUID && c.Kind == parquet.FixedLenByteArray:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.ByteArrayValue([]byte(pqio.FormatUUID(v.ByteArray()))), nil
			}, nil
		}
	case catalog.KindBinary:
		switch c.Kind {
		case parquet.ByteArray:
			return nil, nil
		case parquet.FixedLenByteArray:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.ByteArrayValue(v.ByteArray()), nil }, nil
		}
	case catalog.KindDecimal:
		return decimalConverter(c, from, tc.Type, to)
	}
	return nil, fmt.Errorf("no conversion from %s (%s) to %s: %w", from, c.Kind, tc.Type, pqio.ErrIncompatibleSchema)
}

// decimalConverter converts an integer or a decimal to the table's
// decimal(p,s): the unscaled value is multiplied by 10^(s - scale of the
// file) and written in the table's physical type.
func decimalConverter(c pqio.ParquetColumn, from, to catalog.Type, toType parquet.Type) (func(parquet.Value) (parquet.Value, error), error) {
	fromScale := 0
	if from.Kind == catalog.KindDecimal {
		fromScale = from.Scale
	}
	shift := to.Scale - fromScale
	if shift < 0 {
		return nil, fmt.Errorf("decimal scale %d does not fit %s: %w", fromScale, to, pqio.ErrIncompatibleSchema)
	}
	if shift == 0 && c.Kind == toType.Kind() && (c.Kind != parquet.FixedLenByteArray || c.Type.Precision == to.Precision) {
		return nil, nil
	}
	unsigned32 := from.Kind == catalog.KindInt64 && c.Kind == parquet.Int32
	mul := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil)
	var mul64 int64 = 1
	for range shift {
		mul64 *= 10 // only used when shift <= 18
	}
	out := toType.Kind()
	width := toType.Length()
	return func(v parquet.Value) (parquet.Value, error) {
		var small int64
		var bigV *big.Int
		switch c.Kind {
		case parquet.Int32:
			if unsigned32 {
				small = int64(uint32(v.Int32()))
			} else {
				small = int64(v.Int32())
			}
		case parquet.Int64:
			small = v.Int64()
		default:
			b := v.ByteArray()
			if len(b) <= 8 {
				var u uint64
				for _, x := range b {
					u = u<<8 | uint64(x)
				}
				if len(b) > 0 {
					s := 64 - 8*uint(len(b))
					small = int64(u<<s) >> s
				}
			} else {
				bigV = new(big.Int).SetBytes(b)
				if b[0]&0x80 != 0 {
					bigV.Sub(bigV, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
				}
			}
		}
		if bigV == nil && out != parquet.FixedLenByteArray && shift <= 18 {
			r := small * mul64
			if shift > 0 && r/mul64 != small {
				return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
			}
			if out == parquet.Int32 {
				if int64(int32(r)) != r {
					return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
				}
				return parquet.Int32Value(int32(r)), nil
			}
			return parquet.Int64Value(r), nil
		}
		if bigV == nil {
			bigV = big.NewInt(small)
		}
		u := new(big.Int).Mul(bigV, mul)
		switch out {
		case parquet.Int32:
			if !u.IsInt64() || int64(int32(u.Int64())) != u.Int64() {
				return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
			}
			return parquet.Int32Value(int32(u.Int64())), nil
		case parquet.Int64:
			if !u.IsInt64() {
				return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
			}
			return parquet.Int64Value(u.Int64()), nil
		default:
			b, ok := twosComplement(u, width)
			if !ok {
				return parquet.Value{}, fmt.Errorf("decimal value overflows %s", to)
			}
			return parquet.FixedLenByteArrayValue(b), nil
		}
	}, nil
}

// twosComplement renders u as a size-byte big-endian two's complement.
func twosComplement(u *big.Int, size int) ([]byte, bool) {
	if u.BitLen() >= 8*size {
		return nil, false
	}
	out := make([]byte, size)
	if u.Sign() >= 0 {
		u.FillBytes(out)
		return out, true
	}
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*size))
	m.Add(m, u)
	m.FillBytes(out)
	return out, true
}
