package ingest

// Deduplication by key, for producers that retry: Options.DedupKey names
// a column, and a valid record is dropped (counted in
// Result.RecordsDeduplicated, so records in = rows written + quarantined +
// deduplicated) when its key is one that
//
//   - a commit of the table made in the DedupWindow before the run
//     started wrote, or
//   - an earlier record of the same run has (of a landing file read whole:
//     a file that fails forgets its keys with its rows).
//
// The window is commit time, not event time. A retry is the same record
// sent again soon after the first attempt, so what bounds it is when the
// first copy arrived, which the manifest history says without reading any
// data; an event-time window would have to keep every key's event time,
// would read the partitions of whatever days the run's records fall on
// before it knows them, and needs a time-partitioned table. With commit
// time, the data files to read are those the table's data commits
// (ingest, append, import) of the window added, found by walking the
// versions back from the latest and comparing each with the one before
// it in the partitions it touched; of those files only the key column is
// read. The walk follows rollbacks to the version they restore, so the
// keys of undone commits are forgotten and the undone records can be
// ingested again. Compactions are skipped: they rewrite rows, they do not
// write new ones. A file compacted away since is still read from its
// original path, which exists for as long as vacuum retains the versions
// that list it (168h by default): a window longer than vacuum's retention
// fails when it meets a vacuumed file, rather than miss duplicates.
//
// Exactly once still holds: the keys of an uncommitted run are in no
// commit, so a rerun after a crash drops nothing the crashed run wrote;
// and it reads the same input, so it drops the same in-run duplicates.
//
// Memory: a key is kept as a 128-bit hash (two seeded maphash values of
// its canonical bytes, never the value itself), in a Go map whose cost
// per key varies as it grows in steps, plus 16 bytes a key of the landing
// file being read: at most about 60 MB per million keys written in the
// window and read in the run, whatever the keys' length. Two different
// keys collide with a probability of about n²/2¹²⁹ for n keys, so a
// record is never dropped for a collision in practice. A NULL key is
// never a duplicate.

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// dedupReadConcurrency bounds the data files whose key column is read at
// once while loading the keys of the window.
const dedupReadConcurrency = 8

// dedupNow is the clock the window is measured against; tests move it.
var dedupNow = time.Now

// key128 is a key's hash.
type key128 [2]uint64

// dedupKeys are the keys the table already has: loaded once per run, on
// the first valid record, and shared by the passes of a landing run that
// starts over (see errRestart).
type dedupKeys struct {
	t      *catalog.Table
	m      *catalog.Manifest
	col    catalog.Column
	idx    int // the key column's index in a row
	window time.Duration
	start  time.Time
	log    *slog.Logger
	seeds  [2]maphash.Seed

	loaded  bool
	err     error
	written map[key128]struct{}
}

// newDedup checks o.DedupKey (o with its defaults) against the schema of
// m, the table's manifest the run starts from, and returns the keys to
// load; nil without a DedupKey.
func newDedup(t *catalog.Table, m *catalog.Manifest, o Options) (*dedupKeys, error) {
	if o.DedupKey == "" {
		return nil, nil
	}
	start := dedupNow()
	for i, c := range m.Schema.Columns {
		if c.Name == o.DedupKey {
			return &dedupKeys{t: t, m: m, col: c, idx: i, window: o.DedupWindow, start: start,
				log:   o.Logger.With("table", t.Location()),
				seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}, nil
		}
	}
	return nil, fmt.Errorf("ingest into %s: dedup key column %q is not in the table's schema (%s)", t.Location(), o.DedupKey, m.Schema)
}

// forFiles returns the deduplication of one pass over landing files, whose
// keys count only once their file was read whole (see fileEnd).
func (k *dedupKeys) forFiles() *dedup {
	if k == nil {
		return nil
	}
	return &dedup{keys: k, run: map[key128]struct{}{}, perFile: true}
}

