package ingest

import (
	"time"
	"unsafe"
)

// Decoding a JSON line allocates a string for every text field it keeps.
// A strSlab copies those fields into shared 64 KiB chunks instead: one
// allocation per chunk, not per field. A chunk lives while any string in
// it does, and rows are dropped once written, so the chunks are short-lived;
// an arena's chunks are reused instead (see arena.go).
type strSlab struct {
	buf []byte
	// With reuse (an arena's slab), every chunk cut is kept in all, so
	// that reset can hand them out again; next is the index in all of the
	// chunk after buf.
	reuse bool
	all   [][]byte
	next  int
}

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
		switch {
		case s.next < len(s.all):
			s.buf = s.all[s.next][:0]
			s.next++
		case s.reuse:
			s.buf = make([]byte, 0, slabChunk)
			s.all = append(s.all, s.buf)
			s.next = len(s.all)
		default:
			s.buf = make([]byte, 0, slabChunk)
		}
	}
	start := len(s.buf)
	s.buf = append(s.buf, b...) // never over bytes already handed out
	return unsafe.String(&s.buf[start], len(b))
}

// reset makes every chunk free again; poison overwrites them.
func (s *strSlab) reset(poison bool) {
	if poison {
		for _, c := range s.all {
			c = c[:cap(c)]
			for i := range c {
				c[i] = 0xAA
			}
		}
	}
	s.buf, s.next = nil, 0
}

// view is b as a string without a copy, for parsing only: it must not
// outlive b.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Holding a string, an int64, an int32 or a time.Time in an `any` makes
// Go allocate a copy of the value per field, four allocations per record
// of the benchmark's shape, and those allocations are a large share of
// decoding time. boxes keeps
// those copies in shared chunks instead and points the interface at them,
// as the runtime's own copy would be: same dynamic type, so every
// consumer's type switch sees a plain string, int64, int32 or time.Time.
// An element is written once, before it is boxed, and never again, which
// is what the runtime assumes of a boxed value. A chunk lives while any
// interface into it does.
type boxes struct {
	strs  chunks[string]
	i64s  chunks[int64]
	i32s  chunks[int32]
	times chunks[time.Time]
}

// arenaBoxes returns boxes whose chunks are kept for reuse (see arena).
func arenaBoxes() boxes {
	var b boxes
	b.strs.reuse, b.i64s.reuse, b.i32s.reuse, b.times.reuse = true, true, true, true
	return b
}

// reset makes every chunk free again; poison clears them.
func (b *boxes) reset(poison bool) {
	b.strs.reset(poison)
	b.i64s.reset(poison)
	b.i32s.reset(poison)
	b.times.reset(poison)
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

// put keeps v in c's next element and returns it boxed as typ.
func put[T any](c *chunks[T], typ unsafe.Pointer, v T) any {
	p := &c.take(1)[0]
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
