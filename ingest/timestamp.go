package ingest

import (
	"time"
)

// parseUTCTimestamp parses the form almost every producer writes,
// YYYY-MM-DDTHH:MM:SS[.fraction]Z, truncated to the microsecond, without
// the generality that makes time.Parse slow on a hot path. ok is false for any other text (an
// offset, a year before 1, a field out of range), which time.Parse then
// decides; it accepts nothing time.Parse(time.RFC3339Nano, s) refuses.
func parseUTCTimestamp(s string) (t time.Time, ok bool) {
	if len(s) < 20 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year := digits(s[0:4])
	month, day := digits2(s, 5), digits2(s, 8)
	hour, minute, sec := digits2(s, 11), digits2(s, 14), digits2(s, 17)
	if year < 1 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	if day > daysIn(month, year) {
		return time.Time{}, false
	}
	nanos := 0
	if frac := s[19 : len(s)-1]; frac != "" {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n := digits(frac[1:])
		if n < 0 {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nanos = n - n%1000
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nanos, time.UTC), true
}

// digits2 is the value of the two decimal digits at s[i:], or -1.
func digits2(s string, i int) int {
	a, b := s[i]-'0', s[i+1]-'0'
	if a > 9 || b > 9 {
		return -1
	}
	return int(a)*10 + int(b)
}

// digits is the value of the decimal digits s, or -1 if one is not a digit.
func digits(s string) int {
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return -1
		}
		v = v*10 + int(c)
	}
	return v
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
