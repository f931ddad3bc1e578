package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// ErrKafkaGap: a partition's checkpointed offset is below its log start
// offset, so retention deleted records this table never read. Run fails
// with it unless Options.OnGap is GapSkip.
var ErrKafkaGap = errors.New("records deleted by retention before they were read")

// GapPolicy says what a Kafka run does when retention deleted records the
// table has not read yet.
type GapPolicy string

// Gap policies. GapFail (the zero value) fails the run; GapSkip records the
// gap in the checkpoint and reads on from the log start offset.
const (
	GapFail GapPolicy = ""
	GapSkip GapPolicy = "skip"
)

// kafkaIdleTimeout bounds how long a Kafka run waits for the next fetch
// while partitions are still short of the end offsets listed at its start.
// Those records exist, so a long silence means the cluster is unreachable
// (or the tail of a partition is invisible to read_committed): the run
// fails rather than hang, and commits nothing.
var kafkaIdleTimeout = 30 * time.Second

// kafkaSource is a parsed kafka://host:port[,host:port]/topic URL.
type kafkaSource struct {
	brokers []string // sorted
	topic   string
}

// parseKafkaURL parses kafka://host:port[,host:port]/topic.
func parseKafkaURL(s string) (kafkaSource, error) {
	const scheme = "kafka://"
	if len(s) < len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) {
		return kafkaSource{}, fmt.Errorf("%q: want kafka://host:port[,host:port]/topic", s)
	}
	rest := s[len(scheme):]
	hosts, topic, ok := strings.Cut(rest, "/")
	topic, err := url.PathUnescape(topic)
	if !ok || err != nil || topic == "" || strings.Contains(topic, "/") {
		return kafkaSource{}, fmt.Errorf("%q: want kafka://host:port[,host:port]/topic (one topic)", s)
	}
	var ks kafkaSource
	for h := range strings.SplitSeq(hosts, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if !strings.Contains(h, ":") {
			h += ":9092"
		}
		ks.brokers = append(ks.brokers, strings.ToLower(h))
	}
	if len(ks.brokers) == 0 {
		return kafkaSource{}, fmt.Errorf("%q: no broker given; want kafka://host:port[,host:port]/topic", s)
	}
	slices.Sort(ks.brokers)
	ks.brokers = slices.Compact(ks.brokers)
	ks.topic = topic
	return ks, nil
}

// String is the source in canonical form, kafka://brokers/topic.
func (ks kafkaSource) String() string { return "kafka://" + ks.id() }

// id is "brokers/topic", brokers sorted and comma-separated.
func (ks kafkaSource) id() string { return strings.Join(ks.brokers, ",") + "/" + ks.topic }

// kafkaCheckpoint is what a table's manifest records of a Kafka source,
// under the key "kafka:<brokers>/<topic>" (brokers sorted, comma
// separated), as compact JSON:
//
//	{"v":1,"partitions":{"0":1042,"1":988},"gaps":[{"partition":1,"from":700,"to":750,"at":"2024-01-31T10:00:00Z"}]}
//
// partitions maps each partition to the next offset to read: every
// record below it is in the table (or the quarantine). gaps lists the
// ranges [from, to) that retention deleted before they were read and that
// a run skipped under GapSkip.
//
// The quarantine table keeps the same shape under the key
// "quarantined:<table location> kafka:<brokers>/<topic>": there, a
// partition's offset says that every bad record below it is committed in
// the quarantine (see runKafka for why).
type kafkaCheckpoint struct {
	V          int              `json:"v"`
	Partitions map[string]int64 `json:"partitions"`
	Gaps       []kafkaGap       `json:"gaps,omitempty"`
}

// kafkaGap is one range of offsets deleted before it was read.
type kafkaGap struct {
	Partition int32     `json:"partition"`
	From      int64     `json:"from"`
	To        int64     `json:"to"`
	At        time.Time `json:"at"`
}

