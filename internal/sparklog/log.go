package sparklog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluice-data/sluice/cloud"
)

// MetadataDir is the folder, under a sink's output folder, that holds its
// log.
const MetadataDir = "_spark_metadata/"

// compactSuffix ends the name of a compaction's batch file.
const compactSuffix = ".compact"

// listing is what a listing of _spark_metadata/ found: the keys of the
// batch files by batch id.
type listing struct {
	plain   map[int64]string // "<id>"
	compact map[int64]string // "<id>.compact"
}

// listLog lists the log of the output folder in st (st's root is the
// folder's). Names that are no batch file (the writer's hidden temporary
// and checksum files, anything in a subfolder) are left out.
func listLog(ctx context.Context, st cloud.Store) (*listing, error) {
	l := &listing{plain: map[int64]string{}, compact: map[int64]string{}}
	err := st.List(ctx, MetadataDir, func(o cloud.ObjectInfo) error {
		if id, compact, ok := parseBatchName(strings.TrimPrefix(o.Key, MetadataDir)); ok {
			if compact {
				l.compact[id] = o.Key
			} else {
				l.plain[id] = o.Key
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", st.URL(MetadataDir), err)
	}
	return l, nil
}

// parseBatchName parses the name of a batch file, "12" or "19.compact":
// a batch id in decimal, as Spark writes it, with no sign and no leading
// zero (so that no two names give one id).
func parseBatchName(name string) (id int64, compact bool, ok bool) {
	s, compact := strings.CutSuffix(name, compactSuffix)
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, false, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, compact, err == nil
}

// IsSink reports whether the folder in st is the output of a Spark
// Structured Streaming file sink: whether its _spark_metadata/ holds a
// batch file.
func IsSink(ctx context.Context, st cloud.Store) (bool, error) {
	found := errors.New("found") // stops the listing at the first one
	err := st.List(ctx, MetadataDir, func(o cloud.ObjectInfo) error {
		if _, _, ok := parseBatchName(strings.TrimPrefix(o.Key, MetadataDir)); ok {
			return found
		}
		return nil
	})
	if errors.Is(err, found) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("list %s: %w", st.URL(MetadataDir), err)
	}
	return false, nil
}

// newest is the newest batch id the listing has a file of; -1 when it has
// none.
func (l *listing) newest() int64 {
	v := int64(-1)
	for id := range l.plain {
		v = max(v, id)
	}
	for id := range l.compact {
		v = max(v, id)
	}
	return v
}

// plan returns the batch (batch itself, or the newest when batch < 0) and
// the keys of the files that make up its state, to be read in this order:
// the newest compaction at or below it, then every plain batch file after
// that compaction up to it. Spark's reader reads the same files. A batch
// file missing in between fails with ErrMissingBatch, naming it.
func (l *listing) plan(batch int64, url func(string) string) (int64, []string, error) {
	newest := l.newest()
	if newest < 0 {
		return 0, nil, fmt.Errorf("%s holds no batch file: %w", url(MetadataDir), ErrNotSink)
	}
	if batch < 0 {
		batch = newest
	} else if batch > newest {
		return 0, nil, fmt.Errorf("batch %d: the newest batch of %s is %d: %w", batch, url(MetadataDir), newest, ErrMissingBatch)
	}
	start, compact := int64(-1), ""
	for id, key := range l.compact {
		if id <= batch && id > start {
			start, compact = id, key
		}
	}
	var keys []string
	if compact != "" {
		keys = append(keys, compact)
	}
	for id := start + 1; id <= batch; id++ {
		key, ok := l.plain[id]
		if !ok {
			if compact == "" {
				return 0, nil, fmt.Errorf("the state at batch %d needs %s, which is not there, and no compaction at or below batch %d holds the state before it: %w",
					batch, url(MetadataDir+strconv.FormatInt(id, 10)), batch, ErrMissingBatch)
			}
			return 0, nil, fmt.Errorf("the state at batch %d needs %s, which is not there (every batch file after the compaction %s must be kept): %w",
				batch, url(MetadataDir+strconv.FormatInt(id, 10)), url(compact), ErrMissingBatch)
		}
		keys = append(keys, key)
	}
	return batch, keys, nil
}
