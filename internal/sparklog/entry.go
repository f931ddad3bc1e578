package sparklog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluice-data/sluice/cloud"
)

// Version is the newest version of the log sluice reads: the header "v1"
// that begins every batch file Spark's file sink writes.
const Version = 1

// maxLine caps a line of a batch file: one file's JSON is a few hundred
// bytes, its path at most a few KiB.
const maxLine = 1 << 20

// The actions a line of the log takes.
const (
	actionAdd    = "add"
	actionDelete = "delete"
)

// entry is one line of a batch file: a file added or deleted.
type entry struct {
	raw      string // the path as the log writes it
	base, p  string // decoded: where it is (see decodePath)
	absolute bool   // base+p is a location, not relative to the output folder
	size     int64
	isDir    bool
	delete   bool
	where    string // "<batch file's URL> line N", for messages
}

// line is a line of a batch file as JSON, Spark's SinkFileStatus. The
// fields sluice needs are pointers, to tell a missing one.
type line struct {
	Path   *string `json:"path"`
	Size   *int64  `json:"size"`
	IsDir  bool    `json:"isDir"`
	Action *string `json:"action"`
}

// readBatchFile reads the entries of the batch file key, in order.
func readBatchFile(ctx context.Context, st cloud.Store, key string) ([]entry, error) {
	url := st.URL(key)
	rc, _, err := st.Get(ctx, key)
	if err != nil {
		if errors.Is(err, cloud.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w (cleaned up while being read?)", url, ErrMissingBatch)
		}
		return nil, fmt.Errorf("read the Spark sink log: %w", err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", url, err)
		}
		return nil, fmt.Errorf("%s: empty file, want a version header (v%d): %w", url, Version, ErrCorruptLog)
	}
	if err := checkHeader(sc.Text()); err != nil {
		return nil, fmt.Errorf("%s line 1: %w", url, err)
	}
	var out []entry
	for n := 2; sc.Scan(); n++ {
		where := url + " line " + strconv.Itoa(n)
		e, err := parseLine(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", where, cloud.OneLine(err.Error(), 200), ErrCorruptLog)
		}
		e.where = where
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s line %d: longer than %d bytes: %w", url, len(out)+2, maxLine, ErrCorruptLog)
		}
		return nil, fmt.Errorf("read %s: %w", url, err)
	}
	return out, nil
}

// checkHeader checks a batch file's first line, "v1", as Spark does: a
// version newer than sluice reads fails with ErrUnsupportedVersion,
// anything that is no version with ErrCorruptLog.
func checkHeader(h string) error {
	s, ok := strings.CutPrefix(h, "v")
	v, err := strconv.Atoi(s)
	if !ok || err != nil || v < 1 {
		return fmt.Errorf("version header %q, want v%d: %w", cloud.OneLine(h, 40), Version, ErrCorruptLog)
	}
	if v > Version {
		return fmt.Errorf("log version v%d: sluice reads up to v%d (a newer Spark wrote it): %w", v, Version, ErrUnsupportedVersion)
	}
	return nil
}

// parseLine parses one JSON line of a batch file.
func parseLine(b []byte) (entry, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return entry{}, fmt.Errorf("not a JSON object of a file: %v", err)
	}
	switch {
	case l.Path == nil || *l.Path == "":
		return entry{}, errors.New(`no "path"`)
	case l.Size == nil:
		return entry{}, errors.New(`no "size"`)
	case *l.Size < 0:
		return entry{}, fmt.Errorf(`"size" %d`, *l.Size)
	case l.Action == nil:
		return entry{}, errors.New(`no "action"`)
	case *l.Action != actionAdd && *l.Action != actionDelete:
		return entry{}, fmt.Errorf("unknown action %q (want %q or %q)", *l.Action, actionAdd, actionDelete)
	}
	base, p, abs, err := decodePath(*l.Path)
	if err != nil {
		return entry{}, err
	}
	return entry{raw: *l.Path, base: base, p: p, absolute: abs, size: *l.Size, isDir: l.IsDir, delete: *l.Action == actionDelete}, nil
}
