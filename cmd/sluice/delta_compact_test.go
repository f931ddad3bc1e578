package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/internal/testenv"
)

// deltaCommit is one commit of a Delta log, as a test reads it back.
type deltaCommit struct {
	info    map[string]any
	adds    []map[string]any
	removes []map[string]any
}

// readDeltaCommit reads the commit of version v of the table in dir.
func readDeltaCommit(t *testing.T, dir string, v int64) deltaCommit {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
	if err != nil {
		t.Fatal(err)
	}
	var c deltaCommit
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var a map[string]map[string]any
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("version %d, line %d: %v", v, i+1, err)
		}
		switch {
		case a["commitInfo"] != nil:
			if i != 0 {
				t.Errorf("version %d: commitInfo on line %d, not first", v, i+1)
			}
			c.info = a["commitInfo"]
		case a["add"] != nil:
			c.adds = append(c.adds, a["add"])
		case a["remove"] != nil:
			c.removes = append(c.removes, a["remove"])
		default:
			t.Errorf("version %d, line %d: a compaction commit holds %s", v, i+1, line)
		}
	}
	return c
}

// logVersions counts the commits in a Delta table's log.
func logVersions(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".json") && len(e.Name()) == 25 {
			n++
		}
	}
	return n
}

var deltaDataFile = regexp.MustCompile(`^part-00000-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}-c000\.zstd\.parquet$`)

