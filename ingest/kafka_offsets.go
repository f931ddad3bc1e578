package ingest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaPart is one partition's share of a run: read offsets [from, end).
type kafkaPart struct {
	p    int32
	base int64 // the table checkpoint's offset when planned or last committed; -1: none
	from int64 // first offset to read: base, or the log start offset
	end  int64 // last stable offset listed when the partition was assigned
	next int64 // next offset to read; from..end
	// qBase is the quarantine checkpoint's offset, -1 if none: the bad
	// records below it are already quarantined.
	qBase int64
}

func (kp *kafkaPart) done() bool { return kp.next >= kp.end }

// advanced tells whether the table's checkpoint must move for kp: the run
// read something of it, or skipped a gap.
func (kp *kafkaPart) advanced() bool {
	if kp.base < 0 {
		return kp.next > kp.from
	}
	return kp.next != kp.base
}

// require checks that c records base for kp's partition (-1: nothing),
// the offset this run started from.
func (kp *kafkaPart) require(c kafkaCheckpoint, base int64) error {
	got, ok := c.next(kp.p)
	if ok == (base >= 0) && (!ok || got == base) {
		return nil
	}
	at := "not recorded"
	if ok {
		at = "at offset " + strconv.FormatInt(got, 10)
	}
	want := "not recorded"
	if base >= 0 {
		want = "offset " + strconv.FormatInt(base, 10)
	}
	return fmt.Errorf("partition %d is %s, not at %s where this run started reading it", kp.p, at, want)
}

// listStartOffsets lists the log start offset of each of the topic's
// partitions; it fails for a topic that does not exist.
func listStartOffsets(ctx context.Context, cl *kgo.Client, ks kafkaSource) (map[int32]kadm.ListedOffset, error) {
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, ks.topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets of topic %s: %w", ks.topic, err)
	}
	sp := starts[ks.topic]
	if bad, ok := sp[-1]; ok && bad.Err != nil {
		return nil, fmt.Errorf("topic %s: %w", ks.topic, bad.Err)
	}
	if len(sp) == 0 {
		return nil, fmt.Errorf("topic %s: %w", ks.topic, kerr.UnknownTopicOrPartition)
	}
	return sp, nil
}

// kafkaPlan lists the log start offsets and the last stable offsets of
// partitions ps and returns what to read of each, sorted by partition. A
// partition whose checkpointed offset is below its log start offset fails
// with ErrKafkaGap unless onGap is GapSkip; then it is read from the log
// start offset. With until set, a partition ends before its first record
// timestamped at or after until.
func kafkaPlan(ctx context.Context, cl *kgo.Client, ks kafkaSource, ps []int32, cp, qcp kafkaCheckpoint, onGap GapPolicy, until time.Time) ([]*kafkaPart, error) {
	sp, err := listStartOffsets(ctx, cl, ks)
	if err != nil {
		return nil, err
	}
	ends, err := listStableOffsets(ctx, cl, ks.topic, ps)
	if err != nil {
		return nil, err
	}
	// The log's own ends tell a recreated topic; until's only where this
	// run stops.
	stable := maps.Clone(ends)
	if err := endAt(ctx, cl, ks.topic, ends, until); err != nil {
		return nil, err
	}
	var parts []*kafkaPart
	var gaps []string
	for _, p := range slices.Sorted(slices.Values(ps)) {
		s, ok := sp[p]
		if !ok {
			return nil, fmt.Errorf("topic %s partition %d: no log start offset listed", ks.topic, p)
		}
		if s.Err != nil {
			return nil, fmt.Errorf("topic %s partition %d: log start offset: %w", ks.topic, p, s.Err)
		}
		kp := &kafkaPart{p: p, base: -1, qBase: -1, from: s.Offset, end: ends[p]}
		if next, ok := cp.next(p); ok {
			kp.base = next
			switch {
			case next < s.Offset && onGap != GapSkip:
				gaps = append(gaps, fmt.Sprintf("partition %d: %d records (offsets %d to %d)", p, s.Offset-next, next, s.Offset-1))
			case next < s.Offset:
			case next > stable[p]:
				return nil, fmt.Errorf("topic %s partition %d: checkpoint offset %d is beyond the end offset %d (was the topic recreated?)",
					ks.topic, p, next, stable[p])
			default:
				// A run of a later interval may have read past this
				// run's until already: then nothing is left here.
				kp.from, kp.end = next, max(kp.end, next)
			}
		}
		kp.next = kp.from
		if q, ok := qcp.next(p); ok {
			kp.qBase = q
		}
		parts = append(parts, kp)
	}
	if len(gaps) > 0 {
		return nil, fmt.Errorf("topic %s: %s (--on-gap=skip reads on from the log start): %w",
			ks.topic, strings.Join(gaps, "; "), ErrKafkaGap)
	}
	return parts, nil
}

// endAt lowers each partition's end in ends to its first record
// timestamped at or after until (Kafka's ListOffsets by time), when
// until is set and there is one.
func endAt(ctx context.Context, cl *kgo.Client, topic string, ends map[int32]int64, until time.Time) error {
	if until.IsZero() {
		return nil
	}
	at, err := kadm.NewClient(cl).ListOffsetsAfterMilli(ctx, until.UnixMilli(), topic)
	if err == nil {
		err = at.Error()
	}
	if err != nil {
		return fmt.Errorf("list offsets of topic %s at %s: %w", topic, until.Format(time.RFC3339Nano), err)
	}
	for p, end := range ends {
		if lo, ok := at.Lookup(topic, p); ok && lo.Offset >= 0 && lo.Offset < end {
			ends[p] = lo.Offset
		}
	}
	return nil
}

// listStableOffsets returns each partition's last stable offset: the end
// offset a read_committed consumer reads up to. (kadm's ListEndOffsets
// asks for read_uncommitted, the high watermark, which an open transaction
// may keep out of reach.)
func listStableOffsets(ctx context.Context, cl *kgo.Client, topic string, partitions []int32) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1 // read_committed
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = -1 // latest
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	out := map[int32]int64{}
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			return nil, fmt.Errorf("list end offsets of topic %s: %w", topic, sh.Err)
		}
		for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("list end offsets of topic %s partition %d: %w", topic, p.Partition, err)
				}
				out[p.Partition] = p.Offset
			}
		}
	}
	for _, p := range partitions {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("list end offsets of topic %s partition %d: no answer", topic, p)
		}
	}
	return out, nil
}
