package icebergtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Snap is one snapshot of a table as both independent readers read it,
// position deletes applied.
type Snap struct {
	// ID is the snapshot's id.
	ID int64
	// Sequence is its sequence number.
	Sequence int64
	// Operation is its summary's operation: append, overwrite, delete,
	// replace.
	Operation string
	// DataFiles and DeleteFiles count its live data files and live
	// position delete files (Parquet files or deletion vectors).
	DataFiles, DeleteFiles int
	// Rows is the number of its live rows.
	Rows int64
	// Checksum is tools/duckrows.mjs's order-independent checksum of its
	// live rows (32 hex digits): the same rows give the same checksum
	// whatever files, order or deletes hold them.
	Checksum string
}

// snapLine is one line of tools/icebirdrows.mjs or tools/icewalkrows.mjs.
type snapLine struct {
	SnapshotID          string `json:"snapshot_id"`
	SequenceNumber      int64  `json:"sequence_number"`
	Operation           string `json:"operation"`
	DataFiles           int    `json:"data_files"`
	PositionDeleteFiles int    `json:"position_delete_files"`
	Rows                int64  `json:"rows"`
	Checksum            string `json:"checksum"`
}

func (l snapLine) snap() (Snap, error) {
	id, err := strconv.ParseInt(l.SnapshotID, 10, 64)
	if err != nil {
		return Snap{}, fmt.Errorf("snapshot id %q: %w", l.SnapshotID, err)
	}
	return Snap{ID: id, Sequence: l.SequenceNumber, Operation: l.Operation, DataFiles: l.DataFiles,
		DeleteFiles: l.PositionDeleteFiles, Rows: l.Rows, Checksum: l.Checksum}, nil
}

// SnapshotRows reads every snapshot of the Iceberg table whose metadata
// file is metadataLocation (file:///... or a local path), oldest first,
// with both independent readers, and returns them; it fails t if the
// readers disagree on any snapshot (id, order, operation, files, rows or
// checksum), or if either fails:
//
//   - icebird: node tools/icebirdrows.mjs --decode current METADATA;
//   - the spec walk: python3 tools/iceberg_walk.py METADATA, whose output
//     goes to node tools/icewalkrows.mjs -.
//
// It needs Node.js with tools/node_modules ("make tools") and Debian's
// python3-avro ("apt-get install -y python3-avro", which "make deps"
// does); it fails t, saying so, when one is missing.
func SnapshotRows(t testing.TB, metadataLocation string) []Snap {
	t.Helper()
	env, err := readerEnv()
	if err != nil {
		t.Fatalf("icebergtest: %v", err)
	}
	var (
		wg               sync.WaitGroup
		bird, walk       []Snap
		birdErr, walkErr error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		bird, birdErr = env.icebird(metadataLocation)
	}()
	go func() {
		defer wg.Done()
		walk, walkErr = env.walk(metadataLocation)
	}()
	wg.Wait()
	if err := errors.Join(birdErr, walkErr); err != nil {
		t.Fatalf("icebergtest: read %s: %v", metadataLocation, err)
	}
	if err := agree(bird, walk); err != nil {
		t.Fatalf("icebergtest: %s: the readers disagree: %v", metadataLocation, err)
	}
	return walk
}

// agree reports how the snapshots icebird read (a) and those the walk
// read (b) differ, or nil.
func agree(a, b []Snap) error {
	if len(a) != len(b) {
		return fmt.Errorf("icebird reads %d snapshots, the walk %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Errorf("snapshot %d: icebird reads %+v, the walk %+v", i, a[i], b[i])
		}
	}
	return nil
}

// readers are the programs the readers run, found once.
type readers struct {
	node, python, tools string
}

var (
	readersOnce sync.Once
	readersVal  readers
	readersErr  error
)

// readerEnv finds node with tools/node_modules, and a python3 that
// imports avro (Debian's /usr/bin/python3 first: its python3-avro is not
// on the path of a python3 that pyenv or a venv put first).
func readerEnv() (readers, error) {
	readersOnce.Do(func() { readersVal, readersErr = findReaders() })
	return readersVal, readersErr
}

func findReaders() (readers, error) {
	root, err := repoRoot()
	if err != nil {
		return readers{}, err
	}
	r := readers{tools: filepath.Join(root, "tools")}
	if r.node, err = exec.LookPath("node"); err != nil {
		return r, errors.New(`node is not installed: install Node.js (20 or later), then run "make tools" (npm ci in tools/)`)
	}
	for _, dep := range []string{"icebird", "@duckdb/node-api"} {
		if _, err := os.Stat(filepath.Join(r.tools, "node_modules", filepath.FromSlash(dep), "package.json")); err != nil {
			return r, fmt.Errorf(`%s is not installed in tools/node_modules: run "make tools" (npm ci in tools/)`, dep)
		}
	}
	var tried []string
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		tried = append(tried, p)
		if exec.Command(p, "-c", "import avro.datafile").Run() == nil {
			r.python = p
			return r, nil
		}
	}
	if len(tried) == 0 {
		return r, errors.New(`python3 is not installed: run "apt-get install -y python3 python3-avro" (or "make deps")`)
	}
	return r, fmt.Errorf(`python3-avro is not installed (no avro module in %s): run "apt-get install -y python3-avro" (or "make deps")`, strings.Join(tried, ", "))
}

// repoRoot walks up from the working directory to the folder holding
// go.mod and tools/.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "tools", "icechecksum.mjs")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod with tools/icechecksum.mjs above the working directory")
		}
		dir = parent
	}
}

// icebird runs tools/icebirdrows.mjs.
func (r readers) icebird(metadataLocation string) ([]Snap, error) {
	out, err := run(exec.Command(r.node, filepath.Join(r.tools, "icebirdrows.mjs"), "--decode", "current", metadataLocation), nil)
	if err != nil {
		return nil, fmt.Errorf("icebird reader: %w", err)
	}
	snaps, err := parseLines(out)
	if err != nil {
		return nil, fmt.Errorf("icebird reader: %w", err)
	}
	return snaps, nil
}

// walk runs tools/iceberg_walk.py, then tools/icewalkrows.mjs over its
// output.
func (r readers) walk(metadataLocation string) ([]Snap, error) {
	files, err := r.walkFiles(metadataLocation)
	if err != nil {
		return nil, err
	}
	out, err := run(exec.Command(r.node, filepath.Join(r.tools, "icewalkrows.mjs"), "-"), files)
	if err != nil {
		return nil, fmt.Errorf("spec walk: %w", err)
	}
	snaps, err := parseLines(out)
	if err != nil {
		return nil, fmt.Errorf("spec walk: %w", err)
	}
	return snaps, nil
}

// walkFiles runs tools/iceberg_walk.py: one JSON line per snapshot, its
// live data and delete files.
func (r readers) walkFiles(metadataLocation string) ([]byte, error) {
	out, err := run(exec.Command(r.python, filepath.Join(r.tools, "iceberg_walk.py"), metadataLocation), nil)
	if err != nil {
		return nil, fmt.Errorf("spec walk: %w", err)
	}
	return out, nil
}

// run runs cmd with stdin, returning its stdout; a failure carries its
// stderr.
func run(cmd *exec.Cmd, stdin []byte) ([]byte, error) {
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Args[1]), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func parseLines(out []byte) ([]Snap, error) {
	var snaps []Snap
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var l snapLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("output line %q: %w", line, err)
		}
		s, err := l.snap()
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	return snaps, nil
}
