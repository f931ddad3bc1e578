package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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

// DefaultGroup is the Kafka consumer group of runs into the table at
// location when Options.Group is empty: every instance writing the table
// joins it.
func DefaultGroup(location string) string { return "sluice:" + canonicalLocation(location) }

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
	planned, err := kafkaPlan(ctx, kr.cl, kr.ks, slices.Collect(maps.Keys(offs)), cp, qcp, kr.o.OnGap, kr.o.Until)
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

// waitForOthers is consume's step once this run's own partitions are
// read (since doneAt). The run stays while other members' partitions are
// not read: a member that crashed keeps its partitions until the group
// expires it, and then they come to this run. It tells whether the run
// may leave; if not, it has committed what the run read meanwhile (the
// others may be waiting for it too) and waited for a callback or a while.
func (kr *kafkaRun) waitForOthers(ctx context.Context, cl *kgo.Client, doneAt time.Time, live *groupMembers) (leave bool, err error) {
	missing, err := kr.notCaughtUp(ctx)
	if err != nil {
		return true, err
	}
	if len(missing) == 0 || kr.othersLive(ctx, cl, missing, live) {
		return true, nil
	}
	if time.Since(doneAt) >= kafkaOthersWait {
		kr.log.LogAttrs(ctx, slog.LevelWarn, "leaving partitions not read to the group",
			slog.Any("partitions", missing), slog.Duration("waited", time.Since(doneAt)))
		return true, nil
	}
	kr.mu.Lock()
	offs, err := kr.commitLocked(ctx)
	kr.mu.Unlock()
	if err != nil {
		return true, err
	}
	kr.commitGroup(cl, offs)
	select {
	case <-kr.wake:
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond):
	}
	return false, nil
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

// kafkaGroupCommitAttempts is how many times a run tries to commit the
// group offsets while the group is rebalancing, waiting
// kafkaGroupCommitStep longer after each attempt, for the member to
// rejoin.
const (
	kafkaGroupCommitAttempts = 5
	kafkaGroupCommitStep     = 200 * time.Millisecond
)

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
	commit := func() error {
		var err error
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
		// has rejoined; any other failure is final.
		if err != nil && !errors.Is(err, kerr.RebalanceInProgress) && !errors.Is(err, kerr.IllegalGeneration) {
			return backoff.Permanent(err)
		}
		return err
	}
	err := backoff.Retry(commit, groupCommitBackOff(ctx))
	if err != nil {
		kr.log.LogAttrs(ctx, slog.LevelWarn, "group offsets not committed; lag shown by Kafka tools is stale",
			slog.String("error", err.Error()))
	}
}

// groupCommitBackOff is commitGroup's schedule: kafkaGroupCommitAttempts
// attempts, waiting one kafkaGroupCommitStep more before each retry, and
// none after ctx ends.
func groupCommitBackOff(ctx context.Context) backoff.BackOffContext {
	return backoff.WithContext(backoff.WithMaxRetries(&linearBackOff{step: kafkaGroupCommitStep}, kafkaGroupCommitAttempts-1), ctx)
}

// linearBackOff is a backoff.BackOff that waits step after the first
// attempt, twice step after the second, and so on.
type linearBackOff struct{ step, wait time.Duration }

func (b *linearBackOff) NextBackOff() time.Duration {
	b.wait += b.step
	return b.wait
}

func (b *linearBackOff) Reset() { b.wait = 0 }
