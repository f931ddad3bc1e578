package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// icebergVacuum returns the catalog.VacuumOptions.Keep of a vacuum of t
// (nil when t is not mirrored) and the map the vacuum's --json summary
// gives as "iceberg", filled in when Keep runs. A table whose folder
// holds a mirror but that has no iceberg.catalog property is refused:
// vacuum could not tell which files the mirror's snapshots reference.
func (a *app) icebergVacuum(cmd *cobra.Command, t *catalog.Table, table string, dryRun bool) (func(context.Context, time.Time) (map[string]bool, error), map[string]any, error) {
	set, ok, err := iceberg.ReadSettings(cmd.Context(), t)
	if err != nil {
		return nil, nil, fmt.Errorf("vacuum %s: %w", table, err)
	}
	if !ok {
		has, err := iceberg.HasMirror(cmd.Context(), t)
		if err != nil {
			return nil, nil, fmt.Errorf("vacuum %s: look for an Iceberg mirror: %w", table, err)
		}
		if has {
			return nil, nil, fmt.Errorf("vacuum %s: %s holds an Iceberg mirror but the table has no %s property, so vacuum cannot tell which files the mirror's snapshots reference: run 'sluice iceberg enable %s --catalog URL' first (or drop the mirror and remove that folder)",
				table, t.Store().URL(iceberg.MetadataFolder), iceberg.PropCatalog, table)
		}
		return nil, nil, nil
	}
	report := map[string]any{"catalog": set.Catalog, "identifier": set.Identifier()}
	keep := func(ctx context.Context, cutoff time.Time) (map[string]bool, error) {
		// The mirror is brought up first (not on a dry run), as after a commit; a failed
		// sync (a schema change, say) does not stop the vacuum, while a
		// catalog that cannot be read does, in Retain.
		if !dryRun {
			synced, err := a.syncMirror(ctx, t, set)
			report["synced"] = err == nil
			report["version"] = synced["version"]
			if err != nil {
				report["error"] = err.Error()
				a.logger.Warn("iceberg sync failed; vacuum goes on with the mirror as it is", "table", t.Location(), "err", err)
			}
		}
		cat, err := iceberg.OpenCatalog(ctx, set.Catalog)
		if err != nil {
			return nil, fmt.Errorf("the Iceberg mirror: %w", err)
		}
		defer cat.Close()
		var rr iceberg.RetainResult
		files, err := iceberg.VacuumKeep(t, cat, set.Options(), dryRun, &rr)(ctx, cutoff)
		report["snapshots_expired"] = rr.Expired
		report["snapshots_retained"] = rr.Retained
		report["files_kept"] = len(rr.Keep)
		report["metadata_location"] = rr.MetadataLocation
		return files, err
	}
	return keep, report, nil
}

// addMirrorReport puts a vacuum's mirror report into its --json summary
// out, its failed sync into "warnings".
func addMirrorReport(out, mirror map[string]any) {
	if mirror == nil {
		return
	}
	out["iceberg"] = mirror
	if msg, ok := mirror["error"].(string); ok {
		out["warnings"] = []string{"the Iceberg mirror was not synced (the next commit or 'sluice iceberg sync' retries): " + msg}
	}
}

// postCommitSyncTimeout bounds the sync after a commit: a catalog that
// hangs delays the command this long at most, and the next commit or
// 'sluice iceberg sync' goes on where it stopped.
const postCommitSyncTimeout = 2 * time.Minute

// afterCommit syncs t's Iceberg mirror when t has the iceberg.catalog
// property; every command that commits to a table defers it once the
// table is open. It never fails the command: its outcome goes into the
// --json summary as "iceberg", and a failure also into "warnings" and the
// log (stderr); the next commit or 'sluice iceberg sync' retries.
//
// It is deferred as `defer a.afterCommit(cmd, t)()`: the call reads the
// mirror settings once, when the command starts (a table without them,
// the common case, costs that one read and nothing at the end), and notes
// the table's version; the sync runs at the end only if a version was
// committed since, so that a command that failed before committing (often
// against a failing store) adds nothing to its one-line error.
func (a *app) afterCommit(cmd *cobra.Command, t *catalog.Table) func() {
	set, ok, setErr := iceberg.ReadSettings(cmd.Context(), t)
	if setErr == nil && !ok {
		return func() {}
	}
	before, err := t.LatestVersion(cmd.Context())
	if err != nil {
		before = -1 // no table yet (import creates it), or unknown
	}
	return func() {
		if after, err := t.LatestVersion(cmd.Context()); err != nil || after == before {
			return // nothing committed, or unknown: the next commit or sync catches up
		}
		if setErr != nil { // unknown at the start: read again now
			if set, ok, setErr = iceberg.ReadSettings(cmd.Context(), t); setErr == nil && !ok {
				return
			}
		}
		a.syncAfterCommit(cmd, t, set, setErr)
	}
}

