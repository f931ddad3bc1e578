package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

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
			t.notify(ctx, next)
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
