package sparklog

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/testenv"
)

// A log as a sink leaves it after a compaction and its cleanup: the
// compaction 2.compact holds the state of batches 0 to 2 (their own files
// gone), batch 3 adds a file and deletes one of the compaction's, batch 4
// adds one. The live files are those the state adds and does not delete,
// keyed under the folder, with their Hive partition values decoded as
// Spark escapes them, on every store. The writer's hidden checksum and
// temporary files in the log folder are no batch files.
func TestSnapshotReplaysCompactionAndBatches(t *testing.T) {
	const (
		a = "day=2024-01-01/part-00000-a.c000.snappy.parquet"
		b = "day=2024-01-01/part-00001-b.c000.snappy.parquet"
		c = "day=2024-01-02/part-00000-c.c000.snappy.parquet"
		d = "day=2024-01-02 10%3A00/part-00000-d d.c000.snappy.parquet" // a space, an escaped ':'
		e = "day=__HIVE_DEFAULT_PARTITION__/part-00000-e.c000.snappy.parquet"
	)
	for kind, loc := range testenv.Locations(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t, loc)
			uri := func(key string) string { return sparkURI(t, loc, key) }
			putText(t, st, "_spark_metadata/2.compact", batchFile(
				logLine(t, uri(a), 100, "add"), logLine(t, uri(b), 200, "add"), logLine(t, uri(c), 300, "add")))
			putText(t, st, "_spark_metadata/3", batchFile(logLine(t, uri(d), 400, "add"), logLine(t, uri(a), 100, "delete")))
			putText(t, st, "_spark_metadata/4", batchFile(logLine(t, uri(e), 500, "add")))
			putText(t, st, "_spark_metadata/.4.crc", "crc")
			putText(t, st, "_spark_metadata/.5.1f2e3d.tmp", "v1\n{")
			putText(t, st, "_spark_metadata/05", "v1\n{")

			if ok, err := IsSink(ctx, st); !ok || err != nil {
				t.Fatalf("IsSink: %v, %v; want true", ok, err)
			}
			for _, c := range []struct {
				batch int64
				want  []string
			}{{-1, []string{b, c, d, e}}, {4, []string{b, c, d, e}}, {3, []string{b, c, d}}, {2, []string{a, b, c}}} {
				s, err := New(st).Snapshot(ctx, c.batch)
				if err != nil {
					t.Fatalf("batch %d: %v", c.batch, err)
				}
				l, err := s.Listed()
				if err != nil {
					t.Fatalf("batch %d: %v", c.batch, err)
				}
				var got []string
				for _, f := range l.Files {
					got = append(got, f.Key)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("batch %d: keys %q, want %q", c.batch, got, c.want)
				}
				wantBatch := c.batch
				if wantBatch < 0 {
					wantBatch = 4
				}
				if s.Batch != wantBatch {
					t.Errorf("batch %d: snapshot at batch %d, want %d", c.batch, s.Batch, wantBatch)
				}
				if !slices.Equal(l.PartitionKeys, []string{"day"}) {
					t.Errorf("batch %d: partition keys %q, want [day]", c.batch, l.PartitionKeys)
				}
			}
			s, err := New(st).Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			l, err := s.Listed()
			if err != nil {
				t.Fatal(err)
			}
			wantVals := []*string{ptr("2024-01-01"), ptr("2024-01-02"), ptr("2024-01-02 10:00"), nil}
			wantSizes := []int64{200, 300, 400, 500}
			for i, f := range l.Files {
				if got := f.PartitionValues["day"]; !sameValue(got, wantVals[i]) {
					t.Errorf("%s: day %v, want %v", f.Key, deref(got), deref(wantVals[i]))
				}
				if f.Size != wantSizes[i] {
					t.Errorf("%s: size %d, want %d", f.Key, f.Size, wantSizes[i])
				}
			}
			if l.Log != "the Spark sink log at batch 4" {
				t.Errorf("Log %q", l.Log)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func sameValue(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func deref(p *string) string {
	if p == nil {
		return "NULL"
	}
	return *p
}

// A log with no compaction is read from batch 0; a plain batch missing
// between the newest compaction (or batch 0) and the batch read fails
// with ErrMissingBatch, naming the file; so does a batch newer than the
// newest.
func TestSnapshotFailsOnAMissingBatch(t *testing.T) {
	ctx := context.Background()
	file := func(key string) string { return logLine(t, "file:///out/"+key, 1, "add") }
	for name, c := range map[string]struct {
		files map[string]string
		batch int64
		want  string // in the error
	}{
		"after a compaction": {map[string]string{"2.compact": batchFile(file("a.parquet")), "4": batchFile(file("b.parquet"))}, -1, "_spark_metadata/3"},
		"with no compaction": {map[string]string{"1": batchFile(file("a.parquet")), "2": batchFile(file("b.parquet"))}, -1, "_spark_metadata/0"},
		"before the oldest":  {map[string]string{"2.compact": batchFile(file("a.parquet")), "3": batchFile(file("b.parquet"))}, 1, "_spark_metadata/0"},
		"newer than newest":  {map[string]string{"0": batchFile(file("a.parquet"))}, 7, "the newest batch"},
	} {
		t.Run(name, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			for k, text := range c.files {
				putText(t, st, MetadataDir+k, text)
			}
			_, err := New(st).Snapshot(ctx, c.batch)
			if !errors.Is(err, ErrMissingBatch) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Snapshot: %v; want %v naming %q", err, ErrMissingBatch, c.want)
			}
		})
	}
	// With every plain batch there, no compaction is needed.
	st := openStore(t, t.TempDir())
	putText(t, st, MetadataDir+"0", batchFile(file("a.parquet")))
	putText(t, st, MetadataDir+"1", batchFile(file("b.parquet")))
	s, err := New(st).Snapshot(ctx, -1)
	if err != nil || len(s.Files) != 2 || s.Batch != 1 {
		t.Fatalf("Snapshot of batches 0 and 1: %+v, %v; want 2 files at batch 1", s, err)
	}
}

// A folder whose _spark_metadata/ holds no batch file is no sink's output.
func TestIsSinkWantsABatchFile(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	putText(t, st, "part-0.parquet", "x")
	putText(t, st, MetadataDir+".0.crc", "crc")
	putText(t, st, MetadataDir+"0.tmp", "v1")
	if ok, err := IsSink(ctx, st); ok || err != nil {
		t.Fatalf("IsSink without a batch file: %v, %v; want false", ok, err)
	}
	if _, err := New(st).Snapshot(ctx, -1); !errors.Is(err, ErrNotSink) {
		t.Fatalf("Snapshot without a batch file: %v; want %v", err, ErrNotSink)
	}
	putText(t, st, MetadataDir+"0", "v1")
	if ok, err := IsSink(ctx, st); !ok || err != nil {
		t.Fatalf("IsSink with batch 0: %v, %v; want true", ok, err)
	}
}
