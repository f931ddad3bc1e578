package delta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sluice-data/sluice/catalog"
)

// optimizeActions are the actions of a compaction's commit, as Spark's
// OPTIMIZE writes them: commitInfo first, then a remove of each input
// and an add of each output, all with dataChange false. removes are the
// inputs' paths as the log holds them, for the rebase's check.
func (m *Maintained) optimizeActions(c catalog.Change) (actions []Action, removes []string, err error) {
	now := time.Now().UnixMilli()
	actions = make([]Action, 0, 1+len(c.Remove)+len(c.Add))
	actions = append(actions, Action{}) // commitInfo, once the sizes are known
	var removedBytes, addedBytes int64
	for _, f := range c.Remove {
		a := m.adds[f.Path]
		if a == nil {
			return nil, nil, fmt.Errorf("delta: %s is not a live file of version %d", f.Path, m.snap.Version)
		}
		size := a.Size
		removedBytes += size
		removes = append(removes, a.Path)
		actions = append(actions, Action{Remove: &Remove{Path: a.Path, DeletionTimestamp: &now, DataChange: false,
			ExtendedFileMetadata: ptr(true), PartitionValues: a.PartitionValues, Size: &size, Stats: a.Stats, Tags: a.Tags}})
	}
	sizes := make([]int64, 0, len(c.Add))
	for _, f := range c.Add {
		addedBytes += f.Bytes
		sizes = append(sizes, f.Bytes)
		vals := f.PartitionValues // the inputs' (Files), copied by the rewrite
		if vals == nil {
			vals = map[string]*string{} // the log spells none as {}
		}
		actions = append(actions, Action{Add: &Add{Path: EncodePath(f.Path), PartitionValues: vals, Size: f.Bytes,
			ModificationTime: now, DataChange: false, Stats: statsJSON(m.schema, f.FileStats, m.snap.Metadata.Configuration)}})
	}
	info := map[string]any{
		"timestamp": now,
		"operation": "OPTIMIZE",
		"operationParameters": map[string]any{
			"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": false,
		},
		"readVersion":      m.snap.Version,
		"isolationLevel":   "SnapshotIsolation",
		"isBlindAppend":    false,
		"operationMetrics": optimizeMetrics(len(c.Remove), removedBytes, sizes),
		"engineInfo":       m.o.EngineInfo,
		"txnId":            uuid.NewString(),
	}
	if c.RunID != "" {
		info["sluiceRunId"] = c.RunID
	}
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, nil, fmt.Errorf("delta: commitInfo: %w", err)
	}
	actions[0].CommitInfo = raw
	return actions, removes, nil
}

// optimizeMetrics are OPTIMIZE's operationMetrics, strings as Spark
// writes them: files and bytes removed and added, and the added files'
// size distribution.
func optimizeMetrics(removedFiles int, removedBytes int64, added []int64) map[string]string {
	slices.Sort(added)
	var total int64
	for _, s := range added {
		total += s
	}
	q := func(p float64) string {
		if len(added) == 0 {
			return "0"
		}
		return strconv.FormatInt(added[int(p*float64(len(added)-1))], 10)
	}
	return map[string]string{
		"numRemovedFiles": strconv.Itoa(removedFiles),
		"numRemovedBytes": strconv.FormatInt(removedBytes, 10),
		"numAddedFiles":   strconv.Itoa(len(added)),
		"numAddedBytes":   strconv.FormatInt(total, 10),
		"minFileSize":     q(0),
		"p25FileSize":     q(0.25),
		"p50FileSize":     q(0.5),
		"p75FileSize":     q(0.75),
		"maxFileSize":     q(1),
	}
}

func ptr[T any](v T) *T { return &v }
