package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"
)

// staged builds new versions for one change, reusing the pieces it wrote
// for a partition when a rebase finds that partition unchanged.
type staged struct {
	t        *Table
	c        *Change
	commitID string
	// tableID is the id this commit gives a table whose base has none
	// (a new table, or one created before ids existed); a base's own id
	// always wins, so a rebase never changes a table's id.
	tableID string
	// byPart groups the change's adds and removes by partition.
	adds    map[string][]DataFile
	removes map[string]map[string]bool
	// built caches, per partition, the ref written on top of a given base
	// ref (by its identity), so a rebase rewrites only partitions that
	// the winner touched too. Only rewritePages writes it, once the
	// partitions' refs are built (concurrently, reading it).
	built map[string]builtRef
}

type builtRef struct {
	baseID string
	base   *PartitionRef // the ref it was built on; nil: none
	ref    *PartitionRef // nil: the partition became empty
}

// rebaseRef returns b's result moved onto cur when cur only appended
// pieces to the ref b was built on (what a concurrent append does): our
// rewritten pieces stay valid and the winner's new pieces are added, so a
// rebase over a stream of appends writes no piece again. ok is false when
// cur changed the pieces b was built on (a removal or a merge).
func (b builtRef) rebaseRef(cur *PartitionRef) (*PartitionRef, bool) {
	if b.base == nil || cur == nil || b.ref == nil || len(cur.Pieces) <= len(b.base.Pieces) ||
		!slices.Equal(cur.Pieces[:len(b.base.Pieces)], b.base.Pieces) {
		return nil, false
	}
	ref := *b.ref
	ref.Pieces = append(slices.Clone(b.ref.Pieces), cur.Pieces[len(b.base.Pieces):]...)
	ref.Files += cur.Files - b.base.Files
	ref.Rows += cur.Rows - b.base.Rows
	ref.Bytes += cur.Bytes - b.base.Bytes
	return &ref, true
}

func newStaged(t *Table, c *Change) *staged {
	s := &staged{t: t, c: c, commitID: uuid.NewString(), tableID: uuid.NewString(),
		adds: map[string][]DataFile{}, removes: map[string]map[string]bool{}, built: map[string]builtRef{}}
	now := time.Now().UTC()
	for _, f := range c.Add {
		f.AddedAt = now
		s.adds[f.Partition] = append(s.adds[f.Partition], f)
	}
	for _, f := range c.Remove {
		if s.removes[f.Partition] == nil {
			s.removes[f.Partition] = map[string]bool{}
		}
		s.removes[f.Partition][f.Path] = true
	}
	return s
}

func clonePartitionRef(r *PartitionRef) *PartitionRef {
	if r == nil {
		return nil
	}
	c := *r
	c.Pieces = slices.Clone(r.Pieces)
	return &c
}

func refID(ref *PartitionRef) string {
	if ref == nil {
		return "-"
	}
	b, _ := json.Marshal(ref.Pieces)
	return string(b)
}

