package iceberg

import (
	"context"
	"errors"
	"fmt"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// manyManifests is the number of data manifests in a snapshot from
// which Settle merges them, when they are small: a streaming writer
// leaves one per commit, and every scan plan reads them all.
const manyManifests = 16

// Settle merges the current snapshot's data manifests when there are
// many and they are small on average (under half of
// commit.manifest.target-size-bytes), through iceberg-go's
// RewriteManifests, committed as a "replace" snapshot that changes no
// data file; a commit that loses the race is retried a few times. It
// says what it did ("" for nothing). Its error undoes no compaction.
func (m *Maintained) Settle(ctx context.Context) (string, error) {
	if m.o.DryRun {
		return "", nil
	}
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return "", err
			}
		}
		tbl, err := m.cat.load(ctx)
		if err != nil {
			return "", err
		}
		n, small, err := smallManifests(ctx, tbl)
		if err != nil || !small {
			return "", err
		}
		tx := tbl.NewTransaction()
		res, err := tx.RewriteManifests(ctx)
		if err != nil {
			return "", fmt.Errorf("%s: rewrite manifests: %w", m.Address(), err)
		}
		if res.IsNoOp() {
			return "", nil
		}
		_, err = tx.Commit(ctx)
		switch {
		case lostRace(err):
			continue
		case err != nil:
			return "", fmt.Errorf("%s: rewrite manifests: %w", m.Address(), err)
		}
		return fmt.Sprintf("%d of %d data manifests merged into %d", len(res.RewrittenManifests), n, len(res.AddedManifests)), nil
	}
	return "", fmt.Errorf("%s: rewrite manifests: %w", m.Address(), errors.New("lost the race to other writers' commits 4 times"))
}

// smallManifests counts the current snapshot's data manifests and says
// whether they are many and small.
func smallManifests(ctx context.Context, tbl *table.Table) (int, bool, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return 0, false, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, false, err
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		return 0, false, fmt.Errorf("read the manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	var n int
	var bytes int64
	for _, mf := range mans {
		if mf.ManifestContent() == ice.ManifestContentData {
			n++
			bytes += mf.Length()
		}
	}
	target := int64(tbl.Properties().GetInt(table.ManifestTargetSizeBytesKey, table.ManifestTargetSizeBytesDefault))
	return n, n >= manyManifests && 2*bytes < int64(n)*target, nil
}
