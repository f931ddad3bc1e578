package rollup

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// keyShard is one shard of a sharded rollup's keys: those whose hash
// (FNV-1a of the key's encoding, as keyIndex encodes it) modulo n is
// index. A key's rows, its snapshot base and its output rows are all
// read as columns of the key's types, so one key is in one shard whatever
// file it comes from. Not safe for concurrent use: it encodes into a
// scratch buffer.
type keyShard struct {
	index, n int
	enc      keyIndex
}

func newKeyShard(index, n int) *keyShard { return &keyShard{index: index, n: n} }

// has tells whether row i's key is of the shard.
func (s *keyShard) has(cols []*colData, i int) bool {
	h := uint64(14695981039346656037)
	for _, c := range s.enc.encode(cols, i) {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h%uint64(s.n) == uint64(s.index)
}

// shardFile is one data file a shard wrote, with its partition (which a
// DataFile's JSON does not carry).
type shardFile struct {
	Partition string           `json:"partition"`
	File      catalog.DataFile `json:"file"`
}

// shardResult is a shard done: its verified files, in results/<unit>.json.
type shardResult struct {
	Unit   string      `json:"unit"`
	Shard  int         `json:"shard"`
	Worker string      `json:"worker"`
	Token  string      `json:"token"`
	Full   bool        `json:"full"`
	Files  []shardFile `json:"files"`
	Keys   int         `json:"keys"`
	Rows   int64       `json:"rows"`
	Bytes  int64       `json:"bytes"`
	// Checksum is the sum of the rows' hashes (rowHash), as read back.
	Checksum      uint64 `json:"checksum"`
	KeysRestated  int    `json:"keys_restated"`
	CellsRestated int64  `json:"cells_restated"`
	// Days are the partitions written (days with rows).
	Days           []string `json:"days"`
	EventsRead     int64    `json:"events_read"`
	EventsExcluded int64    `json:"events_excluded"`
	EventsAfter    int64    `json:"events_after"`
	EventsNoTime   int64    `json:"events_no_time"`
}

// compute computes, writes and verifies one shard of the plan: in full
// when full, else incrementally from the plan's first day. fallback, when
// not empty, says why the incremental restatement cannot be done (a late
// event of a key the output does not hold): nothing was written then.
func (w *worker) compute(ctx context.Context, shard int, full bool) (res shardResult, fallback string, err error) {
	r := &run{j: w.j, src: w.src, out: w.out, sm: w.sm, om: w.om, through: w.through, shard: newKeyShard(shard, w.plan.Shards)}
	o := w.j.o
	files, release, err := snapshotFiles(ctx, o.Snapshot)
	if err != nil {
		return res, "", err
	}
	r.snap, err = readBaseShard(ctx, "snapshot "+cloud.Redact(o.Snapshot), files, r.j.keyCols, o.Measures, o.location(), r.shard)
	release()
	if err != nil {
		return res, "", err
	}
	if id := r.snap.identity(); id != w.plan.SnapshotID {
		return res, "", fmt.Errorf("snapshot %s is %s, the plan read %s: %w", cloud.Redact(o.Snapshot), id, w.plan.SnapshotID, ErrPlanStale)
	}
	if r.om != nil {
		r.old, r.oldRaw = readState(r.om)
	}
	var g *grid
	var ki *keyIndex
	if full {
		r.res.Full = true
		g, ki, err = r.full(ctx)
	} else {
		var first int64
		var reason string
		// The plan's decision, made again on the same versions, sets
		// what the incremental restatement reads (which files are new).
		if first, reason, err = r.decide(ctx); err == nil && (reason != "" || dayString(first) != w.plan.First) {
			err = fmt.Errorf("plan %s restates from %s; shard %d decides %q from %s", w.plan.ID, w.plan.First, shard, reason, dayString(first))
		}
		if err == nil {
			g, ki, err = r.incremental(ctx, first)
		}
		var fn fullNeeded
		if errors.As(err, &fn) {
			return res, string(fn), nil
		}
	}
	if err != nil {
		return res, "", err
	}
	res = shardResult{Shard: shard, Full: full, Keys: ki.len(), KeysRestated: r.res.KeysRestated, CellsRestated: r.res.CellsRestated,
		EventsRead: r.res.EventsRead, EventsExcluded: r.res.EventsExcluded, EventsAfter: r.res.EventsAfter, EventsNoTime: r.res.EventsNoTime}
	if err := w.write(ctx, r, g, ki, &res); err != nil {
		return res, "", err
	}
	return res, "", nil
}

// write writes the grid's days, one file per day with rows, then reads
// every file back and checks that it holds the rows computed.
func (w *worker) write(ctx context.Context, r *run, g *grid, ki *keyIndex, res *shardResult) error {
	if err := g.checkRange(ki); err != nil {
		return fmt.Errorf("rollup to %s: %w", cloud.Redact(w.out.Location()), err)
	}
	wm := &catalog.Manifest{Schema: r.j.out, Spec: outputSpec}
	running := g.startTotals()
	var sum uint64
	for d := g.first; d <= r.through; d++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows := g.rows(ki, d, running)
		files, err := w.out.WriteFiles(ctx, wm, rows)
		if err != nil {
			return fmt.Errorf("output %s: %w", cloud.Redact(w.out.Location()), err)
		}
		for _, row := range rows {
			sum += rowHash(row)
		}
		res.Rows += int64(len(rows))
		if len(rows) > 0 {
			res.Days = append(res.Days, dayString(d))
		}
		for _, f := range files {
			res.Files = append(res.Files, shardFile{Partition: f.Partition, File: f})
			res.Bytes += f.Bytes
		}
	}
	got, n, err := w.readBack(ctx, r.j.out, res.Files)
	if err != nil {
		return err
	}
	if got != sum || n != res.Rows {
		return fmt.Errorf("shard %d: the files written read back as %d rows of checksum %016x, not the %d rows of %016x computed", res.Shard, n, got, res.Rows, sum)
	}
	res.Checksum = sum
	return nil
}

