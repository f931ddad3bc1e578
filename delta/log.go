package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// LogDir is the folder, under a table's root, that holds its log.
const LogDir = "_delta_log/"

// checkpointFile is one file of a checkpoint: a classic single file, a
// part of a multi-part checkpoint, or a V2 checkpoint's top file.
type checkpointFile struct {
	key         string
	size        int64
	version     int64
	part, parts int    // multi-part: which of how many; 0 otherwise
	v2          string // V2: "json" or "parquet"; "" otherwise
}

// listing is what a listing of _delta_log/ found.
type listing struct {
	commits     map[int64]string // version -> key
	commitTimes map[int64]time.Time
	checkpoints map[int64][]checkpointFile
	crcs        map[int64]string // version -> key of its checksum file
	last        string           // the _last_checkpoint key, if any
}

// newest is the newest version the listing has a commit or a checkpoint
// of; -1 when it has none.
func (l *listing) newest() int64 {
	v := int64(-1)
	for c := range l.commits {
		v = max(v, c)
	}
	for c := range l.checkpoints {
		v = max(v, c)
	}
	return v
}

// listLog lists the log of the table in st (st's root is the table's).
func listLog(ctx context.Context, st cloud.Store) (*listing, error) {
	l := &listing{commits: map[int64]string{}, commitTimes: map[int64]time.Time{}, checkpoints: map[int64][]checkpointFile{},
		crcs: map[int64]string{}}
	err := st.List(ctx, LogDir, func(o cloud.ObjectInfo) error {
		name, ok := strings.CutPrefix(o.Key, LogDir)
		if !ok || strings.Contains(name, "/") {
			return nil // _sidecars/, _staged_commits/ and the like
		}
		if name == "_last_checkpoint" {
			l.last = o.Key
			return nil
		}
		if v, ok := commitVersion(name); ok {
			l.commits[v], l.commitTimes[v] = o.Key, o.ModTime
			return nil
		}
		if s, ok := strings.CutSuffix(name, ".crc"); ok && len(s) == 20 {
			if v, ok := parseDigits(s); ok {
				l.crcs[v] = o.Key
			}
			return nil
		}
		if c, ok := parseCheckpointName(name); ok {
			c.key, c.size = o.Key, o.Size
			l.checkpoints[c.version] = append(l.checkpoints[c.version], c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", st.URL(LogDir), err)
	}
	return l, nil
}

// commitVersion parses "00000000000000000012.json".
func commitVersion(name string) (int64, bool) {
	s, ok := strings.CutSuffix(name, ".json")
	if !ok || len(s) != 20 {
		return 0, false
	}
	return parseDigits(s)
}

// parseCheckpointName parses the names of checkpoint files:
// "V.checkpoint.parquet", "V.checkpoint.P.N.parquet" and
// "V.checkpoint.UUID.json|parquet" (V 20 digits, P and N 10).
func parseCheckpointName(name string) (checkpointFile, bool) {
	parts := strings.Split(name, ".")
	if len(parts) < 3 || parts[1] != "checkpoint" || len(parts[0]) != 20 {
		return checkpointFile{}, false
	}
	v, ok := parseDigits(parts[0])
	if !ok {
		return checkpointFile{}, false
	}
	c := checkpointFile{version: v}
	ext := parts[len(parts)-1]
	switch {
	case len(parts) == 3 && ext == "parquet":
		return c, true
	case len(parts) == 5 && ext == "parquet" && len(parts[2]) == 10 && len(parts[3]) == 10:
		p, ok1 := parseDigits(parts[2])
		n, ok2 := parseDigits(parts[3])
		if !ok1 || !ok2 || p < 1 || p > n {
			return checkpointFile{}, false
		}
		c.part, c.parts = int(p), int(n)
		return c, true
	case len(parts) == 4 && (ext == "json" || ext == "parquet"):
		c.v2 = ext
		return c, true
	}
	return checkpointFile{}, false
}

func parseDigits(s string) (int64, bool) {
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// CommitKey is the key, under a table's root, of the commit of version v.
func CommitKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogDir, v) }

// checkpoint is a whole checkpoint: the files to read for it.
type checkpoint struct {
	version int64
	files   []checkpointFile
}

// usable returns the checkpoints of version v that are whole, best first:
// V2, classic, then a complete multi-part set (the largest, if several
// writers left sets of different sizes).
func (l *listing) usable(v int64) []checkpoint {
	var out []checkpoint
	sets := map[int][]checkpointFile{}
	for _, c := range l.checkpoints[v] {
		switch {
		case c.v2 != "":
			out = append([]checkpoint{{v, []checkpointFile{c}}}, out...)
		case c.parts == 0:
			out = append(out, checkpoint{v, []checkpointFile{c}})
		default:
			sets[c.parts] = append(sets[c.parts], c)
		}
	}
	sizes := make([]int, 0, len(sets))
	for n := range sets {
		sizes = append(sizes, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(sizes)))
	for _, n := range sizes {
		seen := map[int]checkpointFile{}
		for _, c := range sets[n] {
			seen[c.part] = c
		}
		if len(seen) != n {
			continue // a writer died before writing every part
		}
		files := make([]checkpointFile, 0, n)
		for p := 1; p <= n; p++ {
			files = append(files, seen[p])
		}
		out = append(out, checkpoint{v, files})
	}
	return out
}

// checkpointVersions returns the versions with a checkpoint at or below
// v, newest first.
func (l *listing) checkpointVersions(v int64) []int64 {
	var vs []int64
	for c := range l.checkpoints {
		if c <= v {
			vs = append(vs, c)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] > vs[j] })
	return vs
}

// LastCheckpoint is the _last_checkpoint file: a hint at the newest
// checkpoint, which a reader may trust only as far as the listing agrees.
type LastCheckpoint struct {
	Version     int64  `json:"version"`
	Size        int64  `json:"size"`
	Parts       *int   `json:"parts,omitempty"`
	SizeInBytes *int64 `json:"sizeInBytes,omitempty"`
	NumAddFiles *int64 `json:"numOfAddFiles,omitempty"`
}

// readAll reads key whole.
func readAll(ctx context.Context, st cloud.Store, key string) ([]byte, error) {
	rc, _, err := st.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", st.URL(key), err)
	}
	return b, nil
}

// readCommit reads the actions of the commit of version v.
func readCommit(ctx context.Context, st cloud.Store, key string) ([]Action, error) {
	b, err := readAll(ctx, st, key)
	if err != nil {
		if errors.Is(err, cloud.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w (cleaned up while being read?)", st.URL(key), ErrVersionNotFound)
		}
		return nil, err
	}
	return parseActions(st.URL(key), b)
}
