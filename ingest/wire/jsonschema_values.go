package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sluice-data/sluice/internal/pqio"
)

// jsStruct converts an object by its properties' fields.
func jsStruct(fields []jsField) jsConv {
	return func(v any) (any, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, jsWant("an object", v)
		}
		out := make(map[string]any, len(fields))
		for _, f := range fields {
			x, err := jsMember(m[f.name], f.nullable, f.conv)
			if err != nil {
				return nil, withFieldPath(f.name, err)
			}
			if x != nil {
				out[f.name] = x
			}
		}
		return out, nil
	}
}

// jsList converts an array by its elements' conversion.
func jsList(nullable bool, conv jsConv) jsConv {
	return func(v any) (any, error) {
		a, ok := v.([]any)
		if !ok {
			return nil, jsWant("an array", v)
		}
		out := make([]any, len(a))
		for i, e := range a {
			x, err := jsMember(e, nullable, conv)
			if err != nil {
				return nil, withFieldPath("["+strconv.Itoa(i)+"]", err)
			}
			out[i] = x
		}
		return out, nil
	}
}

// jsMap converts an object to map entries in key order (a decoded JSON
// object keeps none).
func jsMap(nullable bool, conv jsConv) jsConv {
	return func(v any) (any, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, jsWant("an object", v)
		}
		keys := slices.Sorted(maps.Keys(m))
		out := make([]pqio.MapEntry, len(keys))
		for i, k := range keys {
			x, err := jsMember(m[k], nullable, conv)
			if err != nil {
				return nil, withFieldPath(k, err)
			}
			out[i] = pqio.MapEntry{Key: k, Value: x}
		}
		return out, nil
	}
}

// jsMember converts a property, element or map value: null (or absent)
// is nil when nullable and an error when not.
func jsMember(v any, nullable bool, conv jsConv) (any, error) {
	if v == nil {
		if nullable {
			return nil, nil
		}
		return nil, errors.New("null or absent, but not nullable")
	}
	return conv(v)
}

// jsWant is the error for a JSON value of the wrong kind.
func jsWant(what string, v any) error {
	got := "null"
	switch v.(type) {
	case string:
		got = "a string"
	case json.Number:
		got = "a number"
	case bool:
		got = "a boolean"
	case map[string]any:
		got = "an object"
	case []any:
		got = "an array"
	}
	return fmt.Errorf("want %s, got %s", what, got)
}

func jsString(v any) (any, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return nil, jsWant("a string", v)
}

// jsTimestamp parses an RFC 3339 date-time to UTC, truncated to
// microseconds.
func jsTimestamp(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, jsWant("a date-time string", v)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil {
		return nil, fmt.Errorf("date-time %q is not RFC 3339", s)
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// jsDate parses a YYYY-MM-DD date to UTC midnight.
func jsDate(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, jsWant("a date string", v)
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return nil, fmt.Errorf("date %q is not YYYY-MM-DD", s)
	}
	return t, nil
}

// jsUUID checks a UUID and writes it as stored: lower case, 8-4-4-4-12.
func jsUUID(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, jsWant("a uuid string", v)
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("uuid %q: %v", s, err)
	}
	return u.String(), nil
}

func jsBool(v any) (any, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return nil, jsWant("a boolean", v)
}

func jsFloat64(v any) (any, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, jsWant("a number", v)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return nil, fmt.Errorf("number %s is out of float64's range", n)
	}
	return f, nil
}

// jsInt64 converts an integral JSON number exactly: 12, 12.0 and 1.2e1
// are 12; 12.5 and numbers past int64 are errors.
func jsInt64(v any) (any, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, jsWant("an integer", v)
	}
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	neg := strings.HasPrefix(mant, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(mant, "-"), ".")
	e := 0
	if exp != "" {
		var err error
		if e, err = strconv.Atoi(exp); err != nil || e > 100 || e < -100 {
			return nil, fmt.Errorf("integer %s is out of int64's range or not integral", s)
		}
	}
	digits := strings.TrimLeft(whole+frac, "0")
	e -= len(frac)
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits, e = digits[:len(digits)-1], e+1
	}
	switch {
	case digits == "":
		return int64(0), nil
	case e < 0:
		return nil, fmt.Errorf("number %s is not an integer", s)
	case len(digits)+e > 19:
		return nil, fmt.Errorf("integer %s is out of int64's range", s)
	}
	if neg {
		digits = "-" + digits
	}
	i, err := strconv.ParseInt(digits+strings.Repeat("0", e), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("integer %s is out of int64's range", s)
	}
	return i, nil
}
