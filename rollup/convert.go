package rollup

import (
	"encoding/hex"

	"github.com/parquet-go/parquet-go/deprecated"
)

// The conversions below are the ones pqio applies when it decodes a value
// into a Go value; rollup needs them on raw column values, in its typed
// loops, and pqio keeps them unexported.

// floorDiv divides rounding toward negative infinity, as time units are
// converted (a nanosecond before the epoch is in the microsecond before
// it).
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// julianUnixEpoch is the Julian day number of 1970-01-01.
const julianUnixEpoch = 2440588

// int96Micros converts an INT96 timestamp (Spark's legacy encoding: 8
// bytes of nanoseconds of the day, then 4 bytes of Julian day, little
// endian) to microseconds since the Unix epoch.
func int96Micros(i deprecated.Int96) int64 {
	nanos := int64(uint64(i[1])<<32 | uint64(i[0]))
	days := int64(i[2]) - julianUnixEpoch
	return days*86400_000_000 + floorDiv(nanos, 1000)
}

// formatUUID renders 16 bytes (Parquet's UUID logical type) as the
// canonical 8-4-4-4-12 text; other lengths as plain hex.
func formatUUID(b []byte) string {
	if len(b) != 16 {
		return hex.EncodeToString(b)
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
