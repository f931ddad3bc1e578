package delta_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), ".."))
}

// golden is where the Delta project's test tables are (see its README).
var golden = filepath.Join(repoRoot(), "testdata", "delta-golden")

// indep is what the independent reader (tools/deltarows.mjs) says of a
// table at a version.
type indep struct {
	Version          int64             `json:"version"`
	Checkpoint       *int64            `json:"checkpoint"`
	PartitionColumns []string          `json:"partitionColumns"`
	Files            []indepFile       `json:"files"`
	Protocol         delta.Protocol    `json:"protocol"`
	Configuration    map[string]string `json:"configuration"`
}

type indepFile struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	NumRecords      *int64             `json:"numRecords"`
}

// deltarows runs the independent reader on dir (version < 0: the newest).
func deltarows(t *testing.T, dir string, version int64) (indep, error) {
	t.Helper()
	args := []string{filepath.Join(repoRoot(), "tools", "deltarows.mjs"), "--files-only"}
	if version >= 0 {
		args = append(args, "--version", strconv.FormatInt(version, 10))
	}
	out, err := exec.Command("node", append(args, dir)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return indep{}, errors.New(strings.TrimSpace(string(ee.Stderr)))
		}
		t.Fatalf("deltarows %s: %v (run \"make tools\" if DuckDB is missing)", dir, err)
	}
	var r indep
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("deltarows output %q: %v", out, err)
	}
	return r, nil
}

func snapshot(t *testing.T, dir string, version int64) (*delta.Snapshot, error) {
	t.Helper()
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return delta.New(st).Snapshot(context.Background(), version)
}

// refused are the golden tables sluice does not read, with the error they
// fail with and what its message must name.
var refused = map[string]struct {
	err  error
	says string
}{
	"125-iterator-bug":                                               {delta.ErrUnsupportedFeature, "deletion vectors"},
	"dv-partitioned-with-checkpoint":                                 {delta.ErrUnsupportedFeature, "deletion vectors"},
	"log-replay-dv-key-cases":                                        {delta.ErrUnsupportedFeature, "deletion vectors"},
	"data-reader-timestamp_ntz-id-mode":                              {delta.ErrUnsupportedFeature, "column mapping"},
	"data-reader-timestamp_ntz-name-mode":                            {delta.ErrUnsupportedFeature, "column mapping"},
	"data-skipping-basic-stats-all-types-columnmapping-id":           {delta.ErrUnsupportedFeature, "column mapping"},
	"data-skipping-basic-stats-all-types-columnmapping-name":         {delta.ErrUnsupportedFeature, "column mapping"},
	"dv-with-columnmapping":                                          {delta.ErrUnsupportedFeature, "column mapping"},
	"table-with-columnmapping-mode-id":                               {delta.ErrUnsupportedFeature, "column mapping"},
	"table-with-columnmapping-mode-name":                             {delta.ErrUnsupportedFeature, "column mapping"},
	"table-with-icebegCompatV2Enabled":                               {delta.ErrUnsupportedFeature, "column mapping"},
	"deltalog-invalid-protocol-version":                              {delta.ErrUnsupportedFeature, "reader version 99"},
	"spark-variant-checkpoint":                                       {delta.ErrUnsupportedFeature, `"variantType-preview"`},
	"type-widening":                                                  {delta.ErrUnsupportedFeature, `"typeWidening-preview"`},
	"type-widening-nested":                                           {delta.ErrUnsupportedFeature, `"typeWidening-preview"`},
	"data-reader-absolute-paths-escaped-chars":                       {delta.ErrCorruptLog, "no metaData action"},
	"deltalog-state-reconstruction-without-metadata":                 {delta.ErrCorruptLog, "no metaData action"},
	"deltalog-state-reconstruction-from-checkpoint-missing-metadata": {delta.ErrCorruptLog, "no metaData action"},
	"deltalog-state-reconstruction-without-protocol":                 {delta.ErrCorruptLog, "no protocol action"},
	"deltalog-state-reconstruction-from-checkpoint-missing-protocol": {delta.ErrCorruptLog, "no protocol action"},
	"versions-not-contiguous":                                        {delta.ErrVersionNotFound, "version 1"},
}

