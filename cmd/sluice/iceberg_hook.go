package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// icebergVacuum returns the catalog.VacuumOptions.Keep of a vacuum of t
// (nil when t has no mirror) and the map the vacuum's --json summary
// gives as "iceberg", filled in when Keep runs. A table whose mirror
// settings cannot be read, or whose folder holds a mirror they do not
// record, is refused: vacuum could not tell which files the mirror's
// snapshots reference.
func (a *app) icebergVacuum(ctx context.Context, t *catalog.Table, table string, dryRun bool) (func(context.Context, time.Time) (map[string]bool, error), map[string]any, error) {
	set, ok, err := iceberg.ReadSettings(ctx, t)
	if err != nil {
		return nil, nil, fmt.Errorf("vacuum %s: the Iceberg mirror's settings: %w (vacuum cannot tell which files the mirror's snapshots reference)", table, err)
	}
	if !ok {
		if err := iceberg.CheckRecorded(ctx, t); err != nil {
			return nil, nil, fmt.Errorf("vacuum %s: %w, so vacuum cannot tell which files its snapshots reference: %s", table, err, recordAdvice(table))
		}
		return nil, nil, nil
	}
	report := map[string]any{"catalog": set.Catalog, "identifier": set.Identifier()}
	keep := func(ctx context.Context, cutoff time.Time) (map[string]bool, error) {
		// A mirror synced after every commit is brought up first (not on
		// a dry run), as after a commit; a failed sync (a schema change,
		// say) does not stop the vacuum, while a catalog that cannot be
		// read does, in Retain.
		if set.AfterCommit && !dryRun {
			synced, err := a.syncMirror(ctx, t, table, set)
			report["synced"] = err == nil
			report["version"] = synced["version"]
			if err != nil {
				report["error"] = err.Error()
				a.logger.Warn("iceberg sync failed; vacuum goes on with the mirror as it is", "table", t.Location(), "err", err)
			}
			// The sync may have recorded the mirror's uuid (settings
			// an older sluice wrote).
			if now, ok, err := iceberg.ReadSettings(ctx, t); err == nil && ok {
				set = now
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

// recordAdvice says how to record a mirror that table's settings lack.
func recordAdvice(table string) string {
	return fmt.Sprintf("to record it, sync into the catalog and name it is in ('sluice iceberg sync %s --catalog URL --namespace NS --name N', or 'sluice iceberg enable' with the same flags), or drop it from its catalog and remove that folder", table)
}

// mirrorAdvice adds to a refused sync of table what can be done.
func mirrorAdvice(t *catalog.Table, table string, err error) error {
	switch {
	case errors.Is(err, iceberg.ErrAnotherTable):
		return fmt.Errorf("%w: give this table its own mirror with another --name or --namespace", err)
	case errors.Is(err, iceberg.ErrMirroredElsewhere):
		return fmt.Errorf("%w: sync into that one ('sluice iceberg sync %s' without --catalog, --namespace or --name), or to move it drop it from its catalog, run 'sluice iceberg disable %s --forget' and remove %s",
			err, table, table, t.Store().URL(iceberg.MetadataFolder))
	case errors.Is(err, iceberg.ErrUnrecordedMirror):
		return fmt.Errorf("%w: %s", err, recordAdvice(table))
	}
	return err
}

// postCommitSyncTimeout bounds the sync after a commit: a catalog that
// hangs delays the command this long at most, and the next commit or
// 'sluice iceberg sync' goes on where it stopped.
const postCommitSyncTimeout = 2 * time.Minute

// mirrorObserver syncs a table's Iceberg mirror after each of its
// commits when its settings say so (sluice iceberg enable): every table
// a job or a command opens carries it (catalog Options.Observers), so no
// command can forget it. It never fails the commit: report gets the
// outcome for the --json summary ("iceberg") and, on a failure, a
// warning; the log gets the failure too; the next commit or 'sluice
// iceberg sync' retries. Settings that cannot be read, or a mirror in
// the table's folder that no settings record, are warned about the same
// way: the commit is not mirrored, and never silently.
type mirrorObserver struct {
	a      *app
	report func(out map[string]any, warning string)
	// known caches what each table's settings say, read at its first
	// commit: a table without settings or a mirror, the common case,
	// costs two reads (the settings, and where an older sluice kept
	// them) and one listing, once.
	mu    sync.Mutex
	known map[*catalog.Table]mirrorSettings
}

// mirrorSettings are a table's mirror settings as first read: set and ok
// as ReadSettings gives them, or err (unreadable settings, or an
// unrecorded mirror) to warn of at each commit.
type mirrorSettings struct {
	set iceberg.Settings
	ok  bool
	err error
}

func (o *mirrorObserver) settings(ctx context.Context, t *catalog.Table) mirrorSettings {
	o.mu.Lock()
	ms, known := o.known[t]
	o.mu.Unlock()
	if known {
		return ms
	}
	set, ok, err := iceberg.ReadSettings(ctx, t)
	switch {
	case err != nil:
		ms = mirrorSettings{err: fmt.Errorf("the mirror's settings: %w", err)}
	case !ok:
		if unrecorded := iceberg.CheckRecorded(ctx, t); unrecorded != nil {
			ms = mirrorSettings{err: fmt.Errorf("%w: %s", unrecorded, recordAdvice(t.Location()))}
		}
	default:
		ms = mirrorSettings{set: set, ok: true}
	}
	o.mu.Lock()
	if o.known == nil {
		o.known = map[*catalog.Table]mirrorSettings{}
	}
	o.known[t] = ms
	o.mu.Unlock()
	return ms
}

// Committed syncs t's mirror, if its settings say so, up to the version
// just committed.
func (o *mirrorObserver) Committed(ctx context.Context, t *catalog.Table, _ *catalog.Manifest) {
	if ctx.Err() != nil {
		return // interrupted: the next commit or sync catches up
	}
	ms := o.settings(ctx, t)
	switch {
	case ms.err != nil:
		o.warn(map[string]any{}, t, ms.err, false)
		return
	case !ms.ok || !ms.set.AfterCommit:
		return // no mirror, or one synced on demand only
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), postCommitSyncTimeout)
	defer cancel()
	out, err := o.a.syncMirror(sctx, t, t.Location(), ms.set)
	if err != nil {
		o.warn(out, t, err, true)
		return
	}
	out["synced"] = true
	o.report(out, "")
}

// warn reports a commit not mirrored: the commit stands. retry says
// whether the next commit or 'sluice iceberg sync' retries by itself (a
// failed sync), or the table needs a hand first (its settings).
func (o *mirrorObserver) warn(out map[string]any, t *catalog.Table, err error, retry bool) {
	then := "the next commit or 'sluice iceberg sync' retries"
	if !retry {
		then = "no commit is mirrored until this is fixed"
	}
	out["synced"] = false
	out["error"] = err.Error()
	o.a.logger.Warn("the commit was not mirrored to Iceberg; the commit stands, and "+then, "table", t.Location(), "err", err)
	o.report(out, fmt.Sprintf("the Iceberg mirror of %s was not synced (the commit stands; %s): %v", t.Location(), then, err))
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

// icebergHistory reads how far t's mirror is; nil when t has no mirror
// settings. A catalog that cannot be read is reported,
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
