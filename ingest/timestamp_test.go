package ingest

import (
	"math/rand/v2"
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
