package rollup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// fullNeeded: an incremental run found it cannot restate from its day, and
// why.
type fullNeeded string

func (f fullNeeded) Error() string { return string(f) }

// full computes every day from the snapshot's.
func (r *run) full(ctx context.Context) (*grid, *keyIndex, error) {
	s := r.snap
	g := newGrid(r.j.o.Measures, s.day, r.through-s.day+1, s)
	g.shard = r.shard
	if err := r.aggregate(ctx, g, s.ki, true, nil); err != nil {
		return nil, nil, err
	}
	r.res.First = dayString(s.day)
	r.res.KeysRestated = s.ki.len()
	r.res.CellsRestated = int64(s.ki.len()) * g.days
	return g, s.ki, nil
}

// incremental restates the days from first on, starting from the totals
// the output stores for the day before.
func (r *run) incremental(ctx context.Context, first int64) (*grid, *keyIndex, error) {
	prev := dayString(first - 1)
	files, err := manifestFiles(ctx, r.out, r.om, func(partition string) bool { return partition == "date="+prev })
	if err != nil {
		return nil, nil, fmt.Errorf("output %s: %w", cloud.Redact(r.out.Location()), err)
	}
	if len(files) == 0 {
		return nil, nil, fullNeeded("the output holds no rows of " + prev)
	}
	b, err := readBaseShard(ctx, "output "+cloud.Redact(r.out.Location())+" date="+prev, files, r.j.keyCols, r.j.o.Measures, time.UTC, r.shard)
	if err != nil {
		return nil, nil, err
	}
	g := newGrid(r.j.o.Measures, first, r.through-first+1, b)
	g.shard = r.shard
	// changedFrom[k]: key k's earliest day in the new events; a slice,
	// not a map, as it is looked up once per new event.
	changedFrom := make([]int64, b.ki.len())
	for k := range changedFrom {
		changedFrom[k] = math.MaxInt64
	}
	if err := r.aggregate(ctx, g, b.ki, false, changedFrom); err != nil {
		if errors.Is(err, errNewKey) {
			return nil, nil, fullNeeded("late events of a key the output does not hold yet")
		}
		return nil, nil, err
	}
	r.res.First = dayString(first)
	for k := 0; k < b.ki.len(); k++ {
		from := changedFrom[k]
		ok := from != math.MaxInt64
		if r.through > r.oldThrough && (!ok || from > r.oldThrough+1) {
			from, ok = r.oldThrough+1, true
		}
		if ok {
			r.res.KeysRestated++
			r.res.CellsRestated += r.through - from + 1
		}
	}
	return g, b.ki, nil
}

