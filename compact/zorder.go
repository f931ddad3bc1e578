package compact

import (
	"encoding/binary"
	"math"

	"github.com/parquet-go/parquet-go"
)

// A z-order key interleaves the bits of each column's order key, most
// significant first: with columns a and b, a's top bit, b's top bit, a's
// second bit, and so on. Rows in the key's order walk a Z-shaped curve
// through the columns' space, so that a range of rows (a file, a row
// group) covers a narrow box of it on every column, not a narrow range of
// the first and everything of the others.
//
// A column's order key is a uint64 whose unsigned order is the values'
// order: signed integers (dates, timestamps, decimals of up to 18 digits)
// with their sign bit flipped, floats by their IEEE bits made monotone,
// byte arrays (strings, binary, fixed-size decimals with their sign bit
// flipped) by their first 8 bytes, big-endian, so that two values with
// the same 8 first bytes share a key. A NULL has key 0, the lowest.
//
// The bits are interleaved as the keys are: a column whose values vary
// only in their low bits (small integers next to nanosecond timestamps)
// weighs less in the curve than one that varies in its high bits.

// orderKey is the order key of v, a value of a column of physical kind k;
// signedBytes says a byte array is a two's complement number (a decimal).
func orderKey(v *parquet.Value, k parquet.Kind, signedBytes bool) uint64 {
	if v.IsNull() {
		return 0
	}
	switch k {
	case parquet.Boolean:
		if v.Boolean() {
			return 2
		}
		return 1
	case parquet.Int32:
		return uint64(int64(v.Int32())) ^ 1<<63
	case parquet.Int64:
		return uint64(v.Int64()) ^ 1<<63
	case parquet.Int96:
		// Nanoseconds of the day (under 2^37) below the Julian day.
		t := v.Int96()
		return uint64(t[2])<<37 | (uint64(t[1])<<32 | uint64(t[0]))
	case parquet.Float:
		return floatKey(float64(v.Float()))
	case parquet.Double:
		return floatKey(v.Double())
	default:
		var b [8]byte
		copy(b[:], v.ByteArray())
		x := binary.BigEndian.Uint64(b[:])
		if signedBytes && len(v.ByteArray()) > 0 {
			x ^= 1 << 63
		}
		return x
	}
}

// floatKey orders floats as their values: negative ones (sign bit set)
// have every bit flipped, the others their sign bit set.
func floatKey(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// zorderKeyFunc returns a function that appends the z-order key of a row
// of the table to dst: cols are
// the key's column indexes, kinds and signed the physical kind of each
// table column and whether its byte arrays are signed numbers.
func zorderKeyFunc(cols []int, kinds []parquet.Kind, signed []bool) func(dst []byte, row parquet.Row) []byte {
	return func(dst []byte, row parquet.Row) []byte {
		var keys [8]uint64
		ks := keys[:0]
		if len(cols) > len(keys) {
			ks = make([]uint64, 0, len(cols))
		}
		for _, j := range cols {
			ks = append(ks, orderKey(&row[j], kinds[j], signed[j]))
		}
		return interleave(dst, ks)
	}
}

// interleave appends the bits of keys, interleaved most significant
// first, to dst: 8 bytes a key.
func interleave(dst []byte, keys []uint64) []byte {
	var acc byte
	n := 0
	for b := 63; b >= 0; b-- {
		for _, k := range keys {
			acc = acc<<1 | byte(k>>uint(b)&1)
			if n++; n == 8 {
				dst = append(dst, acc)
				acc, n = 0, 0
			}
		}
	}
	return dst
}

// sortKeyFunc returns a function that appends to dst the sort key of a
// row of the table, by columns
// cols in turn, which bytes.Compare orders as the rows sort: ascending,
// NULLs first. Each column adds a byte, 0 for NULL, 1 before a value;
// numbers add their 8-byte order key (orderKey, exact for numbers), byte
// arrays all their bytes, a 0 escaped as 0 0xff, ended by 0 0, so that a
// prefix sorts first.
func sortKeyFunc(cols []int, kinds []parquet.Kind, signed []bool) func(dst []byte, row parquet.Row) []byte {
	return func(key []byte, row parquet.Row) []byte {
		for _, j := range cols {
			v := &row[j]
			if v.IsNull() {
				key = append(key, 0)
				continue
			}
			key = append(key, 1)
			switch k := kinds[j]; k {
			case parquet.ByteArray, parquet.FixedLenByteArray:
				for i, c := range v.ByteArray() {
					if i == 0 && signed[j] {
						c ^= 0x80
					}
					if key = append(key, c); c == 0 {
						key = append(key, 0xff)
					}
				}
				key = append(key, 0, 0)
			default:
				key = binary.BigEndian.AppendUint64(key, orderKey(v, k, false))
			}
		}
		return key
	}
}