// forRecords returns the deduplication of a run whose records count one
// by one (Kafka).
func (k *dedupKeys) forRecords() *dedup {
	if k == nil {
		return nil
	}
	return &dedup{keys: k, run: map[key128]struct{}{}}
}

// dedup is the deduplication of one pass: the table's keys and the
// pass's own. A nil *dedup drops nothing.
type dedup struct {
	keys    *dedupKeys
	run     map[key128]struct{}
	perFile bool
	buf     []byte

	pending        []key128 // keys added by the current landing file
	pendingDropped int64
	dropped        int64
}

// drop tells whether row is a duplicate to drop, and otherwise remembers
// its key. An error (loading the table's keys failed) is a *writeError:
// it fails the run, not the landing file.
func (d *dedup) drop(ctx context.Context, row []any) (bool, error) {
	if d == nil {
		return false, nil
	}
	if err := d.keys.load(ctx); err != nil {
		return false, &writeError{err}
	}
	v := row[d.keys.idx]
	if v == nil {
		return false, nil
	}
	var h key128
	h, d.buf = d.keys.hash(d.buf, v)
	_, old := d.keys.written[h]
	if !old {
		_, old = d.run[h]
	}
	if old {
		if d.perFile {
			d.pendingDropped++
		} else {
			d.dropped++
		}
		return true, nil
	}
	d.run[h] = struct{}{}
	if d.perFile {
		d.pending = append(d.pending, h)
	}
	return false, nil
}

// fileEnd ends a landing file: its keys and drops count if it was read
// whole (ok), and are forgotten with its rows if it failed.
func (d *dedup) fileEnd(ok bool) {
	if d == nil {
		return
	}
	if ok {
		d.dropped += d.pendingDropped
	} else {
		for _, h := range d.pending {
			delete(d.run, h)
		}
	}
	d.pending, d.pendingDropped = d.pending[:0], 0
}

// count returns the records dropped as duplicates.
func (d *dedup) count() int64 {
	if d == nil {
		return 0
	}
	return d.dropped
}

// hash returns the hash of a key value of the key column's Go
// representation (see catalog's values.go), using buf as scratch space.
// A table file and a record give the same representation for the same
// value, so they hash the same.
func (k *dedupKeys) hash(buf []byte, v any) (key128, []byte) {
	buf = buf[:0]
	switch x := v.(type) {
	case string:
		buf = append(buf, x...)
	case []byte:
		buf = append(buf, x...)
	case int32:
		buf = strconv.AppendInt(buf, int64(x), 10)
	case int64:
		buf = strconv.AppendInt(buf, x, 10)
	case float64:
		buf = strconv.AppendUint(buf, math.Float64bits(x), 16)
	case bool:
		buf = strconv.AppendBool(buf, x)
	case time.Time:
		buf = strconv.AppendInt(buf, x.UnixMicro(), 10)
	default:
		buf = fmt.Append(buf, x)
	}
	return key128{maphash.Bytes(k.seeds[0], buf), maphash.Bytes(k.seeds[1], buf)}, buf
}

