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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
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
// while partitions assigned to it are still short of the end offsets
// listed when they were assigned. Those records exist, so a long silence
// means the cluster is unreachable (or the tail of a partition is
// invisible to read_committed): the run fails rather than hang, and
// commits nothing more.
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
	if strings.Contains(hosts, "@") {
		// A password here would be echoed by every error and kept in
		// the checkpoint key; sluice speaks no SASL.
		return kafkaSource{}, fmt.Errorf("%q: a kafka:// source takes no user name or password (SASL is not supported)", cloud.Redact(s))
	}
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

func (c kafkaCheckpoint) raw() json.RawMessage {
	b, _ := json.Marshal(c)
	return b
}

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

// KafkaSessionTimeout is the consumer group session timeout a Kafka run
// asks for: how long the group waits for a member that stopped
// heartbeating (a crashed instance) before handing its partitions to the
// others. Kafka's 45s default suits long-lived consumers; a killed batch
// run should not hold up the next one that long.
const KafkaSessionTimeout = 10 * time.Second

// Consumer group timing.
var (
	// kafkaRebalanceTimeout is how long a rebalance waits for the members
	// to rejoin. A live run rejoins within a heartbeat plus the commit it
	// makes before giving partitions up, a few seconds; a crashed one
	// never does, and kgo's 60s default held the next run up that long per
	// rebalance. A member slower than this is dropped from the group: its
	// partitions go to the others, and its commit of them fails the
	// per-partition check rather than duplicating records.
	kafkaRebalanceTimeout = 20 * time.Second
	// kafkaJoinTimeout bounds how long a run waits for its first
	// assignment: the group waits for every member to rejoin, a crashed
	// one up to KafkaSessionTimeout, a slow one up to
	// kafkaRebalanceTimeout.
	kafkaJoinTimeout = 2 * time.Minute
	// kafkaGroupCommitTimeout bounds committing the group offsets, which
	// only feed lag monitoring.
	kafkaGroupCommitTimeout = 10 * time.Second
	// kafkaLiveAfter is how long the group must keep the same members,
	// stable, for a run to trust that they are alive: a member that does
	// not heartbeat is expired within KafkaSessionTimeout.
	kafkaLiveAfter = KafkaSessionTimeout + 2*time.Second
	// kafkaOthersWait bounds how long a run whose own partitions are read
	// stays in the group while others' are not, for a group that never
	// settles.
	kafkaOthersWait = 2 * kafkaJoinTimeout
)

// kafkaReadGate, when set (by tests only, to sequence group members),
// holds a run before it reads or finishes until it returns true for the
// partitions then assigned to the run.
var kafkaReadGate func(partitions []int32) bool

