package delta

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// Vacuum deletes the table's data files that no version within the
// retention references and that are older than it, as Delta's VACUUM
// does, then the log entries metadata cleanup may delete. Referenced are
// the newest version's live files and every file a commit removed after
// the cutoff (now less the retention): a reader of any version since then
// may still read it. The retention is o.Retain, or the table's
// delta.deletedFileRetentionDuration when that is longer, unless o.Force
// (Spark refuses a shorter one unless its check is turned off).
//
// It never deletes under _delta_log/ but for metadata cleanup, never a
// file under a folder whose name starts with '_' or '.' (but a partition
// folder "_col=v"), and never a file outside the table's folder. A table
// with live deletion vectors is refused: their files are not data files
// and sluice does not track them.
//
// Metadata cleanup (delta.enableExpiredLogCleanup, on unless "false"):
// the commits, checkpoints and checksums of versions below the newest
// checkpoint that is no newer than the newest commit older than
// delta.logRetentionDuration (30 days unless set) are deleted; every
// version from that checkpoint on stays readable.
func (m *Maintained) Vacuum(ctx context.Context, o catalog.VacuumOptions) (catalog.VacuumResult, error) {
	var res catalog.VacuumResult
	loc := cloud.Redact(m.t.st.URL(""))
	if err := o.Check(loc); err != nil {
		return res, err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	l, err := listLog(ctx, m.t.st)
	if err != nil {
		return res, err
	}
	src, err := m.t.source(l, l.newest())
	if err != nil {
		return res, err
	}
	w, err := m.t.winners(ctx, src)
	if err != nil {
		return res, err
	}
	where := fmt.Sprintf("vacuum %s at version %d", loc, l.newest())
	if err := checkVacuumable(w); err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	conf := w.metadata.Configuration
	retain := o.Retain
	if !o.Force {
		tr, err := retention(conf, PropDeletedFileRetention, defaultDeletedFileRetention)
		if err != nil {
			return res, fmt.Errorf("%s: %w", where, err)
		}
		if tr > retain {
			retain = tr
			res.Notes = append(res.Notes, fmt.Sprintf("kept files for %s, the table's %s", tr, PropDeletedFileRetention))
		}
	}
	cutoff := o.Now.Add(-retain)
	kept, removedAt, err := m.t.referenced(ctx, l, src, w, cutoff)
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	for v, at := range l.commitTimes {
		if !at.Before(cutoff) || v == l.newest() {
			res.RetainedVersions++
		}
	}
	var doomed []cloud.ObjectInfo
	err = m.t.st.List(ctx, "", func(obj cloud.ObjectInfo) error {
		if !obj.ModTime.Before(cutoff) || kept[obj.Key] || hiddenKey(obj.Key, w.metadata.PartitionColumns) {
			return nil
		}
		doomed = append(doomed, obj)
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("%s: list: %w", where, err)
	}
	res.Why = map[string]string{}
	for _, obj := range doomed {
		if err := m.deleteUnlessDry(ctx, o.DryRun, obj.Key); err != nil {
			return res, fmt.Errorf("%s: %w", where, err)
		}
		u := m.t.st.URL(obj.Key)
		res.Deleted = append(res.Deleted, u)
		res.Bytes += obj.Size
		if at, ok := removedAt[obj.Key]; ok {
			res.Why[u] = fmt.Sprintf("removed from the table at %s, before the retention's cutoff", at.UTC().Format(time.RFC3339))
		} else {
			res.Why[u] = fmt.Sprintf("in no version of the log, written at %s", obj.ModTime.UTC().Format(time.RFC3339))
		}
	}
	if conf[PropExpiredLogCleanup] != "false" {
		if err := m.cleanLog(ctx, l, conf, o, &res); err != nil {
			return res, fmt.Errorf("%s: metadata cleanup: %w", where, err)
		}
	}
	return res, nil
}

// checkVacuumable refuses a table whose files sluice cannot tell: one it
// cannot read, or with live deletion vectors; and, when the table says
// vacuumProtocolCheck, one with a writer feature sluice does not write.
func checkVacuumable(w *winnerSet) error {
	switch {
	case w.protocol == nil:
		return fmt.Errorf("%w: no protocol action", ErrCorruptLog)
	case w.metadata == nil:
		return fmt.Errorf("%w: no metaData action", ErrCorruptLog)
	}
	if err := checkReadable(w.protocol, w.metadata); err != nil {
		return err
	}
	if slices.Contains(w.protocol.WriterFeatures, "vacuumProtocolCheck") {
		if err := checkWritable(w.protocol); err != nil {
			return err
		}
	}
	for k := range w.live {
		if k.dv != "" {
			return fmt.Errorf("%w: deletion vectors (%s has one, in a file sluice does not track)", ErrUnsupportedFeature, k.path)
		}
	}
	return nil
}

// referenced gives the keys of the files vacuum keeps, and when each file
// a commit removed was removed. Kept are the live files of the version
// src reads and the files removed at or after cutoff: by the tombstones
// of src (w's), and by the commits before src's checkpoint written since
// the cutoff (a checkpoint drops tombstones older than the table's
// retention, which may be shorter than this vacuum's). A tombstone
// without a deletion time is kept.
func (t *Table) referenced(ctx context.Context, l *listing, src logSource, w *winnerSet, cutoff time.Time) (map[string]bool, map[string]time.Time, error) {
	kept := make(map[string]bool, len(w.live))
	for k := range w.live {
		kept[k.path] = true
	}
	removedAt := map[string]time.Time{}
	tomb := func(p string, ms int64) {
		if ms == noTime {
			kept[p] = true
			return
		}
		at := time.UnixMilli(ms)
		if !at.Before(cutoff) {
			kept[p] = true
		}
		if at.After(removedAt[p]) {
			removedAt[p] = at
		}
	}
	for k, tb := range w.tombs {
		tomb(k.path, tb.at)
	}
	root := rootPrefix(t.st)
	for v, key := range l.commits {
		if v > src.from || l.commitTimes[v].Before(cutoff) {
			continue
		}
		as, err := readCommit(ctx, t.st, key)
		if err != nil {
			return nil, nil, err
		}
		for _, a := range as {
			if r := a.Remove; r != nil {
				ms := int64(noTime)
				if r.DeletionTimestamp != nil {
					ms = *r.DeletionTimestamp
				}
				tomb(canonical(r.Path, root), ms)
			}
		}
	}
	return kept, removedAt, nil
}

// hiddenKey reports whether vacuum leaves key alone: under _delta_log/,
// or under a folder (or named) with a leading '_' or '.', unless it is a
// partition folder of the table ("_col=v" with _col a partition column).
func hiddenKey(key string, partitionColumns []string) bool {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		if !strings.HasPrefix(seg, "_") && !strings.HasPrefix(seg, ".") {
			continue
		}
		if col, _, ok := strings.Cut(seg, "="); ok && i < len(segs)-1 && slices.Contains(partitionColumns, col) {
			continue
		}
		return true
	}
	return false
}

func (m *Maintained) deleteUnlessDry(ctx context.Context, dry bool, key string) error {
	if dry {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.t.st.Delete(ctx, key)
}

// cleanLog deletes the log entries below the newest checkpoint that is no
// newer than the newest commit older than delta.logRetentionDuration.
func (m *Maintained) cleanLog(ctx context.Context, l *listing, conf map[string]string, o catalog.VacuumOptions, res *catalog.VacuumResult) error {
	keep, err := retention(conf, PropLogRetention, defaultLogRetention)
	if err != nil {
		return err
	}
	cutoff := o.Now.Add(-keep)
	cutCommit := int64(-1)
	for v, at := range l.commitTimes {
		if at.Before(cutoff) && v > cutCommit {
			cutCommit = v
		}
	}
	cp := int64(-1)
	for _, v := range l.checkpointVersions(cutCommit) {
		if len(l.usable(v)) > 0 {
			cp = v
			break
		}
	}
	if cutCommit < 0 || cp <= 0 {
		return nil
	}
	var keys []string
	for v, key := range l.commits {
		if v < cp {
			keys = append(keys, key)
		}
	}
	for v, cs := range l.checkpoints {
		if v < cp {
			for _, c := range cs {
				keys = append(keys, c.key)
			}
		}
	}
	for v, key := range l.crcs {
		if v < cp {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		if err := m.deleteUnlessDry(ctx, o.DryRun, key); err != nil {
			return err
		}
		u := m.t.st.URL(key)
		res.LogDeleted = append(res.LogDeleted, u)
		res.Why[u] = fmt.Sprintf("a log entry older than %s, before the checkpoint of version %d", keep, cp)
	}
	return nil
}
