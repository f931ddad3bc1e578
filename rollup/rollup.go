package rollup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// Result says what a run did. The event counts are of the events this run
// considered: an incremental run reads only the days it restates; a full
// run also counts, from the files' statistics without reading them, the
// events of source partitions wholly on or before the snapshot day.
type Result struct {
	EventsRead int64
	// EventsExcluded were dated on or before the snapshot day: the
	// snapshot already counts them.
	EventsExcluded int64
	// EventsAfter were dated after Through; EventsNoTime had a NULL time.
	EventsAfter, EventsNoTime int64
	// Keys and Days are the output's: it has Keys × Days rows.
	Keys, Days int
	// SnapshotDay and Through are the output's first and last days;
	// First is the first day this run restated ("" when it restated
	// nothing); LastEventDay the source's last day with an event ("" when
	// it has none): days after it, up to Through, carry the running
	// totals forward with no event of their own.
	SnapshotDay, First, Through, LastEventDay string
	// CellsWritten are the rows written; KeysRestated the keys whose
	// values changed or may have (late events, new days), CellsRestated
	// their rows from their earliest changed day on.
	CellsWritten, CellsRestated int64
	KeysRestated                int
	// PartitionsReplaced are output partitions that existed and were
	// replaced, PartitionsWritten all that were written.
	PartitionsReplaced, PartitionsWritten int
	// SourceFrom is the source version the output reflected before the
	// run (0: none), SourceTo the one it reflects after.
	SourceFrom, SourceTo int64
	// Version is the output version committed, 0 if none.
	Version int64
	// Full tells a full recompute; Reason why.
	Full   bool
	Reason string
	// Snapshot is the snapshot's identity: its day, rows and checksum.
	Snapshot string
	Seconds  float64
}

// maxRaces bounds how often a run that lost the commit race to another
// rollup of the same output recomputes on the new base.
const maxRaces = 5

// Run brings the output table out up to date with the source and the
// snapshot, and commits the restated partitions in one commit (creating
// the table if it does not exist). Bad input fails before anything is
// written. A run that loses the commit race to another one re-reads the
// output and recomputes on its base, so two runs never double-count.
//
// A commit error wrapping cloud.ErrOutcomeUnknown is returned as is: the
// commit may have landed, and the files it names are left for vacuum.
func Run(ctx context.Context, out *catalog.Table, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	src, err := catalog.Open(ctx, o.Source, catalog.Options{})
	if err != nil {
		return Result{}, fmt.Errorf("source %s: %w", cloud.Redact(o.Source), err)
	}
	defer src.Close()
	return RunSource(ctx, out, src, o)
}

// RunSource is Run over the source src, opened on o.Source by the caller,
// who closes it: a sluice table, or a view of a table of another format
// (catalog.View, a Delta table's version). Of a view, whose versions are
// not a sluice table's, a run is incremental only when the source is at
// the version the output reflects: else it recomputes in full, saying
// "the source is a Delta table".
func RunSource(ctx context.Context, out *catalog.Table, src catalog.Readable, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	var err error
	var res Result
	for race := 0; ; race++ {
		res, err = runOnce(ctx, out, src, o)
		lost := errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrTableExists)
		if err == nil || errors.Is(err, cloud.ErrOutcomeUnknown) || !lost || race >= maxRaces {
			break
		}
		o.Logger.Info("rollup lost the commit race; recomputing on the new base", "out", out.Location(), "race", race+1)
	}
	res.Seconds = time.Since(start).Seconds()
	o.Logger.Info("rollup", "out", out.Location(), "full", res.Full, "reason", res.Reason, "cells", res.CellsWritten,
		"restated", res.CellsRestated, "version", res.Version, "seconds", res.Seconds)
	return res, err
}

// run is one attempt's inputs.
type run struct {
	j       *job
	src     catalog.Readable
	out     *catalog.Table
	sm, om  *catalog.Manifest
	snap    *base
	through int64
	old     *state
	oldRaw  json.RawMessage
	// changed are the source partitions changed since the output's
	// version; oldThrough the output's last day before the run.
	changed    map[string]bool
	oldThrough int64
	// lastEvent is the source's last day with an event, "" for none.
	lastEvent string
	// oldFiles are the source's live files at the version the output
	// reflected: the others of a changed partition are the new events.
	oldFiles map[string]bool
	// oldList are those files, for the removed ones' statistics.
	oldList []catalog.DataFile
	// shard, when not nil, is the part of the keys a sharded run's
	// worker computes (see Work).
	shard *keyShard
	res   Result
	// smRefs and smFiles are the source's partitions at sm and the files
	// of those listed so far: a run asks for them more than once (the
	// last event day, the days changed, the events to read), and a
	// source not partitioned by day lists all of them each time.
	smRefs  []catalog.PartitionRef
	smFiles map[string][]catalog.DataFile
}

