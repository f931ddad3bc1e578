package ingest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// Canonical UUIDs are kept as they are; every other form is parsed and
// rewritten, so a table never holds two spellings of one UUID.
func TestUUIDsAreStoredCanonical(t *testing.T) {
	schemaCol := &converter{col: catalog.Column{Name: "event_id", Type: catalog.Type{Kind: catalog.KindUUID}}}
	for in, want := range map[string]string{
		"5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5f":          "5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5f",
		"5F0C2B1E-8D3A-4C1B-9E2F-0A1B2C3D4E5F":          "5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5f",
		"{5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5f}":        "5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5f",
		"urn:uuid:5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5f": "5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5f",
	} {
		got, err := schemaCol.fromText(in)
		if err != nil || got != want {
			t.Errorf("%q: got %v, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"cat /etc/passwd", "5f0c2b1e-8d3a-4c1b-9e2f-0a1b2c3d4e5g", "5f0c2b1e8d3a4c1b9e2f0a1b2c3d4e5f00"} {
		if _, err := schemaCol.fromText(bad); err == nil {
			t.Errorf("%q accepted as a UUID", bad)
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
