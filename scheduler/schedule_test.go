package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load zone %s: %v", name, err)
	}
	return loc
}

// ticks lists a schedule's ticks in [from, to), as the zone's wall clock.
func ticks(s *Schedule, from, to time.Time) []string {
	var out []string
	for t := s.Next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(to); t = s.Next(t) {
		out = append(out, t.In(s.Location()).Format("01-02 15:04 MST"))
	}
	return out
}

func TestScheduleDaylightSaving(t *testing.T) {
	cases := map[string]struct {
		spec     string
		zone     string
		from, to string // wall-clock days in the zone
		want     string
	}{
		"New York spring-forward: the skipped 02:30 runs at 03:00, the jump": {
			"CRON_TZ=America/New_York 30 2 * * *", "America/New_York", "2026-03-07", "2026-03-10",
			"03-07 02:30 EST,03-08 03:00 EDT,03-09 02:30 EDT"},
		"New York fall-back: the repeated 01:30 runs once, at its first occurrence": {
			"CRON_TZ=America/New_York 30 1 * * *", "America/New_York", "2026-10-31", "2026-11-03",
			"10-31 01:30 EDT,11-01 01:30 EDT,11-02 01:30 EST"},
		"New York fall-back: a half-hourly job does not repeat the hour": {
			"CRON_TZ=America/New_York */30 0-2 1 11 *", "America/New_York", "2026-11-01", "2026-11-02",
			"11-01 00:00 EDT,11-01 00:30 EDT,11-01 01:00 EDT,11-01 01:30 EDT,11-01 02:00 EST,11-01 02:30 EST"},
		"New York spring-forward: every quarter hour of the gap runs once, at the jump": {
			"CRON_TZ=America/New_York */15 1-3 8 3 *", "America/New_York", "2026-03-08", "2026-03-09",
			"03-08 01:00 EST,03-08 01:15 EST,03-08 01:30 EST,03-08 01:45 EST,03-08 03:00 EDT,03-08 03:15 EDT,03-08 03:30 EDT,03-08 03:45 EDT"},
		"London spring-forward: 01:00 does not exist and runs at 02:00 BST": {
			"CRON_TZ=Europe/London 0 1 * * *", "Europe/London", "2026-03-28", "2026-03-31",
			"03-28 01:00 GMT,03-29 02:00 BST,03-30 01:00 BST"},
		"London fall-back: 01:15 runs once": {
			"CRON_TZ=Europe/London 15 1 * * *", "Europe/London", "2026-10-24", "2026-10-27",
			"10-24 01:15 BST,10-25 01:15 BST,10-26 01:15 GMT"},
		"Lord Howe spring-forward by 30 minutes: 02:10 runs at 02:30": {
			"CRON_TZ=Australia/Lord_Howe 10 2 * * *", "Australia/Lord_Howe", "2026-10-03", "2026-10-06",
			"10-03 02:10 +1030,10-04 02:30 +11,10-05 02:10 +11"},
		"Lord Howe fall-back by 30 minutes: 01:45 runs once": {
			"CRON_TZ=Australia/Lord_Howe 45 1 * * *", "Australia/Lord_Howe", "2026-04-04", "2026-04-07",
			"04-04 01:45 +11,04-05 01:45 +11,04-06 01:45 +1030"},
		"seconds field and a descriptor": {
			"CRON_TZ=Europe/London @daily", "Europe/London", "2026-03-28", "2026-03-31",
			"03-28 00:00 GMT,03-29 00:00 GMT,03-30 00:00 BST"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := ParseSchedule(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			loc := mustZone(t, c.zone)
			from, _ := time.ParseInLocation(time.DateOnly, c.from, loc)
			to, _ := time.ParseInLocation(time.DateOnly, c.to, loc)
			if got := strings.Join(ticks(s, from, to), ","); got != c.want {
				t.Errorf("ticks\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestScheduleDailyOncePerDay walks every minute-of-day daily schedule
// through both changes of three zones: each calendar day gets exactly one
// tick, and intervals chain with no gap or overlap.
func TestScheduleDailyOncePerDay(t *testing.T) {
	zones := map[string][2]string{
		"America/New_York":    {"2026-03-08", "2026-11-01"},
		"Europe/London":       {"2026-03-29", "2026-10-25"},
		"Australia/Lord_Howe": {"2026-04-05", "2026-10-04"},
	}
	for zone, days := range zones {
		loc := mustZone(t, zone)
		for _, day := range days {
			d, _ := time.ParseInLocation(time.DateOnly, day, loc)
			from, to := d.AddDate(0, 0, -2), d.AddDate(0, 0, 3)
			for minute := 0; minute < 24*60; minute += 5 {
				spec := fmt.Sprintf("CRON_TZ=%s %d %d * * *", zone, minute%60, minute/60)
				s, err := ParseSchedule(spec)
				if err != nil {
					t.Fatal(err)
				}
				perDay := map[string]int{}
				ivs := s.Intervals(from, to)
				for i, iv := range ivs {
					perDay[iv.Start.In(loc).Format(time.DateOnly)]++
					if i > 0 && !ivs[i-1].End.Equal(iv.Start) {
						t.Errorf("%s: interval %s does not start where %s ended", spec, iv, ivs[i-1])
					}
					if got := s.IntervalEnding(iv.End); !got.Start.Equal(iv.Start) {
						t.Errorf("%s: IntervalEnding(%s) starts %s, want %s", spec, iv.End, got.Start, iv.Start)
					}
				}
				if len(perDay) != 5 {
					t.Errorf("%s around %s: ticks on %d days, want 5: %v", spec, day, len(perDay), perDay)
				}
				for k, n := range perDay {
					if n != 1 {
						t.Errorf("%s: %d ticks on %s, want 1", spec, n, k)
					}
				}
			}
		}
	}
}

func TestScheduleEveryIsAligned(t *testing.T) {
	s, err := ParseSchedule("@every 5m")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 10, 7, 3, 0, time.UTC)
	if got, want := s.Next(at), time.Date(2026, 1, 1, 10, 10, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next = %s, want %s", got, want)
	}
	iv := s.Latest(at)
	if !iv.Start.Equal(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)) || !iv.End.Equal(time.Date(2026, 1, 1, 10, 5, 0, 0, time.UTC)) {
		t.Errorf("Latest = %s", iv)
	}
}

func TestFakeClockSleep(t *testing.T) {
	c := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	done := make(chan error)
	go func() { done <- sleep(context.Background(), c, time.Minute) }()
	if err := c.WaitTimers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A schedule no date matches never fires: it is refused when parsed (so
// validate names it), where before sluice run executed a zero-length
// interval in year 1 and reported success. One that fires rarely (a
// February 29 job) is kept.
func TestScheduleThatNeverFiresIsRefused(t *testing.T) {
	for _, spec := range []string{"0 0 30 2 *", "0 0 31 4 *", "CRON_TZ=Europe/Paris 0 0 31 11 *", "0 0 0 30 2 *"} {
		if _, err := ParseSchedule(spec); err == nil || !strings.Contains(err.Error(), "never fires") {
			t.Errorf("ParseSchedule(%q) = %v; want it refused: never fires", spec, err)
		}
	}
	s, err := ParseSchedule("0 0 29 2 *")
	if err != nil {
		t.Fatalf("a leap-day schedule: %v", err)
	}
	if iv := s.Latest(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)); iv.Start.Year() != 2020 || iv.End.Year() != 2024 {
		t.Errorf("leap-day schedule's latest interval %s, want 2020-02-29 to 2024-02-29", iv)
	}
}

// A spec without CRON_TZ ticks in the host's zone, by its name (Go calls
// it "Local" whatever it is), so a job's days are counted in the same
// named zone and a name recorded in a table means the same later.
func TestScheduleWithoutZoneTakesTheHostsByName(t *testing.T) {
	for tz, want := range map[string]string{"America/New_York": "America/New_York", ":Europe/Paris": "Europe/Paris", "": "UTC"} {
		t.Setenv("TZ", tz)
		s, err := ParseSchedule("0 2 * * *")
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Location().String(); got != want || s.ZoneGiven() {
			t.Errorf("TZ=%q: zone %q (given %v), want %q, not given", tz, got, s.ZoneGiven(), want)
		}
	}
}

// A zone with no schedule after it ("TZ=", "CRON_TZ=Europe/Paris") made
// robfig's parser panic, taking validate down with it; it is refused as
// a schedule that is no schedule.
func TestScheduleOfAZoneAloneIsRefused(t *testing.T) {
	for _, spec := range []string{"TZ=", "CRON_TZ=", "CRON_TZ=Europe/Paris", "TZ=UTC"} {
		if _, err := ParseSchedule(spec); err == nil || !strings.Contains(err.Error(), "no schedule after it") {
			t.Errorf("ParseSchedule(%q) = %v; want it refused: no schedule after the zone", spec, err)
		}
	}
}