// partitionFiles lists the live files at version m of the source's
// partitions that keep accepts, reading only their pieces, and returns the
// refs of the others: a run reads metadata of the days it computes, not
// of the whole history, and those of the latest version (sm) once.
func (r *run) partitionFiles(ctx context.Context, m *catalog.Manifest, keep func(catalog.PartitionRef) bool) ([]catalog.DataFile, []catalog.PartitionRef, error) {
	refs, err := r.partitions(ctx, m)
	if err != nil {
		return nil, nil, err
	}
	var files []catalog.DataFile
	var skipped []catalog.PartitionRef
	for _, ref := range refs {
		if !keep(ref) {
			skipped = append(skipped, ref)
			continue
		}
		fs, err := r.refFiles(ctx, m, ref)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, fs...)
	}
	return files, skipped, nil
}

// partitions are the source's partitions at version m.
func (r *run) partitions(ctx context.Context, m *catalog.Manifest) ([]catalog.PartitionRef, error) {
	if m == r.sm && r.smRefs != nil {
		return r.smRefs, nil
	}
	refs, err := r.src.Partitions(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("source %s: version %d: %w", cloud.Redact(r.j.o.Source), m.Version, err)
	}
	if m == r.sm {
		r.smRefs = refs
	}
	return refs, nil
}

// refFiles are the live files of partition ref at version m.
func (r *run) refFiles(ctx context.Context, m *catalog.Manifest, ref catalog.PartitionRef) ([]catalog.DataFile, error) {
	if fs, ok := r.smFiles[ref.Partition]; ok && m == r.sm {
		return fs, nil
	}
	fs, err := r.src.PartitionFiles(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("source %s: version %d: %w", cloud.Redact(r.j.o.Source), m.Version, err)
	}
	if m == r.sm {
		if r.smFiles == nil {
			r.smFiles = map[string][]catalog.DataFile{}
		}
		r.smFiles[ref.Partition] = fs
	}
	return fs, nil
}

// sourceID names the source in the checkpoint: its store's location,
// absolute, so that "./lake/events", "lake/events" from another folder and
// "file:///.../lake/events" are one source; credentials in it are
// redacted. (A checkpoint written before named the source as given, which
// is accepted too.)
func (r *run) sourceID() string {
	return cloud.Redact(strings.TrimSuffix(r.src.Store().URL(""), "/"))
}

// view is the source as a view of a table of another format, nil for a
// sluice table.
func (r *run) view() *catalog.View {
	v, _ := r.src.(*catalog.View)
	return v
}

// sourceTable names, in the checkpoint, the table a view of another
// format reads (a Delta table's id), so that another table at the same
// location is another source; "" for a sluice table, as before.
func (r *run) sourceTable() string {
	if r.view() == nil {
		return ""
	}
	return r.src.Identity(r.sm)
}

// refDay is the UTC day a source partition of a source partitioned by
// day holds.
func (r *run) refDay(ref catalog.PartitionRef) (int64, bool) {
	if !r.j.byDay {
		return 0, false
	}
	d, ok := strings.CutPrefix(ref.Partition, "date=")
	if !ok {
		return 0, false
	}
	return parseDay(d)
}

