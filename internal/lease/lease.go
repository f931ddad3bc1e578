// Package lease judges, without trusting any clock but this process's,
// whether the holder of a lease kept in an object store is dead. A holder
// renews its object (a run record, a work unit's claim) every third of
// its lease, which changes the object's ETag; another process that has
// seen one generation of the object unchanged for a full lease, timed on
// its own clock from when it first saw that generation, knows the holder
// stopped renewing. The time a holder writes into its object is its own
// clock, for people: comparing it with another machine's clock would let
// a clock running ahead steal a live lease, and one running behind delay
// a takeover by its skew.
//
// It imports nothing of sluice.
package lease

import (
	"sync"
	"time"
)

// Judge remembers, per leased object, the generation (ETag) this process
// last saw and when it first saw it. The zero value is ready to use; it is
// safe for concurrent use.
type Judge struct {
	mu   sync.Mutex
	seen map[string]sighting
}

// sighting is one generation of an object, as first seen.
type sighting struct {
	etag string
	at   time.Time
}

// Expired tells whether the object at key, read with etag at now (this
// process's clock), has outlived a lease of ttl: whether this process has
// seen that same generation for at least ttl. until is when the lease
// ends if the object stays unchanged.
func (j *Judge) Expired(key, etag string, now time.Time, ttl time.Duration) (expired bool, until time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	s, ok := j.seen[key]
	if !ok || s.etag != etag {
		if j.seen == nil {
			j.seen = map[string]sighting{}
		}
		s = sighting{etag: etag, at: now}
		j.seen[key] = s
	}
	until = s.at.Add(ttl)
	return !now.Before(until), until
}

// Sighted returns the generation of key this process last saw ("" when
// none).
func (j *Judge) Sighted(key string) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seen[key].etag
}

// Forget drops what this process saw of key: it took the lease, or saw
// the object final.
func (j *Judge) Forget(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.seen, key)
}
