package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Version is one commit of a Delta table's history: what its commitInfo
// says, what it added and removed, and the table's totals after it.
type Version struct {
	Version int64
	// Timestamp is commitInfo's timestamp; zero when the commit has none.
	Timestamp time.Time
	// Operation is commitInfo's operation ("WRITE", "OPTIMIZE", ...);
	// Engine its engineInfo. Empty when the commit has no commitInfo.
	Operation, Engine string
	// FilesAdded and FilesRemoved count the add and remove actions;
	// RowsAdded and RowsRemoved their stats' numRecords. RowsKnown is
	// false when a file counted has no numRecords.
	FilesAdded, FilesRemoved int64
	RowsAdded, RowsRemoved   int64
	RowsKnown                bool
	// DataChange is true when any add or remove changed data (false for
	// a compaction).
	DataChange bool
	// Files and Rows are the table's live files and their rows after the
	// commit; TotalKnown is false when a live file's stats have no
	// numRecords (Rows then counts the others).
	Files, Rows int64
	TotalKnown  bool
}

// History reads the table's commits, oldest first: from version 0, or,
// where older commits were cleaned up, those after the newest checkpoint
// at or below the first commit left (the totals then start from that
// checkpoint). It holds the live files' row counts, not their actions,
// with running totals: a commit costs its actions, not the table's size.
func (t *Table) History(ctx context.Context) ([]Version, error) {
	l, err := listLog(ctx, t.st)
	if err != nil {
		return nil, err
	}
	if l.newest() < 0 {
		return nil, fmt.Errorf("%s: %w: no commit or checkpoint in %s", t.st.URL(""), ErrNotDelta, LogDir)
	}
	versions := make([]int64, 0, len(l.commits))
	for v := range l.commits {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	live := liveRows{rows: map[fileKey]int64{}}
	root := rootPrefix(t.st)
	key := func(path string, dv *DeletionVector) fileKey { return fileKey{canonical(path, root), dv.uniqueID()} }
	from := int64(-1)
	if len(versions) > 0 && versions[0] > 0 {
		// The log starts after a cleanup: start from a checkpoint.
		for _, cv := range l.checkpointVersions(versions[0]) {
			if cs := l.usable(cv); len(cs) > 0 {
				if err := readCheckpoint(ctx, t.st, cs[0], func(as []Action) error {
					for _, a := range as {
						if a.Add != nil {
							live.add(key(a.Add.Path, a.Add.DeletionVector), statsRows(a.Add.Stats))
						}
					}
					return nil
				}); err != nil {
					return nil, err
				}
				from = cv
				break
			}
		}
		if from < 0 {
			return nil, fmt.Errorf("%s: version %d: %w: its commit is missing and no checkpoint at or below the first commit left", t.st.URL(""), versions[0]-1, ErrVersionNotFound)
		}
	}
	var out []Version
	for _, v := range versions {
		if v <= from {
			continue
		}
		as, err := readCommit(ctx, t.st, l.commits[v])
		if err != nil {
			return nil, err
		}
		h := Version{Version: v, RowsKnown: true}
		for _, a := range as {
			switch {
			case a.CommitInfo != nil:
				var ci struct {
					Timestamp int64  `json:"timestamp"`
					Operation string `json:"operation"`
					Engine    string `json:"engineInfo"`
				}
				if json.Unmarshal(a.CommitInfo, &ci) == nil {
					h.Operation, h.Engine = ci.Operation, ci.Engine
					if ci.Timestamp > 0 {
						h.Timestamp = time.UnixMilli(ci.Timestamp).UTC()
					}
				}
			case a.Add != nil:
				n := statsRows(a.Add.Stats)
				h.FilesAdded++
				h.add(n, &h.RowsAdded)
				h.DataChange = h.DataChange || a.Add.DataChange
				live.add(key(a.Add.Path, a.Add.DeletionVector), n)
			case a.Remove != nil:
				n, ok := live.remove(key(a.Remove.Path, a.Remove.DeletionVector))
				if !ok {
					n = statsRows(a.Remove.Stats)
				}
				h.FilesRemoved++
				h.add(n, &h.RowsRemoved)
				h.DataChange = h.DataChange || a.Remove.DataChange
			}
		}
		h.Files, h.Rows, h.TotalKnown = int64(len(live.rows)), live.total, live.unknown == 0
		out = append(out, h)
	}
	return out, nil
}

// liveRows are the live files' row counts (-1: unknown), keyed as Action
// Reconciliation keys files, with their running totals.
type liveRows struct {
	rows    map[fileKey]int64
	total   int64 // rows of the files whose count is known
	unknown int   // files whose count is not
}

func (l *liveRows) add(k fileKey, n int64) {
	l.remove(k) // an add of a live file replaces it
	l.rows[k] = n
	if n < 0 {
		l.unknown++
	} else {
		l.total += n
	}
}

// remove drops file k and returns its rows, if it was live.
func (l *liveRows) remove(k fileKey) (int64, bool) {
	n, ok := l.rows[k]
	if !ok {
		return 0, false
	}
	delete(l.rows, k)
	if n < 0 {
		l.unknown--
	} else {
		l.total -= n
	}
	return n, true
}

// add adds a file's rows n (-1: unknown) to *sum.
func (h *Version) add(n int64, sum *int64) {
	if n < 0 {
		h.RowsKnown = false
		return
	}
	*sum += n
}

// statsRows is numRecords of a stats JSON; -1 when it has none.
func statsRows(stats string) int64 {
	var s struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if stats == "" || json.Unmarshal([]byte(stats), &s) != nil || s.NumRecords == nil {
		return -1
	}
	return *s.NumRecords
}
