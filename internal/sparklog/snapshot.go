package sparklog

import (
	"context"
	"fmt"

	"github.com/sluice-data/sluice/cloud"
)

// Log is the file sink log of an output folder, read through the store
// whose root is that folder.
type Log struct {
	st cloud.Store
}

// New returns the log of the output folder at st's root.
func New(st cloud.Store) *Log { return &Log{st: st} }

// Snapshot is the state of the log at a batch: the files Spark's reader
// reads as the sink's output once that batch committed.
type Snapshot struct {
	// Batch is the batch the state is at.
	Batch int64
	// Files are the live files, in the order the log first added them.
	Files []File

	root    string  // the output folder now, as rootOf spells it
	entries []entry // Files' entries, for keys and messages
}

// File is a data file live at a snapshot.
type File struct {
	// Path is the file's path as the log writes it: an absolute URI,
	// percent-encoded.
	Path string
	// Size is the file's size in bytes, as the log gives it.
	Size int64
}

// Snapshot reads the state of the log at batch, or at its newest batch
// when batch < 0: the newest compaction at or below it, then every plain
// batch file after that up to it. A file is live when some entry adds
// it and none deletes it, as Spark's reader (FileStreamSinkLog.allFiles)
// has it: a delete anywhere in the state drops the file. Folders the log
// names (isDir) are no data files and are left out.
//
// It fails with ErrNotSink when the log has no batch file, ErrMissingBatch
// when a batch file the state needs is gone or batch is newer than the
// newest, ErrUnsupportedVersion for a log newer than v1, and
// ErrCorruptLog, naming the file and the line, for one that does not
// parse.
func (l *Log) Snapshot(ctx context.Context, batch int64) (*Snapshot, error) {
	ls, err := listLog(ctx, l.st)
	if err != nil {
		return nil, err
	}
	batch, keys, err := ls.plan(batch, l.st.URL)
	if err != nil {
		return nil, err
	}
	var order []string           // decoded locations, first add first
	added := map[string]entry{}  // the latest add of each
	deleted := map[string]bool{} // deleted anywhere in the state
	for _, key := range keys {
		entries, err := readBatchFile(ctx, l.st, key)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			id := e.base + e.p
			switch {
			case e.delete:
				deleted[id] = true
			case e.isDir:
			default:
				if _, seen := added[id]; !seen {
					order = append(order, id)
				}
				added[id] = e
			}
		}
	}
	s := &Snapshot{Batch: batch, root: rootOf(l.st)}
	for _, id := range order {
		if deleted[id] {
			continue
		}
		e := added[id]
		s.Files = append(s.Files, File{Path: e.raw, Size: e.size})
		s.entries = append(s.entries, e)
	}
	return s, nil
}

// Keys returns the keys of the live files relative to the output folder,
// in the order of Files, by the rule keysUnder gives: relative to where
// the folder is now when the log names files there, else to the folder
// the sink wrote, inferred from the paths. A file outside it fails with
// ErrOutsideFolder, naming the file and the log line.
func (s *Snapshot) Keys() ([]string, error) {
	keys, err := keysUnder(s.entries, s.root)
	if err != nil {
		return nil, fmt.Errorf("the Spark sink log at batch %d: %w", s.Batch, err)
	}
	return keys, nil
}