func parseKafkaCheckpoint(raw json.RawMessage) (kafkaCheckpoint, error) {
	c := kafkaCheckpoint{V: 1, Partitions: map[string]int64{}}
	if len(raw) == 0 || string(raw) == "null" {
		return c, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return kafkaCheckpoint{}, fmt.Errorf("checkpoint %s: %w", raw, err)
	}
	if c.V != 1 {
		return kafkaCheckpoint{}, fmt.Errorf("checkpoint format %d is newer than this sluice (1)", c.V)
	}
	if c.Partitions == nil {
		c.Partitions = map[string]int64{}
	}
	for p, off := range c.Partitions {
		if n, err := strconv.ParseInt(p, 10, 32); err != nil || n < 0 || off < 0 {
			return kafkaCheckpoint{}, fmt.Errorf("checkpoint %s: bad partition %q: %d", raw, p, off)
		}
	}
	return c, nil
}

// next returns the partition's next offset, and whether it was recorded.
func (c kafkaCheckpoint) next(p int32) (int64, bool) {
	off, ok := c.Partitions[strconv.Itoa(int(p))]
	return off, ok
}

func (c kafkaCheckpoint) clone() kafkaCheckpoint {
	return kafkaCheckpoint{V: 1, Partitions: maps.Clone(c.Partitions), Gaps: slices.Clone(c.Gaps)}
}

func (c kafkaCheckpoint) raw() json.RawMessage {
	b, _ := json.Marshal(c)
	return b
}

// kafkaPart is one partition's share of a run: read offsets [from, end).
type kafkaPart struct {
	p     int32
	from  int64
	end   int64 // last stable offset listed at the start of the run
	next  int64 // next offset to read; from..end
	quarT int64 // bad records below this offset are already quarantined
}

func (kp *kafkaPart) done() bool { return kp.next >= kp.end }