// readBack reads files and returns the sum of their rows' hashes and the
// number of rows.
func (w *worker) readBack(ctx context.Context, sch catalog.Schema, files []shardFile) (sum uint64, rows int64, err error) {
	for _, f := range files {
		err := pqio.ScanParquet(ctx, w.out.Store(), f.File.Path, f.File.Bytes, sch, func(row []any) error {
			sum += rowHash(row)
			rows++
			return nil
		})
		if err != nil {
			return 0, 0, fmt.Errorf("read back %s: %w", cloud.Redact(w.out.Store().URL(f.File.Path)), err)
		}
	}
	return sum, rows, nil
}

// rowHash hashes an output row by its values as text, so that a row
// written and the same row read back hash alike whatever Go types carry
// them (a date as a time at midnight, a decimal as its digits); the sum
// of a table's rows' hashes does not depend on their order.
func rowHash(row []any) uint64 {
	h := fnv.New64a()
	var b []byte
	for _, v := range row {
		b = b[:0]
		switch x := v.(type) {
		case nil:
			b = append(b, 0)
		case time.Time:
			b = strconv.AppendInt(append(b, 't'), x.UnixMicro(), 10)
		case int32:
			b = strconv.AppendInt(append(b, 'i'), int64(x), 10)
		case int64:
			b = strconv.AppendInt(append(b, 'i'), x, 10)
		case float64:
			b = strconv.AppendUint(append(b, 'f'), math.Float64bits(x), 16)
		case []byte:
			b = strconv.AppendQuote(append(b, 'b'), string(x))
		default:
			b = fmt.Appendf(append(b, 'v'), "%v", x)
		}
		h.Write(append(b, 0xff))
	}
	return h.Sum64()
}
