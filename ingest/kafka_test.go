package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/ingest"
)

// kafkaCluster starts an in-process broker on loopback with one topic.
func kafkaCluster(t *testing.T, partitions int32, topic string) string {
	return strings.Join(newKafkaCluster(t, partitions, topic).ListenAddrs(), ",")
}

// newKafkaCluster is kafkaCluster for a test that controls the broker.
func newKafkaCluster(t *testing.T, partitions int32, topic string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// capFetches makes c answer every fetch with at most maxBytes, and at
// most perPartition of each partition when perPartition > 0.
func capFetches(c *kfake.Cluster, maxBytes, perPartition int32) {
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.FetchRequest)
		req.MaxBytes = maxBytes
		if perPartition == 0 {
			return nil, nil, false
		}
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				req.Topics[i].Partitions[j].PartitionMaxBytes = perPartition
			}
		}
		return nil, nil, false
	})
}

// kafkaEvents returns the values of events(from, n, day), one a record.
func kafkaEvents(from, n int) [][]byte {
	return bytes.Split(bytes.TrimRight(events(from, n, "2024-01-31"), "\n"), []byte("\n"))
}

// producer returns a client producing to topic, records placed on the
// partition they name.
func producer(t *testing.T, addrs, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(addrs, ",")...),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes vals round-robin over partitions.
func produce(t *testing.T, cl *kgo.Client, partitions int32, vals [][]byte) {
	t.Helper()
	var rs []*kgo.Record
	for i, v := range vals {
		rs = append(rs, &kgo.Record{Value: v, Partition: int32(i) % partitions})
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func kafkaCheckpointOf(t *testing.T, tb *catalog.Table, addrs, topic string) map[string]any {
	t.Helper()
	m, err := tb.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := m.Checkpoints["kafka:"+addrs+"/"+topic]
	if !ok {
		t.Fatalf("no checkpoint kafka:%s/%s in %v", addrs, topic, m.Checkpoints)
	}
	var cp map[string]any
	if err := json.Unmarshal(raw, &cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestKafkaIngestAvailableNow(t *testing.T) {
	addrs := kafkaCluster(t, 4, "events")
	src := "kafka://" + addrs + "/events"
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	p := producer(t, addrs, "events")
	produce(t, p, 4, kafkaEvents(0, 1000))
	before := runtime.NumGoroutine()

	res := runOK(t, tb, src, ingest.Options{})
	if res.RecordsIn != 1000 || res.RowsWritten != 1000 || res.RecordsQuarantined != 0 || res.Version != 2 {
		t.Fatalf("first run: %+v", res)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 1000)) {
		t.Fatalf("table holds %d ids, want 0..999 once each", len(got))
	}
	cp := kafkaCheckpointOf(t, tb, addrs, "events")
	want := map[string]any{"0": 250.0, "1": 250.0, "2": 250.0, "3": 250.0}
	if fmt.Sprint(cp["partitions"]) != fmt.Sprint(want) {
		t.Fatalf("checkpoint %v, want partitions %v", cp, want)
	}

	res = runOK(t, tb, src, ingest.Options{})
	if res.RecordsIn != 0 || res.Version != 2 {
		t.Fatalf("second run took something: %+v", res)
	}

	produce(t, p, 4, kafkaEvents(1000, 300))
	res = runOK(t, tb, src, ingest.Options{})
	if res.RecordsIn != 300 || res.RowsWritten != 300 || res.Version != 3 {
		t.Fatalf("third run: %+v", res)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 1300)) {
		t.Fatalf("table holds %d ids, want 0..1299 once each", len(got))
	}
	if len(res.Partitions) != 1 || !strings.Contains(res.Partitions[0], "2024-01-31") {
		t.Fatalf("partitions %v", res.Partitions)
	}
	// The run's Kafka clients are closed: no goroutine outlives it.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after the runs, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestKafkaIngestTransactions(t *testing.T) {
	addrs := kafkaCluster(t, 2, "events")
	src := "kafka://" + addrs + "/events"
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	ctx := context.Background()
	produce(t, producer(t, addrs, "events"), 2, kafkaEvents(0, 100))

	tx := producer(t, addrs, "events", kgo.TransactionalID("sluice-test"))
	txn := func(vals [][]byte, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(t, tx, 2, vals)
		if err := tx.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	txn(kafkaEvents(5000, 50), kgo.TryAbort) // must never appear
	txn(kafkaEvents(100, 20), kgo.TryCommit)

	res := runOK(t, tb, src, ingest.Options{})
	if res.RecordsIn != 120 || res.RowsWritten != 120 {
		t.Fatalf("run: %+v", res)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 120)) {
		t.Fatalf("table holds ids %v, want 0..119 once each", got)
	}

	// An open transaction holds the last stable offset back: the run takes
	// what is before it and does not wait.
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, tx, 2, kafkaEvents(120, 10))
	res = runOK(t, tb, src, ingest.Options{})
	if res.RecordsIn != 0 {
		t.Fatalf("run during an open transaction: %+v", res)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	res = runOK(t, tb, src, ingest.Options{})
	if res.RecordsIn != 10 {
		t.Fatalf("run after the commit: %+v", res)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 130)) {
		t.Fatalf("table holds ids %v, want 0..129 once each", got)
	}
}

func TestKafkaIngestQuarantine(t *testing.T) {
	addrs := kafkaCluster(t, 3, "events")
	src := "kafka://" + addrs + "/events"
	loc := filepath.Join(t.TempDir(), "events")
	tb := newTable(t, loc)
	vals := kafkaEvents(0, 10)
	vals[4] = []byte(`{"event_id":"root:x:0:0:root:/root:/bin/bash","list_id":4,"tally":1,"event_time":"2024-01-31T00:00:00Z"}`)
	vals[8] = []byte(`{"event_id":`)
	produce(t, producer(t, addrs, "events"), 3, vals)

	res := runOK(t, tb, src, ingest.Options{})
	if res.RecordsIn != 10 || res.RowsWritten != 8 || res.RecordsQuarantined != 2 || res.QuarantineVersion == 0 {
		t.Fatalf("run: %+v", res)
	}
	qt, err := catalog.Open(context.Background(), loc+"_quarantine", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qt.Close()
	var got []string
	for _, r := range rows(t, qt) {
		got = append(got, fmt.Sprintf("%s %s %s", r[0], r[1], r[2]))
	}
	slices.Sort(got)
	// Record 4 is partition 1's offset 1; record 8 partition 2's offset 2.
	if len(got) != 2 || !strings.HasPrefix(got[0], src+" events/1/1 ") || !strings.Contains(got[0], "uuid") ||
		!strings.HasPrefix(got[1], src+" events/2/2 ") || !strings.Contains(got[1], "malformed JSON") {
		t.Fatalf("quarantine rows:\n%s", strings.Join(got, "\n"))
	}
}

func TestKafkaIngestMaxRecords(t *testing.T) {
	addrs := kafkaCluster(t, 4, "events")
	src := "kafka://" + addrs + "/events"
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	produce(t, producer(t, addrs, "events"), 4, kafkaEvents(0, 1000))
	for i := range 4 {
		res := runOK(t, tb, src, ingest.Options{MaxRecords: 300})
		want := int64(300)
		if i == 3 {
			want = 100
		}
		if res.RecordsIn != want || res.RowsWritten != want {
			t.Fatalf("run %d: %+v, want %d records", i, res, want)
		}
		if n := len(listIDs(t, tb)); n != 300*i+int(want) {
			t.Fatalf("after run %d: %d rows", i, n)
		}
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 1000)) {
		t.Fatalf("table holds %d ids, want 0..999 once each", len(got))
	}
	if res := runOK(t, tb, src, ingest.Options{MaxRecords: 300}); res.RecordsIn != 0 {
		t.Fatalf("run after the end: %+v", res)
	}
}

func TestKafkaIngestConcurrentRuns(t *testing.T) {
	addrs := kafkaCluster(t, 4, "events")
	src := "kafka://" + addrs + "/events"
	loc := filepath.Join(t.TempDir(), "events")
	tb := newTable(t, loc)
	p := producer(t, addrs, "events")
	produce(t, p, 4, kafkaEvents(0, 2000))
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { _, errs[i] = runElsewhere(loc, src, ingest.Options{}) })
		}
		wg.Wait()
		someSucceeded(t, errs)
		if got := listIDs(t, tb); !slices.Equal(got, seq(0, 2000+100*round)) {
			t.Fatalf("round %d: table holds %d ids, want 0..%d once each", round, len(got), 2000+100*round-1)
		}
		produce(t, p, 4, kafkaEvents(2000+100*round, 100))
	}
}

