// Command kafkabench is the Kafka half of bench/kafka.sh: an in-process
// broker to ingest from, a producer that loads the benchmark's JSON lines
// landing files onto a topic, and the bare franz-go consume loop that is
// the floor `sluice ingest --from kafka://...` is measured against.
//
//	kafkabench broker ADDRFILE
//	kafkabench produce [-partitions 12] [-compression lz4] ADDR TOPIC DIR
//	kafkabench consume ADDR TOPIC
//
// broker starts a one-broker kfake cluster on a random loopback port,
// writes its host:port to ADDRFILE (whole, by rename, so a reader never
// sees half an address) and serves until SIGINT or SIGTERM. kfake keeps
// every record in memory, so the broker's peak RSS grows with the topics
// and is reported apart from sluice's.
//
// produce creates TOPIC and writes every line of DIR's *.jsonl files, in
// file name order, as one record (the line without its newline, no key),
// batched and asynchronous, then flushes. It prints
// {"records":N,"bytes":B,"seconds":S} on stdout.
//
// consume reads every partition of TOPIC directly (no group) from its log
// start offset to the last stable offset listed when it starts, with
// read_committed isolation and the client's default fetch sizes (as sluice
// uses them), touching nothing but each record's length. It prints
// {"records":N,"bytes":B,"seconds":S} on stdout, bytes being the values'.
//
// It is a benchmark tool, not part of sluice: nothing here is an API.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxBatchBytes is the producer's record batch limit. kfake refuses
// batches above its message.max.bytes (1048588 by default), so the
// producer stays at Kafka's own default, which is below it.
const maxBatchBytes = 1000012

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "broker":
		err = brokerCmd(ctx, args)
	case "produce":
		err = produceCmd(ctx, args)
	case "consume":
		err = consumeCmd(ctx, args)
	case "registry":
		err = registryCmd(ctx, args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkabench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: kafkabench broker ADDRFILE
       kafkabench registry URLFILE
       kafkabench produce [-partitions N] [-compression lz4|none|snappy|zstd] [-avro REGISTRY] ADDR TOPIC DIR
       kafkabench consume [-avro REGISTRY] ADDR TOPIC`)
	os.Exit(2)
}

// brokerCmd serves a one-broker kfake cluster until ctx is cancelled.
func brokerCmd(ctx context.Context, args []string) error {
	if len(args) != 1 {
		usage()
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return fmt.Errorf("broker: start kfake: %w", err)
	}
	defer c.Close()
	addr := strings.Join(c.ListenAddrs(), ",")
	tmp := args[0] + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("broker: write address: %w", err)
	}
	if err := os.Rename(tmp, args[0]); err != nil {
		return fmt.Errorf("broker: publish address: %w", err)
	}
	fmt.Fprintf(os.Stderr, "kafkabench: broker listening on %s\n", addr)
	<-ctx.Done()
	return nil
}

// summary is what produce and consume print.
type summary struct {
	Records int64   `json:"records"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

func printSummary(s summary) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(b))
	return err
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want lz4, none, snappy or zstd", name)
}

