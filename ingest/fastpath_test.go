package ingest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The fast path agrees with time.Parse on every text it takes, and leaves
// every text time.Parse refuses to time.Parse.
func TestParseUTCTimestampAgreesWithTimeParse(t *testing.T) {
	cases := []string{
		"2024-01-01T00:00:15.446116Z", "2024-01-01T00:00:15Z", "2024-02-29T23:59:59.999999999Z",
		"2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-04-31T00:00:00Z", "2024-01-01T24:00:00Z",
		"2024-01-01T00:60:00Z", "2024-01-01T00:00:60Z", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00.0000001Z",
		"9999-12-31T23:59:59.9999999999Z", "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00,5Z",
		"2024-01-01T00:00:00.5+01:00", "2024-01-01 00:00:00Z", "2024-01-01t00:00:00z", "2024-1-01T00:00:00Z",
		"2024-01-01T00:00:0xZ", "+024-01-01T00:00:00Z", "2024-01-01T00:00:00.12a4Z", "1900-02-29T00:00:00Z",
		"2000-02-29T12:00:00.000001Z", "2024-01-01T00:00:00.000000999Z",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		ts := time.Unix(rng.Int64N(400*365*86400)-100*365*86400, rng.Int64N(1e9)).UTC()
		layout := []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000000Z07:00"}[rng.IntN(4)]
		s := ts.Format(layout)
		if rng.IntN(4) == 0 { // damage one byte
			b := []byte(s)
			b[rng.IntN(len(b))] = "0123456789-:.TZx"[rng.IntN(16)]
			s = string(b)
		}
		cases = append(cases, s)
	}
	taken := 0
	for _, s := range cases {
		want, werr := time.Parse(time.RFC3339Nano, s)
		got, ok := parseUTCTimestamp(s)
		if !ok {
			continue
		}
		taken++
		if werr != nil {
			t.Fatalf("%q: fast path took it as %s, time.Parse refuses it: %v", s, got, werr)
		}
		if w := want.UTC().Truncate(time.Microsecond); !got.Equal(w) || got.Location() != time.UTC {
			t.Fatalf("%q: fast path %s, time.Parse %s", s, got, w)
		}
	}
	if taken < len(cases)/2 {
		t.Fatalf("the fast path took only %d of %d texts", taken, len(cases))
	}
}

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

// isCanonicalUUID agrees, on random and damaged UUIDs, with the plain
// definition: 36 bytes, hyphens at 8, 13, 18 and 23, 0-9 or a-f elsewhere.
func TestIsCanonicalUUIDAgreesWithItsDefinition(t *testing.T) {
	plain := func(s string) bool {
		if len(s) != 36 {
			return false
		}
		for i := range 36 {
			c := s[i]
			switch i {
			case 8, 13, 18, 23:
				if c != '-' {
					return false
				}
			default:
				if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
					return false
				}
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(3, 4))
	yes := 0
	for i := range 200000 {
		b := fmt.Appendf(nil, "%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
		switch i % 3 {
		case 1: // any byte value at one place
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		case 2: // a byte just outside a range
			edge := "/:`g-0F@\x7f\x80\xff"
			b[rng.IntN(len(b))] = edge[rng.IntN(len(edge))]
		}
		s := string(b)
		if got, want := isCanonicalUUID(s), plain(s); got != want {
			t.Fatalf("isCanonicalUUID(%q) = %v, want %v", s, got, want)
		}
		if plain(s) {
			yes++
		}
	}
	for _, s := range []string{"", "5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5", "5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5f0"} {
		if isCanonicalUUID(s) {
			t.Fatalf("%q taken as canonical", s)
		}
	}
	if yes < 60000 {
		t.Fatalf("only %d canonical UUIDs generated", yes)
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
