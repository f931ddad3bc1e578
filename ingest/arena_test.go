package ingest

import (
	"strings"
	"testing"
	"time"
)

// What the test suite relies on: a released arena's strings and values
// read as garbage, so that a row used after its release fails the checks
// of the rows written.
func TestArenaPoisonsWhatItReleases(t *testing.T) {
	p := &arenaPool{poison: true}
	a := p.get()
	s := a.slab.str([]byte("6f1c3b9e-2a4d-4b8e-9c1f-000000000042"))
	n := a.box.i64(42)
	ts := a.box.time(time.Unix(1700000000, 0).UTC())
	a.release()
	if s != strings.Repeat("\xaa", len(s)) {
		t.Errorf("string after release: %q", s)
	}
	if n.(int64) != 0 || !ts.(time.Time).IsZero() {
		t.Errorf("values after release: %v, %v", n, ts)
	}
}

// An arena is reused once released, its chunks cut again from the start;
// it is not while a sink holds it.
func TestArenaIsReusedOnlyWhenReleased(t *testing.T) {
	p := &arenaPool{}
	a := p.get()
	first := a.slab.str([]byte("first"))
	a.hold() // a sink batch took a row
	a.release()
	if b := p.get(); b == a {
		t.Fatal("an arena a sink holds was handed out again")
	}
	a.release()
	b := p.get()
	if b != a {
		t.Fatal("a released arena was not reused")
	}
	if again := b.slab.str([]byte("again")); again != "again" || first != "again" {
		t.Fatalf("the reused slab does not cut its first chunk again: %q, %q", first, again)
	}
}

// Releasing an arena more often than it was held is a bug that would hand
// out rows still buffered: it panics rather than go on.
func TestArenaReleasedTwicePanics(t *testing.T) {
	p := &arenaPool{}
	a := p.get()
	a.release()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	a.release()
}
