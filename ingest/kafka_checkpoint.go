package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

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
