package delta

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sluice-data/sluice/cloud"
)

// Table is a Delta table's log, read through a store whose root is the
// table's folder.
type Table struct {
	st cloud.Store
}

// New returns the table whose folder is st's root. It reads nothing.
func New(st cloud.Store) *Table { return &Table{st: st} }

// IsDelta reports whether the folder of st holds a Delta log: a commit
// or a checkpoint under _delta_log/.
func IsDelta(ctx context.Context, st cloud.Store) (bool, error) {
	found := errors.New("found")
	err := st.List(ctx, LogDir, func(o cloud.ObjectInfo) error {
		name := o.Key[len(LogDir):]
		if _, ok := commitVersion(name); ok {
			return found
		}
		if _, ok := parseCheckpointName(name); ok {
			return found
		}
		return nil
	})
	if errors.Is(err, found) {
		return true, nil
	}
	return false, err
}

// File is a data file live in a snapshot.
type File struct {
	// Path is the decoded path: relative to the table's root, or an
	// absolute URI.
	Path string
	// Absolute is true when Path is an absolute URI.
	Absolute bool
	// Add is the action that added it, as the log holds it.
	Add *Add
}

// outsideRoot reports whether the file is not under the table's folder:
// an absolute URI, or a relative path climbing out of it.
func (f *File) outsideRoot() bool {
	return f.Absolute || strings.HasPrefix(f.Path, "../") || strings.Contains(f.Path, "/../")
}

// NumRecords is the file's row count from its statistics, and whether
// the log had one.
func (f *File) NumRecords() (int64, bool) {
	n := statsRows(f.Add.Stats)
	return max(n, 0), n >= 0
}

// Snapshot is a table as of one version: the result of Action
// Reconciliation over its checkpoint and the commits after it.
type Snapshot struct {
	// Version is the version read.
	Version int64
	// Checkpoint is the version of the checkpoint it started from; -1
	// when it replayed every commit from 0.
	Checkpoint int64
	Protocol   Protocol
	Metadata   Metadata
	// Files are the live data files, sorted by Path.
	Files []File
	// Txns are the last version each application committed (txn actions).
	Txns map[string]int64
}

// Latest is the version Snapshot reads when asked for no version.
const Latest int64 = -1

// Snapshot reads the table at version (Latest for the newest): the newest
// whole checkpoint at or below it, found by listing (the _last_checkpoint
// hint may be stale or wrong), then every commit after it. A version
// missing on the way fails with ErrVersionNotFound; a table sluice cannot
// read as Delta defines it, with ErrUnsupportedFeature naming the feature.
func (t *Table) Snapshot(ctx context.Context, version int64) (*Snapshot, error) {
	l, err := listLog(ctx, t.st)
	if err != nil {
		return nil, err
	}
	newest := l.newest()
	if newest < 0 {
		return nil, fmt.Errorf("%s: %w: no commit or checkpoint in %s", t.st.URL(""), ErrNotDelta, LogDir)
	}
	if version == Latest {
		version = newest
	}
	src, err := t.source(l, version)
	if err != nil {
		return nil, err
	}
	return t.replay(ctx, src, version)
}

// logSource is the part of a log one version is reconciled from: a
// checkpoint (nil: none) and the commits after it.
type logSource struct {
	cp      *checkpoint
	from    int64    // the checkpoint's version; -1 for none
	commits []string // keys, in version order
}

// source is what version v is read from: its newest whole checkpoint and
// the commits after it, each one there.
func (t *Table) source(l *listing, v int64) (logSource, error) {
	if v < 0 || v > l.newest() {
		return logSource{}, fmt.Errorf("%s: version %d: %w (the newest is %d)", t.st.URL(""), v, ErrVersionNotFound, l.newest())
	}
	src := logSource{from: -1}
	for _, cv := range l.checkpointVersions(v) {
		if cs := l.usable(cv); len(cs) > 0 {
			src.cp, src.from = &cs[0], cv
			break
		}
	}
	if err := l.commitsAfter(src.from, v); err != nil {
		return src, fmt.Errorf("%s: %w", t.st.URL(""), err)
	}
	for c := src.from + 1; c <= v; c++ {
		src.commits = append(src.commits, l.commits[c])
	}
	return src, nil
}