// sluice compact on a Delta table written by Spark rewrites its small
// files in place and commits each batch as an OPTIMIZE commit: the
// independent reader, replaying the log and reading the files with
// DuckDB, reads the same rows and checksum at the new version as before,
// and at every older version what it read there; every add and remove is
// dataChange false, the adds carry stats whose numRecords add up, and
// the new files are named as Delta's writers name them in the folder of
// their partition. A second compaction commits nothing.
func TestCompactADeltaTableInPlace(t *testing.T) {
	for _, name := range []string{
		"time-travel-partition-changes-b",       // partitioned, two versions
		"basic-with-inserts-deletes-checkpoint", // a checkpoint, removes
		"kernel-timestamp-INT96",                // Spark's INT96, ':' escaped in folders
		"hive/deltatbl-special-chars-in-partition-column",
		"data-reader-nested-struct",
		"data-reader-array-complex-objects",
		"data-reader-date-types-UTC",
		"snapshot-repartitioned",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "t")
			copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta-golden", name), dir)
			before := logVersions(t, dir)
			want := make([]duck, before)
			for v := range before {
				want[v] = deltaRead(t, dir, v)
			}
			sum := summaryOf(t, mustSluice(t, "--json", "compact", dir, "--min-input-files", "2", "--include-current"))
			versions, _ := sum["versions"].([]any)
			if len(versions) == 0 || sum["files_out"].(float64) >= sum["files_in"].(float64) {
				t.Fatalf("compact summary %v: want a commit with fewer files out than in", sum)
			}
			if n := logVersions(t, dir); n != before+len(versions) {
				t.Fatalf("the log has %d versions after %d commits on %d", n, len(versions), before)
			}
			if got := deltaRead(t, dir, -1); got.Rows != want[before-1].Rows || got.Checksum != want[before-1].Checksum {
				t.Errorf("after the compaction the table reads %+v; before it %+v", got, want[before-1])
			}
			for v := range before {
				if got := deltaRead(t, dir, v); got.Rows != want[v].Rows || got.Checksum != want[v].Checksum {
					t.Errorf("version %d reads %+v after the compaction, %+v before", v, got, want[v])
				}
			}
			var rows float64
			for i := range versions {
				v := int64(before + i)
				c := readDeltaCommit(t, dir, v)
				if c.info["operation"] != "OPTIMIZE" || c.info["readVersion"] != float64(before-1) {
					t.Errorf("version %d commitInfo %v: want operation OPTIMIZE, readVersion %d", v, c.info, before-1)
				}
				if len(c.adds) == 0 || len(c.removes) < len(c.adds) {
					t.Errorf("version %d: %d adds, %d removes", v, len(c.adds), len(c.removes))
				}
				for _, a := range append(append([]map[string]any{}, c.adds...), c.removes...) {
					if a["dataChange"] != false {
						t.Errorf("version %d: %v is not dataChange false", v, a)
					}
				}
				for _, a := range c.adds {
					p := a["path"].(string)
					if !deltaDataFile.MatchString(path.Base(p)) {
						t.Errorf("version %d adds %s: not named as Delta's writers name files", v, p)
					}
					vals := map[string]*string{}
					for k, x := range a["partitionValues"].(map[string]any) {
						if s, ok := x.(string); ok {
							vals[k] = &s
						} else {
							vals[k] = nil
						}
					}
					var keys []string
					for k := range vals {
						keys = append(keys, k)
					}
					decoded, err := url.PathUnescape(p)
					if err != nil || len(keys) == 1 && path.Dir(decoded) != catalog.HiveDir(keys, vals) {
						t.Errorf("version %d adds %s: not in the folder of its partition %v", v, p, vals)
					}
					var st struct {
						NumRecords *float64       `json:"numRecords"`
						NullCount  map[string]any `json:"nullCount"`
					}
					if err := json.Unmarshal([]byte(a["stats"].(string)), &st); err != nil || st.NumRecords == nil || st.NullCount == nil {
						t.Errorf("version %d adds %s with stats %v: %v", v, p, a["stats"], err)
						continue
					}
					rows += *st.NumRecords
				}
			}
			if rows != sum["rows_written"].(float64) {
				t.Errorf("the adds' stats count %v rows; the compaction wrote %v", rows, sum["rows_written"])
			}
			// The compaction ends with a checkpoint of its last version,
			// which _last_checkpoint names.
			last := before + len(versions) - 1
			var lc struct {
				Version int `json:"version"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "_delta_log", "_last_checkpoint"))
			if err == nil {
				err = json.Unmarshal(b, &lc)
			}
			cp, _ := sum["checkpoint"].(string)
			if err != nil || lc.Version != last || !strings.Contains(cp, fmt.Sprintf("checkpoint of version %d", last)) {
				t.Errorf("after the compaction: _last_checkpoint %s (%v), summary's checkpoint %q; want version %d", b, err, cp, last)
			}
			again := summaryOf(t, mustSluice(t, "--json", "compact", dir, "--min-input-files", "2", "--include-current"))
			if vs, _ := again["versions"].([]any); len(vs) != 0 || logVersions(t, dir) != before+len(versions) {
				t.Errorf("a second compaction committed %v", again)
			}
		})
	}
}

// A Delta table sluice cannot rewrite as its readers expect is refused,
// naming the column or the feature, and its log is left as it was.
func TestCompactRefusesDeltaTablesItCannotWrite(t *testing.T) {
	for _, c := range []struct{ name, says string }{
		{"data-reader-primitives", "column as_byte is of type byte"},
		{"dv-partitioned-with-checkpoint", "deletion vectors"},
		{"table-with-columnmapping-mode-name", "column mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta-golden", c.name), dir)
			before := logVersions(t, dir)
			r := sluice(t, nil, "--json", "compact", dir, "--min-input-files", "2", "--include-current")
			if r.code != 1 || !strings.Contains(r.stderr, c.says) {
				t.Fatalf("exit %d, stderr %q; want exit 1 naming %q", r.code, r.stderr, c.says)
			}
			if n := logVersions(t, dir); n != before {
				t.Errorf("the refused compaction left %d versions where there were %d", n, before)
			}
		})
	}
	// --format delta on a folder without a Delta log says so.
	r := sluice(t, nil, "compact", t.TempDir(), "--format", "delta")
	if r.code != 1 || !strings.Contains(r.stderr, "not a Delta table") {
		t.Errorf("--format delta on an empty folder: exit %d, %q", r.code, r.stderr)
	}
}

// A Delta table of n copies of one Spark-written file (10 rows of a long
// "id"), in one commit after the table's creation; with parts > 0 it is
// partitioned by a string p, the copies spread over p=0 .. p=parts-1.
func deltaTableOfCopies(t *testing.T, dir string, n, parts int) (src string) {
	t.Helper()
	golden := filepath.Join(repoRoot(t), "testdata", "delta-golden", "basic-with-inserts-deletes-checkpoint")
	src = filepath.Join(golden, "part-00000-0869ab64-e69d-407f-80d4-1a2ea1f69d11-c000.snappy.parquet")
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl := delta.New(st)
	schema, cols := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`, []string{}
	if parts > 0 {
		schema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`
		cols = []string{"p"}
	}
	err = tbl.Commit(context.Background(), 0, []delta.Action{
		{Protocol: &delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{Metadata: &delta.Metadata{ID: "copies", Format: delta.Format{Provider: "parquet", Options: map[string]string{}},
			SchemaString: schema, PartitionColumns: cols, Configuration: map[string]string{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var adds []delta.Action
	for i := range n {
		name := fmt.Sprintf("part-%05d-copy.snappy.parquet", i)
		if parts > 0 {
			name = fmt.Sprintf("p=%d/%s", i%parts, name)
		}
		adds = append(adds, copyAdd(t, src, dir, name))
	}
	if err := tbl.Commit(context.Background(), 1, adds); err != nil {
		t.Fatal(err)
	}
	return src
}

// copyAdd copies src into the table at dir as name (in a p=K folder: of
// partition K) and returns its add.
func copyAdd(t *testing.T, src, dir, name string) delta.Action {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	vals := map[string]*string{}
	if folder, _, ok := strings.Cut(name, "/"); ok {
		v := strings.TrimPrefix(folder, "p=")
		vals["p"] = &v
	}
	return delta.Action{Add: &delta.Add{Path: name, PartitionValues: vals, Size: int64(len(b)),
		ModificationTime: time.Now().UnixMilli(), DataChange: true, Stats: `{"numRecords":10}`}}
}

// A writer appending a file every 5 ms beside a compaction, as a Spark
// stream does, loses nothing: the compaction rebases over its commits,
// the rows are those before plus those appended, and every file appended
// after the compaction read the table is live.
func TestCompactBesideADeltaAppender(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := deltaTableOfCopies(t, dir, 600, 0)
	before := deltaRead(t, dir, -1)

	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl := delta.New(st)
	ctx, stop := context.WithCancel(context.Background())
	type appended struct {
		name    string
		version int64
	}
	done := make(chan []appended)
	go func() {
		var out []appended
		defer func() { done <- out }()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			name := fmt.Sprintf("part-%05d-late.snappy.parquet", i)
			a := copyAdd(t, src, dir, name)
			s, err := tbl.Snapshot(context.Background(), delta.Latest)
			if err != nil {
				t.Error(err)
				return
			}
			v, err := tbl.CommitRebased(context.Background(), delta.Rebase{Read: s.Version}, []delta.Action{a})
			if err != nil {
				t.Errorf("append %s: %v", name, err)
				return
			}
			out = append(out, appended{name, v})
		}
	}()
	sum := summaryOf(t, mustSluice(t, "--json", "compact", dir, "--include-current", "--target-file-size", "1MiB", "--workers", "1"))
	time.Sleep(100 * time.Millisecond)
	stop()
	late := <-done
	versions, _ := sum["versions"].([]any)
	if len(versions) == 0 || len(late) == 0 {
		t.Fatalf("compaction %v beside %d appends: want both", sum, len(late))
	}
	after := deltaRead(t, dir, -1)
	if want := before.Rows + 10*int64(len(late)); after.Rows != want {
		t.Errorf("%d rows after the compaction and %d appends of 10 rows on %d; want %d", after.Rows, len(late), before.Rows, want)
	}
	read := readDeltaCommit(t, dir, int64(versions[0].(float64))).info["readVersion"].(float64)
	snap, err := tbl.Snapshot(context.Background(), delta.Latest)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	interleaved := 0
	for _, a := range late {
		if a.version > int64(read) && !live[a.name] {
			t.Errorf("%s, appended at version %d after the compaction read version %v, is not live", a.name, a.version, read)
		}
		if a.version > int64(read) && a.version < int64(versions[0].(float64)) {
			interleaved++
		}
	}
	if interleaved == 0 {
		t.Errorf("none of %d appends landed between the compaction's read (version %v) and its commit", len(late), read)
	}
	t.Logf("%d appends, %d of them between the compaction's read and its commit", len(late), interleaved)
}

// Two compactions of one Delta table at once: whichever commits second
// finds its inputs removed and drops its batch for the next run, deleting
// what it wrote. Nothing is lost or counted twice: the table reads as
// before, and every new file in its folder is live.
func TestTwoDeltaCompactionsAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	deltaTableOfCopies(t, dir, 2000, 0)
	before := deltaRead(t, dir, -1)
	args := []string{"--json", "compact", dir, "--include-current", "--target-file-size", "1MiB", "--workers", "1"}
	rs := sluiceAll(t, nil, [][]string{args, args})
	committed, dropped := 0, 0
	for i, r := range rs {
		if r.code != 0 {
			t.Fatalf("compaction %d: exit %d: %s", i, r.code, r.stderr)
		}
		s := summaryOf(t, r)
		vs, _ := s["versions"].([]any)
		ds, _ := s["dropped"].([]any)
		committed += len(vs)
		dropped += len(ds)
	}
	if committed == 0 {
		t.Fatal("neither compaction committed")
	}
	if after := deltaRead(t, dir, -1); after.Rows != before.Rows || after.Checksum != before.Checksum {
		t.Errorf("after two compactions at once the table reads %+v; before %+v", after, before)
	}
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snap, err := delta.New(st).Snapshot(context.Background(), delta.Latest)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	written, _ := filepath.Glob(filepath.Join(dir, "part-00000-*-c000.zstd.parquet"))
	for _, w := range written {
		if !live[filepath.Base(w)] {
			t.Errorf("%s was written by a compaction and is not live: the loser left it", filepath.Base(w))
		}
	}
	t.Logf("%d versions committed, %d partitions dropped", committed, dropped)
}

// A pipeline's compact job on a table the file says is a Delta table
// compacts it in place, as the command does.
func TestPipelineCompactsADeltaTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta-golden", "time-travel-partition-changes-b"), dir)
	before := logVersions(t, dir)
	want := deltaRead(t, dir, -1)
	config := filepath.Join(t.TempDir(), "p.yaml")
	yaml := fmt.Sprintf("lake: %s\ntables:\n  d: {location: %s, format: delta}\njobs:\n  c:\n    schedule: \"@daily\"\n    compact: {table: d, min_input_files: 2, scope: all}\n",
		filepath.Join(filepath.Dir(config), "lake"), dir)
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSluice(t, "validate", "--config", config)
	run := runsOf(t, mustSluice(t, "run", "--config", config, "c", "--json"))
	if len(run) != 1 || run[0]["status"] != "succeeded" {
		t.Fatalf("runs %v", run)
	}
	if n := logVersions(t, dir); n <= before {
		t.Fatalf("the job committed nothing to the Delta log (%d versions)", n)
	}
	if c := readDeltaCommit(t, dir, int64(before)); c.info["operation"] != "OPTIMIZE" {
		t.Errorf("the job's commit: %v", c.info)
	}
	if got := deltaRead(t, dir, -1); got.Rows != want.Rows || got.Checksum != want.Checksum {
		t.Errorf("after the job the table reads %+v; before %+v", got, want)
	}
}

// kill -9 at random points of 20 compactions of a Delta table, each
// after a writer appended more small files, leaves a table the independent
// reader reads, at the old version or the new, with the rows it held; a
// last, uninterrupted compaction then finishes the work. Files a killed
// compaction wrote and never committed stay behind, unlisted, until a
// vacuum finds them: after vacuum --retain 0h --force the folder holds
// exactly the live files, and the table reads as before.
func TestKilledDeltaCompactionsLeaveAReadableTable(t *testing.T) {
	if testing.Short() {
		t.Skip("20 compactions killed: not in -short")
	}
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := deltaTableOfCopies(t, dir, 600, 10)
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl := delta.New(st)
	rng := rand.New(rand.NewPCG(31, 0))
	killed := 0
	for i := range 20 {
		if i > 0 {
			var adds []delta.Action
			for j := range 150 {
				adds = append(adds, copyAdd(t, src, dir, fmt.Sprintf("p=%d/part-%05d-%02d.snappy.parquet", j%10, j, i)))
			}
			s, err := tbl.Snapshot(context.Background(), delta.Latest)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.CommitRebased(context.Background(), delta.Rebase{Read: s.Version}, adds); err != nil {
				t.Fatal(err)
			}
		}
		want := deltaRead(t, dir, -1)
		cmd := exec.Command(sluiceBin, "compact", dir, "--include-current", "--target-file-size", "64KiB", "-q")
		cmd.Env = append(os.Environ(), testenv.Env()...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("compaction %d failed before it was killed: %v", i, err)
			}
		case <-time.After(time.Duration(rng.IntN(500)) * time.Millisecond):
			cmd.Process.Kill()
			<-exited
			killed++
		}
		if got := deltaRead(t, dir, -1); got.Rows != want.Rows || got.Checksum != want.Checksum {
			t.Fatalf("after compaction %d was killed the table reads %+v; before %+v", i, got, want)
		}
	}
	want := deltaRead(t, dir, -1)
	mustSluice(t, "compact", dir, "--include-current", "--target-file-size", "64KiB", "-q")
	if got := deltaRead(t, dir, -1); got.Rows != want.Rows || got.Checksum != want.Checksum {
		t.Fatalf("after the last compaction the table reads %+v; before %+v", got, want)
	}
	if killed == 0 {
		t.Error("no compaction was killed midway: every one ended before its kill")
	}
	orphans := len(dataFilesIn(t, dir))
	mustSluice(t, "vacuum", dir, "--retain", "0h", "--force", "-q")
	var live []string
	for _, f := range deltaLiveFiles(t, dir).Files {
		live = append(live, f.Path)
	}
	sort.Strings(live)
	if got := dataFilesIn(t, dir); strings.Join(got, ",") != strings.Join(live, ",") {
		t.Errorf("after vacuum the folder holds %d files; the log's live files are %d", len(got), len(live))
	}
	if got := deltaRead(t, dir, -1); got.Rows != want.Rows || got.Checksum != want.Checksum {
		t.Errorf("after vacuum the table reads %+v; before %+v", got, want)
	}
	t.Logf("vacuum deleted %d files: removed by compactions or written by killed ones", orphans-len(live))
	t.Logf("%d of 20 compactions killed midway; the log has %d versions", killed, logVersions(t, dir))
}

// sluice history on a Delta table lists every commit left in its log with
// what commitInfo says, and after each the live files and rows the
// independent reader replays at that version; a sluice compaction shows
// as OPTIMIZE, removing files without changing rows. A log whose first
// commits were cleaned up starts from the checkpoint before the first
// commit left.
func TestHistoryOfADeltaTable(t *testing.T) {
	for _, name := range []string{"basic-with-inserts-deletes-checkpoint", "time-travel-partition-changes-b", "kernel-timestamp-INT96", "cleaned"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			if name == "cleaned" {
				copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta-golden", "basic-with-inserts-deletes-checkpoint"), dir)
				for v := range 10 {
					if err := os.Remove(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v))); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta-golden", name), dir)
			}
			mustSluice(t, "compact", dir, "--min-input-files", "2", "--include-current", "-q")
			vs, _ := summaryOf(t, mustSluice(t, "--json", "history", dir))["versions"].([]any)
			if first := vs[0].(map[string]any)["version"].(float64); name == "cleaned" && first != 11 {
				t.Errorf("the cleaned log's history starts at version %v; want 11, after the checkpoint of 10", first)
			}
			if want := logVersions(t, dir); name != "cleaned" && len(vs) != want || name == "cleaned" && len(vs) != want-1 {
				t.Fatalf("history lists %d versions; the log has %d commits", len(vs), want)
			}
			last := vs[len(vs)-1].(map[string]any)
			if last["operation"] != "OPTIMIZE" || last["data_change"] != false || last["rows_added"] != last["rows_removed"] {
				t.Errorf("the compaction's version: %v", last)
			}
			for _, x := range vs {
				h := x.(map[string]any)
				v := int64(h["version"].(float64))
				out, err := exec.Command("node", filepath.Join(repoRoot(t), "tools", "deltarows.mjs"), "--files-only", "--version", fmt.Sprint(v), dir).Output()
				if err != nil {
					t.Fatalf("deltarows --version %d: %v: %s", v, err, stderrOf(err))
				}
				var ind struct {
					Files []struct {
						NumRecords *int64 `json:"numRecords"`
					} `json:"files"`
				}
				if err := json.Unmarshal(out, &ind); err != nil {
					t.Fatal(err)
				}
				var rows int64
				known := true
				for _, f := range ind.Files {
					if f.NumRecords == nil {
						known = false
					} else {
						rows += *f.NumRecords
					}
				}
				if h["files"] != float64(len(ind.Files)) || known && h["rows"] != float64(rows) || !known && h["rows"] != nil {
					t.Errorf("version %d: history says %v files, %v rows; the independent reader %d files, %d rows (all counted: %v)", v, h["files"], h["rows"], len(ind.Files), rows, known)
				}
			}
		})
	}
}