func runOnce(ctx context.Context, out *catalog.Table, src catalog.Readable, o Options) (Result, error) {
	r := &run{src: src, out: out}
	var err error
	if r.sm, err = src.Latest(ctx); err != nil {
		if errors.Is(err, catalog.ErrTableNotFound) {
			return Result{}, fmt.Errorf("source %s is not a sluice table: %w", cloud.Redact(o.Source), err)
		}
		return Result{}, fmt.Errorf("source %s: %w", cloud.Redact(o.Source), err)
	}
	if r.j, err = newJob(o, cloud.Redact(o.Source), catalog.ReadSchema(r.sm), r.sm.Spec); err != nil {
		return Result{}, err
	}
	files, release, err := snapshotFiles(ctx, o.Snapshot)
	if err != nil {
		return Result{}, err
	}
	r.snap, err = readBase(ctx, "snapshot "+cloud.Redact(o.Snapshot), files, r.j.keyCols, r.j.o.Measures, o.location())
	release()
	if err != nil {
		return Result{}, err
	}
	if err := r.resolveThrough(ctx); err != nil {
		return Result{}, err
	}
	if r.om, err = out.Latest(ctx); err != nil && !errors.Is(err, catalog.ErrTableNotFound) {
		return Result{}, fmt.Errorf("output %s: %w", cloud.Redact(out.Location()), err)
	}
	r.res = Result{Snapshot: r.snap.identity(), SnapshotDay: dayString(r.snap.day), Through: dayString(r.through), LastEventDay: r.lastEvent,
		Days: int(r.through - r.snap.day + 1), SourceTo: r.sm.Version}
	if r.om != nil {
		r.old, r.oldRaw = readState(r.om)
		if r.old != nil {
			r.res.SourceFrom = r.old.SourceVersion
		}
	}
	first, reason, err := r.decide(ctx)
	if err != nil {
		return r.res, err
	}
	if reason == "" && first > r.through {
		// Nothing the output shows changed: commit nothing.
		r.res.SourceTo = r.res.SourceFrom
		r.res.Keys = int(r.om.Rows) / max(r.res.Days, 1)
		return r.res, nil
	}
	var g *grid
	var ki *keyIndex
	if reason == "" {
		g, ki, err = r.incremental(ctx, first)
		var fn fullNeeded
		if errors.As(err, &fn) {
			reason, err = string(fn), nil
		}
		if err != nil {
			return r.res, err
		}
	}
	if reason != "" {
		r.res.Full, r.res.Reason = true, reason
		if g, ki, err = r.full(ctx); err != nil {
			return r.res, err
		}
	}
	return r.res, r.commit(ctx, g, ki)
}

// resolveThrough sets the last output day: Options.Through, else the last
// event day (not before the snapshot day).
func (r *run) resolveThrough(ctx context.Context) error {
	last, ok, err := r.lastEventDay(ctx)
	if err != nil {
		return err
	}
	if ok {
		r.lastEvent = dayString(last)
	}
	if !r.j.o.Through.IsZero() {
		r.through = dayOfDate(r.j.o.Through)
		if r.through < r.snap.day {
			return fmt.Errorf("--through %s is before the snapshot day %s", dayString(r.through), dayString(r.snap.day))
		}
		return nil
	}
	r.through = r.snap.day
	if ok && last > r.through {
		r.through = last
	}
	return nil
}

// decide returns the first day to restate, or a reason for a full
// recompute.
func (r *run) decide(ctx context.Context) (int64, string, error) {
	o, old := r.j.o, r.old
	switch {
	case o.Full:
		return 0, "--full", nil
	case r.om == nil:
		return 0, "a new output table", nil
	case old == nil:
		return 0, "the output has no rollup checkpoint", nil
	case old.Spec != o.spec() || r.om.Schema.String() != r.j.out.String():
		return 0, "", fmt.Errorf("%w: %s; give --full to recompute the output with the new ones", ErrOptionsChanged, specDiff(old.Spec, o.spec()))
	case old.Snapshot != r.snap.identity():
		return 0, fmt.Sprintf("a new snapshot (%s, was %s)", r.snap.identity(), old.Snapshot), nil
	case old.Source != r.sourceID() && old.Source != o.Source, old.SourceTable != r.sourceTable():
		return 0, "another source", nil
	case r.view() != nil && r.sm.Version != old.SourceVersion:
		// A view holds one version: which partitions changed since
		// the output's cannot be read as a sluice table's commits say.
		return 0, "the source is a " + r.view().Format() + " table", nil
	case r.sm.Version < old.SourceVersion:
		return 0, fmt.Sprintf("the source went back from version %d to %d", old.SourceVersion, r.sm.Version), nil
	}
	oldThrough, ok := parseDay(old.Through)
	if !ok || r.through < oldThrough {
		return 0, "the last day moved back", nil
	}
	var versions []*catalog.Manifest
	for v := old.SourceVersion + 1; v <= r.sm.Version; v++ {
		m, err := r.src.Manifest(ctx, v)
		if err != nil {
			return 0, "", fmt.Errorf("source %s: %w", cloud.Redact(o.Source), err)
		}
		versions = append(versions, m)
	}
	ch := r.j.sourceChanges(versions)
	if ch.full != "" {
		return 0, ch.full, nil
	}
	r.changed = ch.parts
	if len(ch.parts) > 0 {
		if err := r.readOldFiles(ctx, old.SourceVersion); err != nil {
			return 0, "", err
		}
	}
	first := ch.earliest
	if ch.byStats && len(ch.parts) > 0 {
		day, why, err := r.changedDays(ctx)
		if err != nil || why != "" {
			return 0, why, err
		}
		first = day
	}
	if r.through > oldThrough {
		first = min(first, oldThrough+1)
	}
	r.oldThrough = oldThrough
	return max(first, r.snap.day+1), "", nil
}

