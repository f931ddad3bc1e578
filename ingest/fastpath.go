package ingest

import (
	"time"
	"unsafe"
)

// Decoding a JSON line allocates a string for every text field it keeps.
// A strSlab copies those fields into shared 64 KiB chunks instead: one
// allocation per chunk, not per field. A chunk lives while any string in
// it does, and rows are dropped once written, so the chunks are short-lived.
type strSlab struct{ buf []byte }

const (
	slabChunk = 64 << 10
	// slabMax is the longest field copied into a chunk; a longer one gets
	// its own allocation, so that it does not pin a chunk of small ones.
	slabMax = 1 << 10
)

// str returns a string holding a copy of b.
func (s *strSlab) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s == nil || len(b) > slabMax {
		return string(b)
	}
	if cap(s.buf)-len(s.buf) < len(b) {
		s.buf = make([]byte, 0, slabChunk)
	}
	start := len(s.buf)
	s.buf = append(s.buf, b...) // never over bytes already handed out
	return unsafe.String(&s.buf[start], len(b))
}

// view is b as a string without a copy, for parsing only: it must not
// outlive b.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// parseUTCTimestamp parses the form almost every producer writes,
// YYYY-MM-DDTHH:MM:SS[.fraction]Z, truncated to the microsecond, about
// five times as fast as time.Parse. ok is false for any other text (an
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

// Holding a string, an int64, an int32 or a time.Time in an `any` makes
// Go allocate a copy of the value per field: four allocations per record
// of the benchmark's shape, a quarter of its decoding time. boxes keeps
// those copies in shared chunks instead and points the interface at them,
// as the runtime's own copy would be: same dynamic type, so every
// consumer's type switch sees a plain string, int64, int32 or time.Time.
// An element is written once, before it is boxed, and never again, which
// is what the runtime assumes of a boxed value. A chunk lives while any
// interface into it does.
type boxes struct {
	strs  []string
	i64s  []int64
	i32s  []int32
	times []time.Time
}

const boxChunk = 1024

// eface is the runtime's layout of an empty interface.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// typeOf returns the runtime type word of v's dynamic type.
func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	stringType = typeOf("")
	int64Type  = typeOf(int64(0))
	int32Type  = typeOf(int32(0))
	timeType   = typeOf(time.Time{})
)

// box returns an interface of dynamic type typ whose value is *p.
func box(typ, p unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

// take returns the next free element of *chunk, cutting a new chunk when
// it is used up.
func take[T any](chunk *[]T) *T {
	if len(*chunk) == 0 {
		*chunk = make([]T, boxChunk)
	}
	p := &(*chunk)[0]
	*chunk = (*chunk)[1:]
	return p
}

// put keeps v in *chunk's next element and returns it boxed as typ.
func put[T any](chunk *[]T, typ unsafe.Pointer, v T) any {
	p := take(chunk)
	*p = v
	return box(typ, unsafe.Pointer(p))
}

func (b *boxes) str(s string) any {
	if b == nil {
		return s
	}
	return put(&b.strs, stringType, s)
}

func (b *boxes) i64(n int64) any {
	if b == nil {
		return n
	}
	return put(&b.i64s, int64Type, n)
}

func (b *boxes) i32(n int32) any {
	if b == nil {
		return n
	}
	return put(&b.i32s, int32Type, n)
}

func (b *boxes) time(t time.Time) any {
	if b == nil {
		return t
	}
	return put(&b.times, timeType, t)
}
