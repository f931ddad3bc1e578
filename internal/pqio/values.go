package pqio

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// The Go representation of a row value, by column kind (nil is SQL NULL):
//
//	string, uuid  string
//	int32         int32
//	int64         int64
//	float64       float64
//	bool          bool
//	date          time.Time at UTC midnight
//	timestamp     time.Time in UTC, microsecond precision
//	decimal(p,s)  string in canonical form: "-123.45", exactly s digits after the point
//	binary        []byte
//
// The canonical text of a value (FormatValue, ParseValue) is what manifests
// store as column statistics and what partition folders hold.

// Canonical text layouts of dates and timestamps.
const (
	dateLayout      = "2006-01-02"
	timestampLayout = "2006-01-02T15:04:05.000000Z"
)

// FormatValue renders v, a value of type t in its Go representation, as
// canonical text: integers in decimal, float64 as strconv's shortest 'g'
// form, bool as true/false, date as YYYY-MM-DD, timestamp as RFC 3339 in
// UTC with exactly six fractional digits, decimal in canonical form,
// string and uuid as they are, binary as standard base64. nil renders as
// "". A value of an unexpected Go type renders with fmt's %v, so stats of
// a mistyped value stay readable rather than panic.
func FormatValue(t Type, v any) string {
	if v == nil {
		return ""
	}
	if t.Nested() {
		return formatNested(t, v)
	}
	switch t.Kind {
	case KindString, KindUUID:
		if s, ok := v.(string); ok {
			return s
		}
	case KindInt32, KindInt64:
		switch x := v.(type) {
		case int32:
			return strconv.FormatInt(int64(x), 10)
		case int64:
			return strconv.FormatInt(x, 10)
		}
	case KindFloat64:
		if x, ok := v.(float64); ok {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case KindBool:
		if x, ok := v.(bool); ok {
			return strconv.FormatBool(x)
		}
	case KindDate:
		if x, ok := v.(time.Time); ok {
			return x.UTC().Format(dateLayout)
		}
	case KindTimestamp:
		if x, ok := v.(time.Time); ok {
			return x.UTC().Format(timestampLayout)
		}
	case KindDecimal:
		if s, ok := v.(string); ok {
			if c, err := canonicalDecimal(t, s); err == nil {
				return c
			}
			return s
		}
	case KindBinary:
		if b, ok := v.([]byte); ok {
			return base64.StdEncoding.EncodeToString(b)
		}
	}
	return fmt.Sprint(v)
}

// ParseValue parses the canonical text of a value of type t (see
// FormatValue) into its Go representation. It is lenient where that is
// unambiguous: a timestamp may carry any RFC 3339 offset and fraction (it is
// converted to UTC and truncated to microseconds), and a decimal may have
// fewer fractional digits than its scale, or trailing zeros beyond it.
func ParseValue(t Type, s string) (any, error) {
	switch t.Kind {
	case KindString, KindUUID:
		return s, nil
	case KindInt32:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q: %w", t, s, err)
		}
		return int32(n), nil
	case KindInt64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q: %w", t, s, err)
		}
		return n, nil
	case KindFloat64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q: %w", t, s, err)
		}
		return f, nil
	case KindBool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q: %w", t, s, err)
		}
		return b, nil
	case KindDate:
		d, err := time.Parse(dateLayout, s)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q: want YYYY-MM-DD", t, s)
		}
		return d, nil
	case KindTimestamp:
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q: want RFC 3339 like 2006-01-02T15:04:05.000000Z", t, s)
		}
		return ts.UTC().Truncate(time.Microsecond), nil
	case KindDecimal:
		c, err := canonicalDecimal(t, s)
		if err != nil {
			return nil, err
		}
		return c, nil
	case KindBinary:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q: want standard base64: %w", t, s, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("parse %q: unknown type %s", s, t)
}