// each calls fn with every action of src in log order, numbered: the
// same action has the same number on every pass. fromCheckpoint says an
// action is a row of the checkpoint.
func (t *Table) each(ctx context.Context, src logSource, fn func(n int64, a *Action, fromCheckpoint bool) error) error {
	var n int64
	if src.cp != nil {
		if err := readCheckpoint(ctx, t.st, *src.cp, func(as []Action) error {
			for i := range as {
				if err := fn(n, &as[i], true); err != nil {
					return err
				}
				n++
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, key := range src.commits {
		as, err := readCommit(ctx, t.st, key)
		if err != nil {
			return err
		}
		for i := range as {
			if err := fn(n, &as[i], false); err != nil {
				return err
			}
			n++
		}
	}
	return nil
}

// commitsAfter checks that the commits after from up to to are all there.
func (l *listing) commitsAfter(from, to int64) error {
	for v := from + 1; v <= to; v++ {
		if _, ok := l.commits[v]; !ok {
			if from < 0 {
				return fmt.Errorf("version %d: %w: its commit is missing and no checkpoint at or after it precedes version %d", v, ErrVersionNotFound, to)
			}
			return fmt.Errorf("version %d: %w: its commit is missing between the checkpoint of version %d and version %d", v, ErrVersionNotFound, from, to)
		}
	}
	return nil
}

// replayState is Action Reconciliation in progress.
type replayState struct {
	protocol *Protocol
	metadata *Metadata
	live     map[fileKey]*Add
	txns     map[string]int64
	root     string // the table's root, for canonical paths
}

// fileKey keys a file in the log: its canonical path and deletion vector.
type fileKey struct{ path, dv string }

func (s *replayState) apply(a *Action, fromCheckpoint bool) {
	switch {
	case a.Add != nil:
		s.live[fileKey{canonical(a.Add.Path, s.root), a.Add.DeletionVector.uniqueID()}] = a.Add
	case a.Remove != nil && !fromCheckpoint:
		delete(s.live, fileKey{canonical(a.Remove.Path, s.root), a.Remove.DeletionVector.uniqueID()})
	case a.Metadata != nil:
		s.metadata = a.Metadata
	case a.Protocol != nil:
		s.protocol = a.Protocol
	case a.Txn != nil:
		s.txns[a.Txn.AppID] = a.Txn.Version
	}
}

// rootPrefix is the table's root as an absolute log path under it
// starts: its URL, or its local path, with a trailing '/'.
func rootPrefix(st cloud.Store) string {
	root := strings.TrimPrefix(st.URL(""), "file://")
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	return root
}

// replay reconciles src, the checkpoint and commits version is read
// from. A checkpoint's removes are tombstones of files already gone from
// its live set: they keep no add out.
func (t *Table) replay(ctx context.Context, src logSource, version int64) (*Snapshot, error) {
	s := &replayState{live: map[fileKey]*Add{}, txns: map[string]int64{}, root: rootPrefix(t.st)}
	if err := t.each(ctx, src, func(_ int64, a *Action, fromCheckpoint bool) error {
		s.apply(a, fromCheckpoint)
		return nil
	}); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s at version %d", t.st.URL(""), version)
	switch {
	case s.protocol == nil:
		return nil, fmt.Errorf("%s: %w: no protocol action", where, ErrCorruptLog)
	case s.metadata == nil:
		return nil, fmt.Errorf("%s: %w: no metaData action", where, ErrCorruptLog)
	}
	if err := checkReadable(s.protocol, s.metadata); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	snap := &Snapshot{Version: version, Checkpoint: src.from, Protocol: *s.protocol, Metadata: *s.metadata, Txns: s.txns,
		Files: make([]File, 0, len(s.live))}
	for _, a := range s.live {
		if a.DeletionVector != nil {
			return nil, fmt.Errorf("%s: %w: deletion vectors (%s has one; its deleted rows are not read)", where, ErrUnsupportedFeature, a.Path)
		}
		p, err := decodePath(a.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		snap.Files = append(snap.Files, File{Path: p, Absolute: isAbsolute(p), Add: a})
	}
	sort.Slice(snap.Files, func(i, j int) bool { return snap.Files[i].Path < snap.Files[j].Path })
	return snap, nil
}
