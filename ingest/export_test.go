package ingest

import "time"

// SetDedupClock makes the dedup window end at now() instead of the wall
// clock's present, until the returned function restores it.
func SetDedupClock(now func() time.Time) (restore func()) {
	old := dedupNow
	dedupNow = now
	return func() { dedupNow = old }
}

// Every test's arenas poison what they release: a row read after its
// arena was released (and before it was reused) reads as garbage, which
// the tests' checks of the rows written then catch.
func init() { poisonArenas = true }

// LiveArenas is how many arenas are held: handed out and not released.
func LiveArenas() int64 { return liveArenas.Load() }
