package pqio

import (
	"fmt"
	"math/big"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// This file holds the one conversion of file values to the table's types,
// at both levels a reader needs: Go values of rows (widener, for
// ReadParquetRows and ScanParquetColumn) and Parquet values of pages
// (Converter, for a column-wise rewrite). Both read decimals through
// signedBytes and rescale them exactly; readableAs (compat.go) decides
// which conversions exist.

// Converter returns the conversion of a non-null value of file column c to
// the table column tc, whose Parquet type (in the schema ParquetSchema
// writes) is to; nil when the value is already in the table's
// representation. A pair that CheckCompatible refuses has no conversion
// and fails with ErrIncompatibleSchema.
func Converter(c ParquetColumn, tc Column, to parquet.Type) (func(parquet.Value) (parquet.Value, error), error) {
	from := c.Type
	switch tc.Type.Kind {
	case KindBool, KindDate:
		if c.Kind == to.Kind() {
			return nil, nil
		}
	case KindInt32:
		if c.Kind == parquet.Int32 {
			return nil, nil
		}
	case KindInt64:
		switch {
		case c.Kind == parquet.Int64:
			return nil, nil
		case from.Kind == KindInt64 && c.Kind == parquet.Int32: // UINT32
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(int64(uint32(v.Int32()))), nil }, nil
		case from.Kind == KindInt32:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(int64(v.Int32())), nil }, nil
		}
	case KindFloat64:
		switch {
		case c.Kind == parquet.Double:
			return nil, nil
		case c.Kind == parquet.Float:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.DoubleValue(float64(v.Float())), nil }, nil
		case from.Kind == KindInt32:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.DoubleValue(float64(v.Int32())), nil }, nil
		}
	case KindTimestamp:
		switch {
		case c.Kind == parquet.Int96:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.Int64Value(Int96Micros(v.Int96())), nil
			}, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e6:
			return nil, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e3:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.Int64Value(v.Int64() * 1000), nil }, nil
		case c.Kind == parquet.Int64 && c.Unit == 1e9:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.Int64Value(FloorDiv(v.Int64(), 1000)), nil
			}, nil
		}
	case KindString, KindUUID:
		switch {
		case c.Kind == parquet.ByteArray:
			return nil, nil
		case from.Kind == KindUUID && c.Kind == parquet.FixedLenByteArray:
			return func(v parquet.Value) (parquet.Value, error) {
				return parquet.ByteArrayValue([]byte(FormatUUID(v.ByteArray()))), nil
			}, nil
		}
	case KindBinary:
		switch c.Kind {
		case parquet.ByteArray:
			return nil, nil
		case parquet.FixedLenByteArray:
			return func(v parquet.Value) (parquet.Value, error) { return parquet.ByteArrayValue(v.ByteArray()), nil }, nil
		}
	case KindDecimal:
		return decimalConverter(c, from, tc.Type, to)
	}
	return nil, fmt.Errorf("no conversion from %s (%s) to %s: %w", from, c.Kind, tc.Type, ErrIncompatibleSchema)
}

// decimalConverter converts an integer or a decimal to the table's
// decimal(p,s): the unscaled value is multiplied by 10^(s - scale of the
// file) and written in the table's physical type.
func decimalConverter(c ParquetColumn, from, to Type, toType parquet.Type) (func(parquet.Value) (parquet.Value, error), error) {
	fromScale := 0
	if from.Kind == KindDecimal {
		fromScale = from.Scale
	}
	shift := to.Scale - fromScale
	if shift < 0 {
		return nil, fmt.Errorf("decimal scale %d does not fit %s: %w", fromScale, to, ErrIncompatibleSchema)
	}
	if shift == 0 && c.Kind == toType.Kind() && (c.Kind != parquet.FixedLenByteArray || c.Type.Precision == to.Precision) {
		return nil, nil
	}
	unsigned32 := from.Kind == KindInt64 && c.Kind == parquet.Int32
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
			small, bigV = signedBytes(v.ByteArray())
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

// signedBytes decodes a big-endian two's complement integer (a decimal's
// unscaled value in a BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY): as small when it
// has at most 8 bytes, else as big (small is then 0). No bytes are 0.
func signedBytes(b []byte) (small int64, large *big.Int) {
	if len(b) <= 8 {
		var u uint64
		for _, x := range b {
			u = u<<8 | uint64(x)
		}
		if len(b) > 0 {
			s := 64 - 8*uint(len(b))
			small = int64(u<<s) >> s
		}
		return small, nil
	}
	n := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return 0, n
}

// decimalFromBytes decodes a big-endian two's complement unscaled value.
func decimalFromBytes(b []byte, scale int) string {
	small, n := signedBytes(b)
	if n == nil {
		return formatDecimalInt64(small, scale)
	}
	return formatDecimal(n, scale)
}

// decimalBytes is the smallest number of bytes whose two's complement holds
// every unscaled value of precision p (as Spark sizes its FIXED decimals).
func decimalBytes(p int) int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	for n := 1; ; n++ {
		// The largest positive value of n bytes is 2^(8n-1) - 1.
		if new(big.Int).Lsh(big.NewInt(1), uint(8*n-1)).Cmp(limit) >= 0 {
			return n
		}
	}
}

// twosComplement renders u as a size-byte big-endian two's complement,
// and false when u does not fit size bytes.
func twosComplement(u *big.Int, size int) ([]byte, bool) {
	if u.BitLen() >= 8*size {
		return nil, false
	}
	out := make([]byte, size)
	if u.Sign() >= 0 {
		u.FillBytes(out)
		return out, true
	}
	// -x in two's complement is 2^(8·size) - x.
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*size))
	m.Add(m, u)
	m.FillBytes(out)
	return out, true
}

// widener returns the conversion of a value of type from to type to (for
// which readableAs holds), nil when none is needed.
func widener(from, to Type) func(any) any {
	switch {
	case from.Equal(to), from.Kind == to.Kind && from.Kind != KindDecimal:
		return nil
	case (from.Kind == KindString || from.Kind == KindUUID) && (to.Kind == KindString || to.Kind == KindUUID):
		return nil
	case from.Kind == KindInt32 && to.Kind == KindInt64:
		return func(v any) any { return int64(v.(int32)) }
	case from.Kind == KindInt32 && to.Kind == KindFloat64:
		return func(v any) any { return float64(v.(int32)) }
	case from.Kind == KindInt32 && to.Kind == KindDecimal:
		return func(v any) any { return rescaleDecimal(strconv.FormatInt(int64(v.(int32)), 10), 0, to.Scale) }
	case from.Kind == KindInt64 && to.Kind == KindDecimal:
		return func(v any) any { return rescaleDecimal(strconv.FormatInt(v.(int64), 10), 0, to.Scale) }
	case from.Kind == KindDecimal && to.Kind == KindDecimal:
		return func(v any) any { return rescaleDecimal(v.(string), from.Scale, to.Scale) }
	}
	return nil
}