func TestKafkaIngestGap(t *testing.T) {
	addrs := kafkaCluster(t, 1, "events")
	src := "kafka://" + addrs + "/events"
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	p := producer(t, addrs, "events")
	produce(t, p, 1, kafkaEvents(0, 100))
	runOK(t, tb, src, ingest.Options{})
	produce(t, p, 1, kafkaEvents(100, 50))

	// Retention deletes offsets 100..129 before they are read.
	adm := kadm.NewClient(p)
	o := kadm.Offsets{}
	o.AddOffset("events", 0, 130, -1)
	if resp, err := adm.DeleteRecords(context.Background(), o); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	_, err := ingest.Run(context.Background(), tb, src, ingest.Options{})
	if !errors.Is(err, ingest.ErrKafkaGap) || !strings.Contains(err.Error(), "30 records") {
		t.Fatalf("err = %v, want a gap of 30 records", err)
	}
	res := runOK(t, tb, src, ingest.Options{OnGap: ingest.GapSkip})
	if res.RecordsIn != 20 || res.RecordsSkipped != 30 {
		t.Fatalf("skip run: %+v", res)
	}
	if got := listIDs(t, tb); !slices.Equal(got, append(seq(0, 100), seq(130, 20)...)) {
		t.Fatalf("table holds ids %v", got)
	}
	cp := kafkaCheckpointOf(t, tb, addrs, "events")
	gaps, _ := json.Marshal(cp["gaps"])
	if !strings.Contains(string(gaps), `"from":100,"partition":0,"to":130`) {
		t.Fatalf("checkpoint %v does not record the gap", cp)
	}
}

