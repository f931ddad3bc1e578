package catalog

import (
	"testing"
	"time"
)

// The cached route of a row equals the one computed afresh, on both sides
// of midnight and of the epoch, whether it comes from the cache, from the
// memo of the last day or neither, and when a day comes back.
func TestPartitionerMatchesPartitionOf(t *testing.T) {
	schema, _ := ParseSchema("id:int64,at:timestamp?")
	spec, err := ParsePartitionSpec("day(at)", schema)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartitioner(schema, spec)
	ats := []any{
		time.Date(2024, 1, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 31, 23, 0, 0, 0, time.FixedZone("UTC-3", -3*3600)), // 2024-02-01 UTC
		nil,
	}
	for _, at := range append(ats, ats...) {
		row := []any{int64(1), at}
		for range 3 { // then from the cache, then from the memo
			got, gotVals, err := p.Of(row)
			want, wantVals, werr := partitionOfRow(schema, spec, row)
			if err != nil || werr != nil {
				t.Fatalf("%v: %v / %v", at, err, werr)
			}
			if got != want || (gotVals["date"] == nil) != (wantVals["date"] == nil) ||
				(got != "date="+HiveDefaultPartition && *gotVals["date"] != *wantVals["date"]) {
				t.Fatalf("%v: partitioner says %q, PartitionOf %q", at, got, want)
			}
		}
	}
}