// runKafka is Run for a kafka:// source: it reads, per partition, from
// the offset table t's checkpoint records (the log start offset for a
// partition never read) up to the last stable offset listed at the start
// of the run, with read_committed isolation, so aborted transactions never
// appear and nothing that was on the topic when the run began is left
// behind. Partitions are assigned directly, not through a consumer group.
//
// Exactly once: the files holding the records and the partitions' next
// offsets are committed in one manifest version, conditional on the
// checkpoint being the one read at the start (two concurrent runs cannot
// both commit the same range: one fails with catalog.ErrConflict).
//
// Bad records go to the quarantine table, which is committed first and
// records in its own checkpoint, per partition, the offset below which it
// holds every bad record. A rerun after a crash between the two commits
// reads the same range again but does not quarantine those records twice.
func runKafka(ctx context.Context, t *catalog.Table, source string, o Options) (Result, error) {
	var res Result
	ks, err := parseKafkaURL(source)
	if err != nil {
		return res, fmt.Errorf("ingest: --from %w", err)
	}
	if err := o.Validate(); err != nil {
		return res, err
	}
	o = o.withDefaults()
	log := o.Logger.With("table", t.Location(), "source", ks.String())
	start := time.Now()
	m, err := t.Latest(ctx)
	if err != nil {
		return res, fmt.Errorf("ingest into %s: %w", t.Location(), err)
	}
	res.Version = m.Version
	cpKey := "kafka:" + ks.id()
	cpBase := m.Checkpoints[cpKey]
	cp, err := parseKafkaCheckpoint(cpBase)
	if err != nil {
		return res, fmt.Errorf("ingest into %s: %s: %w", t.Location(), cpKey, err)
	}

	qt, qm, err := quarantineOf(ctx, t, o)
	if err != nil {
		return res, err
	}
	defer qt.Close()
	qKey := "quarantined:" + canonicalLocation(t.Location()) + " " + cpKey
	var qBase json.RawMessage
	if qm != nil {
		qBase = qm.Checkpoints[qKey]
	}
	qcp, err := parseKafkaCheckpoint(qBase)
	if err != nil {
		return res, fmt.Errorf("ingest: quarantine %s: %s: %w", qt.Location(), qKey, err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(ks.brokers...))
	if err != nil {
		return res, fmt.Errorf("ingest %s: %w", ks, err)
	}
	defer cl.Close()
	parts, err := kafkaPlan(ctx, cl, ks, cp, qcp, o.OnGap)
	if err != nil {
		return res, err
	}
	newCP := cp.clone()
	now := time.Now().UTC().Truncate(time.Microsecond)
	var toRead int64
	for _, kp := range parts {
		if old, ok := cp.next(kp.p); ok && kp.from > old {
			// Skipped under GapSkip: recorded even if nothing is read.
			newCP.Gaps = append(newCP.Gaps, kafkaGap{Partition: kp.p, From: old, To: kp.from, At: now})
			newCP.Partitions[strconv.Itoa(int(kp.p))] = kp.from
			res.RecordsSkipped += kp.from - old
		}
		toRead += kp.end - kp.from
	}
	log.LogAttrs(ctx, slog.LevelInfo, "list", slog.Int("partitions", len(parts)), slog.Int64("offsets", toRead),
		slog.Int64("skipped", res.RecordsSkipped), slog.Duration("took", time.Since(start)))

	target := o.TargetFileSize
	if target == 0 {
		target = DefaultTargetFileSize
		if n, err := strconv.ParseInt(m.Properties["target_file_size"], 10, 64); err == nil && n > 0 {
			target = n
		}
	}
	qschema, _ := catalog.ParseSchema(QuarantineSchema)
	kr := &kafkaReading{o: o, ks: ks, now: now, parts: parts,
		main: newSink(t, m, o.MemoryBudget*3/4, target),
		quar: newSink(qt, &catalog.Manifest{Schema: qschema, Spec: quarantineSpec(qschema)}, o.MemoryBudget/4, target),
		dec:  newDecoder(m.Schema, o), toRead: toRead}
	var mainFiles, qFiles []catalog.DataFile
	err = kr.consume(ctx)
	if err == nil {
		mainFiles, err = kr.main.close(ctx)
	}
	if err == nil {
		qFiles, err = kr.quar.close(ctx)
	}
	if err != nil {
		cleanup := context.WithoutCancel(ctx)
		kr.main.abort(cleanup)
		kr.quar.abort(cleanup)
		return res, fmt.Errorf("ingest %s: %w", ks, err)
	}
	res.RecordsIn, res.RowsWritten, res.RecordsQuarantined = kr.recordsIn, kr.rowsOut, kr.quarantined
	res.BytesIn, res.FilesOut = kr.bytesIn, len(mainFiles)
	log.LogAttrs(ctx, slog.LevelInfo, "read", slog.Int64("records", kr.recordsIn),
		slog.Int64("quarantined", kr.quarantined), slog.Duration("took", time.Since(start)))

	for _, kp := range parts {
		if _, ok := newCP.next(kp.p); ok || kp.next > kp.from {
			newCP.Partitions[strconv.Itoa(int(kp.p))] = kp.next
		}
	}
	if string(newCP.raw()) == string(cp.raw()) {
		return res, nil // nothing new on the topic
	}

	// The quarantine first (see above), then the table.
	var newQ json.RawMessage
	if len(qFiles) > 0 {
		q := qcp.clone()
		q.Gaps = nil
		for _, kp := range parts {
			if kp.next > kp.quarT {
				q.Partitions[strconv.Itoa(int(kp.p))] = kp.next
			}
		}
		newQ = q.raw()
	}
	err = commitRun(ctx, &res, runCommit{runID: o.RunID,
		qt: qt, qm: qm, qFiles: qFiles, qKey: qKey, qBase: qBase, qNew: newQ,
		t: t, files: mainFiles, cpKey: cpKey, cpBase: cpBase, cpNew: newCP.raw()})
	if err != nil {
		return res, fmt.Errorf("ingest %s: %w", ks, err)
	}
	log.LogAttrs(ctx, slog.LevelInfo, "commit", slog.Int64("version", res.Version),
		slog.Int64("quarantine_version", res.QuarantineVersion), slog.Duration("took", time.Since(start)))
	return res, nil
}

// canonicalLocation is a table location as the checkpoint keys spell it.
func canonicalLocation(loc string) string {
	if l, err := cloud.ParseLocation(loc); err == nil {
		return l.String()
	}
	return loc
}

// kafkaPlan lists the topic's partitions, their log start offsets and
// their last stable offsets, and returns what to read of each, sorted by
// partition. A partition whose checkpointed offset is below its log start
// offset fails with ErrKafkaGap unless onGap is GapSkip; then it is read
// from the log start offset.
func kafkaPlan(ctx context.Context, cl *kgo.Client, ks kafkaSource, cp, qcp kafkaCheckpoint, onGap GapPolicy) ([]*kafkaPart, error) {
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, ks.topic)
	if err != nil {
		return nil, fmt.Errorf("ingest %s: list start offsets of topic %s: %w", ks, ks.topic, err)
	}
	sp := starts[ks.topic]
	if bad, ok := sp[-1]; ok && bad.Err != nil {
		return nil, fmt.Errorf("ingest %s: topic %s: %w", ks, ks.topic, bad.Err)
	}
	if len(sp) == 0 {
		return nil, fmt.Errorf("ingest %s: topic %s: %w", ks, ks.topic, kerr.UnknownTopicOrPartition)
	}
	ends, err := listStableOffsets(ctx, cl, ks.topic, slices.Collect(maps.Keys(sp)))
	if err != nil {
		return nil, fmt.Errorf("ingest %s: %w", ks, err)
	}
	var parts []*kafkaPart
	var gaps []string
	for _, p := range slices.Sorted(maps.Keys(sp)) {
		s := sp[p]
		if s.Err != nil {
			return nil, fmt.Errorf("ingest %s: topic %s partition %d: log start offset: %w", ks, ks.topic, p, s.Err)
		}
		kp := &kafkaPart{p: p, from: s.Offset, end: ends[p]}
		if next, ok := cp.next(p); ok {
			switch {
			case next < s.Offset && onGap != GapSkip:
				gaps = append(gaps, fmt.Sprintf("partition %d: %d records (offsets %d to %d)", p, s.Offset-next, next, s.Offset-1))
			case next < s.Offset:
			case next > kp.end:
				return nil, fmt.Errorf("ingest %s: topic %s partition %d: checkpoint offset %d is beyond the end offset %d (was the topic recreated?)",
					ks, ks.topic, p, next, kp.end)
			default:
				kp.from = next
			}
		}
		kp.next = kp.from
		kp.quarT, _ = qcp.next(p)
		parts = append(parts, kp)
	}
	if len(gaps) > 0 {
		return nil, fmt.Errorf("ingest %s: topic %s: %s (--on-gap=skip reads on from the log start): %w",
			ks, ks.topic, strings.Join(gaps, "; "), ErrKafkaGap)
	}
	return parts, nil
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

// kafkaReading is one pass over the partitions' ranges.
type kafkaReading struct {
	o      Options
	ks     kafkaSource
	now    time.Time
	parts  []*kafkaPart
	main   *sink
	quar   *sink
	dec    *decoder
	toRead int64

	recordsIn, rowsOut, quarantined, bytesIn int64
}

// consume reads every partition's range into the sinks, stopping at a
// record boundary once MaxRecords records were read.
func (kr *kafkaReading) consume(ctx context.Context) error {
	byP := map[int32]*kafkaPart{}
	assign := map[int32]kgo.Offset{}
	for _, kp := range kr.parts {
		if !kp.done() {
			byP[kp.p] = kp
			assign[kp.p] = kgo.NewOffset().At(kp.from)
		}
	}
	if len(byP) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kr.ks.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{kr.ks.topic: assign}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		// A range deleted after the run listed it must fail the run, not
		// be skipped silently.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	topic := kr.ks.topic
	var consumed int64 // offsets passed, for progress
	for len(byP) > 0 {
		pctx, cancel := context.WithTimeout(ctx, kafkaIdleTimeout)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr != nil {
				return
			}
			if errors.Is(err, context.DeadlineExceeded) {
				var waiting []string
				for _, p := range slices.Sorted(maps.Keys(byP)) {
					waiting = append(waiting, fmt.Sprintf("%d at offset %d of %d", p, byP[p].next, byP[p].end))
				}
				err = fmt.Errorf("no records for %s while partitions %s are short of their end offsets: %w",
					kafkaIdleTimeout, strings.Join(waiting, ", "), err)
				ferr = fmt.Errorf("topic %s: %w", topic, err)
				return
			}
			ferr = fmt.Errorf("topic %s partition %d: fetch: %w", t, p, err)
		})
		if ferr != nil {
			return ferr
		}
		stop := false
		var werr error
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			kp := byP[fp.Partition]
			if fp.Topic != topic || kp == nil || stop || werr != nil {
				return
			}
			for _, r := range fp.Records {
				if r.Offset < kp.next {
					continue
				}
				if r.Offset >= kp.end {
					kp.next = kp.end // everything below end was passed over
					break
				}
				if r.Attrs.IsControl() {
					kp.next = r.Offset + 1
					continue
				}
				if kr.o.MaxRecords > 0 && kr.recordsIn >= kr.o.MaxRecords {
					stop = true
					return
				}
				if err := kr.record(ctx, r); err != nil {
					werr = fmt.Errorf("topic %s partition %d offset %d: %w", topic, r.Partition, r.Offset, err)
					return
				}
				consumed += r.Offset + 1 - kp.next
				kp.next = r.Offset + 1
			}
			if kp.done() {
				delete(byP, kp.p)
				cl.PauseFetchPartitions(map[string][]int32{topic: {kp.p}})
			}
		})
		if werr != nil {
			return werr
		}
		if kr.o.Progress != nil {
			kr.o.Progress(int(min(consumed, kr.toRead)), int(kr.toRead))
		}
		if stop || (kr.o.MaxRecords > 0 && kr.recordsIn >= kr.o.MaxRecords) {
			return nil
		}
	}
	return nil
}