// syncAfterCommit is afterCommit's sync of t into the mirror set says
// (or its warning, when the settings could not be read: setErr).
func (a *app) syncAfterCommit(cmd *cobra.Command, t *catalog.Table, set iceberg.Settings, setErr error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), postCommitSyncTimeout)
	defer cancel()
	if cmd.Context().Err() != nil {
		return // interrupted: the next commit or sync catches up
	}
	if dry, _ := a.result["dry_run"].(bool); dry {
		return // a dry run changes nothing, the mirror included
	}
	if setErr != nil {
		a.mirrorWarning(map[string]any{}, t, setErr)
		return
	}
	out, err := a.syncMirror(ctx, t, set)
	if err != nil {
		a.mirrorWarning(out, t, err)
		return
	}
	out["synced"] = true
	if a.result != nil {
		a.result["iceberg"] = out
	}
	if n, _ := out["mirrored"].(int); n > 0 {
		a.note("mirrored %d versions to %s (snapshot %v)", n, out["identifier"], out["snapshot_id"])
	}
}

// mirrorWarning reports a failed sync after a commit: the commit stands.
func (a *app) mirrorWarning(out map[string]any, t *catalog.Table, err error) {
	msg := fmt.Sprintf("the Iceberg mirror of %s was not synced (the commit stands; the next commit or 'sluice iceberg sync' retries): %v", t.Location(), err)
	out["synced"] = false
	out["error"] = err.Error()
	a.logger.Warn("iceberg sync failed; the commit stands, and the next commit or 'sluice iceberg sync' retries", "table", t.Location(), "err", err)
	if a.result == nil {
		return
	}
	a.result["iceberg"] = out
	ws, _ := a.result["warnings"].([]string)
	a.result["warnings"] = append(ws, msg)
}

// mirrorState is how far a table's Iceberg mirror is, for history.
type mirrorState struct {
	// report is history's --json "iceberg": catalog, identifier, the
	// version the mirror's current snapshot mirrors, or the error.
	report map[string]any
	// snaps holds the id of each snapshot in the mirror by the version
	// it mirrors; nil when the catalog could not be read.
	snaps   map[int64]int64
	current int64
}

// icebergHistory reads how far t's mirror is; nil when t has no
// iceberg.catalog property. A catalog that cannot be read is reported,
// not a failure: history still lists the versions.
func (a *app) icebergHistory(ctx context.Context, t *catalog.Table) *mirrorState {
	set, ok, err := iceberg.ReadSettings(ctx, t)
	if err != nil {
		a.logger.Warn("read the Iceberg mirror's properties", "table", t.Location(), "err", err)
		return &mirrorState{report: map[string]any{"error": err.Error()}}
	}
	if !ok {
		return nil
	}
	m := &mirrorState{report: map[string]any{"catalog": set.Catalog, "identifier": set.Identifier()}}
	cat, err := iceberg.OpenCatalog(ctx, set.Catalog)
	if err == nil {
		defer cat.Close()
		m.snaps, m.current, err = iceberg.SnapshotVersions(ctx, cat, set.Options())
	}
	if err != nil {
		m.snaps = nil
		m.report["error"] = err.Error()
		a.logger.Warn("read the Iceberg mirror", "table", t.Location(), "err", err)
		return m
	}
	m.report["version"] = m.current
	return m
}

// column is version v's cell in history's ICEBERG column: the id of the
// snapshot mirroring it, "expired" once vacuum expired that snapshot,
// "-" while not yet mirrored, "?" when the catalog could not be read.
func (m *mirrorState) column(v int64) string {
	switch id, ok := m.snaps[v]; {
	case m.snaps == nil:
		return "?"
	case ok:
		return strconv.FormatInt(id, 10)
	case v <= m.current:
		return "expired"
	}
	return "-"
}

// fields adds to version v's --json object "mirrored" (whether the
// mirror has reached v) and "iceberg_snapshot_id" (the id of the
// snapshot mirroring v, as a string, while the mirror holds it).
func (m *mirrorState) fields(v int64, out map[string]any) {
	if m.snaps == nil {
		return
	}
	out["mirrored"] = v <= m.current
	if id, ok := m.snaps[v]; ok {
		out["iceberg_snapshot_id"] = strconv.FormatInt(id, 10)
	}
}