// produceCmd loads DIR's landing files onto a new topic.
func produceCmd(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("produce", flag.ExitOnError)
	partitions := fl.Int("partitions", 12, "partitions of the topic it creates")
	compression := fl.String("compression", "lz4", "batch compression: lz4, none, snappy or zstd")
	registry := fl.String("avro", "", "registry URL: produce each line as an Avro record of avroEventSchema in the Confluent wire format")
	_ = fl.Parse(args)
	if fl.NArg() != 3 || *partitions < 1 {
		usage()
	}
	addr, topic, dir := fl.Arg(0), fl.Arg(1), fl.Arg(2)
	cc, err := codec(*compression)
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("produce: no *.jsonl files in %s", dir)
	}
	sort.Strings(files)

	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(cc),
		kgo.ProducerBatchMaxBytes(maxBatchBytes),
		kgo.ProducerLinger(20*time.Millisecond),
		kgo.MaxBufferedRecords(1<<20),
		// Loading a fake broker needs neither idempotence nor acks from
		// replicas that do not exist; leader acks let batches pipeline.
		kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.MaxProduceRequestsInflightPerBroker(8),
	)
	if err != nil {
		return fmt.Errorf("produce: client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctx, int32(*partitions), 1, nil, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		return fmt.Errorf("produce: create topic %s: %w", topic, err)
	}

	start := time.Now()
	var records, bytes atomic.Int64
	var mu sync.Mutex
	var firstErr error
	done := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return
		}
		records.Add(1)
		bytes.Add(int64(len(r.Value)))
	}
	encode := func(line []byte) ([]byte, error) { return append([]byte(nil), line...), nil }
	if *registry != "" {
		if encode, err = avroEncoder(ctx, *registry, topic+"-value"); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
	}
	for _, f := range files {
		if err := produceFile(ctx, cl, f, encode, done); err != nil {
			return err
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("produce: flush: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return fmt.Errorf("produce to %s: %w", topic, firstErr)
	}
	return printSummary(summary{Records: records.Load(), Bytes: bytes.Load(), Seconds: time.Since(start).Seconds()})
}

// produceFile produces each line of path, encoded, as one record.
func produceFile(ctx context.Context, cl *kgo.Client, path string, encode func([]byte) ([]byte, error), done func(*kgo.Record, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		// Produce holds the value until the batch is written, and the
		// scanner reuses its buffer: each record gets its own copy.
		v, err := encode(line)
		if err != nil {
			return fmt.Errorf("produce %s: %w", path, err)
		}
		cl.Produce(ctx, &kgo.Record{Value: v}, done)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("produce %s: %w", path, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("produce: read %s: %w", path, err)
	}
	return nil
}

// consumeCmd is the floor: the bare consume loop over a whole topic.
func consumeCmd(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("consume", flag.ExitOnError)
	registry := fl.String("avro", "", "registry URL: decode each record's Avro payload by its schema id, as a bare decode loop would")
	_ = fl.Parse(args)
	if fl.NArg() != 2 {
		usage()
	}
	addr, topic := fl.Arg(0), fl.Arg(1)
	var decode func([]byte) error
	if *registry != "" {
		decode = avroDecoder(ctx, *registry)
	}
	brokers := strings.Split(addr, ",")
	start := time.Now()

	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("consume: client: %w", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("consume: list start offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic) // last stable offsets
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("consume: list end offsets of %s: %w", topic, err)
	}
	assign := map[int32]kgo.Offset{}
	end := map[int32]int64{}
	starts.Each(func(o kadm.ListedOffset) {
		e, ok := ends.Lookup(topic, o.Partition)
		if ok && e.Offset > o.Offset {
			assign[o.Partition] = kgo.NewOffset().At(o.Offset)
			end[o.Partition] = e.Offset
		}
	})
	var s summary
	if len(assign) > 0 {
		if s, err = consumeRange(ctx, brokers, topic, assign, end, decode); err != nil {
			return err
		}
	}
	s.Seconds = time.Since(start).Seconds()
	return printSummary(s)
}

// consumeRange reads each assigned partition up to its end offset.
func consumeRange(ctx context.Context, brokers []string, topic string, assign map[int32]kgo.Offset, end map[int32]int64, decode func([]byte) error) (summary, error) {
	var s summary
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
	)
	if err != nil {
		return s, fmt.Errorf("consume: client: %w", err)
	}
	defer cl.Close()
	for len(end) > 0 {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return s, fmt.Errorf("consume %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("no records for 30s with %d partitions short of their end: %w", len(end), err)
				}
				ferr = fmt.Errorf("consume %s partition %d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return s, ferr
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if ferr != nil {
				return
			}
			e, ok := end[fp.Partition]
			if !ok {
				return
			}
			for _, r := range fp.Records {
				if r.Offset >= e {
					break
				}
				if decode != nil && ferr == nil {
					ferr = decode(r.Value)
				}
				s.Records++
				s.Bytes += int64(len(r.Value))
			}
			if n := len(fp.Records); n > 0 && fp.Records[n-1].Offset+1 >= e {
				delete(end, fp.Partition)
				cl.PauseFetchPartitions(map[string][]int32{topic: {fp.Partition}})
			}
		})
		if ferr != nil {
			return s, fmt.Errorf("consume %s: %w", topic, ferr)
		}
	}
	return s, nil
}