// record decodes one record into the table's sink or the quarantine's.
func (kr *kafkaReading) record(ctx context.Context, r *kgo.Record) error {
	kr.recordsIn++
	kr.bytesIn += int64(len(r.Value))
	row, rec, why := kr.dec.decodeValue(r.Value)
	if why == nil {
		if dup, err := kr.o.dedup.drop(ctx, row); dup || err != nil {
			return err
		}
		kr.rowsOut++
		return kr.main.add(ctx, row, len(r.Value))
	}
	kr.quarantined++
	kp := kr.partOf(r.Partition)
	if kp != nil && r.Offset < kp.quarT {
		return nil // committed to the quarantine by an earlier, unfinished run
	}
	pos := r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
	q := []any{kr.ks.String(), pos, why.Error(), append([]byte(nil), rec...), kr.now}
	return kr.quar.add(ctx, q, len(rec))
}

func (kr *kafkaReading) partOf(p int32) *kafkaPart {
	i := sort.Search(len(kr.parts), func(i int) bool { return kr.parts[i].p >= p })
	if i < len(kr.parts) && kr.parts[i].p == p {
		return kr.parts[i]
	}
	return nil
}

// decodeValue decodes one record that is a whole JSON object, as
// decodeJSONL does a line: it returns the row, or the (possibly
// truncated) raw bytes to quarantine and why.
func (d *decoder) decodeValue(raw []byte) (row []any, rec []byte, bad error) {
	rec = raw
	if len(rec) > d.maxBytes {
		rec = rec[:d.maxBytes]
	}
	if err := d.checkRaw(rec, len(raw)); err != nil {
		return nil, rec, err
	}
	row = make([]any, len(d.conv))
	if err := d.jsonRow(rec, row); err != nil {
		return nil, rec, err
	}
	return row, rec, nil
}
