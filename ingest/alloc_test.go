package ingest

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestStrSlabCopies(t *testing.T) {
	var s strSlab
	b := []byte("abc")
	x := s.str(b)
	b[0] = 'z'
	long := strings.Repeat("y", slabMax+1)
	var parts []string
	for i := range 5000 { // several chunks
		parts = append(parts, s.str(fmt.Appendf(nil, "value-%d", i)))
	}
	if x != "abc" || s.str([]byte(long)) != long || s.str(nil) != "" {
		t.Fatalf("slab strings changed: %q", x)
	}
	for i, p := range parts {
		if p != fmt.Sprintf("value-%d", i) {
			t.Fatalf("part %d = %q", i, p)
		}
	}
}

// Values boxed from shared chunks are plain strings, int64s, int32s and
// times to every consumer (type switches, reflection, ==, map keys), and
// stay intact while the collector runs and the chunks they came from are
// otherwise dropped.
func TestBoxedValuesAreOrdinaryAndSurviveCollection(t *testing.T) {
	var b boxes
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	want := func(i int) []any {
		return []any{fmt.Sprintf("s-%d", i), int64(i) << 33, int32(-i), t0.Add(time.Duration(i) * time.Microsecond)}
	}
	const n = 5 * boxChunk
	got := make([][]any, n)
	for i := range n {
		w := want(i)
		got[i] = []any{b.str(w[0].(string)), b.i64(w[1].(int64)), b.i32(w[2].(int32)), b.time(w[3].(time.Time))}
		if i%boxChunk == 0 {
			runtime.GC()
		}
	}
	b = boxes{} // only the rows hold the chunks now
	runtime.GC()
	runtime.GC()
	keys := map[any]int{}
	for i, row := range got {
		w := want(i)
		for j, v := range row {
			if reflect.TypeOf(v) != reflect.TypeOf(w[j]) || v != w[j] {
				t.Fatalf("row %d column %d: %T %v, want %T %v", i, j, v, v, w[j], w[j])
			}
		}
		switch v := row[0].(type) {
		case string:
			if v != w[0] {
				t.Fatalf("row %d: type switch gives %q", i, v)
			}
		default:
			t.Fatalf("row %d: a boxed string switches as %T", i, v)
		}
		if tm := row[3].(time.Time); !tm.Equal(w[3].(time.Time)) || tm.Location() != time.UTC {
			t.Fatalf("row %d: time %v (%v)", i, tm, tm.Location())
		}
		keys[row[1]] = i
	}
	for i := range n {
		if keys[int64(i)<<33] != i {
			t.Fatalf("map key int64 %d: found row %d", int64(i)<<33, keys[int64(i)<<33])
		}
	}
	var nilBoxes *boxes
	if v := nilBoxes.str("x"); v != "x" {
		t.Fatalf("nil boxes: %v", v)
	}
}
