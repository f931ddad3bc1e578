package lease_test

import (
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/lease"
)

// A lease ends a full TTL after this process first saw a generation, and
// every new generation (a renewal) starts the count again, whatever the
// times in between.
func TestLeaseEndsOnlyAfterAGenerationWasSeenForATTL(t *testing.T) {
	var j lease.Judge
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := time.Minute
	if exp, until := j.Expired("k", "e1", t0, ttl); exp || !until.Equal(t0.Add(ttl)) {
		t.Fatalf("first sight: expired %v until %v; want false, %v", exp, until, t0.Add(ttl))
	}
	if exp, _ := j.Expired("k", "e1", t0.Add(59*time.Second), ttl); exp {
		t.Error("expired before a full TTL")
	}
	if exp, until := j.Expired("k", "e2", t0.Add(59*time.Second), ttl); exp || !until.Equal(t0.Add(119*time.Second)) {
		t.Errorf("a renewal: expired %v until %v; want the count restarted", exp, until)
	}
	if exp, _ := j.Expired("k", "e2", t0.Add(119*time.Second), ttl); !exp {
		t.Error("not expired a full TTL after the renewal was first seen")
	}
	if got := j.Sighted("k"); got != "e2" {
		t.Errorf("Sighted = %q; want e2", got)
	}
	j.Forget("k")
	if got := j.Sighted("k"); got != "" {
		t.Errorf("Sighted after Forget = %q; want none", got)
	}
	if exp, _ := j.Expired("other", "e2", t0.Add(time.Hour), ttl); exp {
		t.Error("an object first seen now expired at once")
	}
}
