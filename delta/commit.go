package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluice-data/sluice/cloud"
)

// Commit writes actions as the commit of version v: a create-only put of
// _delta_log/<v>.json, so of two writers of one version exactly one
// lands (on S3 only against writers that put conditionally too; Spark's
// own S3 log store does not). A version another writer committed first
// fails with ErrConflict. An error wrapping cloud.ErrOutcomeUnknown means
// the commit may have landed: nothing it adds may be deleted.
func (t *Table) Commit(ctx context.Context, v int64, actions []Action) error {
	body, err := encodeActions(actions)
	if err != nil {
		return err
	}
	key := CommitKey(v)
	_, err = t.st.Put(ctx, key, bytes.NewReader(body), int64(len(body)), cloud.PutOptions{IfAbsent: true})
	if errors.Is(err, cloud.ErrPreconditionFailed) {
		return fmt.Errorf("%s: %w", t.st.URL(key), ErrConflict)
	}
	return err
}

// encodeActions writes actions as a commit: one JSON object a line.
func encodeActions(actions []Action) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i, a := range actions {
		if err := enc.Encode(a); err != nil {
			return nil, fmt.Errorf("encode action %d: %w", i, err)
		}
	}
	return b.Bytes(), nil
}

// ReadCommit returns the actions of the commit of version v.
func (t *Table) ReadCommit(ctx context.Context, v int64) ([]Action, error) {
	return readCommit(ctx, t.st, CommitKey(v))
}

// Rebase is a change read at one version that may commit at a later one.
type Rebase struct {
	// Read is the version the change was planned on.
	Read int64
	// Removes are the paths (as the log holds them) the change removes:
	// a concurrent commit that removed any of them conflicts.
	Removes []string

	root string // the table's root, for canonical paths; set by CommitRebased
}

// Check decides whether the change can commit after the winners' commits
// (the versions after Read that others landed first), as Spark's OPTIMIZE
// does: blind appends never conflict; a winner that removed one of the
// change's inputs (a DELETE, a MERGE, another compaction, a deletion
// vector added), or that changed the protocol or the metadata, does.
func (r Rebase) Check(v int64, winner []Action) error {
	removes := make(map[string]bool, len(r.Removes))
	for _, p := range r.Removes {
		removes[canonical(p, r.root)] = true
	}
	for _, a := range winner {
		switch {
		case a.Protocol != nil:
			return fmt.Errorf("version %d changed the protocol: %w", v, ErrConflict)
		case a.Metadata != nil:
			return fmt.Errorf("version %d changed the metadata: %w", v, ErrConflict)
		case a.Remove != nil && removes[canonical(a.Remove.Path, r.root)]:
			return fmt.Errorf("version %d removed %s, an input: %w", v, a.Remove.Path, ErrConflict)
		}
	}
	return nil
}

// maxRebases bounds how many times one commit loses a race and rebases
// (each time over every commit that landed meanwhile).
const maxRebases = 100

// CommitRebased commits actions at version r.Read+1, or, when other
// writers landed versions first, after them, once r.Check finds every
// one of their commits compatible. It returns the version committed. A
// conflicting winner fails with ErrConflict naming it. However many
// commits land while it works (an appender committing every 100 ms beside
// a long compaction), each is read and checked once.
func (t *Table) CommitRebased(ctx context.Context, r Rebase, actions []Action) (int64, error) {
	r.root = rootPrefix(t.st)
	v := r.Read + 1
	for range maxRebases {
		err := t.Commit(ctx, v, actions)
		if !errors.Is(err, ErrConflict) {
			return v, err
		}
		// v is taken: check it and every commit already after it.
		for ; ; v++ {
			winner, err := t.ReadCommit(ctx, v)
			if errors.Is(err, ErrVersionNotFound) {
				break
			}
			if err != nil {
				return 0, fmt.Errorf("read the commit that won version %d: %w", v, err)
			}
			if err := r.Check(v, winner); err != nil {
				return 0, fmt.Errorf("%s: %w", t.st.URL(""), err)
			}
		}
	}
	return 0, fmt.Errorf("%s: lost the race for a version %d times: %w", t.st.URL(""), maxRebases, ErrConflict)
}