// lastEventDay is the day of the latest event, from the files' statistics
// (a file without them is read). On a source partitioned by day only the
// newest partitions are listed, so that the cost does not grow with the
// history: a partition's events are within margin days of it, so one
// older than the newest by more than twice that holds no later day.
func (r *run) lastEventDay(ctx context.Context) (int64, bool, error) {
	newest, margin := int64(math.MinInt64), r.j.margin()
	refs, err := r.partitions(ctx, r.sm)
	if err != nil {
		return 0, false, err
	}
	for _, ref := range refs {
		if p, ok := r.refDay(ref); ok && ref.Rows > 0 {
			newest = max(newest, p)
		}
	}
	all, _, err := r.partitionFiles(ctx, r.sm, func(ref catalog.PartitionRef) bool {
		p, ok := r.refDay(ref)
		return !ok || newest == math.MinInt64 || p >= newest-2*margin
	})
	if err != nil {
		return 0, false, err
	}
	last, found := int64(math.MinInt64), false
	z := &dayer{loc: r.j.o.location()}
	for _, f := range all {
		cs, ok := f.Columns[r.j.timeCol.Name]
		if ok && cs.NullCount == f.Rows {
			continue
		}
		if ok && cs.Max != nil && !cs.MaxTruncated {
			v, err := pqio.ParseValue(r.j.timeCol.Type, *cs.Max)
			if t, isTime := v.(time.Time); err == nil && isTime {
				d := dayOfDate(t)
				if r.j.timeCol.Type.Kind == catalog.KindTimestamp {
					d = z.day(t.UnixMicro())
				}
				last, found = max(last, d), true
				continue
			}
		}
		st, key, err := r.src.DataFileStore(ctx, f)
		if err != nil {
			return 0, false, err
		}
		err = scanData(ctx, dataFile{st, key, f.Bytes, f.PartitionValues}, []catalog.Column{r.j.timeCol}, nil, nil, func(cols []*colData, n int) error {
			for i := 0; i < n; i++ {
				if cols[0].valid[i] {
					d := cols[0].ints[i]
					if r.j.timeCol.Type.Kind == catalog.KindTimestamp {
						d = z.day(d)
					}
					last, found = max(last, d), true
				}
			}
			return nil
		})
		if err != nil {
			return 0, false, err
		}
	}
	return last, found, nil
}

// changedDays is, for a source not partitioned by day, the earliest day
// (in the rollup's zone) that the files added and removed since the
// output's version span, by their time column's statistics: the days an
// append, a delete or an overwrite touched, whatever the partitioning (a
// Spark table's date=YYYY-MM-DD string folders, none at all). A file
// without exact statistics cannot say: why names it, and the run
// recomputes in full.
func (r *run) changedDays(ctx context.Context) (first int64, why string, err error) {
	cur, _, err := r.partitionFiles(ctx, r.sm, func(ref catalog.PartitionRef) bool { return r.changed[ref.Partition] })
	if err != nil {
		return 0, "", err
	}
	now := make(map[string]bool, len(cur))
	for _, f := range cur {
		now[f.Path] = true
	}
	z := &dayer{loc: r.j.o.location()}
	first = math.MaxInt64
	span := func(f catalog.DataFile, what string) string {
		lo, _, ok, none := r.statSpan(f, z)
		switch {
		case none:
			return "" // every time NULL: no day changed
		case !ok:
			return fmt.Sprintf("the %s source file %s has no exact statistics of %s", what, f.Path, r.j.o.Time)
		}
		first = min(first, lo)
		return ""
	}
	for _, f := range cur {
		if !r.oldFiles[f.Path] {
			if why := span(f, "added"); why != "" {
				return 0, why, nil
			}
		}
	}
	for _, f := range r.oldList {
		if !now[f.Path] {
			if why := span(f, "removed"); why != "" {
				return 0, why, nil
			}
		}
	}
	return first, "", nil
}

// readOldFiles lists the source's live files at version v in the
// partitions changed since.
func (r *run) readOldFiles(ctx context.Context, v int64) error {
	m, err := r.src.Manifest(ctx, v)
	if err != nil {
		return fmt.Errorf("source %s: %w", cloud.Redact(r.j.o.Source), err)
	}
	files, _, err := r.partitionFiles(ctx, m, func(ref catalog.PartitionRef) bool { return r.changed[ref.Partition] })
	if err != nil {
		return err
	}
	r.oldFiles, r.oldList = make(map[string]bool, len(files)), files
	for _, f := range files {
		r.oldFiles[f.Path] = true
	}
	return nil
}