// aggregate reads the source's events of the grid's days into it. Only
// the needed columns are read, and only the files whose partition may
// hold those days. changedFrom, when not nil, is given per key the
// earliest day of its events in the partitions changed since the output's
// version.
func (r *run) aggregate(ctx context.Context, g *grid, ki *keyIndex, allowNew bool, changedFrom []int64) error {
	j := r.j
	margin, last := j.margin(), g.first+g.days-1
	var t tally
	// Partitions wholly outside the days computed are counted from their
	// totals, without listing their files. A full run counts the events
	// on or before the snapshot day; an incremental one counted them
	// before.
	outside := func(p int64) (before, after bool) { return p+margin < g.first, p-margin > last }
	all, skipped, err := r.partitionFiles(ctx, r.sm, func(ref catalog.PartitionRef) bool {
		p, ok := r.refDay(ref)
		before, after := outside(p)
		return !ok || !before && !after
	})
	if err != nil {
		return err
	}
	for _, ref := range skipped {
		p, _ := r.refDay(ref)
		if before, _ := outside(p); before {
			if g.first == r.snap.day {
				t.read += ref.Rows
				t.excluded += ref.Rows
			}
			continue
		}
		t.read += ref.Rows
		t.after += ref.Rows
	}
	nk := len(j.keyCols)
	want := append(append([]catalog.Column(nil), j.keyCols...), j.timeCol)
	mAt := make([]int, len(j.mCols)) // measure m's column in want, -1 for count()
	for m, c := range j.mCols {
		mAt[m] = -1
		if c.Name != "" {
			mAt[m] = len(want)
			want = append(want, c)
		}
	}
	z := &dayer{loc: j.o.location()}
	var read []dataFile
	var news []bool // read[i] holds events new since the output's version
	for _, f := range all {
		if lo, hi, ok := r.statDays(f, z); ok {
			switch {
			case hi < g.first:
				if g.first == r.snap.day {
					t.read += f.Rows
					t.excluded += f.Rows
				}
				continue
			case lo > last:
				t.read += f.Rows
				t.after += f.Rows
				continue
			}
		}
		st, key, err := r.src.DataFileStore(ctx, f)
		if err != nil {
			return err
		}
		read = append(read, dataFile{st, key, f.Bytes, f.PartitionValues})
		news = append(news, changedFrom != nil && r.changed[f.Partition] && !r.oldFiles[f.Path])
	}
	if g.shard != nil && g.shard.index != 0 {
		t = tally{} // shard 0 counts the events counted from statistics
	}
	loc, timestamps := j.o.location(), j.timeCol.Type.Kind == catalog.KindTimestamp
	// toDays turns the time column into day numbers, in the reading
	// goroutines.
	toDays := func(cols []*colData, n int) {
		if tc := cols[nk]; timestamps {
			z := &dayer{loc: loc}
			for i, us := range tc.ints {
				tc.ints[i] = z.day(us)
			}
		}
	}
	onNew := func(k int32, d int64) { changedFrom[k] = min(changedFrom[k], d) }
	var bytesTotal, bytesDone int64
	for _, f := range read {
		bytesTotal += f.size
	}
	progress := func(int64, int64) {}
	if j.o.Progress != nil {
		progress = j.o.Progress
	}
	progress(0, bytesTotal)
	mcols := make([]*colData, len(mAt))
	cur := 0 // the file being consumed
	err = scanFilesInOrder(ctx, read, want, readWorkers(len(read)), toDays, func(file int, cols []*colData, n int) error {
		for ; cur < file; cur++ {
			bytesDone += read[cur].size
			progress(bytesDone, bytesTotal)
		}
		for m, at := range mAt {
			mcols[m] = nil
			if at >= 0 {
				mcols[m] = cols[at]
			}
		}
		var onRow func(k int32, d int64)
		if news[file] {
			onRow = onNew
		}
		tc := cols[nk]
		return g.add(ki, cols[:nk], tc.ints, tc.valid, mcols, r.snap.day, allowNew, &t, onRow)
	})
	if err != nil {
		return err
	}
	progress(bytesTotal, bytesTotal)
	r.res.EventsRead, r.res.EventsExcluded, r.res.EventsAfter, r.res.EventsNoTime = t.read, t.excluded, t.after, t.nullTime
	return nil
}

// outputSpec partitions the output by its own date column. It is built
// here, not parsed: catalog.ParsePartitionSpec refuses a data column named
// like the folder key, since a Hive reader would see two columns of one
// name that may differ. Here the folder value is the column's value on
// every row, so the two always agree.
var outputSpec = catalog.PartitionSpec{Fields: []catalog.PartitionField{
	{Name: "date", Transform: "day", Source: "date", Type: catalog.Type{Kind: catalog.KindDate}}}}

// commit writes the grid's days as one file per day and commits them in
// place of the output's partitions from the grid's first day on, with the
// state they reflect.
func (r *run) commit(ctx context.Context, g *grid, ki *keyIndex) error {
	if err := g.checkRange(ki); err != nil {
		return fmt.Errorf("rollup to %s: %w", cloud.Redact(r.out.Location()), err)
	}
	sch, spec := r.j.out, outputSpec
	if r.om != nil && r.om.Spec.String() != spec.String() {
		return fmt.Errorf("output %s is partitioned by %s: a rollup output is partitioned by day(date)", cloud.Redact(r.out.Location()), r.om.Spec)
	}
	var remove []catalog.DataFile
	replaced := map[string]bool{}
	if r.om != nil {
		// Only the partitions replaced are listed: the cost of a day's
		// run does not grow with the days before it.
		refs, err := r.out.Partitions(ctx, r.om)
		if err != nil {
			return fmt.Errorf("output %s: %w", cloud.Redact(r.out.Location()), err)
		}
		for _, ref := range refs {
			day, isDate := strings.CutPrefix(ref.Partition, "date=")
			d, ok := parseDay(day)
			ok = ok && isDate
			if !r.res.Full && ok && d < g.first {
				continue
			}
			files, err := r.out.PartitionFiles(ctx, ref)
			if err != nil {
				return fmt.Errorf("output %s: %w", cloud.Redact(r.out.Location()), err)
			}
			remove = append(remove, files...)
			if ok && d >= g.first && d <= r.through && len(files) > 0 {
				replaced[ref.Partition] = true
			}
		}
	}
	wm := &catalog.Manifest{Schema: sch, Spec: spec}
	add, err := r.writeDays(ctx, wm, g, ki)
	if err != nil {
		return err
	}
	r.res.Keys = ki.len()
	r.res.PartitionsReplaced = len(replaced)
	raw, err := json.Marshal(state{Source: r.sourceID(), SourceTable: r.sourceTable(), SourceVersion: r.sm.Version, Snapshot: r.snap.identity(),
		Spec: r.j.o.spec(), Through: dayString(r.through)})
	if err != nil {
		return err
	}
	sort.Slice(add, func(a, b int) bool { return add[a].Path < add[b].Path })
	c := catalog.Change{Operation: "rollup", RunID: r.j.o.RunID, Add: add, Remove: remove, DataChange: true,
		Checkpoints:    map[string]json.RawMessage{checkpointKey: raw},
		CheckpointBase: map[string]json.RawMessage{checkpointKey: r.oldRaw}}
	switch {
	case r.om == nil:
		c.Create, c.Schema, c.Spec = true, &sch, &spec
	case r.om.Schema.String() != sch.String():
		c.Schema = &sch
	}
	m, err := r.out.Commit(ctx, c)
	if err != nil {
		// The written files stay: vacuum removes them if no version
		// references them (the outcome may be unknown).
		return fmt.Errorf("commit rollup to %s: %w", cloud.Redact(r.out.Location()), err)
	}
	r.res.Version = m.Version
	return nil
}

