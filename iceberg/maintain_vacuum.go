package iceberg

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
)

// Vacuum expires the table's snapshots older than the retention (the
// longer of o.Retain and the table's history.expire.max-snapshot-age-ms,
// unless o.Force; the newest history.expire.min-snapshots-to-keep
// always stay, and every snapshot a branch or tag names), then deletes
// the files in the table's location that no remaining snapshot
// references and that are older than the retention too: the data files
// and manifests of the expired snapshots, and the leftovers of writers
// that crashed. Both are iceberg-go's (ExpireSnapshots,
// DeleteOrphanFiles). A dry run lists the snapshots that would expire
// and the files that would go, and changes nothing. A table with
// gc.enabled=false is refused: its files may be another table's.
func (m *Maintained) Vacuum(ctx context.Context, o catalog.VacuumOptions) (catalog.VacuumResult, error) {
	var res catalog.VacuumResult
	if err := o.Check(m.Address()); err != nil {
		return res, err
	}
	tbl, err := m.cat.load(ctx)
	if err != nil {
		return res, err
	}
	props := tbl.Properties()
	if !props.GetBool(table.GCEnabledKey, true) {
		return res, fmt.Errorf("%s: %w: gc.enabled is false: its data files may belong to another table (an Iceberg mirror's do), so neither expiry nor orphan removal may delete them", m.Address(), ErrNotBuilt)
	}
	retain := o.Retain
	if ms, err := strconv.ParseInt(props[table.MaxSnapshotAgeMsKey], 10, 64); err == nil && !o.Force {
		retain = max(retain, time.Duration(ms)*time.Millisecond)
	}
	res.Why = map[string]string{}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(retain), table.WithPostCommit(false)); err != nil {
		return res, fmt.Errorf("%s: expire snapshots: %w", m.Address(), err)
	}
	staged, err := tx.StagedTable()
	if err != nil {
		return res, fmt.Errorf("%s: expire snapshots: %w", m.Address(), err)
	}
	kept := map[int64]bool{}
	for _, s := range staged.Metadata().Snapshots() {
		kept[s.SnapshotID] = true
	}
	res.RetainedVersions = len(kept)
	expired := 0
	for _, s := range tbl.Metadata().Snapshots() {
		if !kept[s.SnapshotID] {
			expired++
			res.LogDeleted = append(res.LogDeleted, fmt.Sprintf("snapshot %d (%s, %s)", s.SnapshotID,
				time.UnixMilli(s.TimestampMs).UTC().Format(time.RFC3339), operationOf(s)))
		}
	}
	after := staged.Table
	if !o.DryRun && expired > 0 {
		if after, err = tx.Commit(ctx); err != nil {
			return res, fmt.Errorf("%s: expire snapshots: %w", m.Address(), err)
		}
	}
	plan, err := after.PlanOrphanFiles(ctx, table.WithFilesOlderThan(retain))
	if err != nil {
		return res, fmt.Errorf("%s: find files no snapshot references: %w", m.Address(), err)
	}
	for _, f := range plan.OrphanFiles() {
		res.Deleted = append(res.Deleted, f.Path)
		res.Bytes += f.SizeBytes
		res.Why[f.Path] = "in no retained snapshot"
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d snapshots older than %s expired, %d kept", expired, retain, res.RetainedVersions))
	if o.DryRun || len(res.Deleted) == 0 {
		return res, nil
	}
	if _, err := after.ExecuteOrphanCleanup(ctx, plan); err != nil {
		return res, fmt.Errorf("%s: delete files no snapshot references: %w", m.Address(), err)
	}
	return res, nil
}

// operationOf is a snapshot's operation, "" when its summary has none.
func operationOf(s table.Snapshot) string {
	if s.Summary == nil {
		return ""
	}
	return string(s.Summary.Operation)
}