// load reads, once, the keys written by the table's commits of the
// window.
func (k *dedupKeys) load(ctx context.Context) error {
	if k.loaded {
		return k.err
	}
	k.loaded = true
	began := time.Now()
	files, err := writtenSince(ctx, k.t, k.m, k.start.Add(-k.window))
	if err != nil {
		k.err = fmt.Errorf("dedup: find the files written in the last %s: %w", k.window, err)
		return k.err
	}
	k.written = map[key128]struct{}{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(dedupReadConcurrency)
	for _, f := range files {
		g.Go(func() error {
			st, key, err := k.t.DataFileStore(gctx, f)
			if err != nil {
				return err
			}
			var hs []key128
			var buf []byte
			err = pqio.ScanParquetColumn(gctx, st, key, f.Bytes, k.col, func(v any) error {
				if v != nil {
					var h key128
					h, buf = k.hash(buf, v)
					hs = append(hs, h)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s (added at version %d, within the window; a window longer than vacuum's retention meets vacuumed files): %w",
					k.t.FileURL(f), f.AddedVersion, err)
			}
			mu.Lock()
			for _, h := range hs {
				k.written[h] = struct{}{}
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		k.err = fmt.Errorf("dedup: read the keys of column %q: %w", k.col.Name, err)
		return k.err
	}
	k.log.LogAttrs(ctx, slog.LevelInfo, "dedup", slog.String("key", k.col.Name), slog.Duration("window", k.window),
		slog.Int("files", len(files)), slog.Int("keys", len(k.written)), slog.Duration("took", time.Since(began)))
	return nil
}

// writtenSince returns the data files that the commits of m's lineage
// made at or after cutoff added, with AddedVersion set to the version
// that added each: the versions are walked back from m, following a
// rollback to the version it restores and skipping rewrites that keep
// the rows (compaction).
func writtenSince(ctx context.Context, t *catalog.Table, m *catalog.Manifest, cutoff time.Time) ([]catalog.DataFile, error) {
	var out []catalog.DataFile
	cur := m
	var curRefs map[string]catalog.PartitionRef // cur's, once read
	for !cur.CommittedAt.Before(cutoff) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cur.RolledBackTo > 0 {
			r, err := t.Manifest(ctx, cur.RolledBackTo)
			if err != nil {
				return nil, err
			}
			cur, curRefs = r, nil
			continue
		}
		var prev *catalog.Manifest
		if cur.Version > 1 {
			p, err := t.Manifest(ctx, cur.Version-1)
			if err != nil {
				return nil, err
			}
			prev = p
		}
		var prevRefs map[string]catalog.PartitionRef
		if cur.Summary.DataChange && cur.Summary.FilesAdded > 0 {
			var err error
			if curRefs == nil {
				if curRefs, err = partitionRefs(ctx, t, cur); err != nil {
					return nil, fmt.Errorf("version %d: %w", cur.Version, err)
				}
			}
			if prevRefs, err = partitionRefs(ctx, t, prev); err != nil {
				return nil, fmt.Errorf("version %d: %w", cur.Version-1, err)
			}
			added, err := addedFiles(ctx, t, prevRefs, curRefs, cur)
			if err != nil {
				return nil, fmt.Errorf("version %d: %w", cur.Version, err)
			}
			out = append(out, added...)
		}
		if prev == nil {
			break
		}
		cur, curRefs = prev, prevRefs
	}
	return out, nil
}

// partitionRefs returns m's partitions by name; none for a nil m.
func partitionRefs(ctx context.Context, t *catalog.Table, m *catalog.Manifest) (map[string]catalog.PartitionRef, error) {
	out := map[string]catalog.PartitionRef{}
	if m == nil {
		return out, nil
	}
	refs, err := t.Partitions(ctx, m)
	for _, r := range refs {
		out[r.Partition] = r
	}
	return out, err
}

// addedFiles returns the files live in cur (whose partitions are after)
// but not in the version before it (before), in the partitions cur's
// commit touched.
func addedFiles(ctx context.Context, t *catalog.Table, before, after map[string]catalog.PartitionRef, cur *catalog.Manifest) ([]catalog.DataFile, error) {
	touched := cur.Summary.Partitions
	if touched == nil { // a commit that did not say: compare every partition
		for p := range after {
			touched = append(touched, p)
		}
	}
	var out []catalog.DataFile
	for _, p := range touched {
		ref, ok := after[p]
		if !ok {
			continue
		}
		files, err := t.PartitionFiles(ctx, ref)
		if err != nil {
			return nil, err
		}
		had := map[string]bool{}
		if bref, ok := before[p]; ok {
			bfiles, err := t.PartitionFiles(ctx, bref)
			if err != nil {
				return nil, err
			}
			for _, f := range bfiles {
				had[f.Path] = true
			}
		}
		for _, f := range files {
			if !had[f.Path] {
				f.AddedVersion = cur.Version
				out = append(out, f)
			}
		}
	}
	return out, nil
}