// runKafka is Run for a kafka:// source. The run joins the consumer group
// Options.Group (cooperative-sticky balancing, so a rebalance moves only
// the partitions that change owner), and reads each partition assigned to
// it from the offset t's checkpoint records (the log start offset for a
// partition never read), read fresh from t when the partition is
// assigned, up to the last stable offset listed then, with read_committed
// isolation: aborted transactions never appear and nothing that was on
// the topic when the partition was assigned is left behind. Instances of
// one table share the topic's partitions this way, evenly.
//
// When every partition assigned to it is read, the run commits, and stays
// in the group until the table's checkpoint shows every partition the
// topic had at the start read up to the end offset listed then (by this
// run or by others), or until the members holding the partitions not
// read yet have kept the group stable for longer than a session timeout,
// which only live members do (kafkaLiveAfter; kafkaOthersWait bounds the
// wait for a group that never settles). A member that crashed holds its
// partitions until the group expires its session, and then they come to
// this run, so nothing is left behind; a member that is merely slower
// finishes its own. A run that read MaxRecords records commits and leaves
// at once.
//
// Exactly once: the files holding the records and the partitions' next
// offsets are committed in one manifest version. The commit merges this
// run's partitions into the newest checkpoint, requiring only that each of
// them is still at the offset the run started from; so instances covering
// different partitions never conflict, and two runs that read the same
// range cannot both commit it (the second fails with catalog.ErrConflict).
//
// Rebalances: before a partition is handed to another member (revoked, or
// lost with the member's session), the run commits everything it read so
// far, files and offsets, and then stops reading that partition. The group
// gives the partition to its next owner only after that commit, and the
// next owner starts from the offset it recorded. A commit for a lost
// partition that the next owner committed first fails with ErrConflict
// rather than duplicate the range.
//
// The group's own offsets are committed after each manifest commit, best
// effort, only so that lag shows in Kafka tools; they are never read.
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
	group := o.Group
	if group == "" {
		group = DefaultGroup(t.Location())
	}
	log := o.Logger.With("table", t.Location(), "source", ks.String(), "group", group)
	start := time.Now()
	m, err := t.Latest(ctx)
	if err != nil {
		return res, fmt.Errorf("ingest into %s: %w", t.Location(), err)
	}
	res.Version = m.Version
	cpKey := "kafka:" + ks.id()
	if _, err := parseKafkaCheckpoint(m.Checkpoints[cpKey]); err != nil {
		return res, fmt.Errorf("ingest into %s: %s: %w", t.Location(), cpKey, err)
	}
	dd, err := newDedup(t, m, o)
	if err != nil {
		return res, err
	}
	qt, qm, err := quarantineOf(ctx, t, o)
	if err != nil {
		return res, err
	}
	defer qt.Close()
	target := o.targetFileSize(m)
	kr := &kafkaRun{ctx: ctx, o: o, ks: ks, group: group, log: log, t: t, m: m, qt: qt, qExists: qm != nil,
		cpKey: cpKey, qKey: "quarantined:" + canonicalLocation(t.Location()) + " " + cpKey,
		target: target, dec: newSoloDecoder(m.Schema, o), now: time.Now().UTC().Truncate(time.Microsecond),
		wake: make(chan struct{}, 1), res: &res, progressAt: start,
		pending: map[int32]bool{}, parts: map[int32]*kafkaPart{}, paused: map[int32]bool{},
		tableParts: map[string]bool{}, covered: map[int32]bool{},
		codecs: pqio.NewCodecs(), qCodecs: pqio.NewCodecs(), dedup: dd.forRecords()}
	kr.newSinks()

	opts := []kgo.Opt{kgo.SeedBrokers(ks.brokers...),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(ks.topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(KafkaSessionTimeout),
		kgo.RebalanceTimeout(kafkaRebalanceTimeout),
		// The manifest holds the offsets; the group's are written for
		// monitoring only, after the manifest commit.
		kgo.DisableAutoCommit(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.WithPools(fetchPool{}),
		// A range deleted after the run listed it must fail the run, not
		// be skipped silently.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.OnPartitionsAssigned(kr.assigned),
		kgo.AdjustFetchOffsetsFn(kr.adjust),
		kgo.OnPartitionsRevoked(kr.revoked),
		kgo.OnPartitionsLost(kr.lost),
	}
	opts = append(opts, fetchLimits(o)...)
	if o.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(o.InstanceID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return res, fmt.Errorf("ingest %s: %w", ks, err)
	}
	defer func() {
		kr.mu.Lock()
		kr.closed = true // the leave below revokes everything: nothing to do
		kr.mu.Unlock()
		cl.Close()
	}()
	starts, err := listStartOffsets(ctx, cl, ks)
	if err == nil {
		kr.topicEnds, err = listStableOffsets(ctx, cl, ks.topic, slices.Collect(maps.Keys(starts)))
	}
	if err != nil {
		kr.abort()
		return res, fmt.Errorf("ingest %s: %w", ks, err)
	}
	kr.topicStarts = map[int32]int64{}
	for p, s := range starts {
		kr.topicStarts[p] = s.Offset
	}
	if err := kr.consume(ctx, cl, start); err != nil {
		kr.abort()
		kr.fillResult()
		return res, fmt.Errorf("ingest %s: %w", ks, err)
	}
	kr.mu.Lock()
	offs, err := kr.commitLocked(ctx)
	kr.closed = true
	kr.mu.Unlock()
	kr.fillResult()
	if err != nil {
		return res, fmt.Errorf("ingest %s: %w", ks, err)
	}
	kr.commitGroup(cl, offs)
	log.LogAttrs(ctx, slog.LevelInfo, "read", slog.Int64("records", res.RecordsIn),
		slog.Int64("quarantined", res.RecordsQuarantined), slog.Any("partitions", res.KafkaPartitions),
		slog.Int64("version", res.Version), slog.Duration("took", time.Since(start)))
	return res, nil
}

// DefaultGroup is the Kafka consumer group of runs into the table at
// location when Options.Group is empty: every instance writing the table
// joins it.
func DefaultGroup(location string) string { return "sluice:" + canonicalLocation(location) }

// canonicalLocation is a table location as the checkpoint keys spell it.
func canonicalLocation(loc string) string {
	if l, err := cloud.ParseLocation(loc); err == nil {
		return l.String()
	}
	return loc
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
// start offset.
func kafkaPlan(ctx context.Context, cl *kgo.Client, ks kafkaSource, ps []int32, cp, qcp kafkaCheckpoint, onGap GapPolicy) ([]*kafkaPart, error) {
	sp, err := listStartOffsets(ctx, cl, ks)
	if err != nil {
		return nil, err
	}
	ends, err := listStableOffsets(ctx, cl, ks.topic, ps)
	if err != nil {
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
			case next > kp.end:
				return nil, fmt.Errorf("topic %s partition %d: checkpoint offset %d is beyond the end offset %d (was the topic recreated?)",
					ks.topic, p, next, kp.end)
			default:
				kp.from = next
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

// kafkaRun is one run's state as a group member. The group callbacks run
// on the Kafka client's goroutines while consume reads, so mu guards
// everything that changes.
type kafkaRun struct {
	ctx         context.Context // the run's, for commits made in group callbacks
	o           Options
	ks          kafkaSource
	group       string
	log         *slog.Logger
	t           *catalog.Table
	m           *catalog.Manifest // t's schema, spec and properties
	qt          *catalog.Table
	cpKey, qKey string
	target      int64
	dec         *decoder
	now         time.Time
	wake        chan struct{} // signalled by callbacks; capacity 1
	res         *Result

	mu         sync.Mutex
	cl         *kgo.Client
	qExists    bool  // the quarantine table exists
	joined     bool  // a first assignment arrived
	closed     bool  // finished or failed: callbacks leave everything alone
	err        error // a callback's failure, which fails the run
	woken      bool  // a callback signalled since consume last looked
	pollCancel context.CancelFunc
	progressAt time.Time // the last assignment or record
	pending    map[int32]bool
	parts      map[int32]*kafkaPart // planned and still ours
	paused     map[int32]bool       // fetching paused: read to the end
	resume     []int32              // planned anew while paused
	main, quar *sink
	// codecs and qCodecs outlive the sinks, renewed after each commit:
	// each column's compression level is learnt once per run.
	codecs, qCodecs *pqio.Codecs
	dedup           *dedup // nil without a dedup key
	full            bool   // MaxRecords were read

	// The topic's partitions when the run started: what the group as a
	// whole is to read (see notCaughtUp).
	topicStarts, topicEnds map[int32]int64

	tableParts                               map[string]bool // table partitions committed to
	covered                                  map[int32]bool  // Kafka partitions whose offsets were committed
	recordsIn, rowsOut, quarantined, bytesIn int64
	toRead, consumed                         int64
}

// newSinks starts the run's sinks. A record read is never taken back, so
// they hand rows to their writers in small batches rather than holding
// the budget's worth.
func (kr *kafkaRun) newSinks() {
	kr.main = newSink(kr.t, kr.m, kr.o.MemoryBudget*3/4, kr.target, kr.codecs).streaming()
	kr.quar = newSink(kr.qt, quarantineShape, kr.o.MemoryBudget/4, kr.target, kr.qCodecs).streaming()
}

// abort deletes the files written and not committed.
func (kr *kafkaRun) abort() {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.closed = true
	cleanup := context.WithoutCancel(kr.ctx)
	kr.main.abort(cleanup)
	kr.quar.abort(cleanup)
}

func (kr *kafkaRun) fillResult() {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	r := kr.res
	r.RecordsIn, r.RowsWritten, r.RecordsQuarantined, r.BytesIn = kr.recordsIn, kr.rowsOut, kr.quarantined, kr.bytesIn
	r.RecordsDeduplicated = kr.dedup.count()
	r.Partitions = slices.Sorted(maps.Keys(kr.tableParts))
	r.KafkaPartitions = slices.Sorted(maps.Keys(kr.covered))
}

// notifyLocked wakes consume: the assignment changed or a callback failed.
func (kr *kafkaRun) notifyLocked() {
	kr.woken = true
	if kr.pollCancel != nil {
		kr.pollCancel()
	}
	select {
	case kr.wake <- struct{}{}:
	default:
	}
}

func (kr *kafkaRun) failLocked(err error) {
	if kr.err == nil {
		kr.err = err
	}
	kr.notifyLocked()
}

// assigned notes partitions newly assigned; adjust plans them.
func (kr *kafkaRun) assigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.cl = cl
	kr.joined = true
	for _, p := range assigned[kr.ks.topic] {
		kr.pending[p] = true
	}
	kr.progressAt = time.Now()
	kr.notifyLocked()
}

// adjust plans the partitions whose group offsets were just fetched, from
// t's checkpoint as it is now, and makes the client read each from the
// offset the checkpoint records instead.
func (kr *kafkaRun) adjust(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	offs := offsets[kr.ks.topic]
	if kr.closed || kr.err != nil || len(offs) == 0 {
		return offsets, nil
	}
	if err := kr.planLocked(ctx, offs); err != nil {
		kr.failLocked(err)
		return nil, err
	}
	return offsets, nil
}

func (kr *kafkaRun) planLocked(ctx context.Context, offs map[int32]kgo.Offset) error {
	m, err := kr.t.Latest(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", kr.t.Location(), err)
	}
	cp, err := parseKafkaCheckpoint(m.Checkpoints[kr.cpKey])
	if err != nil {
		return fmt.Errorf("%s: %s: %w", kr.t.Location(), kr.cpKey, err)
	}
	qm, err := openQuarantine(ctx, kr.qt)
	if err != nil {
		return err
	}
	var qcp kafkaCheckpoint
	if qm != nil {
		kr.qExists = true
		if qcp, err = parseKafkaCheckpoint(qm.Checkpoints[kr.qKey]); err != nil {
			return fmt.Errorf("quarantine %s: %s: %w", kr.qt.Location(), kr.qKey, err)
		}
	}
	planned, err := kafkaPlan(ctx, kr.cl, kr.ks, slices.Collect(maps.Keys(offs)), cp, qcp, kr.o.OnGap)
	if err != nil {
		return err
	}
	var toRead, skipped int64
	var ps []int32
	for _, kp := range planned {
		delete(kr.pending, kp.p)
		if old := kr.parts[kp.p]; old != nil && old.advanced() {
			// Still ours, with reading not committed yet: go on from
			// where it is.
			offs[kp.p] = kgo.NewOffset().At(old.next).WithEpoch(-1)
			continue
		}
		kr.parts[kp.p] = kp
		offs[kp.p] = kgo.NewOffset().At(kp.from).WithEpoch(-1)
		if kp.base >= 0 && kp.from > kp.base {
			skipped += kp.from - kp.base
		}
		toRead += kp.end - kp.from
		ps = append(ps, kp.p)
		if !kp.done() && kr.paused[kp.p] {
			delete(kr.paused, kp.p)
			kr.resume = append(kr.resume, kp.p)
		}
	}
	kr.toRead += toRead
	kr.res.RecordsSkipped += skipped
	kr.progressAt = time.Now()
	kr.log.LogAttrs(ctx, slog.LevelInfo, "assigned", slog.Any("partitions", ps), slog.Int64("offsets", toRead),
		slog.Int64("skipped", skipped))
	kr.notifyLocked()
	return nil
}

func (kr *kafkaRun) revoked(_ context.Context, cl *kgo.Client, revoked map[string][]int32) {
	kr.handOver(cl, revoked[kr.ks.topic], "revoked")
}

func (kr *kafkaRun) lost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	kr.handOver(cl, lost[kr.ks.topic], "lost")
}

// handOver stops reading partitions ps, which the group takes away,
// committing first what was read if any of them has uncommitted reading:
// the group gives them to their next owner only once this returns.
func (kr *kafkaRun) handOver(cl *kgo.Client, ps []int32, why string) {
	if len(ps) == 0 {
		return
	}
	kr.mu.Lock()
	var offs map[int32]int64
	if !kr.closed && kr.err == nil && slices.ContainsFunc(ps, func(p int32) bool {
		kp := kr.parts[p]
		return kp != nil && kp.advanced()
	}) {
		var err error
		if offs, err = kr.commitLocked(kr.ctx); err != nil {
			kr.failLocked(fmt.Errorf("commit before partitions %v are handed over (%s): %w", ps, why, err))
		}
	}
	for _, p := range ps {
		delete(kr.parts, p)
		delete(kr.pending, p)
	}
	if !kr.closed {
		kr.log.LogAttrs(kr.ctx, slog.LevelInfo, why, slog.Any("partitions", ps))
	}
	kr.notifyLocked()
	kr.mu.Unlock()
	kr.commitGroup(cl, offs)
}

// kafkaState is what consume needs to decide its next step.
type kafkaState struct {
	err      error
	joined   bool
	finished bool // this run's partitions are read, or MaxRecords records
	full     bool
	mine     []int32 // the partitions planned, sorted; nil while some are pending
	waiting  bool    // some partitions of this run are not read yet
	deadline time.Time
	resume   []int32
}

func (kr *kafkaRun) state(start time.Time) kafkaState {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.woken = false
	st := kafkaState{err: kr.err, joined: kr.joined, resume: kr.resume}
	kr.resume = nil
	st.waiting = len(kr.pending) > 0
	for _, kp := range kr.parts {
		st.waiting = st.waiting || !kp.done()
	}
	if len(kr.pending) == 0 {
		st.mine = slices.Sorted(maps.Keys(kr.parts))
	}
	st.finished = kr.joined && (kr.full || !st.waiting)
	st.full = kr.full
	st.deadline = kr.progressAt.Add(kafkaIdleTimeout)
	if !kr.joined {
		st.deadline = start.Add(kafkaJoinTimeout)
	}
	return st
}

// describeWaiting lists the partitions of this run not read yet, for an
// error.
func (kr *kafkaRun) describeWaiting() string {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	var waiting []string
	for _, p := range slices.Sorted(maps.Keys(kr.parts)) {
		if kp := kr.parts[p]; !kp.done() {
			waiting = append(waiting, fmt.Sprintf("%d at offset %d of %d", p, kp.next, kp.end))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(kr.pending)) {
		waiting = append(waiting, fmt.Sprintf("%d not planned yet", p))
	}
	return strings.Join(waiting, ", ")
}

// consume reads the assigned partitions' ranges into the sinks until
// every one is read, or MaxRecords records were.
func (kr *kafkaRun) consume(ctx context.Context, cl *kgo.Client, start time.Time) error {
	topic := kr.ks.topic
	gateOpen := kafkaReadGate == nil
	var doneAt time.Time // when this run's own partitions were all read
	var live groupMembers
	for {
		st := kr.state(start)
		if len(st.resume) > 0 {
			cl.ResumeFetchPartitions(map[string][]int32{topic: st.resume})
		}
		if st.err != nil {
			return st.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !gateOpen {
			if gateOpen = st.joined && st.mine != nil && kafkaReadGate(st.mine); !gateOpen {
				select {
				case <-kr.wake:
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
		}
		if st.finished {
			if st.full {
				return nil
			}
			// Stay while other members' partitions are not read: a
			// member that crashed keeps its partitions until the group
			// expires it, and then they come to this run.
			if doneAt.IsZero() {
				doneAt = time.Now()
			}
			missing, err := kr.notCaughtUp(ctx)
			if err != nil {
				return err
			}
			if len(missing) == 0 || kr.othersLive(ctx, cl, missing, &live) {
				return nil
			}
			if time.Since(doneAt) >= kafkaOthersWait {
				kr.log.LogAttrs(ctx, slog.LevelWarn, "leaving partitions not read to the group",
					slog.Any("partitions", missing), slog.Duration("waited", time.Since(doneAt)))
				return nil
			}
			// Commit what this run read meanwhile: the others may be
			// waiting for it too.
			kr.mu.Lock()
			offs, err := kr.commitLocked(ctx)
			kr.mu.Unlock()
			if err != nil {
				return err
			}
			kr.commitGroup(cl, offs)
			select {
			case <-kr.wake:
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		doneAt = time.Time{}
		if !time.Now().Before(st.deadline) {
			if !st.joined {
				return fmt.Errorf("topic %s: no partitions assigned by the consumer group within %s", topic, kafkaJoinTimeout)
			}
			return fmt.Errorf("topic %s: no records for %s while partitions %s are short of their end offsets: %w",
				topic, kafkaIdleTimeout, kr.describeWaiting(), context.DeadlineExceeded)
		}
		pctx, cancel := context.WithDeadline(ctx, st.deadline)
		kr.mu.Lock()
		kr.pollCancel = cancel
		if kr.woken {
			cancel() // a callback ran since state: look again first
		}
		kr.mu.Unlock()
		fs := cl.PollFetches(pctx)
		kr.mu.Lock()
		kr.pollCancel = nil
		kr.mu.Unlock()
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			switch {
			case ferr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			case t == "":
				// A group error (joining, heartbeating) that the client
				// retries itself; the deadlines above bound the wait.
				kr.log.LogAttrs(ctx, slog.LevelWarn, "group", slog.String("error", err.Error()))
			default:
				ferr = fmt.Errorf("topic %s partition %d: fetch: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		if kr.dedup != nil && fs.NumRecords() > 0 {
			// Load the keys of the window before take holds kr.mu: a
			// large window takes a while, and the group's callbacks
			// must not wait for it.
			if err := kr.dedup.keys.load(ctx); err != nil {
				return err
			}
		}
		pause, err := kr.take(ctx, fs)
		// Decoding copied what rows and the quarantine keep: the
		// batches' buffers go back to the pool (see fetchPool).
		fs.EachRecord(func(r *kgo.Record) { r.Recycle() })
		if err != nil {
			return err
		}
		if len(pause) > 0 {
			cl.PauseFetchPartitions(map[string][]int32{topic: pause})
		}
	}
}

// notCaughtUp returns the partitions the topic had when the run started
// that are not read up to the end offset listed then, by this run or by
// others as t's checkpoint records; sorted. When this run read them all
// (a run alone in its group), it does not read the manifest.
func (kr *kafkaRun) notCaughtUp(ctx context.Context) ([]int32, error) {
	kr.mu.Lock()
	var unread []int32 // by this run
	for p, end := range kr.topicEnds {
		if kp := kr.parts[p]; kp == nil || kp.next < end {
			unread = append(unread, p)
		}
	}
	kr.mu.Unlock()
	if len(unread) == 0 {
		return nil, nil
	}
	m, err := kr.t.Latest(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", kr.t.Location(), err)
	}
	cp, err := parseKafkaCheckpoint(m.Checkpoints[kr.cpKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", kr.t.Location(), kr.cpKey, err)
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	var missing []int32
	for _, p := range unread {
		at, ok := cp.next(p)
		if kp := kr.parts[p]; kp != nil && kp.next > at {
			at, ok = kp.next, true
		}
		if !ok {
			at = kr.topicStarts[p] // never read: nothing below the log start
		}
		if at < kr.topicEnds[p] {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// groupMembers is a group's membership as last described, and since when
// it has been stable with those members.
type groupMembers struct {
	ids   string
	since time.Time
}

// othersLive tells whether the partitions missing are held by other
// members that are alive: the group has been stable, with the same
// members, for longer than kafkaLiveAfter. seen carries the membership
// between calls. Failing to describe the group counts as not knowing.
func (kr *kafkaRun) othersLive(ctx context.Context, cl *kgo.Client, missing []int32, seen *groupMembers) bool {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	groups, err := kadm.NewClient(cl).DescribeGroups(dctx, kr.group)
	if err != nil {
		return false
	}
	g, ok := groups[kr.group]
	if !ok || g.Err != nil || g.State != "Stable" {
		*seen = groupMembers{}
		return false
	}
	me, _ := cl.GroupMetadata()
	held := map[int32]bool{}
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
		c, ok := m.Assigned.AsConsumer()
		if !ok || m.MemberID == me {
			continue
		}
		for _, t := range c.Topics {
			if t.Topic == kr.ks.topic {
				for _, p := range t.Partitions {
					held[p] = true
				}
			}
		}
	}
	slices.Sort(ids)
	if key := strings.Join(ids, ","); key != seen.ids {
		*seen = groupMembers{ids: key, since: time.Now()}
	}
	for _, p := range missing {
		if !held[p] {
			return false
		}
	}
	return time.Since(seen.since) >= kafkaLiveAfter
}

// take adds the fetched records of the partitions still ours to the
// sinks, and returns the partitions read to their end.
func (kr *kafkaRun) take(ctx context.Context, fs kgo.Fetches) (pause []int32, err error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if kr.closed || kr.err != nil {
		return nil, kr.err
	}
	topic := kr.ks.topic
	max := kr.o.MaxRecords
	before := kr.consumed
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		kp := kr.parts[fp.Partition]
		if fp.Topic != topic || kp == nil || kp.done() || kr.full || err != nil {
			return
		}
		for _, r := range fp.Records {
			if r.Offset < kp.next {
				continue
			}
			if r.Offset >= kp.end {
				kr.consumed += kp.end - kp.next
				kp.next = kp.end // everything below end was passed over
				break
			}
			if !r.Attrs.IsControl() {
				if max > 0 && kr.recordsIn >= max {
					kr.full = true
					return
				}
				if err = kr.record(ctx, r, kp); err != nil {
					err = fmt.Errorf("topic %s partition %d offset %d: %w", topic, r.Partition, r.Offset, err)
					return
				}
			}
			kr.consumed += r.Offset + 1 - kp.next
			kp.next = r.Offset + 1
		}
		if kp.done() && !kr.paused[kp.p] {
			kr.paused[kp.p] = true
			pause = append(pause, kp.p)
		}
	})
	if max > 0 && kr.recordsIn >= max {
		kr.full = true
	}
	if kr.consumed > before {
		kr.progressAt = time.Now()
		if kr.o.Progress != nil {
			kr.o.Progress(int(min(kr.consumed, kr.toRead)), int(kr.toRead))
		}
	}
	return pause, err
}

// record decodes one record into the table's sink or the quarantine's.
func (kr *kafkaRun) record(ctx context.Context, r *kgo.Record, kp *kafkaPart) error {
	kr.recordsIn++
	kr.bytesIn += int64(len(r.Value))
	row, rec, why := kr.dec.decodeValue(r.Value)
	if why == nil {
		if dup, err := kr.dedup.drop(ctx, row); dup || err != nil {
			return err
		}
		kr.rowsOut++
		return kr.main.add(ctx, row, len(r.Value))
	}
	kr.quarantined++
	if r.Offset < kp.qBase {
		return nil // committed to the quarantine by an earlier, unfinished run
	}
	pos := r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
	q := []any{kr.ks.String(), pos, why.Error(), append([]byte(nil), rec...), kr.now}
	return kr.quar.add(ctx, q, len(rec))
}

// commitLocked commits what was read since the last commit: the
// quarantine's files and offsets, then the table's, each merging this
// run's partitions into the newest checkpoint. It returns the offsets
// committed, for the group.
func (kr *kafkaRun) commitLocked(ctx context.Context) (map[int32]int64, error) {
	var covered []*kafkaPart
	for _, p := range slices.Sorted(maps.Keys(kr.parts)) {
		if kp := kr.parts[p]; kp.advanced() {
			covered = append(covered, kp)
		}
	}
	if len(covered) == 0 {
		// Nothing new on the topic: rows reach the sinks only with a
		// partition advancing, so they are empty and stay as they are.
		return nil, nil
	}
	mainFiles, err := kr.main.close(ctx)
	var qFiles []catalog.DataFile
	if err == nil {
		qFiles, err = kr.quar.close(ctx)
	}
	if err != nil {
		cleanup := context.WithoutCancel(ctx)
		kr.main.abort(cleanup)
		kr.quar.abort(cleanup)
		return nil, err
	}
	var qCovered []*kafkaPart
	for _, kp := range covered {
		if len(qFiles) > 0 && kp.next > kp.qBase {
			qCovered = append(qCovered, kp)
		}
	}
	cpMerge := func(cur json.RawMessage) (json.RawMessage, error) {
		c, err := parseKafkaCheckpoint(cur)
		if err != nil {
			return nil, err
		}
		for _, kp := range covered {
			if err := kp.require(c, kp.base); err != nil {
				return nil, err
			}
			if kp.base >= 0 && kp.from > kp.base {
				// Skipped under GapSkip: recorded even if nothing is read.
				c.Gaps = append(c.Gaps, kafkaGap{Partition: kp.p, From: kp.base, To: kp.from, At: kr.now})
			}
			c.Partitions[strconv.Itoa(int(kp.p))] = kp.next
		}
		return c.raw(), nil
	}
	var qMerge func(json.RawMessage) (json.RawMessage, error)
	if len(qFiles) > 0 {
		qMerge = func(cur json.RawMessage) (json.RawMessage, error) {
			c, err := parseKafkaCheckpoint(cur)
			if err != nil {
				return nil, err
			}
			c.Gaps = nil
			for _, kp := range qCovered {
				if err := kp.require(c, kp.qBase); err != nil {
					return nil, err
				}
				c.Partitions[strconv.Itoa(int(kp.p))] = kp.next
			}
			return c.raw(), nil
		}
	}
	var cr Result
	err = commitRun(ctx, &cr, runCommit{runID: kr.o.RunID,
		qt: kr.qt, qExists: kr.qExists, qFiles: qFiles, qKey: kr.qKey, qMerge: qMerge,
		t: kr.t, files: mainFiles, cpKey: kr.cpKey, cpMerge: cpMerge})
	if err != nil {
		// The run's abort deletes what the sinks hold, so take out the
		// files a version references or may reference.
		if cr.QuarantineVersion > 0 {
			kr.quar.keep() // committed before the table's commit failed
		}
		if errors.Is(err, cloud.ErrOutcomeUnknown) {
			kr.main.keep()
			kr.quar.keep()
			return nil, fmt.Errorf("commit outcome unknown, its files are kept: %w", err)
		}
		return nil, err
	}
	if cr.QuarantineVersion > 0 {
		kr.res.QuarantineVersion = cr.QuarantineVersion
		kr.qExists = true
	}
	kr.res.Version = cr.Version
	kr.res.FilesOut += len(mainFiles)
	for _, p := range cr.Partitions {
		kr.tableParts[p] = true
	}
	offs := map[int32]int64{}
	for _, kp := range covered {
		kp.base, kp.from = kp.next, kp.next
		kr.covered[kp.p] = true
		offs[kp.p] = kp.next
	}
	for _, kp := range qCovered {
		kp.qBase = kp.next
	}
	kr.newSinks()
	kr.log.LogAttrs(ctx, slog.LevelInfo, "commit", slog.Int64("version", cr.Version),
		slog.Int64("quarantine_version", cr.QuarantineVersion), slog.Any("partitions", slices.Sorted(maps.Keys(offs))))
	return offs, nil
}

// commitGroup commits offs as the group's offsets, so that Kafka tools
// show the group's lag. The table's checkpoint is what runs read from, so
// a failure here is only logged.
func (kr *kafkaRun) commitGroup(cl *kgo.Client, offs map[int32]int64) {
	if len(offs) == 0 || cl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(kr.ctx), kafkaGroupCommitTimeout)
	defer cancel()
	eo := map[int32]kgo.EpochOffset{}
	for p, off := range offs {
		eo[p] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	var err error
	for attempt := 1; ; attempt++ {
		err = nil
		cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{kr.ks.topic: eo},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
				err = cerr
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						if e := kerr.ErrorForCode(p.ErrorCode); e != nil && err == nil {
							err = fmt.Errorf("partition %d: %w", p.Partition, e)
						}
					}
				}
			})
		// A rebalance in progress refuses commits until the member
		// has rejoined.
		if err == nil || attempt == 5 || !(errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.IllegalGeneration)) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	if err != nil {
		kr.log.LogAttrs(ctx, slog.LevelWarn, "group offsets not committed; lag shown by Kafka tools is stale",
			slog.String("error", err.Error()))
	}
}

// decodeValue decodes one record that is a whole JSON object, as
// decodeJSONL does a line: it returns the row, or the (possibly
// truncated) raw bytes to quarantine and why.
func (d *decoder) decodeValue(raw []byte) (row []any, rec []byte, bad error) {
	rec = raw[:min(len(raw), d.maxBytes)]
	r := d.decodeJSON(rawRecord{b: rec, size: len(raw)})
	return r.row, rec, r.bad
}

// fetchPool lends franz-go the buffers it decodes fetched batches into.
// Without it, franz-go decompresses each batch into a buffer of its own
// and copies the result into a fresh slice (every record's bytes copied
// once more, a large allocation per batch), and it allocates a fresh
// slice of Records per batch, about 150 bytes a record, which the
// collector then scans. A batch's buffers come back when every record in
// it is recycled, which consume does once take has decoded them (rows and
// quarantined bytes are copies).
type fetchPool struct{}

// maxConcurrentFetches is how many fetches a Kafka run lets franz-go have
// in flight or buffered at once, over all brokers: enough that a broker
// with nothing new (which holds a fetch up to FetchMaxWait) does not
// stall the others.
const maxConcurrentFetches = 4

// fetchLimits are the client options that bound the memory of fetched
// batches (o with its defaults). Fetched batches wait in the client until
// polled, outside the sinks' budget: they are kept to an eighth of it.
// franz-go's FetchMaxBytes bounds one fetch, and it fetches from every
// broker at once unless MaxConcurrentFetches says otherwise, so the
// eighth is shared by at most maxConcurrentFetches fetches (fewer when it
// holds fewer than that many MiB; a fetch asks for 1 MiB at least, and
// 50 MiB, franz-go's default, at most).
//
// A broker answers with a record batch larger than FetchMaxBytes when it
// is the first one (so that the client makes progress); BrokerMaxReadBytes,
// the largest response the client reads, is franz-go's advised twice
// FetchMaxBytes plus one record at the size limit, so that a batch holding
// a record the run quarantines for its size is read, not refused.
func fetchLimits(o Options) []kgo.Opt {
	eighth := o.MemoryBudget / 8
	n := min(maxConcurrentFetches, max(1, eighth/(1<<20)))
	perFetch := min(50<<20, max(1<<20, eighth/n))
	readMax := min(1<<30, 2*perFetch+int64(o.MaxRecordBytes))
	return []kgo.Opt{
		kgo.MaxConcurrentFetches(int(n)),
		kgo.FetchMaxBytes(int32(perFetch)),
		kgo.BrokerMaxReadBytes(int32(readMax)),
	}
}

var (
	decompressBufs sync.Pool // *[]byte
	recordBufs     sync.Pool // *[]kgo.Record
)

func (fetchPool) GetDecompressBytes(compressed []byte, _ kgo.CompressionCodecType) []byte {
	if b, ok := decompressBufs.Get().(*[]byte); ok && cap(*b) >= 2*len(compressed) {
		return *b
	}
	return make([]byte, 0, 4*len(compressed))
}

func (fetchPool) PutDecompressBytes(b []byte) {
	b = b[:0]
	decompressBufs.Put(&b)
}

// GetRecords returns a slice of capacity n or more. franz-go sets every
// field of each record it decodes into it, and zeroes each on Recycle.
func (fetchPool) GetRecords(n int) []kgo.Record {
	if b, ok := recordBufs.Get().(*[]kgo.Record); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]kgo.Record, 0, n)
}

func (fetchPool) PutRecords(rs []kgo.Record) {
	rs = rs[:0]
	recordBufs.Put(&rs)
}
