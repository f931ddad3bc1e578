package warehouse

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluice-data/sluice/catalog"
)

// The binary COPY encoders written for speed (copy.go) put the same
// bytes on the wire as pgx's type map, the library they replace, for
// every kind and its edge values: a differential test, no server needed.
func TestFastEncodersEqualPgx(t *testing.T) {
	ts := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	numeric := func(s string) any {
		var n pgtype.Numeric
		if err := n.Scan(s); err != nil {
			t.Fatalf("pgx scans %q: %v", s, err)
		}
		return n
	}
	cases := []struct {
		kind catalog.Kind
		vals []any
		// pgx's form of each value, where it takes another Go type.
		pgx func(v any) any
	}{
		{catalog.KindInt32, []any{int32(0), int32(-1), int32(math.MaxInt32), int32(math.MinInt32)}, nil},
		{catalog.KindInt64, []any{int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64)}, nil},
		{catalog.KindFloat64, []any{0.0, math.Copysign(0, -1), 1.5, math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, math.MaxFloat64}, nil},
		{catalog.KindBool, []any{true, false}, nil},
		{catalog.KindString, []any{"", "héllo\t\"x\"\\n", "日本語"}, nil},
		{catalog.KindBinary, []any{[]byte{}, []byte{0, 1, 255}}, nil},
		{catalog.KindUUID, []any{"00000000-0000-0000-0000-000000000000", "123e4567-e89b-42d3-a456-426614174000", "FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF"},
			func(v any) any {
				var u pgtype.UUID
				if err := u.Scan(v); err != nil {
					t.Fatalf("pgx scans %v: %v", v, err)
				}
				return u
			}},
		{catalog.KindDate, []any{ts("2000-01-01T00:00:00Z"), ts("1999-12-31T00:00:00Z"), ts("1970-01-01T00:00:00Z"), ts("2262-04-11T00:00:00Z"), ts("0001-01-01T00:00:00Z")}, nil},
		{catalog.KindTimestamp, []any{ts("2000-01-01T00:00:00Z"), ts("1999-12-31T23:59:59.999999Z"), ts("1970-01-01T00:00:00.000001Z"), ts("2262-04-11T23:47:16.854775Z"), ts("1677-09-21T00:12:43.145225Z")}, nil},
		{catalog.KindDecimal, []any{"0", "0.00", "1", "-1", "10000", "12345.6789", "-0.0001", "0.5", "1.50", "99999999999999999999999999999999999999",
			"-12345678901234567890.123456789012345678", "0.000000000000000001", "100000000", "1234567890123.45"},
			func(v any) any { return numeric(v.(string)) }},
	}
	for _, c := range cases {
		fast, oid := fastEncoder(c.kind)
		for _, v := range c.vals {
			got, ok, err := fast(nil, v)
			if !ok || err != nil {
				t.Fatalf("kind %v, %v: the fast encoder took it %v, %v", c.kind, v, ok, err)
			}
			pv := v
			if c.pgx != nil {
				pv = c.pgx(v)
			}
			want, err := encodeByMap(nil, oid, pv)
			if err != nil {
				t.Fatalf("kind %v, %v: pgx: %v", c.kind, v, err)
			}
			if bytes.Equal(got, want) {
				continue
			}
			// A numeric has several binary forms of one value (zero's
			// weight, leading zero groups): PostgreSQL reads each the
			// same, so decimals are compared as pgx decodes them, their
			// display scale included.
			if c.kind != catalog.KindDecimal || numericText(t, got) != numericText(t, want) {
				t.Errorf("kind %v, %v:\n got % x\nwant % x (pgx)", c.kind, v, got, want)
			}
		}
	}
}

// numericText decodes a length-prefixed binary numeric as pgx does and
// prints its value, exactly, with its display scale.
func numericText(t *testing.T, field []byte) string {
	t.Helper()
	var n pgtype.Numeric
	if err := typeMap.Scan(pgtype.NumericOID, pgtype.BinaryFormatCode, field[4:], &n); err != nil {
		t.Fatalf("pgx decodes % x: %v", field, err)
	}
	v, err := n.Value()
	if err != nil {
		t.Fatal(err)
	}
	r, ok := new(big.Rat).SetString(fmt.Sprint(v))
	if !ok {
		t.Fatalf("pgx decodes % x as %v", field, v)
	}
	return fmt.Sprintf("%s dscale %d", r.RatString(), binary.BigEndian.Uint16(field[4+6:]))
}
