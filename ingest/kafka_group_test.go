package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/ingest"
)

// Balance: two instances in one group over 12 partitions each take 6, and
// together ingest every record once; the group's offsets, which Kafka
// tools read for lag, are at the end of every partition afterwards.
func TestKafkaGroupBalance(t *testing.T) {
	const partitions, n, group = 12, 2400, "lake-events"
	addrs := kafkaCluster(t, partitions, "events")
	src := "kafka://" + addrs + "/events"
	loc := filepath.Join(t.TempDir(), "events")
	tb := newTable(t, loc)
	p := producer(t, addrs, "events")
	produce(t, p, partitions, kafkaEvents(0, n))

	// Neither instance reads before the group has given each its half:
	// otherwise the first to join could read everything alone, or finish
	// its half and leave before the other got its own.
	var mu sync.Mutex
	halves := map[string]bool{}
	defer ingest.SetKafkaReadGate(func(ps []int32) bool {
		mu.Lock()
		defer mu.Unlock()
		if len(ps) == partitions/2 {
			halves[fmt.Sprint(ps)] = true
		}
		return len(halves) == 2
	})()
	var wg sync.WaitGroup
	results := make([]ingest.Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			other, err := catalog.Open(context.Background(), loc, catalog.Options{})
			if err != nil {
				errs[i] = err
				return
			}
			defer other.Close()
			results[i], errs[i] = ingest.Run(context.Background(), other, src, ingest.Options{Group: group})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var all []int32
	var records int64
	for i, r := range results {
		reconcile(t, r)
		if len(r.KafkaPartitions) != partitions/2 {
			t.Errorf("instance %d took partitions %v, want 6 of 12", i, r.KafkaPartitions)
		}
		all = append(all, r.KafkaPartitions...)
		records += r.RecordsIn
	}
	slices.Sort(all)
	if want := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(all, want) {
		t.Errorf("together the instances took partitions %v, want each of 0..11 once", all)
	}
	if records != n {
		t.Errorf("the instances read %d records together, want %d", records, n)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, n)) {
		t.Fatalf("table holds %d ids, want 0..%d once each", len(got), n-1)
	}
	cp := kafkaCheckpointOf(t, tb, addrs, "events")
	for p := range partitions {
		if got := cp["partitions"].(map[string]any)[fmt.Sprint(p)]; got != float64(n/partitions) {
			t.Errorf("checkpoint of partition %d: %v, want %d", p, got, n/partitions)
		}
	}

	adm := kadm.NewClient(p)
	lags, err := adm.Lag(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	l := lags[group]
	if l.Error() != nil {
		t.Fatal(l.Error())
	}
	for _, pl := range l.Lag.Sorted() {
		if pl.Commit.At != n/partitions || pl.Lag != 0 {
			t.Errorf("group %s partition %d: committed offset %d, lag %d; want %d, lag 0", group, pl.Partition, pl.Commit.At, pl.Lag, n/partitions)
		}
	}
	if got := len(l.Lag.Sorted()); got != partitions {
		t.Errorf("group %s has offsets for %d partitions, want %d", group, got, partitions)
	}
}

// A broker restart in the middle of a run: a cluster of three brokers
// keeping its data on disk is shut down after the run read its first
// records and started again on the same ports. The run completes with
// every record exactly once, or fails with one clear line and a rerun
// completes exactly once.
func TestKafkaGroupBrokerRestart(t *testing.T) {
	// Fetches are capped at 256 KiB, so the client cannot have fetched
	// every record before the restart.
	const n = 60000
	capFetches := func(c *kfake.Cluster) {
		c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
			r.(*kmsg.FetchRequest).MaxBytes = 256 << 10
			return nil, nil, false
		})
	}
	dir := t.TempDir()
	opts := []kfake.Opt{kfake.NumBrokers(3), kfake.DataDir(filepath.Join(dir, "kafka"))}
	c, err := kfake.NewCluster(append(opts, kfake.SeedTopics(3, "events"))...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	cluster := c
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		cluster.Close()
	})
	capFetches(c)
	var ports []int
	for _, a := range c.ListenAddrs() {
		_, port, _ := net.SplitHostPort(a)
		var p int
		fmt.Sscan(port, &p)
		ports = append(ports, p)
	}
	addrs := strings.Join(c.ListenAddrs(), ",")
	src := "kafka://" + addrs + "/events"
	tb := newTable(t, filepath.Join(dir, "events"))
	p := producer(t, addrs, "events", kgo.ProducerBatchMaxBytes(64<<10))
	produce(t, p, 3, kafkaEvents(0, n))
	p.Close()

	var restartedAt, total int
	var fetchedAfter atomic.Int64
	restart := func(done, all int) {
		mu.Lock()
		defer mu.Unlock()
		if restartedAt > 0 || done == 0 {
			return
		}
		restartedAt, total = done, all
		cluster.Close()
		c2, err := kfake.NewCluster(append(opts, kfake.Ports(ports...))...)
		if err != nil {
			t.Errorf("restart: %v", err)
			return
		}
		capFetches(c2)
		cluster = c2
		// Count the fetches the restarted cluster serves from offsets
		// short of the end: records read after the restart.
		c2.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Observe: true, Count: -1, When: func(r kmsg.Request) bool {
			for _, ft := range r.(*kmsg.FetchRequest).Topics {
				for _, fp := range ft.Partitions {
					if fp.FetchOffset < n/3 {
						fetchedAfter.Add(1)
					}
				}
			}
			return false
		}})
	}
	res, err := ingest.Run(context.Background(), tb, src, ingest.Options{Progress: restart})
	if restartedAt == 0 || restartedAt >= total {
		t.Fatalf("the brokers restarted at offset %d of %d: not in the middle of the run", restartedAt, total)
	}
	if fetchedAfter.Load() == 0 {
		t.Fatalf("no records were fetched from the restarted brokers (the run had read %d of %d offsets before the restart)", restartedAt, total)
	}
	t.Logf("restarted after %d of %d offsets; %d partition fetches from offsets short of the end after", restartedAt, total, fetchedAfter.Load())
	if err != nil {
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("a run through a restart failed with more than one line: %q", err)
		}
		t.Logf("the run through the restart failed: %v", err)
		res = kafkaRun(t, tb, src, ingest.Options{})
	}
	reconcile(t, res)
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, n)) {
		t.Fatalf("table holds %d ids, want 0..%d once each", len(got), n-1)
	}
	if res := kafkaRun(t, tb, src, ingest.Options{}); res.RecordsIn != 0 {
		t.Fatalf("a rerun after the end took records: %+v", res)
	}
}
