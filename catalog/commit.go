package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"

	"github.com/sluice-data/sluice/cloud"
)

// Change is what a writer wants one commit to do: requirements on the
// version it read, and updates. The catalog applies it to the newest
// version, re-checking the requirements after every lost race.
type Change struct {
	// Operation names the change in history: "create", "import", "append",
	// "compact", "rollback", ...
	Operation string
	// RunID identifies the job run that wrote it.
	RunID string

	// Create makes the change create the table: it fails with
	// ErrTableExists if any version exists. Schema and Spec are required.
	Create bool
	// Schema, when not nil, sets the table schema. On an existing table
	// it is a schema change and conflicts with any concurrent schema
	// change.
	Schema *Schema
	// Spec sets the partition spec (with Create only).
	Spec *PartitionSpec
	// Properties are merged into the table's properties.
	Properties map[string]string

	// Add are new data files, already written and durable. Adding never
	// conflicts.
	Add []DataFile
	// Remove are live data files this change replaces. It conflicts if a
	// concurrent commit already removed any of them.
	Remove []DataFile
	// DataChange is false for a rewrite that keeps the same rows
	// (compaction).
	DataChange bool

	// Checkpoints set source positions, keyed by source id, committed
	// atomically with Add.
	Checkpoints map[string]json.RawMessage
	// CheckpointBase holds, for each key in Checkpoints, the value the
	// writer started from (nil: none). If a concurrent commit moved that
	// checkpoint, the change conflicts: two runs consumed the same range.
	CheckpointBase map[string]json.RawMessage
	// CheckpointMerge sets checkpoints that several writers advance in
	// parts (a Kafka topic whose partitions are spread over instances):
	// at every commit attempt, each function is given the key's value in
	// the newest version (nil: none) and returns the value to commit. An
	// error from it means the concurrent writer moved a part this change
	// covers; the commit then fails with an error wrapping it and
	// ErrConflict, and nothing of the change is visible. A key may not be
	// in both Checkpoints and CheckpointMerge.
	CheckpointMerge map[string]func(current json.RawMessage) (json.RawMessage, error)

	// RestoreFrom, when set, makes the new version's content (schema,
	// spec, properties, checkpoints, files) equal to that manifest's:
	// rollback. Other update fields must be empty.
	RestoreFrom *Manifest
}

// commitMaxElapsed bounds the time Commit spends retrying lost races.
const commitMaxElapsed = 2 * time.Minute

// crashHook, when set (in tests only), is called at named points of a
// commit; the crash tests make it kill the process.
var crashHook func(point string)

func crashPoint(point string) {
	if crashHook != nil {
		crashHook(point)
	}
}

// Commit applies c as a new version and returns its manifest. Data files in
// c.Add must already be durable in the store. On a lost race it reloads,
// checks c's requirements against the winner, and retries with backoff; a
// requirement broken by the winner returns ErrConflict and nothing of c is
// visible.
//
// A version write whose outcome the store could not tell is settled by
// reading the version back. If even that fails, the error wraps
// cloud.ErrOutcomeUnknown: c may be committed, or become so later. It is
// not a failure: the caller must keep every file c references (vacuum
// removes them if they turn out to be orphans) and never report c as not
// committed. Test it before any other sentinel.
func (t *Table) Commit(ctx context.Context, c Change) (*Manifest, error) {
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: commit %s: %w", t.loc, c.Operation, err)
	}
	start := time.Now()
	var base *Manifest
	if !c.Create {
		var err error
		if base, err = t.Latest(ctx); err != nil {
			return nil, fmt.Errorf("commit %s: %w", c.Operation, err)
		}
	} else if v, err := t.LatestVersion(ctx); err == nil {
		return nil, fmt.Errorf("%s: version %d exists: %w", t.loc, v, ErrTableExists)
	} else if !errors.Is(err, ErrTableNotFound) {
		return nil, fmt.Errorf("commit %s: %w", c.Operation, err)
	}
	// Requirements are checked against the version the commit starts
	// from (the writer may have read an older one), and again after every
	// lost race.
	first := base
	st := newStaged(t, &c)
	if base != nil {
		if err := st.check(ctx, first, base); err != nil {
			return nil, fmt.Errorf("%s: commit %s: %w", t.loc, c.Operation, err)
		}
	}
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 2 * time.Millisecond
	bo.MaxInterval = 200 * time.Millisecond
	bo.MaxElapsedTime = commitMaxElapsed
	attempts := 0
	for {
		attempts++
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: commit %s: %w", t.loc, c.Operation, err)
		}
		next, err := st.build(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("%s: commit %s: %w", t.loc, c.Operation, notCommitted{err})
		}
		crashPoint("before-manifest")
		won, err := t.publish(ctx, next)
		if err != nil {
			return nil, fmt.Errorf("%s: commit %s: version %d: %w", t.loc, c.Operation, next.Version, err)
		}
		if won {
			crashPoint("after-manifest")
			// The hint is advisory: failing to write it costs readers a
			// listing, never correctness.
			_ = t.writeJSON(ctx, latestKey, map[string]int64{"version": next.Version}, false)
			t.opts.Logger.LogAttrs(ctx, 0, "commit",
				slogAttrs(t.loc, c, next, attempts, time.Since(start))...)
			return next, nil
		}
		// Lost the race for next.Version. Back off first, then read the
		// newest version and rebase on it: reading before the wait would
		// rebase on a version that a steady writer (an ingest appending
		// every few seconds) has superseded by the time we try again, and
		// a slow commit could lose every race.
		if c.Create {
			return nil, fmt.Errorf("%s: %w", t.loc, ErrTableExists)
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			return nil, fmt.Errorf("%s: commit %s: gave up after %d lost races in %s: %w", t.loc, c.Operation, attempts, time.Since(start).Round(time.Millisecond), ErrConflict)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: commit %s: %w", t.loc, c.Operation, ctx.Err())
		case <-time.After(wait):
		}
		winner, err := t.Latest(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: commit %s: reload: %w", t.loc, c.Operation, err)
		}
		if err := st.check(ctx, first, winner); err != nil {
			return nil, fmt.Errorf("%s: commit %s: %w", t.loc, c.Operation, err)
		}
		base = winner
	}
}

