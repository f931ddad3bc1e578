package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Interval is one run's data interval, [Start, End): from the schedule's
// previous tick to the tick that runs it.
type Interval struct {
	Start, End time.Time
}

// Key names the interval in run records: its start, UTC, to the second
// (20260301T020000Z), sortable and safe in every store's keys.
func (iv Interval) Key() string { return iv.Start.UTC().Format(keyLayout) }

const keyLayout = "20060102T150405Z"

func (iv Interval) String() string {
	return iv.Start.Format(time.RFC3339) + "/" + iv.End.Format(time.RFC3339)
}

var specParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a job's trigger: robfig/cron's parse of the spec, with
// sluice's daylight-saving rules for Next. robfig's own Next skips a tick
// that falls in the hour spring-forward removes and runs one in the hour
// fall-back repeats twice. Here a schedule walks the zone's wall clock:
// a wall-clock tick that does not exist runs at the first instant after
// the jump; one that exists twice runs once, at its first occurrence;
// so a daily job runs exactly once per calendar day.
type Schedule struct {
	spec  *cron.SpecSchedule // in UTC: matched against wall-clock times
	every time.Duration      // @every: a constant delay, no wall clock
	loc   *time.Location
	// zoneGiven: the spec named loc (CRON_TZ=); else it is the local zone.
	zoneGiven bool
}

// parseSpec is robfig's parse, less its panics: a zone prefix with no
// schedule after it ("TZ=", which robfig slices out of range) is an
// error, as is any other panic of the parser.
func parseSpec(spec string) (s cron.Schedule, err error) {
	if (strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=")) && !strings.Contains(spec, " ") {
		return nil, fmt.Errorf("%q names a zone and no schedule after it (CRON_TZ=Europe/Berlin 0 6 * * *)", spec)
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%q is not a schedule the parser can read (%v)", spec, r)
		}
	}()
	return specParser.Parse(spec)
}

// scheduleProbe is where ParseSchedule looks for a spec's first ticks: a
// leap year's start, so a February 29 job fires within robfig's reach.
var scheduleProbe = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseSchedule parses a robfig/cron spec: five fields or six with
// seconds first, a descriptor (@daily, @every 5m), optionally prefixed
// by CRON_TZ=Zone (or TZ=Zone).
func ParseSchedule(spec string) (*Schedule, error) {
	s, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	switch s := s.(type) {
	case *cron.SpecSchedule:
		utc := *s
		utc.Location = time.UTC
		// robfig finds the next match within five years or none: a spec
		// with no tick in five years (0 0 30 2 *: February has no 30th)
		// never fires, and its data intervals would be empty.
		if first := utc.Next(scheduleProbe); first.IsZero() || utc.Next(first).IsZero() {
			return nil, fmt.Errorf("it never fires: no date matches it")
		}
		given := strings.HasPrefix(strings.TrimSpace(spec), "CRON_TZ=") || strings.HasPrefix(strings.TrimSpace(spec), "TZ=")
		loc := s.Location
		if !given {
			loc = hostZone()
		}
		return &Schedule{spec: &utc, loc: loc, zoneGiven: given}, nil
	case cron.ConstantDelaySchedule:
		return &Schedule{every: s.Delay, loc: time.UTC}, nil
	}
	return nil, fmt.Errorf("unsupported schedule %q", spec)
}

// Location is the schedule's time zone: CRON_TZ=, else the host's,
// named (see hostZone). A job counts its days (a rollup's) in it too.
func (s *Schedule) Location() *time.Location { return s.loc }

// ZoneGiven tells whether the spec named its time zone (CRON_TZ= or TZ=).
func (s *Schedule) ZoneGiven() bool { return s.zoneGiven }

// wall is t's wall-clock reading in loc, as a UTC time.
func wall(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// instant maps a wall-clock reading in loc to the instant it names: the
// first of two on a repeated hour; the end of the jump for a reading the
// jump skipped.
func instant(w time.Time, loc *time.Location) time.Time {
	u := w.Unix()
	var best time.Time
	for _, probe := range []int64{u - 86400, u + 86400} {
		_, off := time.Unix(probe, 0).In(loc).Zone()
		cand := time.Unix(u-int64(off), int64(w.Nanosecond())).In(loc)
		if _, o := cand.Zone(); o == off && (best.IsZero() || cand.Before(best)) {
			best = cand
		}
	}
	if !best.IsZero() {
		return best
	}
	// Skipped: read with the earlier offset, the reading lands past the
	// jump; the zone then in force began at the jump.
	_, off := time.Unix(u-86400, 0).In(loc).Zone()
	start, _ := time.Unix(u-int64(off), 0).In(loc).ZoneBounds()
	return start
}

// Next returns the first tick strictly after t, or the zero time if the
// schedule never fires again.
func (s *Schedule) Next(t time.Time) time.Time {
	if s.every > 0 {
		// Aligned to a fixed origin, not to when a process started: every
		// instance on a lake agrees on the intervals.
		return t.Truncate(s.every).Add(s.every)
	}
	w := wall(t, s.loc)
	for range 1000 {
		w = s.spec.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		if i := instant(w, s.loc); i.After(t) {
			return i
		}
	}
	return time.Time{}
}

// Prev returns the last tick strictly before t (zero if none within
// about five years).
func (s *Schedule) Prev(t time.Time) time.Time {
	if s.every > 0 {
		p := t.Truncate(s.every)
		if p.Equal(t) {
			p = p.Add(-s.every)
		}
		return p
	}
	for back := time.Second; back < 5*366*24*time.Hour; back *= 2 {
		g := s.Next(t.Add(-back))
		if g.IsZero() || !g.Before(t) {
			continue
		}
		for {
			n := s.Next(g)
			if n.IsZero() || !n.Before(t) {
				return g
			}
			g = n
		}
	}
	return time.Time{}
}

// IntervalEnding returns the interval that the tick at end runs: from
// the previous tick to end.
func (s *Schedule) IntervalEnding(end time.Time) Interval {
	return Interval{Start: s.Prev(end), End: end}
}

// Latest returns the last interval complete at t: the one whose tick is
// at or before t.
func (s *Schedule) Latest(t time.Time) Interval {
	return s.IntervalEnding(s.Prev(t.Add(time.Nanosecond)))
}

// Intervals returns the intervals that start in [from, to), in order.
func (s *Schedule) Intervals(from, to time.Time) []Interval {
	var out []Interval
	start := s.Next(from.Add(-time.Nanosecond))
	for !start.IsZero() && start.Before(to) {
		end := s.Next(start)
		if end.IsZero() {
			break
		}
		out = append(out, Interval{Start: start, End: end})
		start = end
	}
	return out
}

// String names the schedule for messages.
func (s *Schedule) String() string {
	if s.every > 0 {
		return "@every " + s.every.String()
	}
	return strings.TrimSpace("in " + s.loc.String())
}