// build returns the manifest of base plus the change, writing the pieces
// of touched partitions.
func (s *staged) build(ctx context.Context, base *Manifest) (*Manifest, error) {
	c := s.c
	next := &Manifest{Format: FormatVersion, Version: 1, CommittedAt: time.Now().UTC(),
		CommitID: s.commitID, TableID: s.tableID, Operation: c.Operation, RunID: c.RunID}
	if base != nil && base.TableID != "" {
		next.TableID = base.TableID
	}
	if base != nil {
		next.Version = base.Version + 1
		next.Schema = base.Schema
		next.Spec = base.Spec
		next.Properties = maps.Clone(base.Properties)
		next.Checkpoints = maps.Clone(base.Checkpoints)
		next.Pages = slices.Clone(base.Pages)
		next.Files, next.Rows, next.Bytes = base.Totals()
	}
	if c.RestoreFrom != nil {
		r := c.RestoreFrom
		next.Schema, next.Spec = r.Schema, r.Spec
		next.Properties = maps.Clone(r.Properties)
		next.Checkpoints = maps.Clone(r.Checkpoints)
		next.Pages = slices.Clone(r.Pages)
		next.Files, next.Rows, next.Bytes = r.Totals()
		next.RolledBackTo = r.Version
		next.Summary = diffSummary(base, next)
		return next, nil
	}
	if err := c.applyUpdates(next); err != nil {
		return nil, err
	}

	sum := Summary{DataChange: c.DataChange}
	touched := map[string]bool{}
	for p := range s.adds {
		touched[p] = true
	}
	for p := range s.removes {
		touched[p] = true
	}
	parts := slices.Sorted(maps.Keys(touched))
	if err := s.rewritePages(ctx, next, parts); err != nil {
		return nil, err
	}
	for _, f := range c.Add {
		next.Files++
		next.Rows += f.Rows
		next.Bytes += f.Bytes
	}
	for _, f := range c.Remove {
		next.Files--
		next.Rows -= f.Rows
		next.Bytes -= f.Bytes
	}
	for _, f := range c.Add {
		sum.FilesAdded++
		sum.RowsAdded += f.Rows
		sum.BytesAdded += f.Bytes
	}
	for _, f := range c.Remove {
		sum.FilesRemoved++
		sum.RowsRemoved += f.Rows
		sum.BytesRemoved += f.Bytes
	}
	sum.Partitions = parts
	next.Summary = sum
	crashPoint("after-pieces")
	return next, nil
}

// applyUpdates sets in next what c changes besides files: the schema, the
// partition spec, properties and checkpoints (merged with the ones next
// carries over), in that order.
func (c *Change) applyUpdates(next *Manifest) error {
	if c.Schema != nil {
		// A sluice table's files carry no field ids (its Iceberg mirror
		// numbers the columns), whatever files it was inferred from.
		next.Schema = c.Schema.WithoutIDs()
	}
	if c.Spec != nil {
		next.Spec = *c.Spec
	}
	if len(c.Properties) > 0 && next.Properties == nil {
		next.Properties = map[string]string{}
	}
	maps.Copy(next.Properties, c.Properties)
	if (len(c.Checkpoints) > 0 || len(c.CheckpointMerge) > 0) && next.Checkpoints == nil {
		next.Checkpoints = map[string]json.RawMessage{}
	}
	maps.Copy(next.Checkpoints, c.Checkpoints)
	for _, k := range slices.Sorted(maps.Keys(c.CheckpointMerge)) {
		cur := next.Checkpoints[k]
		if len(compactJSON(cur)) == 0 {
			cur = nil
		}
		v, err := c.CheckpointMerge[k](cur)
		if err != nil {
			return fmt.Errorf("checkpoint %q in version %d: %w: %w", k, next.Version-1, err, ErrConflict)
		}
		next.Checkpoints[k] = v
	}
	return nil
}

// rewritePages rewrites in next the pages that hold the touched partitions
// parts (sorted), from the last page to the first, so that splicing one
// page's replacements in does not move the others.
func (s *staged) rewritePages(ctx context.Context, next *Manifest, parts []string) error {
	// Group the touched partitions by the page that holds them, and find
	// each one's ref there (nil for a partition new to its page).
	byPage := map[int][]string{}
	pageRefs := map[int][]PartitionRef{}
	bases := make([]*PartitionRef, len(parts))
	for k, p := range parts {
		i := next.pageFor(p)
		if _, ok := pageRefs[i]; !ok && i >= 0 {
			pg, err := s.t.page(ctx, next.Pages[i].Key)
			if err != nil {
				return err
			}
			pageRefs[i] = pg.Partitions
		}
		byPage[i] = append(byPage[i], p)
		if j, ok := refIndex(pageRefs[i], p); ok {
			bases[k] = &pageRefs[i][j]
		}
	}
	if err := s.buildRefs(ctx, next, parts, bases); err != nil {
		return err
	}
	pageIdx := slices.Sorted(maps.Keys(byPage))
	slices.Reverse(pageIdx)
	for _, i := range pageIdx {
		refs := slices.Clone(pageRefs[i])
		for _, p := range byPage[i] {
			j, ok := refIndex(refs, p)
			b := s.built[p]
			switch {
			case b.ref == nil && ok:
				refs = slices.Delete(refs, j, j+1)
			case b.ref != nil && ok:
				refs[j] = *b.ref
			case b.ref != nil:
				refs = slices.Insert(refs, j, *b.ref)
			}
		}
		newPages, err := s.writePages(ctx, refs)
		if err != nil {
			return err
		}
		if i < 0 {
			next.Pages = newPages
		} else {
			next.Pages = slices.Replace(next.Pages, i, i+1, newPages...)
		}
	}
	return nil
}

