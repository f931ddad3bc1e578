package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/ingest"
	"github.com/sluice-data/sluice/internal/testenv"
)

// holdPartitions joins group as a member that takes its share of topic's
// partitions and never reads them, until the test ends; it returns once
// the member holds every partition (it joined first).
func holdPartitions(t *testing.T, addrs, topic, group string, partitions int) {
	t.Helper()
	assigned := make(chan int, 16)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.SessionTimeout(ingest.KafkaSessionTimeout),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			assigned <- len(a[topic])
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cl.Close() })
	timeout := time.After(30 * time.Second)
	for held := 0; held < partitions; {
		select {
		case n := <-assigned:
			held += n
		case <-timeout:
			t.Fatalf("the holding member got %d of %d partitions in 30s", held, partitions)
		}
	}
}

// A Kafka run whose commit may or may not have landed keeps its files: here
// the version lands, its answer is lost and it cannot be read back. The
// commit is the one a run makes while it waits for the group's other
// partitions, after which the run fails and cleans up; had the cleanup
// deleted the files, the landed version would name missing files.
func TestKafkaIngestOfUnknownOutcomeKeepsItsFiles(t *testing.T) {
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			const partitions, n, group = 4, 400, "lake"
			ctx := context.Background()
			addrs := kafkaCluster(t, partitions, "events")
			src := "kafka://" + addrs + "/events"
			loc := testenv.Location(t, kind)
			clean := newTable(t, loc)
			produce(t, producer(t, addrs, "events"), partitions, kafkaEvents(0, n))
			holdPartitions(t, addrs, "events", group, partitions)

			faults := testenv.LandedUnread(fmt.Sprintf("_sluice/versions/%020d.json", 2))
			st, err := cloud.OpenWithOptions(ctx, loc, cloud.Options{HTTPClient: faults.Client(), MaxAttempts: 2})
			if err != nil {
				t.Fatal(err)
			}
			flaky := catalog.NewTable(loc, st, catalog.Options{})
			defer flaky.Close()
			res, err := ingest.Run(ctx, flaky, src, ingest.Options{Group: group})
			if !errors.Is(err, cloud.ErrOutcomeUnknown) {
				t.Fatalf("Run: %+v, %v; want an error wrapping cloud.ErrOutcomeUnknown", res, err)
			}
			if !strings.Contains(err.Error(), "outcome unknown") || !strings.Contains(err.Error(), "kept") {
				t.Errorf("Run: %q; want it to say the outcome is unknown and the files kept", err)
			}
			if res.RowsWritten == 0 || res.RowsWritten == n {
				t.Fatalf("the run wrote %d rows; want some of the %d, its share of the group", res.RowsWritten, n)
			}

			// Read through a sound store: the version landed, every file
			// it names is there, with the rows the run read.
			m, err := clean.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Version != 2 {
				t.Fatalf("latest is version %d; want the run's, 2", m.Version)
			}
			files, err := clean.Files(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) == 0 {
				t.Fatal("version 2 has no files")
			}
			for _, f := range files {
				if _, err := clean.Store().Stat(ctx, f.Path); err != nil {
					t.Errorf("live file %s: %v", f.Path, err)
				}
			}
			ids := listIDs(t, clean)
			if int64(len(ids)) != res.RowsWritten || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("table holds %d ids; want the %d the run read, once each", len(ids), res.RowsWritten)
			}
		})
	}
}

// Landing-file ingest leaves the files of a failed commit in place, so an
// unknown outcome loses nothing there either.
func TestLandingIngestOfUnknownOutcomeKeepsItsFiles(t *testing.T) {
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			land := t.TempDir()
			put(t, land, "a.jsonl", events(0, 100, "2024-01-31"))
			put(t, land, "b.jsonl", events(100, 100, "2024-02-01"))
			loc := testenv.Location(t, kind)
			clean := newTable(t, loc)
			faults := testenv.LandedUnread(fmt.Sprintf("_sluice/versions/%020d.json", 2))
			st, err := cloud.OpenWithOptions(ctx, loc, cloud.Options{HTTPClient: faults.Client(), MaxAttempts: 2})
			if err != nil {
				t.Fatal(err)
			}
			flaky := catalog.NewTable(loc, st, catalog.Options{})
			defer flaky.Close()
			if _, err := ingest.Run(ctx, flaky, land, ingest.Options{}); !errors.Is(err, cloud.ErrOutcomeUnknown) {
				t.Fatalf("Run: %v; want an error wrapping cloud.ErrOutcomeUnknown", err)
			}
			m, err := clean.Latest(ctx)
			if err != nil || m.Version != 2 {
				t.Fatalf("latest: %v; want the run's version 2", err)
			}
			if got := listIDs(t, clean); !slices.Equal(got, seq(0, 200)) {
				t.Fatalf("table holds %d ids, want 0..199 once each", len(got))
			}
		})
	}
}
