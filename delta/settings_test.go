package delta_test

import (
	"testing"
	"time"

	"github.com/sluice-data/sluice/delta"
)

// Retention properties read as Spark writes them; what is not a fixed
// length of time is refused rather than guessed.
func TestParseInterval(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"interval 1 week":          7 * 24 * time.Hour,
		"interval 7 days":          7 * 24 * time.Hour,
		"INTERVAL 30 DAYS":         30 * 24 * time.Hour,
		"interval 1 day 12 hours":  36 * time.Hour,
		"168 hours":                168 * time.Hour,
		"interval 90 minutes":      90 * time.Minute,
		"interval 1 millisecond":   time.Millisecond,
		"interval 0 seconds":       0,
		"interval 2 weeks 1 hour ": 2*7*24*time.Hour + time.Hour,
	} {
		got, err := delta.ParseInterval(s)
		if err != nil || got != want {
			t.Errorf("ParseInterval(%q) = %s, %v; want %s", s, got, err, want)
		}
	}
	for _, s := range []string{"", "interval", "interval 1 month", "interval 1 year", "interval -1 day", "interval x days", "7d"} {
		if got, err := delta.ParseInterval(s); err == nil {
			t.Errorf("ParseInterval(%q) = %s; want an error", s, got)
		}
	}
}