// tables are the folders of the golden tables holding a _delta_log/, by
// their path under golden.
func tables(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(golden, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "_delta_log" {
			dir := filepath.Dir(p)
			rel, _ := filepath.Rel(golden, dir)
			out[filepath.ToSlash(rel)] = dir
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every golden table either reads to the files the independent reader
// replays from its log, at its newest version, or is refused with the
// error and the feature the table above names.
func TestGoldenTablesReadAsTheIndependentReaderReadsThem(t *testing.T) {
	all := tables(t)
	if len(all) < 90 {
		t.Fatalf("%d golden tables found under %s, want the whole set", len(all), golden)
	}
	for name, dir := range all {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := snapshot(t, dir, delta.Latest)
			if want, ok := refused[name]; ok {
				if !errors.Is(err, want.err) || !strings.Contains(err.Error(), want.says) {
					t.Fatalf("read: %v; want %v naming %s", err, want.err, want.says)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %q is more than one line", err)
				}
				return
			}
			if errors.Is(err, delta.ErrNotDelta) {
				// A _delta_log/ with no commit: the log store's own test
				// folders. The independent reader must agree.
				if _, ierr := deltarows(t, dir, -1); ierr == nil {
					t.Fatalf("read: %v, but the independent reader reads it", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			want, err := deltarows(t, dir, -1)
			if err != nil {
				t.Fatalf("independent reader: %v", err)
			}
			sameSnapshot(t, got, want)
		})
	}
}

// Time travel: every version of the tables made for it, and of those with
// checkpoints, reads as the independent reader reads it.
func TestGoldenTablesAtEveryVersion(t *testing.T) {
	for _, name := range []string{"time-travel-partition-changes-b", "time-travel-schema-changes-b", "time-travel-start-start20-start40",
		"basic-with-inserts-deletes-checkpoint", "basic-with-inserts-overwrite-restore", "snapshot-data3", "snapshot-repartitioned",
		"delete-re-add-same-file-different-transactions", "checkpoint", "v2-checkpoint-json", "multi-part-checkpoint", "only-checkpoint-files"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(golden, name)
			latest, err := snapshot(t, dir, delta.Latest)
			if err != nil {
				t.Fatal(err)
			}
			read := 0
			for v := int64(0); v <= latest.Version; v++ {
				got, err := snapshot(t, dir, v)
				want, ierr := deltarows(t, dir, v)
				if (err == nil) != (ierr == nil) {
					t.Fatalf("version %d: sluice: %v; independent reader: %v", v, err, ierr)
				}
				if err != nil {
					if !errors.Is(err, delta.ErrVersionNotFound) {
						t.Fatalf("version %d: %v; want %v", v, err, delta.ErrVersionNotFound)
					}
					continue
				}
				sameSnapshot(t, got, want)
				read++
			}
			if read == 0 {
				t.Fatal("no version read")
			}
		})
	}
}

// sameSnapshot compares a snapshot with the independent reader's.
func sameSnapshot(t *testing.T, got *delta.Snapshot, want indep) {
	t.Helper()
	if got.Version != want.Version {
		t.Fatalf("version %d, independent reader %d", got.Version, want.Version)
	}
	if wc := int64(-1); want.Checkpoint != nil && *want.Checkpoint != got.Checkpoint || want.Checkpoint == nil && got.Checkpoint != wc {
		t.Errorf("version %d: read from checkpoint %d, independent reader from %v", got.Version, got.Checkpoint, want.Checkpoint)
	}
	if strings.Join(got.Metadata.PartitionColumns, ",") != strings.Join(want.PartitionColumns, ",") {
		t.Errorf("partition columns %v, independent reader %v", got.Metadata.PartitionColumns, want.PartitionColumns)
	}
	if len(got.Files) != len(want.Files) {
		t.Fatalf("version %d: %d live files, independent reader %d", got.Version, len(got.Files), len(want.Files))
	}
	for i, f := range got.Files {
		w := want.Files[i]
		n, ok := f.NumRecords()
		switch {
		case f.Path != w.Path && !(f.Absolute && strings.HasSuffix(f.Path, w.Path)):
			t.Errorf("file %d: %q, independent reader %q", i, f.Path, w.Path)
		case f.Add.Size != w.Size:
			t.Errorf("%s: size %d, independent reader %d", f.Path, f.Add.Size, w.Size)
		case ok != (w.NumRecords != nil) || ok && n != *w.NumRecords:
			t.Errorf("%s: numRecords %d (%v), independent reader %v", f.Path, n, ok, w.NumRecords)
		case !samePartition(f.Add.PartitionValues, w.PartitionValues):
			t.Errorf("%s: partition values %v, independent reader %v", f.Path, show(f.Add.PartitionValues), show(w.PartitionValues))
		}
	}
}

func samePartition(a, b map[string]*string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || (v == nil) != (w == nil) || v != nil && *v != *w {
			return false
		}
	}
	return true
}

func show(m map[string]*string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = "NULL"
		if v != nil {
			out[k] = strconv.Quote(*v)
		}
	}
	return out
}
