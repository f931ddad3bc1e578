package ingest

import (
	"context"
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

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/ingest/wire"
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

// CheckKafkaURL checks a kafka:// source without connecting: brokers,
// one topic, no credentials in the URL (its error redacts them).
func CheckKafkaURL(s string) error {
	_, err := parseKafkaURL(s)
	return err
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
		// the checkpoint key: credentials come from KafkaSecurity.
		return kafkaSource{}, fmt.Errorf("%q: a kafka:// source takes no user name or password: use --sasl, with the credentials in %s and %s (or --sasl-password-file)",
			cloud.Redact(s), EnvKafkaUsername, EnvKafkaPassword)
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
//
// The client connects as o.Kafka says (TLS, SASL). Credentials the broker
// refuses, and a certificate either side refuses, fail the run at once
// with ErrKafkaAuth or ErrKafkaTLS, not after the client's retries.
func runKafkaOnce(ctx context.Context, t *catalog.Table, source string, o Options) (Result, error) {
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
	conn, err := o.Kafka.connect(ctx)
	if err != nil {
		return res, fmt.Errorf("ingest %s: %w", ks, err)
	}
	if o.Kafka.TLSInsecureSkipVerify {
		log.LogAttrs(ctx, slog.LevelWarn, InsecureTLSWarning)
	}
	m, err := t.Latest(ctx)
	if err != nil {
		return res, fmt.Errorf("ingest into %s: %w", t.Location(), err)
	}
	if err := checkColumnTypes(m.Schema); err != nil {
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
	kr := &kafkaRun{ctx: ctx, o: o, ks: ks, conn: conn, group: group, log: log, t: t, m: m, qt: qt, qExists: qm != nil,
		cpKey: cpKey, qKey: "quarantined:" + canonicalLocation(t.Location()) + " " + cpKey,
		target: target, dec: newSoloDecoder(m.Schema, o), now: time.Now().UTC().Truncate(time.Microsecond),
		wake: make(chan struct{}, 1), res: &res, progressAt: start,
		pending: map[int32]bool{}, parts: map[int32]*kafkaPart{}, paused: map[int32]bool{},
		tableParts: map[string]bool{}, covered: map[int32]bool{},
		codecs: pqio.NewCodecs(), qCodecs: pqio.NewCodecs(), dedup: dd.forRecords()}
	if o.SchemaRegistry != "" {
		if kr.reg, err = newRegistry(o.SchemaRegistry, m.Schema, wire.Format(o.Format)); err != nil {
			return res, fmt.Errorf("ingest %s: %w", ks, err)
		}
	}
	kr.newSinks()

	cl, err := kgo.NewClient(append(kr.clientOpts(), conn.opts...)...)
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
	if err == nil {
		kr.stableEnds = maps.Clone(kr.topicEnds)
		err = endAt(ctx, cl, ks.topic, kr.topicEnds, o.Until)
	}
	if err != nil {
		kr.abort()
		return res, fmt.Errorf("ingest %s: %w", ks, conn.explain(err))
	}
	kr.topicStarts = map[int32]int64{}
	for p, s := range starts {
		kr.topicStarts[p] = s.Offset
	}
	if err := kr.consume(ctx, cl, start); err != nil {
		kr.abort()
		kr.fillResult()
		return res, fmt.Errorf("ingest %s: %w", ks, conn.explain(err))
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
	res.grow = kr.grow
	log.LogAttrs(ctx, slog.LevelInfo, "read", slog.Int64("records", res.RecordsIn),
		slog.Int64("quarantined", res.RecordsQuarantined), slog.Any("partitions", res.KafkaPartitions),
		slog.Int64("version", res.Version), slog.Duration("took", time.Since(start)))
	return res, nil
}

// InsecureTLSWarning is the warning of every run that does not verify
// the brokers' certificates (KafkaSecurity.TLSInsecureSkipVerify): its
// log has it, at warning level.
const InsecureTLSWarning = "TLS certificate verification is off (--tls-insecure-skip-verify): anyone between sluice and the brokers can read and change the records"

// clientOpts are the options of the run's Kafka client, TLS and SASL
// aside.
func (kr *kafkaRun) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(kr.ks.brokers...),
		kgo.ConsumerGroup(kr.group), kgo.ConsumeTopics(kr.ks.topic),
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
	opts = append(opts, fetchLimits(kr.o)...)
	if kr.o.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(kr.o.InstanceID))
	}
	return opts
}

// canonicalLocation is a table location as the checkpoint keys spell it.
func canonicalLocation(loc string) string {
	if l, err := cloud.ParseLocation(loc); err == nil {
		return l.String()
	}
	return loc
}

// kafkaRun is one run's state as a group member. The group callbacks run
// on the Kafka client's goroutines while consume reads, so mu guards
// everything that changes.
type kafkaRun struct {
	ctx         context.Context // the run's, for commits made in group callbacks
	o           Options
	ks          kafkaSource
	conn        *kafkaConn
	group       string
	log         *slog.Logger
	t           *catalog.Table
	m           *catalog.Manifest // t's schema, spec and properties
	qt          *catalog.Table
	cpKey, qKey string
	target      int64
	dec         *decoder
	reg         *registry // records in the Confluent wire format; nil for JSON lines
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
	full            bool   // MaxRecords were read, or a record needs grow
	// grow is the schema the table needs for the next record, whose
	// schema adds columns or widens types: the run stops before it.
	grow *catalog.Schema

	// The topic's partitions when the run started: what the group as a
	// whole is to read (see notCaughtUp).
	topicStarts, topicEnds map[int32]int64
	// stableEnds are the last stable offsets listed at the start, before
	// Until lowered them: what Result.KafkaLag counts against.
	stableEnds map[int32]int64

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
	r.KafkaLag = map[int32]int64{}
	for p := range kr.covered {
		if kp := kr.parts[p]; kp != nil {
			r.KafkaLag[p] = max(kr.stableEnds[p]-kp.base, 0)
		}
	}
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
			if doneAt.IsZero() {
				doneAt = time.Now()
			}
			if leave, err := kr.waitForOthers(ctx, cl, doneAt, &live); leave || err != nil {
				return err
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
		if err := kr.fetchError(ctx, fs); err != nil {
			return err
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

// fetchError returns the first error of fs that fails the run. Those of a
// poll that the run ended do not, nor group errors (joining,
// heartbeating), which the client retries itself and consume's deadlines
// bound: they are logged. A connection refused on its credentials or a
// certificate fails the run, group's or not: no retry gets past it.
func (kr *kafkaRun) fetchError(ctx context.Context, fs kgo.Fetches) error {
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		switch {
		case ferr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		case t == "" && kr.conn.refused(err):
			ferr = fmt.Errorf("consumer group %s: %w", kr.group, err)
		case t == "":
			kr.log.LogAttrs(ctx, slog.LevelWarn, "group", slog.String("error", err.Error()))
		default:
			ferr = fmt.Errorf("topic %s partition %d: fetch: %w", t, p, err)
		}
	})
	return ferr
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
	limit := kr.o.MaxRecords
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
				if limit > 0 && kr.recordsIn >= limit {
					kr.full = true
					return
				}
				if err = kr.record(ctx, r, kp); errors.Is(err, errGrow) {
					kr.full, err = true, nil // this record, and the rest, wait for the wider table
					return
				}
				if err != nil {
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
	if limit > 0 && kr.recordsIn >= limit {
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
	var (
		row, rec = []any(nil), r.Value
		why      error
	)
	if kr.reg != nil {
		d, err := kr.reg.decode(ctx, r.Value)
		if err != nil {
			return err
		}
		if d.grow != nil {
			kr.grow = d.grow
			return errGrow
		}
		row, why = d.row, d.why
	} else {
		row, rec, why = kr.dec.decodeValue(r.Value)
	}
	kr.recordsIn++
	kr.bytesIn += int64(len(r.Value))
	if why == nil {
		if dup, err := kr.dedup.drop(ctx, row); dup || err != nil {
			return err
		}
		kr.rowsOut++
		return kr.main.add(ctx, row, len(r.Value), nil)
	}
	kr.quarantined++
	if r.Offset < kp.qBase {
		return nil // committed to the quarantine by an earlier, unfinished run
	}
	pos := r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
	q := []any{kr.ks.String(), pos, why.Error(), append([]byte(nil), rec...), kr.now}
	return kr.quar.add(ctx, q, len(rec), nil)
}
