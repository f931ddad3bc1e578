package delta

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The table properties (metaData configuration) that say how a table's
// log and files are kept, and their defaults as Spark's DeltaConfigs
// give them.
const (
	// PropCheckpointInterval is how many commits apart checkpoints are.
	PropCheckpointInterval = "delta.checkpointInterval"
	// PropDeletedFileRetention is how long a removed file stays
	// readable by a reader of an older version: vacuum keeps it so long.
	PropDeletedFileRetention = "delta.deletedFileRetentionDuration"
	// PropLogRetention is how long log entries stay before metadata
	// cleanup may delete them (behind a checkpoint).
	PropLogRetention = "delta.logRetentionDuration"
	// PropExpiredLogCleanup, "false", turns metadata cleanup off.
	PropExpiredLogCleanup = "delta.enableExpiredLogCleanup"
	// PropCheckpointPolicy, "v2", asks for V2 checkpoints only.
	PropCheckpointPolicy = "delta.checkpointPolicy"
)

const (
	defaultCheckpointInterval   = 10
	defaultDeletedFileRetention = 7 * 24 * time.Hour
	defaultLogRetention         = 30 * 24 * time.Hour
)

// checkpointInterval is the table's delta.checkpointInterval, 10 when
// unset or not a positive number.
func checkpointInterval(conf map[string]string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(conf[PropCheckpointInterval]), 10, 64)
	if err != nil || n <= 0 {
		return defaultCheckpointInterval
	}
	return n
}

// retention is the duration the table's property key says, or def when
// it says none. A value that does not parse is an error naming it: a
// vacuum must not guess how long the user meant files to stay.
func retention(conf map[string]string, key string, def time.Duration) (time.Duration, error) {
	s, ok := conf[key]
	if !ok || strings.TrimSpace(s) == "" {
		return def, nil
	}
	d, err := ParseInterval(s)
	if err != nil {
		return 0, fmt.Errorf("table property %s: %w", key, err)
	}
	return d, nil
}

// intervalUnits are the units of Spark's calendar interval strings, as
// the retention properties spell them ("interval 1 week").
var intervalUnits = map[string]time.Duration{
	"nanosecond": time.Nanosecond, "microsecond": time.Microsecond, "millisecond": time.Millisecond,
	"second": time.Second, "minute": time.Minute, "hour": time.Hour,
	"day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
}

// ParseInterval parses a duration as Delta's table properties write it:
// Spark's interval syntax, "interval 7 days", "interval 1 week 2 hours",
// with or without the word "interval", units singular or plural. Months
// and years, whose length varies, are refused.
func ParseInterval(s string) (time.Duration, error) {
	fields := strings.Fields(strings.ToLower(s))
	if len(fields) > 0 && fields[0] == "interval" {
		fields = fields[1:]
	}
	if len(fields) == 0 || len(fields)%2 != 0 {
		return 0, fmt.Errorf("%q is not an interval like \"interval 7 days\"", s)
	}
	var d time.Duration
	for i := 0; i < len(fields); i += 2 {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q: %q is not a count", s, fields[i])
		}
		unit, ok := intervalUnits[strings.TrimSuffix(fields[i+1], "s")]
		if !ok {
			return 0, fmt.Errorf("%q: unit %q is not one of weeks, days, hours, minutes, seconds, milliseconds, microseconds, nanoseconds", s, fields[i+1])
		}
		d += time.Duration(n) * unit
	}
	return d, nil
}
