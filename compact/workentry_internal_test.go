package compact

import (
	"encoding/json"
	"testing"
	"time"
)

// A manifest written before plans carried their time in WorkCheckpoint
// lists bare units; it still reads, and its plan's age comes from the id.
func TestWorkCheckpointReadsBothForms(t *testing.T) {
	var cp map[string]workEntry
	raw := `{"20261201T020000Z-0a1b2c3d": ["u00001", "u00002"], "nightly-7": {"created": "2026-12-05T02:00:00Z", "units": ["u00003"]}}`
	if err := json.Unmarshal([]byte(raw), &cp); err != nil {
		t.Fatal(err)
	}
	old, named := cp["20261201T020000Z-0a1b2c3d"], cp["nightly-7"]
	if len(old.Units) != 2 || len(named.Units) != 1 {
		t.Fatalf("units %v and %v; want 2 and 1", old.Units, named.Units)
	}
	if made, ok := old.made("20261201T020000Z-0a1b2c3d"); !ok || !made.Equal(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("bare entry made %v (%v); want its id's time", made, ok)
	}
	if made, ok := named.made("nightly-7"); !ok || !made.Equal(time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("named entry made %v (%v); want its recorded time", made, ok)
	}
}