// buildRefs sets s.built[p] to partition p's ref in next on top of
// bases[k] (see partitionRef), for each parts[k], writing the pieces of
// several partitions at once. Each piece is a Put of its own (an fsync of
// file and folder on local disk, a round trip on an object store): one
// after another, a commit touching a month of partitions waited for
// thirty of them in turn. Pieces are immutable and unnamed until the
// manifest names them, so the order they land in does not matter; a
// failed commit leaves the ones written as orphans.
func (s *staged) buildRefs(ctx context.Context, next *Manifest, parts []string, bases []*PartitionRef) error {
	out := make([]builtRef, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.t.opts.ReadConcurrency)
	for k, p := range parts {
		g.Go(func() (err error) {
			out[k], err = s.partitionRef(gctx, next, p, bases[k])
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for k, p := range parts {
		s.built[p] = out[k]
	}
	return nil
}

// partitionRef returns partition p's ref in next, on top of baseRef (nil
// for a partition new to its page): the one built for an earlier attempt
// when baseRef is the one it was built on or it rebases onto baseRef, else
// a new one with its pieces written. It reads s.built and leaves recording
// the result to its caller, so that several partitions build at once.
func (s *staged) partitionRef(ctx context.Context, next *Manifest, p string, baseRef *PartitionRef) (builtRef, error) {
	id := refID(baseRef)
	b, cached := s.built[p]
	if cached && b.baseID != id {
		if ref, rebased := b.rebaseRef(baseRef); rebased {
			b = builtRef{baseID: id, base: clonePartitionRef(baseRef), ref: ref}
		} else {
			cached = false
		}
	}
	if !cached {
		for i := range s.adds[p] {
			s.adds[p][i].AddedVersion = next.Version
		}
		ref, err := s.buildPartition(ctx, p, baseRef)
		if err != nil {
			return builtRef{}, err
		}
		b = builtRef{baseID: id, base: clonePartitionRef(baseRef), ref: ref}
	}
	return b, nil
}

// buildPartition writes the pieces partition p needs on top of baseRef
// and returns its new ref (nil if it has no files left). Adds go to one new
// piece; pieces holding removed files are rewritten without them; when the
// partition has too many pieces, the smallest adjacent ones are merged.
func (s *staged) buildPartition(ctx context.Context, p string, baseRef *PartitionRef) (*PartitionRef, error) {
	t := s.t
	ref := PartitionRef{Partition: p}
	if baseRef != nil {
		ref = *baseRef
		ref.Pieces = slices.Clone(baseRef.Pieces)
	}
	type pending struct {
		files []DataFile // nil: unchanged, use the ref as is
		ref   PieceRef
	}
	pieces := make([]pending, len(ref.Pieces))
	for i, pr := range ref.Pieces {
		pieces[i].ref = pr
	}
	if rm := s.removes[p]; len(rm) > 0 {
		found := 0
		for i := range pieces {
			pc, err := t.piece(ctx, pieces[i].ref.Key)
			if err != nil {
				return nil, err
			}
			hit := false
			for _, f := range pc.Files {
				if rm[f.Path] {
					hit = true
					break
				}
			}
			if !hit {
				continue
			}
			kept := make([]DataFile, 0, len(pc.Files))
			for _, f := range pc.Files {
				if rm[f.Path] {
					found++
					ref.Files--
					ref.Rows -= f.Rows
					ref.Bytes -= f.Bytes
					continue
				}
				kept = append(kept, f)
			}
			pieces[i].files = kept
		}
		if found != len(rm) {
			// Only reachable if the writer removed files it never read
			// as live; rebase checks catch the concurrent case first.
			return nil, fmt.Errorf("partition %q: %d of %d files to remove are not live: %w", p, len(rm)-found, len(rm), ErrConflict)
		}
	}
	if adds := s.adds[p]; len(adds) > 0 {
		pieces = append(pieces, pending{files: adds})
		for _, f := range adds {
			ref.Files++
			ref.Rows += f.Rows
			ref.Bytes += f.Bytes
		}
	}
	// Drop emptied pieces.
	pieces = slices.DeleteFunc(pieces, func(pp pending) bool { return pp.files != nil && len(pp.files) == 0 })
	// Merge the smallest adjacent pair until few enough pieces remain: the
	// cost of a merge is proportional to the small pieces, so a partition
	// with many files is not rewritten on every append.
	for len(pieces) > t.opts.MaxPiecesPerPartition {
		best, bestN := 0, int64(-1)
		for i := 0; i+1 < len(pieces); i++ {
			n := pieceLen(pieces[i].files, pieces[i].ref) + pieceLen(pieces[i+1].files, pieces[i+1].ref)
			if bestN < 0 || n < bestN {
				best, bestN = i, n
			}
		}
		var merged []DataFile
		for _, pp := range pieces[best : best+2] {
			fs := pp.files
			if fs == nil {
				pc, err := t.piece(ctx, pp.ref.Key)
				if err != nil {
					return nil, err
				}
				fs = pc.Files
			}
			merged = append(merged, fs...)
		}
		pieces[best] = pending{files: merged}
		pieces = slices.Delete(pieces, best+1, best+2)
	}
	if ref.Files == 0 {
		return nil, nil
	}
	ref.Pieces = ref.Pieces[:0]
	for _, pp := range pieces {
		if pp.files != nil {
			key := piecesDir + uuid.NewString() + ".json"
			sort.Slice(pp.files, func(i, j int) bool { return pp.files[i].Path < pp.files[j].Path })
			if err := s.t.writeJSON(ctx, key, Piece{Partition: p, Files: pp.files}, true); err != nil {
				return nil, fmt.Errorf("write piece of partition %q: %w", p, err)
			}
			pp.ref = PieceRef{Key: key, Files: int64(len(pp.files))}
		}
		ref.Pieces = append(ref.Pieces, pp.ref)
	}
	return &ref, nil
}

// writePages writes refs (sorted) as one page, or as several of half the
// maximum size when they are too many for one, and returns their refs;
// none when refs is empty.
func (s *staged) writePages(ctx context.Context, refs []PartitionRef) ([]PageRef, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	limit := s.t.opts.MaxPartitionsPerPage
	n := 1
	if len(refs) > limit {
		n = (len(refs) + limit/2 - 1) / (limit / 2)
	}
	out := make([]PageRef, 0, n)
	for k := range n {
		chunk := refs[k*len(refs)/n : (k+1)*len(refs)/n]
		key := pagesDir + uuid.NewString() + ".json"
		pg := &Page{Partitions: chunk}
		if err := s.t.writeJSON(ctx, key, pg, true); err != nil {
			return nil, fmt.Errorf("write page: %w", err)
		}
		s.t.pieceMu.Lock()
		s.t.pageCache[key] = pg
		s.t.pieceMu.Unlock()
		out = append(out, PageRef{Key: key, First: chunk[0].Partition, Last: chunk[len(chunk)-1].Partition, Partitions: len(chunk)})
	}
	return out, nil
}

func pieceLen(files []DataFile, ref PieceRef) int64 {
	if files != nil {
		return int64(len(files))
	}
	return ref.Files
}

// check tells whether the change still applies on top of winner, given
