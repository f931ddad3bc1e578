package warehouse

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// twos is u as a big-endian two's complement of size bytes, as Parquet
// stores a decimal's unscaled value in a FIXED_LEN_BYTE_ARRAY.
func twos(t *testing.T, u *big.Int, size int) []byte {
	t.Helper()
	m := new(big.Int).Set(u)
	if m.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*size)))
	}
	if m.BitLen() > 8*size {
		t.Fatalf("%s does not fit %d bytes", u, size)
	}
	return m.FillBytes(make([]byte, size))
}

// A decimal encoded from its unscaled integer and scale (copybatch.go) is
// the number pgx encodes from the same integer and exponent, with the
// scale as display scale, and has the very bytes the text encoder
// (appendNumeric) gives its canonical text: for every scale 0..18 of
// decimals stored as INT32, INT64 and FIXED_LEN_BYTE_ARRAY, and precision
// 38 at every scale.
func TestNumericFromUnscaledEqualsPgx(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(p, scale int, u *big.Int, v parquet.Value) {
		t.Helper()
		enc := parquetEncoder(catalog.Type{Kind: catalog.KindDecimal, Precision: p, Scale: scale})
		got, err := enc(nil, v)
		if err != nil {
			t.Fatalf("decimal(%d,%d) %s stored as %s: %v", p, scale, u, v.Kind(), err)
		}
		want, err := encodeByMap(nil, pgtype.NumericOID, pgtype.Numeric{Int: u, Exp: int32(-scale), Valid: true})
		if err != nil {
			t.Fatalf("pgx encodes %s at scale %d: %v", u, scale, err)
		}
		if g, w := numericText(t, got), numericText(t, want); g != w {
			t.Errorf("decimal(%d,%d) %s stored as %s: %s, pgx %s", p, scale, u, v.Kind(), g, w)
		}
		text := pqio.PlacePoint(u.String(), scale)
		fromText, err := appendNumeric(nil, text)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, fromText) {
			t.Errorf("decimal(%d,%d) %s stored as %s:\n got % x\nwant % x (from the text %s)", p, scale, u, v.Kind(), got, fromText, text)
		}
	}
	small := []int64{0, 1, -1, 5, -9, 10, 99, 1000, 9999, 10000, -10000, 10001, 123456789, -123456789, 100000000,
		math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, -999999999999999999, 1000000000000000000}
	for range 200 {
		small = append(small, rng.Int64()>>rng.IntN(63), int64(rng.Int32()))
	}
	for scale := range 19 {
		for _, x := range small {
			u := big.NewInt(x)
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				check(9, scale, u, parquet.Int32Value(int32(x)))
			}
			check(18, scale, u, parquet.Int64Value(x))
			// The same unscaled value in the 9 bytes of decimal(20, s)
			// and the 16 of decimal(38, s), and in a BYTE_ARRAY's few.
			check(20, scale, u, parquet.FixedLenByteArrayValue(twos(t, u, 9)))
			check(38, scale, u, parquet.FixedLenByteArrayValue(twos(t, u, 16)))
			check(38, scale, u, parquet.ByteArrayValue(twos(t, u, 8)))
		}
	}
	// Precision 38: its extremes and values of every length, at every
	// scale.
	max38 := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil), big.NewInt(1))
	large := []*big.Int{max38, new(big.Int).Neg(max38), new(big.Int).Exp(big.NewInt(10), big.NewInt(37), nil),
		new(big.Int).Lsh(big.NewInt(1), 64), new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 64)), big.NewInt(0)}
	for range 200 {
		digits := make([]byte, rng.IntN(38)+1)
		for i := range digits {
			digits[i] = byte('0' + rng.IntN(10))
		}
		u, _ := new(big.Int).SetString(string(digits), 10)
		if rng.IntN(2) == 0 {
			u.Neg(u)
		}
		large = append(large, u)
	}
	for scale := range 39 {
		for _, u := range large {
			check(38, scale, u, parquet.FixedLenByteArrayValue(twos(t, u, 16)))
		}
	}
}

func TestNumericFromBytesRefusesMoreThan38Digits(t *testing.T) {
	enc := parquetEncoder(catalog.Type{Kind: catalog.KindDecimal, Precision: 38, Scale: 0})
	for _, b := range [][]byte{
		append([]byte{1}, make([]byte, 16)...),               // 2^128
		append([]byte{0, 0x80}, make([]byte, 15)...),         // 2^127
		append([]byte{0xfe}, bytes.Repeat([]byte{0}, 16)...), // -2^129
		{},
	} {
		if _, err := enc(nil, parquet.ByteArrayValue(b)); err == nil {
			t.Errorf("% x encoded, want an error", b)
		}
	}
}

