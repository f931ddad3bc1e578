package ingest

import (
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