// CompareValues orders two values of type t in their Go representation:
// -1 if a < b, 0 if equal, +1 if a > b. nil (NULL) sorts before every
// value. Strings and binaries compare bytewise (as Parquet's unsigned
// statistics order does), decimals numerically, floats with NaN first, bool
// false before true. Values of an unexpected Go type compare by their
// canonical text, so a mistyped value never panics.
func CompareValues(t Type, a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch t.Kind {
	case KindString, KindUUID:
		x, ok1 := a.(string)
		y, ok2 := b.(string)
		if ok1 && ok2 {
			return strings.Compare(x, y)
		}
	case KindInt32, KindInt64:
		x, ok1 := asInt64(a)
		y, ok2 := asInt64(b)
		if ok1 && ok2 {
			return cmp.Compare(x, y)
		}
	case KindFloat64:
		x, ok1 := a.(float64)
		y, ok2 := b.(float64)
		if ok1 && ok2 {
			return cmp.Compare(x, y)
		}
	case KindBool:
		x, ok1 := a.(bool)
		y, ok2 := b.(bool)
		if ok1 && ok2 {
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			default:
				return 1
			}
		}
	case KindDate, KindTimestamp:
		x, ok1 := a.(time.Time)
		y, ok2 := b.(time.Time)
		if ok1 && ok2 {
			return x.Compare(y)
		}
	case KindDecimal:
		x, ok1 := a.(string)
		y, ok2 := b.(string)
		if ok1 && ok2 {
			ux, err1 := DecimalUnscaled(t, x)
			uy, err2 := DecimalUnscaled(t, y)
			if err1 == nil && err2 == nil {
				return ux.Cmp(uy)
			}
		}
	case KindBinary:
		x, ok1 := a.([]byte)
		y, ok2 := b.([]byte)
		if ok1 && ok2 {
			return bytes.Compare(x, y)
		}
	}
	return strings.Compare(FormatValue(t, a), FormatValue(t, b))
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// checkGoValue reports whether v (not nil) has the Go representation of t.
func checkGoValue(t Type, v any) error {
	ok := false
	want := ""
	switch t.Kind {
	case KindString, KindUUID, KindDecimal:
		_, ok = v.(string)
		want = "string"
	case KindInt32:
		_, ok = v.(int32)
		want = "int32"
	case KindInt64:
		_, ok = v.(int64)
		want = "int64"
	case KindFloat64:
		_, ok = v.(float64)
		want = "float64"
	case KindBool:
		_, ok = v.(bool)
		want = "bool"
	case KindDate, KindTimestamp:
		_, ok = v.(time.Time)
		want = "time.Time"
	case KindBinary:
		_, ok = v.([]byte)
		want = "[]byte"
	default:
		return fmt.Errorf("unknown type %s", t)
	}
	if !ok {
		return fmt.Errorf("a %s value must be a Go %s, got %T", t, want, v)
	}
	return nil
}

// --- decimals -------------------------------------------------------------

// DecimalUnscaled parses a decimal of type t ("-123.45") into its unscaled
// integer (-12345 for scale 2). Fewer fractional digits than the scale are
// padded; more are accepted only when the extra ones are zeros. The value
// must fit the type's precision.
func DecimalUnscaled(t Type, s string) (*big.Int, error) {
	digits, err := decimalDigits(t, s)
	if err != nil {
		return nil, err
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, fmt.Errorf("parse %s %q: not a decimal number", t, s)
	}
	return u, nil
}

// decimalDigits validates s as a decimal of type t and returns its unscaled
// value as a signed string of digits ("-12345" for "-123.45" at scale 2),
// without leading zeros.
func decimalDigits(t Type, s string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("parse %s %q: %s", t, s, why)
	}
	neg := false
	body := s
	switch {
	case strings.HasPrefix(body, "-"):
		neg, body = true, body[1:]
	case strings.HasPrefix(body, "+"):
		body = body[1:]
	}
	intPart, frac, _ := strings.Cut(body, ".")
	if intPart == "" && frac == "" {
		return bad("not a decimal number")
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return bad("not a decimal number")
			}
		}
	}
	if len(frac) > t.Scale {
		if strings.Trim(frac[t.Scale:], "0") != "" {
			return bad(fmt.Sprintf("more than %d digits after the point", t.Scale))
		}
		frac = frac[:t.Scale]
	}
	frac += strings.Repeat("0", t.Scale-len(frac))
	intPart = strings.TrimLeft(intPart, "0")
	if len(intPart) > t.Precision-t.Scale {
		return bad(fmt.Sprintf("more than %d digits before the point", t.Precision-t.Scale))
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0", nil
	}
	if neg {
		digits = "-" + digits
	}
	return digits, nil
}

// canonicalDecimal returns the canonical form of s as a decimal of type t.
func canonicalDecimal(t Type, s string) (string, error) {
	digits, err := decimalDigits(t, s)
	if err != nil {
		return "", err
	}
	return PlacePoint(digits, t.Scale), nil
}

// formatDecimal renders an unscaled integer at scale as canonical text.
func formatDecimal(unscaled *big.Int, scale int) string {
	return PlacePoint(unscaled.String(), scale)
}

// formatDecimalInt64 is formatDecimal for an unscaled value that fits int64,
// without allocating a big.Int.
func formatDecimalInt64(unscaled int64, scale int) string {
	return PlacePoint(strconv.FormatInt(unscaled, 10), scale)
}

// PlacePoint inserts the decimal point into a signed digit string ("-12345",
// scale 2 → "-123.45"; "5", scale 3 → "0.005").
func PlacePoint(digits string, scale int) string {
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg && strings.Trim(digits, "0.") != "" {
		return "-" + digits
	}
	return digits
}

// rescaleDecimal widens a canonical decimal at scale from to scale to (to >=
// from) by appending zeros: exact, no rounding.
func rescaleDecimal(s string, from, to int) string {
	if to <= from {
		return s
	}
	if from == 0 {
		s += "."
	}
	return s + strings.Repeat("0", to-from)
}
