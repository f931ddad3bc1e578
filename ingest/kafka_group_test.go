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
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
		wg.Go(func() { results[i], errs[i] = runElsewhere(loc, src, ingest.Options{Group: group}) })
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
	// Fetches are capped at 16 KiB, two batches of some 380 records.
	// franz-go holds one fetch a broker and asks for the next only when
	// that one is polled, so when the first records arrive the client
	// has at most two fetches a broker, a few thousand of the 60,000
	// records. With 256 KiB fetches (12,600 records each) a slow poll
	// could take the first three and the next three in flight held the
	// rest, and the restarted brokers were never asked for a record.
	const n = 60000
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
	capFetches(c, 16<<10, 0)
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
		capFetches(c2, 16<<10, 0)
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
		res = runOK(t, tb, src, ingest.Options{})
	}
	reconcile(t, res)
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, n)) {
		t.Fatalf("table holds %d ids, want 0..%d once each", len(got), n-1)
	}
	if res := runOK(t, tb, src, ingest.Options{}); res.RecordsIn != 0 {
		t.Fatalf("a rerun after the end took records: %+v", res)
	}
}

// A member joining while another is reading: the group moves half the
// partitions (cooperatively: only those), the reading member commits what
// it read of them before letting go, and the newcomer reads on from
// there. Together they ingest every record once.
func TestKafkaGroupRebalanceWhileReading(t *testing.T) {
	const partitions, n, group = 4, 40000, "rebalance"
	c := newKafkaCluster(t, partitions, "events")
	// Small fetches, about one batch of each partition, so that the first
	// member has read some of every partition, and not all of any, when
	// the second joins.
	capFetches(c, 64<<10, 8<<10)
	addrs := strings.Join(c.ListenAddrs(), ",")
	src := "kafka://" + addrs + "/events"
	loc := filepath.Join(t.TempDir(), "events")
	tb := newTable(t, loc)
	p := producer(t, addrs, "events", kgo.ProducerBatchMaxBytes(16<<10))
	produce(t, p, partitions, kafkaEvents(0, n))

	run := func(o ingest.Options) (ingest.Result, error) {
		o.Group = group
		return runElsewhere(loc, src, o)
	}
	// The first member has read some of every partition once it fetches
	// each from past offset 0: the client fetches again only after the
	// records it fetched before were polled, and ingest takes what it
	// polled before polling again. Its first fetches may hold only some
	// partitions (the others' offsets still loading), so waiting for the
	// first records alone would let it hand over partitions it never
	// read, and the handover commit this test is about would not happen.
	var fetchedPast [partitions]atomic.Bool
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Observe: true, Count: -1, When: func(r kmsg.Request) bool {
		for _, ft := range r.(*kmsg.FetchRequest).Topics {
			for _, fp := range ft.Partitions {
				if fp.FetchOffset > 0 && fp.Partition >= 0 && fp.Partition < partitions {
					fetchedPast[fp.Partition].Store(true)
				}
			}
		}
		return false
	}})
	readAll := func() bool {
		for i := range fetchedPast {
			if !fetchedPast[i].Load() {
				return false
			}
		}
		return true
	}
	var wg sync.WaitGroup
	var second ingest.Result
	var secondErr error
	joined := make(chan *kfake.FaultHandle, 1)
	var once sync.Once
	// Once the first member has read some of every partition, hold every
	// fetch and start the second member; fetches resume when the group
	// has given each member its half.
	first, firstErr := run(ingest.Options{Progress: func(done, _ int) {
		if done == 0 || !readAll() {
			return
		}
		once.Do(func() {
			joined <- c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Err: kerr.NotLeaderForPartition, Count: -1})
			wg.Go(func() { second, secondErr = run(ingest.Options{}) })
			wg.Go(func() {
				hold := <-joined
				defer hold.Remove()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := c.WaitGroupInfo(ctx, group, func(g *kfake.GroupInfo) bool {
					return g != nil && g.State == "Stable" && len(g.Members) == 2 &&
						g.Members[0].NumAssigned() == partitions/2 && g.Members[1].NumAssigned() == partitions/2
				})
				if err != nil {
					t.Errorf("the group never gave each member half the partitions: %v", err)
				}
			})
		})
	}})
	wg.Wait()
	if err := errors.Join(firstErr, secondErr); err != nil {
		t.Fatal(err)
	}
	reconcile(t, first)
	reconcile(t, second)
	if len(second.KafkaPartitions) != partitions/2 {
		t.Errorf("the second member took partitions %v, want 2 of 4", second.KafkaPartitions)
	}
	// The first member committed what it had read of the partitions it
	// handed over, so it committed offsets of all four.
	if !slices.Equal(first.KafkaPartitions, []int32{0, 1, 2, 3}) {
		t.Errorf("the first member committed partitions %v, want 0..3 (two of them before handing them over)", first.KafkaPartitions)
	}
	if first.RecordsIn+second.RecordsIn != n {
		t.Errorf("the members read %d + %d records, want %d in all", first.RecordsIn, second.RecordsIn, n)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, n)) {
		t.Fatalf("table holds %d ids, want 0..%d once each", len(got), n-1)
	}
	m, err := tb.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Version < 4 {
		t.Errorf("table at version %d, want 4: the first member's commit before handing over, its last, the second's", m.Version)
	}
	t.Logf("first member: %d records, partitions %v; second: %d records, partitions %v; table at version %d",
		first.RecordsIn, first.KafkaPartitions, second.RecordsIn, second.KafkaPartitions, m.Version)
}
