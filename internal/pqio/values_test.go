package pqio

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// --- values -------------------------------------------------------------------

func TestValueTextRoundTrips(t *testing.T) {
	dec := func(p, s int) Type { return Type{Kind: KindDecimal, Precision: p, Scale: s} }
	for _, tc := range []struct {
		t    Type
		v    any
		text string
	}{
		{Type{Kind: KindString}, "héllo, world", "héllo, world"},
		{Type{Kind: KindUUID}, "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a", "0b0e6d2c-4f5a-4c1e-9d8b-1f2e3d4c5b6a"},
		{Type{Kind: KindInt32}, int32(-2147483648), "-2147483648"},
		{Type{Kind: KindInt64}, int64(9223372036854775807), "9223372036854775807"},
		{Type{Kind: KindFloat64}, 0.1, "0.1"},
		{Type{Kind: KindFloat64}, 1e21, "1e+21"},
		{Type{Kind: KindFloat64}, -2.0, "-2"},
		{Type{Kind: KindBool}, true, "true"},
		{Type{Kind: KindDate}, day(1969, 7, 20), "1969-07-20"},
		{Type{Kind: KindTimestamp}, time.Date(2024, 1, 31, 23, 59, 58, 123456000, time.UTC), "2024-01-31T23:59:58.123456Z"},
		{Type{Kind: KindTimestamp}, time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), "1900-01-01T00:00:00.000000Z"},
		{dec(10, 2), "-123.45", "-123.45"},
		{dec(10, 2), "0.05", "0.05"},
		{dec(5, 0), "-42", "-42"},
		{dec(38, 38), "0.12345678901234567890123456789012345678", "0.12345678901234567890123456789012345678"},
		{Type{Kind: KindBinary}, []byte{0, 0xff, 'a'}, "AP9h"},
	} {
		if got := FormatValue(tc.t, tc.v); got != tc.text {
			t.Errorf("FormatValue(%s, %#v) = %q, want %q", tc.t, tc.v, got, tc.text)
		}
		back, err := ParseValue(tc.t, tc.text)
		if err != nil || !reflect.DeepEqual(back, tc.v) {
			t.Errorf("ParseValue(%s, %q) = %#v, %v; want %#v", tc.t, tc.text, back, err, tc.v)
		}
	}
}

func TestParseValueCanonicalizesAndRefuses(t *testing.T) {
	dec := Type{Kind: KindDecimal, Precision: 6, Scale: 2}
	for in, want := range map[string]string{"1.5": "1.50", "-0": "0.00", "+7": "7.00", "0012.300": "12.30", ".5": "0.50", "-0.001000": ""} {
		got, err := ParseValue(dec, in)
		if want == "" {
			if err == nil {
				t.Errorf("ParseValue(%s, %q) = %v, want an error", dec, in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("ParseValue(%s, %q) = %v, %v; want %q", dec, in, got, err, want)
		}
	}
	for _, tc := range []struct {
		t Type
		s string
	}{
		{dec, "12345.00"}, // 5 integer digits, decimal(6,2) holds 4
		{dec, "1.234"},
		{dec, "1e3"},
		{dec, "abc"},
		{Type{Kind: KindInt32}, "2147483648"},
		{Type{Kind: KindDate}, "2024-02-30"},
		{Type{Kind: KindTimestamp}, "2024-01-01 10:00:00"},
		{Type{Kind: KindBool}, "yes"},
		{Type{Kind: KindBinary}, "not base64!"},
	} {
		if v, err := ParseValue(tc.t, tc.s); err == nil {
			t.Errorf("ParseValue(%s, %q) = %#v, want an error", tc.t, tc.s, v)
		}
	}
	ts, err := ParseValue(Type{Kind: KindTimestamp}, "2024-01-01T02:00:00.1234567+02:00")
	if err != nil || !ts.(time.Time).Equal(time.Date(2024, 1, 1, 0, 0, 0, 123456000, time.UTC)) || ts.(time.Time).Location() != time.UTC {
		t.Errorf("an offset timestamp parses to %v, %v; want UTC truncated to microseconds", ts, err)
	}
}

func TestCompareValues(t *testing.T) {
	dec := Type{Kind: KindDecimal, Precision: 10, Scale: 2}
	for _, tc := range []struct {
		t    Type
		a, b any
		want int
	}{
		{dec, "-10.00", "9.99", -1},
		{dec, "100.00", "99.99", 1},
		{dec, "1.50", "1.50", 0},
		{Type{Kind: KindString}, "B", "a", -1},
		{Type{Kind: KindInt64}, int64(-1), int64(1), -1},
		{Type{Kind: KindFloat64}, math.NaN(), -1.0, -1},
		{Type{Kind: KindBool}, true, false, 1},
		{Type{Kind: KindDate}, day(2024, 1, 1), day(2023, 12, 31), 1},
		{Type{Kind: KindBinary}, []byte{1}, []byte{1, 0}, -1},
		{Type{Kind: KindInt32}, nil, int32(0), -1},
		{Type{Kind: KindInt32}, nil, nil, 0},
	} {
		if got := CompareValues(tc.t, tc.a, tc.b); got != tc.want {
			t.Errorf("CompareValues(%s, %#v, %#v) = %d, want %d", tc.t, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestDecimalFixedSizesMatchSpark(t *testing.T) {
	// Spark's sizes, as in decimal-various-scale-precision.
	for p, want := range map[int]int{1: 1, 9: 4, 10: 5, 18: 8, 20: 9, 21: 9, 25: 11, 35: 15, 38: 16} {
		if got := decimalBytes(p); got != want {
			t.Errorf("decimalBytes(%d) = %d, want %d", p, got, want)
		}
	}
}

// A bad value stops the write: the error names the first bad row, and at
// that row the first bad column, whether the columns are encoded one at a
// time or several at once; the rows before it are written whole.