func TestKafkaIngestBadSource(t *testing.T) {
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	for _, src := range []string{"kafka://127.0.0.1:9092", "kafka:///events", "kafka://127.0.0.1:9092/a/b"} {
		if _, err := ingest.Run(context.Background(), tb, src, ingest.Options{}); err == nil || !strings.Contains(err.Error(), "want kafka://") {
			t.Errorf("%s: err = %v", src, err)
		}
	}
	addrs := kafkaCluster(t, 1, "events")
	if _, err := ingest.Run(context.Background(), tb, "kafka://"+addrs+"/nope", ingest.Options{}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown topic: err = %v", err)
	}
}

// A Kafka run drops records whose dedup key an earlier record of the run
// or a commit in the window already wrote, and counts them.
func TestKafkaIngestDedupKey(t *testing.T) {
	addrs := kafkaCluster(t, 3, "events")
	src := "kafka://" + addrs + "/events"
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	pr := producer(t, addrs, "events")
	dedup := ingest.Options{DedupKey: "event_id"}

	produce(t, pr, 3, append(kafkaEvents(0, 10), kafkaEvents(5, 10)...)) // 5..9 twice
	res := runOK(t, tb, src, dedup)
	if res.RecordsIn != 20 || res.RowsWritten != 15 || res.RecordsDeduplicated != 5 {
		t.Fatalf("first run: %+v", res)
	}
	produce(t, pr, 3, kafkaEvents(10, 10)) // 10..14 written by the first run
	res = runOK(t, tb, src, dedup)
	if res.RecordsIn != 10 || res.RowsWritten != 5 || res.RecordsDeduplicated != 5 {
		t.Fatalf("second run: %+v", res)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 20)) {
		t.Fatalf("ids %v, want 0..19 once each", got)
	}
}

// A run whose partitions stop getting records short of the end offsets it
// listed fails after the idle timeout, naming where each one stands, and
// commits nothing.
func TestKafkaIngestFailsWhenRecordsStopComing(t *testing.T) {
	c := newKafkaCluster(t, 2, "events")
	addrs := strings.Join(c.ListenAddrs(), ",")
	produce(t, producer(t, addrs, "events"), 2, kafkaEvents(0, 10))
	// From now on every fetch is answered with no records.
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return r.ResponseKind(), nil, true
	})
	defer ingest.SetKafkaIdleTimeout(time.Second)()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	_, err := ingest.Run(context.Background(), tb, "kafka://"+addrs+"/events", ingest.Options{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "0 at offset 0 of 5, 1 at offset 0 of 5") {
		t.Fatalf("err = %v", err)
	}
	if got := listIDs(t, tb); len(got) != 0 {
		t.Fatalf("the table holds %d rows", len(got))
	}
}