// maxResends bounds how many times publish sends a version again that
// an unknown outcome left unread-back as absent.
const maxResends = 2

// settleTimeout bounds reading a version back to settle an unknown
// outcome, which is done even when ctx has ended: a cancelled commit
// that is known to have landed is better than one nobody can tell.
const settleTimeout = 30 * time.Second

// publish writes next as its version, create-only. It reports whether
// next is now that version (won) or another commit took the number (a
// lost race). A write whose outcome the store could not settle
// (cloud.ErrOutcomeUnknown) is settled by reading the version back: the
// version names the commit that wrote it (CommitID). Ours → won;
// another's → lost; absent → the same bytes are sent again, which is
// safe, as the write is create-only, and whatever that resend hears (a
// refusal may be our first send landing late), only reading back settles
// it. What this cannot settle is an error wrapping
// cloud.ErrOutcomeUnknown: the version may have landed, or may yet.
func (t *Table) publish(ctx context.Context, next *Manifest) (won bool, err error) {
	key := versionKey(next.Version)
	var unknown error // the first unknown outcome; no resend clears it
	for resend := 0; ; resend++ {
		err := t.writeJSON(ctx, key, next, true)
		switch {
		case err == nil:
			return true, nil
		case unknown != nil:
		case errors.Is(err, cloud.ErrOutcomeUnknown):
			// Tested first: an unknown outcome is never a lost race.
			unknown = err
		case errors.Is(err, cloud.ErrPreconditionFailed):
			return false, nil
		default:
			return false, err
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		m, rerr := t.Manifest(rctx, next.Version)
		cancel()
		switch {
		case rerr == nil:
			return m.CommitID == next.CommitID, nil
		case errors.Is(rerr, ErrVersionNotFound) && ctx.Err() == nil && resend < maxResends:
			continue
		case errors.Is(rerr, ErrVersionNotFound):
			return false, fmt.Errorf("%w (read back, the version is not there, but the write may yet land)", unknown)
		default:
			return false, fmt.Errorf("%w (reading the version back failed too: %v)", unknown, rerr)
		}
	}
}

// notCommitted is the error of a commit that failed before writing its
// version: nothing of the change can be visible, so it matches every
// sentinel its cause does except cloud.ErrOutcomeUnknown (a piece whose
// write could not be settled is an orphan at worst), which callers take
// to mean that the version may have landed.
type notCommitted struct{ err error }

func (e notCommitted) Error() string { return e.err.Error() }

func (e notCommitted) Is(target error) bool {
	return target != cloud.ErrOutcomeUnknown && errors.Is(e.err, target)
}

func (e notCommitted) As(target any) bool { return errors.As(e.err, target) }

func (c *Change) validate() error {
	if c.Operation == "" {
		return errors.New("change has no operation")
	}
	if c.Create && (c.Schema == nil || c.Spec == nil) {
		return errors.New("creating a table needs a schema and a partition spec")
	}
	if c.RestoreFrom != nil && (len(c.Add) > 0 || len(c.Remove) > 0 || c.Schema != nil || c.Create || len(c.CheckpointMerge) > 0) {
		return errors.New("a restore cannot also add, remove, merge checkpoints or change the schema")
	}
	for k, fn := range c.CheckpointMerge {
		if _, ok := c.Checkpoints[k]; ok {
			return fmt.Errorf("checkpoint %q is both set and merged", k)
		}
		if fn == nil {
			return fmt.Errorf("checkpoint %q: nil merge function", k)
		}
	}
	for k := range c.Checkpoints {
		if _, ok := c.CheckpointBase[k]; !ok {
			if c.CheckpointBase == nil {
				c.CheckpointBase = map[string]json.RawMessage{}
			}
			c.CheckpointBase[k] = nil
		}
	}
	seen := map[string]bool{}
	for _, f := range c.Add {
		if f.Path == "" {
			return errors.New("an added file has no path")
		}
		if seen[f.Path] {
			return fmt.Errorf("file %s added twice", f.Path)
		}
		seen[f.Path] = true
	}
	return nil
}

// staged builds new versions for one change, reusing the pieces it wrote
// for a partition when a rebase finds that partition unchanged.
type staged struct {
	t        *Table
	c        *Change
	commitID string
	// byPart groups the change's adds and removes by partition.
	adds    map[string][]DataFile
	removes map[string]map[string]bool
	// built caches, per partition, the ref written on top of a given base
	// ref (by its identity), so a rebase rewrites only partitions that
	// the winner touched too.
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
	s := &staged{t: t, c: c, commitID: uuid.NewString(),
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
		CommitID: s.commitID, Operation: c.Operation, RunID: c.RunID}
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
	if c.Schema != nil {
		next.Schema = *c.Schema
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
			return nil, fmt.Errorf("checkpoint %q in version %d: %w: %w", k, next.Version-1, err, ErrConflict)
		}
		next.Checkpoints[k] = v
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
	// Group the touched partitions by the page that holds them, and
	// rewrite those pages from the last to the first, so that splicing
	// one page's replacements in does not move the others.
	byPage := map[int][]string{}
	for _, p := range parts {
		i := next.pageFor(p)
		byPage[i] = append(byPage[i], p)
	}
	pageIdx := slices.Sorted(maps.Keys(byPage))
	slices.Reverse(pageIdx)
	for _, i := range pageIdx {
		var refs []PartitionRef
		if i >= 0 {
			pg, err := s.t.page(ctx, next.Pages[i].Key)
			if err != nil {
				return nil, err
			}
			refs = slices.Clone(pg.Partitions)
		}
		for _, p := range byPage[i] {
			j, ok := refIndex(refs, p)
			var baseRef *PartitionRef
			if ok {
				baseRef = &refs[j]
			}
			id := refID(baseRef)
			b, cached := s.built[p]
			if cached && b.baseID != id {
				if ref, rebased := b.rebaseRef(baseRef); rebased {
					b = builtRef{baseID: id, base: clonePartitionRef(baseRef), ref: ref}
					s.built[p] = b
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
					return nil, err
				}
				b = builtRef{baseID: id, base: clonePartitionRef(baseRef), ref: ref}
				s.built[p] = b
			}
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
			return nil, err
		}
		if i < 0 {
			next.Pages = newPages
		} else {
			next.Pages = slices.Replace(next.Pages, i, i+1, newPages...)
		}
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
// that the writer read first. It returns an ErrConflict naming what
// conflicted.
func (s *staged) check(ctx context.Context, first, winner *Manifest) error {
	c := s.c
	if c.Schema != nil && first != nil && !sameJSON(first.Schema, winner.Schema) {
		return fmt.Errorf("version %d changed the schema concurrently: %w", winner.Version, ErrConflict)
	}
	for k, baseVal := range c.CheckpointBase {
		if !bytes.Equal(compactJSON(winner.Checkpoints[k]), compactJSON(baseVal)) {
			return fmt.Errorf("checkpoint %q moved to %s in version %d (this run started from %s): %w",
				k, orNone(winner.Checkpoints[k]), winner.Version, orNone(baseVal), ErrConflict)
		}
	}
	for p, rm := range s.removes {
		ref, err := s.t.partitionRef(ctx, winner, p)
		if err != nil {
			return err
		}
		if ref == nil {
			return fmt.Errorf("partition %q was emptied by version %d: %w", p, winner.Version, ErrConflict)
		}
		files, err := s.t.PartitionFiles(ctx, *ref)
		if err != nil {
			return err
		}
		live := make(map[string]bool, len(files))
		for _, f := range files {
			live[f.Path] = true
		}
		for path := range rm {
			if !live[path] {
				return fmt.Errorf("file %s was removed by a concurrent commit (version %d): %w", path, winner.Version, ErrConflict)
			}
		}
	}
	return nil
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func compactJSON(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	if buf.String() == "null" {
		return nil
	}
	return buf.Bytes()
}

func orNone(b json.RawMessage) string {
	if len(compactJSON(b)) == 0 {
		return "none"
	}
	return string(compactJSON(b))
}

// diffSummary summarises a restore: what changed from base to next by
// partition totals (a restore reuses pieces, so it never lists files).
func diffSummary(base, next *Manifest) Summary {
	s := Summary{DataChange: true}
	bf, br, bb := base.Totals()
	nf, nr, nb := next.Totals()
	if nf > bf {
		s.FilesAdded = nf - bf
	} else {
		s.FilesRemoved = bf - nf
	}
	if nr > br {
		s.RowsAdded = nr - br
	} else {
		s.RowsRemoved = br - nr
	}
	if nb > bb {
		s.BytesAdded = nb - bb
	} else {
		s.BytesRemoved = bb - nb
	}
	return s
}