// writeWorkers is how many days writeDays makes and writes at once: twice
// the CPUs, as a day's write is CPU (rows, encoding, compression) and then
// a wait for the store (a local disk's fsync), which another day's CPU
// fills. Each holds one day's rows, the output's size over its days.
func writeWorkers() int { return 2 * runtime.GOMAXPROCS(0) }

// writeDays writes the grid's days through r.through into the output, one
// file per day with rows, and returns the files. Up to writeWorkers days
// are made into rows, encoded and written at once, each from a copy of
// the running totals through the day before it (advanced here in day
// order): the days are independent then, and making and encoding them is
// most of a commit's CPU.
func (r *run) writeDays(ctx context.Context, wm *catalog.Manifest, g *grid, ki *keyIndex) ([]catalog.DataFile, error) {
	running := g.startTotals()
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(writeWorkers())
	var mu sync.Mutex
	var add []catalog.DataFile
	for d := g.first; d <= r.through; d++ {
		if ectx.Err() != nil {
			break
		}
		before := running.clone()
		g.advance(d, running)
		eg.Go(func() error {
			rows := g.rows(ki, d, before)
			files, err := r.out.WriteFiles(ectx, wm, rows)
			if err != nil {
				return fmt.Errorf("output %s: %w", cloud.Redact(r.out.Location()), err)
			}
			mu.Lock()
			defer mu.Unlock()
			add = append(add, files...)
			r.res.CellsWritten += int64(len(rows))
			if len(rows) > 0 {
				r.res.PartitionsWritten++
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return add, nil
}

// statDays are the first and last days of a file's events by its time
// column's statistics, when they are exact and the file has no NULL time
// (whose events are counted apart).
func (r *run) statDays(f catalog.DataFile, z *dayer) (lo, hi int64, ok bool) {
	if cs, found := f.Columns[r.j.timeCol.Name]; !found || cs.NullCount != 0 {
		return 0, 0, false
	}
	lo, hi, ok, _ = r.statSpan(f, z)
	return lo, hi, ok
}

// statSpan are the first and last days of a file's events that have a
// time, by its time column's exact statistics (ok); none when every time
// is NULL.
func (r *run) statSpan(f catalog.DataFile, z *dayer) (lo, hi int64, ok, none bool) {
	cs, found := f.Columns[r.j.timeCol.Name]
	if found && f.Rows > 0 && cs.NullCount == f.Rows {
		return 0, 0, false, true
	}
	if !found || cs.Min == nil || cs.Max == nil || cs.MinTruncated || cs.MaxTruncated {
		return 0, 0, false, false
	}
	day := func(s string) (int64, bool) {
		v, err := pqio.ParseValue(r.j.timeCol.Type, s)
		t, isTime := v.(time.Time)
		if err != nil || !isTime {
			return 0, false
		}
		if r.j.timeCol.Type.Kind == catalog.KindTimestamp {
			return z.day(t.UnixMicro()), true
		}
		return dayOfDate(t), true
	}
	lo, ok1 := day(*cs.Min)
	hi, ok2 := day(*cs.Max)
	return lo, hi, ok1 && ok2, false
}
