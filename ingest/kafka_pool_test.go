package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-data/sluice/ingest"
)

// franz-go bounds FetchMaxBytes per broker and, by default, fetches from
// every broker at once: on three brokers "an eighth of the budget" was
// three eighths. The client options must bound the fetches of all brokers
// together, whatever their number.
func TestKafkaFetchesOfThreeBrokersStayWithinTheBudget(t *testing.T) {
	const budget = 64 << 20
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(6, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// kfake picks each partition's leader at random, so that one broker
	// in four runs leads none of the six; give each broker two.
	for p := range int32(6) {
		if err := c.MoveTopicPartition("events", p, p%3); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	asked := map[int32]int32{} // broker: the largest MaxBytes a fetch asked of it
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		asked[c.CurrentNode()] = max(asked[c.CurrentNode()], r.(*kmsg.FetchRequest).MaxBytes)
		mu.Unlock()
		return nil, nil, false
	})
	o := ingest.Options{MemoryBudget: budget}
	opts := append(ingest.KafkaFetchLimits(o), kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("events"))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for p := range int32(6) {
		r := &kgo.Record{Topic: "events", Partition: p, Value: []byte(fmt.Sprint(p))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for got := 0; got < 6; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	perFetch := int64(cl.OptValue(kgo.FetchMaxBytes).(int32))
	concurrent := int64(cl.OptValue(kgo.MaxConcurrentFetches).(int))
	readMax := int64(cl.OptValue(kgo.BrokerMaxReadBytes).(int32))
	if concurrent < 1 {
		t.Fatalf("MaxConcurrentFetches %d: fetches are not bounded in number (one per broker)", concurrent)
	}
	if total := perFetch * concurrent; total > budget/8 {
		t.Errorf("%d fetches of %d bytes: %d bytes, over an eighth of the %d budget", concurrent, perFetch, total, budget)
	}
	if readMax < perFetch || readMax > 2*perFetch+ingest.DefaultMaxRecordBytes {
		t.Errorf("BrokerMaxReadBytes %d for fetches of %d bytes and records of %d: want between", readMax, perFetch, ingest.DefaultMaxRecordBytes)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 3 {
		t.Errorf("fetched from brokers %v, want all three", asked)
	}
	for b, n := range asked {
		if int64(n) > perFetch {
			t.Errorf("broker %d was asked for %d bytes in a fetch, over %d", b, n, perFetch)
		}
	}
}