// The encoders of Parquet values put the same bytes on the wire as the
// encoders of Go values (TestFastEncodersEqualPgx), value by value.
func TestParquetEncodersEqualFastEncoders(t *testing.T) {
	ts := time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	cases := []struct {
		kind catalog.Kind
		goV  any
		pq   parquet.Value
	}{
		{catalog.KindInt32, int32(math.MinInt32), parquet.Int32Value(math.MinInt32)},
		{catalog.KindInt64, int64(math.MaxInt64), parquet.Int64Value(math.MaxInt64)},
		{catalog.KindFloat64, math.Inf(-1), parquet.DoubleValue(math.Inf(-1))},
		{catalog.KindFloat64, math.Copysign(0, -1), parquet.DoubleValue(math.Copysign(0, -1))},
		{catalog.KindBool, true, parquet.BooleanValue(true)},
		{catalog.KindBool, false, parquet.BooleanValue(false)},
		{catalog.KindDate, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), parquet.Int32Value(-1)},
		{catalog.KindDate, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), parquet.Int32Value(10957)},
		{catalog.KindDate, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), parquet.Int32Value(-719162)},
		{catalog.KindTimestamp, ts, parquet.Int64Value(ts.UnixMicro())},
		{catalog.KindTimestamp, time.UnixMicro(-1).UTC(), parquet.Int64Value(-1)},
		{catalog.KindUUID, "123e4567-e89b-42d3-a456-426614174000", parquet.ByteArrayValue([]byte("123e4567-e89b-42d3-a456-426614174000"))},
		{catalog.KindUUID, "FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF", parquet.ByteArrayValue([]byte("FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF"))},
		{catalog.KindUUID, "00000000-0000-0000-0000-000000000000", parquet.ByteArrayValue([]byte("00000000-0000-0000-0000-000000000000"))},
		{catalog.KindUUID, "aBcDeF01-2345-6789-abcd-EF0123456789", parquet.ByteArrayValue([]byte("aBcDeF01-2345-6789-abcd-EF0123456789"))},
		{catalog.KindUUID, "123e4567e89b42d3a456426614174000", parquet.ByteArrayValue([]byte("123e4567e89b42d3a456426614174000"))},
		{catalog.KindUUID, "{123e4567-e89b-42d3-a456-426614174000}", parquet.ByteArrayValue([]byte("{123e4567-e89b-42d3-a456-426614174000}"))},
		{catalog.KindUUID, "urn:uuid:123e4567-e89b-42d3-a456-426614174000", parquet.ByteArrayValue([]byte("urn:uuid:123e4567-e89b-42d3-a456-426614174000"))},
		{catalog.KindString, "日本語", parquet.ByteArrayValue([]byte("日本語"))},
		{catalog.KindString, "", parquet.ByteArrayValue([]byte{})},
		{catalog.KindBinary, []byte{0, 1, 255}, parquet.ByteArrayValue([]byte{0, 1, 255})},
	}
	for _, c := range cases {
		fast, _ := fastEncoder(c.kind)
		want, ok, err := fast(nil, c.goV)
		if !ok || err != nil {
			t.Fatalf("%s %v: %v, %v", c.kind, c.goV, ok, err)
		}
		got, err := parquetEncoder(catalog.Type{Kind: c.kind})(nil, c.pq)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s %v: got % x, %v; want % x", c.kind, c.goV, got, err, want)
		}
	}
	for _, c := range []struct {
		kind catalog.Kind
		v    string
		want string
	}{
		{catalog.KindString, "a\x00b", "NUL"},
		{catalog.KindString, "\xff", "UTF-8"},
		{catalog.KindUUID, "not a uuid", "invalid"},
		{catalog.KindUUID, "123e4567-e89b-42d3-a456-42661417400g", "invalid"},
		{catalog.KindUUID, "g23e4567-e89b-42d3-a456-426614174000", "invalid"},
		{catalog.KindUUID, "123e4567-e89b-42d3-a456+426614174000", "invalid"},
	} {
		_, err := parquetEncoder(catalog.Type{Kind: c.kind})(nil, parquet.ByteArrayValue([]byte(c.v)))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s %q: got %v, want an error saying %s", c.kind, c.v, err, c.want)
		}
	}
	if valueEncoders(mustSchema(t, "a:int64,l:list<int32>?")) != nil {
		t.Error("a table with a nested column has Parquet value encoders")
	}
}
