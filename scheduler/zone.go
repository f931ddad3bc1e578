package scheduler

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// hostZone returns the host's time zone by its IANA name, which a cron
// spec without CRON_TZ ticks in: a job then has one named zone, which
// its ticks and its days (a rollup's) are both counted in, and which
// means the same recorded in a table as read by a later run. Go's
// time.Local is named "Local" whatever it is; the name comes from TZ,
// else from where /etc/localtime points, else from /etc/timezone. A host
// whose zone has none of them keeps time.Local.
func hostZone() *time.Location {
	if tz, ok := os.LookupEnv("TZ"); ok {
		name := strings.TrimPrefix(tz, ":")
		if name == "" {
			return time.UTC // TZ set empty means UTC, as Go reads it
		}
		if loc, err := time.LoadLocation(name); err == nil {
			return loc
		}
		return time.Local
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(filepath.ToSlash(target), "zoneinfo/"); ok {
			if loc, err := time.LoadLocation(name); err == nil {
				return loc
			}
		}
	}
	if b, err := os.ReadFile("/etc/timezone"); err == nil {
		if loc, err := time.LoadLocation(strings.TrimSpace(string(b))); err == nil {
			return loc
		}
	}
	if _, off := time.Now().In(time.Local).Zone(); off == 0 && time.Local.String() == "UTC" {
		return time.UTC
	}
	return time.Local
}
