package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
)

// readConcurrency bounds the manifests read at once.
const readConcurrency = 8

// addHistory sets Versions and OldestVersion from the table's own log: a
// sluice table's manifests, a Delta table's commits. An Iceberg table's
// snapshots are not read: both stay empty.
func (d *Detail) addHistory(ctx context.Context, t *Table, m *catalog.Manifest) error {
	switch t.format {
	case FormatSluice:
		latest, err := t.cat.LatestVersion(ctx)
		if err != nil {
			return err
		}
		if d.Versions, err = sluiceVersions(ctx, t.cat, latest); err != nil {
			return err
		}
		d.OldestVersion, err = oldestReadable(ctx, t.cat, latest)
		return err
	case FormatDelta:
		hist, err := delta.New(t.cat.Store()).History(ctx)
		if err != nil {
			return err
		}
		if len(hist) > 0 {
			// The oldest commit the log keeps: Delta's own time travel
			// reaches no further.
			d.OldestVersion = hist[0].Version
		}
		for i := len(hist) - 1; i >= 0 && len(d.Versions) < MaxVersions; i-- {
			h := hist[i]
			d.Versions = append(d.Versions, Version{Version: h.Version, CommittedAt: h.Timestamp, Operation: h.Operation,
				Run: h.Engine, FilesAdded: h.FilesAdded, FilesRemoved: h.FilesRemoved, RowsAdded: h.RowsAdded, RowsRemoved: h.RowsRemoved})
			if h.Version == m.Version {
				d.CommittedAt = h.Timestamp
			}
		}
	}
	return nil
}

// sluiceVersions reads the newest MaxVersions manifests, newest first.
func sluiceVersions(ctx context.Context, t *catalog.Table, latest int64) ([]Version, error) {
	n := min(latest, MaxVersions)
	out := make([]Version, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(readConcurrency)
	for i := range n {
		g.Go(func() error {
			m, err := t.Manifest(gctx, latest-i)
			if err != nil {
				return err
			}
			op := m.Operation
			if m.RolledBackTo > 0 {
				op += " to " + strconv.FormatInt(m.RolledBackTo, 10)
			}
			out[i] = Version{Version: m.Version, CommittedAt: m.CommittedAt, Operation: op, Run: m.RunID,
				FilesAdded: m.Summary.FilesAdded, FilesRemoved: m.Summary.FilesRemoved,
				RowsAdded: m.Summary.RowsAdded, RowsRemoved: m.Summary.RowsRemoved}
			return nil
		})
	}
	return out, g.Wait()
}

// oldestReadable is the oldest version of t all of whose files are still
// in its folder: vacuum deletes the files of versions older than its
// retention, never their manifests. It lists the folder once, then walks
// back from latest, reading each piece once; a file outside the folder
// (adopted in place from elsewhere) is taken as present.
func oldestReadable(ctx context.Context, t *catalog.Table, latest int64) (int64, error) {
	present := map[string]bool{}
	err := t.Store().List(ctx, "", func(o cloud.ObjectInfo) error {
		present[o.Key] = true
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", cloud.Redact(t.Location()), err)
	}
	checked := map[string]bool{} // pieces whose files are all present
	for v := latest; v >= 1; v-- {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		m, err := t.Manifest(ctx, v)
		if err != nil {
			return 0, err
		}
		refs, err := t.Partitions(ctx, m)
		if err != nil {
			return 0, err
		}
		for _, ref := range refs {
			for _, pr := range ref.Pieces {
				if checked[pr.Key] {
					continue
				}
				files, err := t.PartitionFiles(ctx, catalog.PartitionRef{Partition: ref.Partition, Pieces: []catalog.PieceRef{pr}})
				if err != nil {
					return 0, err
				}
				for _, f := range files {
					if !strings.HasPrefix(f.Path, "/") && !strings.Contains(f.Path, "://") && !present[f.Path] {
						return v + 1, nil
					}
				}
				checked[pr.Key] = true
			}
		}
	}
	return 1, nil
}

// checkpoints lists a version's source checkpoints, sorted by key, a
// Kafka one's offsets decoded (see ingest's kafkaCheckpoint: its JSON is
// {"v":1,"partitions":{"0":1042}}; the quarantine's are keyed
// "quarantined:<table> kafka:...").
func checkpoints(raw map[string]json.RawMessage) []Checkpoint {
	out := make([]Checkpoint, 0, len(raw))
	for k, v := range raw {
		c := Checkpoint{Key: k, Kind: "other", Value: v}
		kafka := strings.HasPrefix(k, "kafka:")
		if _, inner, ok := strings.Cut(k, " kafka:"); ok && strings.HasPrefix(k, "quarantined:") {
			kafka, k = true, "kafka:"+inner
		}
		switch {
		case kafka:
			c.Kind = "kafka"
			var cp struct {
				Partitions map[string]int64 `json:"partitions"`
			}
			if json.Unmarshal(v, &cp) == nil {
				to := TopicOffsets{Topic: k[strings.LastIndex(k, "/")+1:], Partitions: map[int32]int64{}}
				for p, off := range cp.Partitions {
					if n, err := strconv.ParseInt(p, 10, 32); err == nil {
						to.Partitions[int32(n)] = off
					}
				}
				c.Topics = []TopicOffsets{to}
			}
		case strings.HasPrefix(k, "landing:"):
			c.Kind = "files"
		case k == "rollup" || strings.HasPrefix(k, "rollup:"):
			c.Kind = "rollup"
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
