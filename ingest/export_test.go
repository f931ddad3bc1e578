package ingest

import "time"

// SetDedupClock makes the dedup window end at now() instead of the wall
// clock's present, until the returned function restores it.
func SetDedupClock(now func() time.Time) (restore func()) {
	old := dedupNow
	dedupNow = now
	return func() { dedupNow = old }
}
