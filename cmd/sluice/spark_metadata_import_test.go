package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// sinkFile is a data file of a Spark file sink's output folder, as the
// tests below lay it out.
type sinkFile struct {
	key  string // under the output folder
	rows int    // of the id:int64,name:string schema, ids from first
	from int
}

// The output folder a Spark Structured Streaming file sink leaves, with
// spark.sql.streaming.fileSink.log.compactInterval=3: batch 0 wrote a and
// b, batch 1 c and a delete of a, batch 2 d, compacted into 2.compact
// (which no longer lists a; the cleanup removed 0 and 1 as Spark does),
// batch 3 e, in a partition whose value Spark escapes, batch 4 f and a
// delete of c. Batch 5 failed: its file g and its log's temporary file
// stay, and no batch file names g. A file a log entry deleted stays on
// disk too: Spark's sink never deletes data files.
var (
	sinkA = sinkFile{"day=2024-01-01/part-00000-a.c000.snappy.parquet", 3, 0}
	sinkB = sinkFile{"day=2024-01-01/part-00001-b.c000.snappy.parquet", 4, 100}
	sinkC = sinkFile{"day=2024-01-02/part-00000-c.c000.snappy.parquet", 5, 200}
	sinkD = sinkFile{"day=2024-01-02/part-00001-d.c000.snappy.parquet", 6, 300}
	sinkE = sinkFile{"day=2024-01-03 10%3A00/part-00000-e.c000.snappy.parquet", 7, 400}
	sinkF = sinkFile{"day=2024-01-04/part-00000-f.c000.snappy.parquet", 8, 500}
	sinkG = sinkFile{"day=2024-01-04/part-00001-g.c000.snappy.parquet", 9, 600}
)

// sparkSinkOutput lays the folder out in dir and returns the live files
// at each batch, by batch.
func sparkSinkOutput(t *testing.T, dir string) map[int][]sinkFile {
	t.Helper()
	for _, f := range []sinkFile{sinkA, sinkB, sinkC, sinkD, sinkE, sinkF, sinkG} {
		rows := make([][]any, f.rows)
		for i := range rows {
			rows[i] = []any{int64(f.from + i), fmt.Sprintf("row %d of %s", i, filepath.Base(f.key))}
		}
		writeParquetFile(t, dir, f.key, "id:int64,name:string", rows...)
	}
	entry := func(f sinkFile, action string) string {
		info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.key)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(map[string]any{"path": sinkURI(filepath.Join(dir, filepath.FromSlash(f.key))),
			"size": info.Size(), "isDir": false, "modificationTime": info.ModTime().UnixMilli(),
			"blockReplication": 1, "blockSize": 33554432, "action": action})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	logs := map[string][]string{
		"2.compact": {entry(sinkB, "add"), entry(sinkC, "add"), entry(sinkD, "add")},
		"3":         {entry(sinkE, "add")},
		"4":         {entry(sinkF, "add"), entry(sinkC, "delete")},
	}
	for name, lines := range logs {
		writeFile(t, filepath.Join(dir, "_spark_metadata"), name, strings.Join(append([]string{"v1"}, lines...), "\n"))
	}
	writeFile(t, filepath.Join(dir, "_spark_metadata"), ".4.crc", "crc")
	writeFile(t, filepath.Join(dir, "_spark_metadata"), ".5.6b1f0c2e.tmp", "v1\n"+entry(sinkG, "add"))
	return map[int][]sinkFile{2: {sinkB, sinkC, sinkD}, 3: {sinkB, sinkC, sinkD, sinkE}, 4: {sinkB, sinkD, sinkE, sinkF}}
}

// sinkURI is the path Spark's sink logs for a local file: Hadoop's
// file:/ URI, each segment percent-encoded.
func sinkURI(p string) string {
	segs := strings.Split(filepath.ToSlash(p), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "file:" + strings.Join(segs, "/")
}

// paths are the files' paths under dir; rowsOf their rows.
func paths(dir string, files []sinkFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, filepath.Join(dir, filepath.FromSlash(f.key)))
	}
	return out
}

func rowsOf(files []sinkFile) (n int64) {
	for _, f := range files {
		n += int64(f.rows)
	}
	return n
}

// Import of a Spark file sink's output adopts exactly the files its log
// lists live at the newest batch, compaction included: never the failed
// batch's file, nor one a log entry deleted. DuckDB reads the table's
// files as it reads those, the partition values are the folders'
// decoded, and importing again adds nothing. --version N adopts the
// files live at batch N.
func TestImportAdoptsASparkSinksLoggedFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	live := sparkSinkOutput(t, dir)
	sum := summaryOf(t, mustSluice(t, "--json", "import", dir, "--from", dir))
	if sum["files_in"] != float64(len(live[4])) || sum["files_added"] != float64(len(live[4])) || sum["rows_in"] != float64(rowsOf(live[4])) {
		t.Errorf("import summary: %v; want %d files and %d rows in and added", sum, len(live[4]), rowsOf(live[4]))
	}
	got := lines(mustSluice(t, "files", dir).stdout)
	want := paths(dir, live[4])
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("sluice files after the import:\n%q\nwant the log's live files\n%q", got, want)
	}
	for _, f := range []sinkFile{sinkA, sinkC, sinkG} {
		if slices.Contains(got, filepath.Join(dir, filepath.FromSlash(f.key))) {
			t.Errorf("%s was adopted: no log entry lists it live", f.key)
		}
	}
	if d, w := dataRead(t, got), dataRead(t, want); d.Rows != rowsOf(live[4]) || d.Rows != w.Rows || d.Checksum != w.Checksum {
		t.Errorf("DuckDB reads the table's files as %+v, the log's live files as %+v; want %d rows", d, w, rowsOf(live[4]))
	}
	checkSinkPartitions(t, dir, map[string]string{sinkB.key: "2024-01-01", sinkD.key: "2024-01-02",
		sinkE.key: "2024-01-03 10:00", sinkF.key: "2024-01-04"})

	again := summaryOf(t, mustSluice(t, "--json", "import", dir, "--from", dir))
	if _, ok := again["version"]; ok || again["files_added"] != float64(0) {
		t.Errorf("a second import: %v; want nothing added", again)
	}

	for _, batch := range []int{2, 3} {
		table := filepath.Join(t.TempDir(), "t")
		sum := summaryOf(t, mustSluice(t, "--json", "import", table, "--from", dir, "--version", fmt.Sprint(batch)))
		got := lines(mustSluice(t, "files", table).stdout)
		want := paths(dir, live[batch])
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || sum["rows_in"] != float64(rowsOf(live[batch])) {
			t.Errorf("--version %d: files %q and %v rows, want %q and %d rows", batch, got, sum["rows_in"], want, rowsOf(live[batch]))
		}
	}
	// Batches 0 and 1 were cleaned up after the compaction: the state
	// before it cannot be read.
	r := sluice(t, nil, "import", filepath.Join(t.TempDir(), "t"), "--from", dir, "--version", "1")
	failsWithOneLine(t, r, "import "+dir+": ", filepath.Join(dir, "_spark_metadata", "0"), "not there")
}

// checkSinkPartitions checks the partition value of each file of the
// table at loc, by its key.
func checkSinkPartitions(t *testing.T, loc string, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Fatalf("the table has %d files, want %d", len(files), len(want))
	}
	for _, f := range files {
		w, ok := want[f.Path]
		if v := f.PartitionValues["day"]; !ok || v == nil || *v != w {
			t.Errorf("%s: day %v, want %q", f.Path, f.PartitionValues, w)
		}
	}
}

// The folder may have moved since Spark wrote it (a copy, a restore):
// the log's paths name the old place, and the files are read relative to
// the folder the sink wrote, now here.
func TestImportAdoptsAMovedSparkSinksFiles(t *testing.T) {
	written := filepath.Join(t.TempDir(), "out")
	live := sparkSinkOutput(t, written)
	moved := filepath.Join(t.TempDir(), "restored")
	copyDir(t, written, moved)
	if err := os.RemoveAll(written); err != nil {
		t.Fatal(err)
	}
	sum := summaryOf(t, mustSluice(t, "--json", "import", moved, "--from", moved))
	got := lines(mustSluice(t, "files", moved).stdout)
	want := paths(moved, live[4])
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || sum["rows_in"] != float64(rowsOf(live[4])) {
		t.Fatalf("import of the moved folder: files %q and %v rows; want %q and %d rows", got, sum["rows_in"], want, rowsOf(live[4]))
	}
}

// A sink's log that names a file outside its folder, or that sluice
// cannot read, is refused in one line naming the file, and nothing is
// committed; a sink's output nested below the folder imported is still
// refused, naming its log, as a glob of it would adopt the failed batch.
func TestImportRefusesSparkSinkLogsItCannotAdopt(t *testing.T) {
	for name, c := range map[string]struct {
		log  func(dir string) (file, text string)
		says []string
	}{
		"a newer log version": {func(string) (string, string) { return "5", "v2\n{}" }, []string{"_spark_metadata", "5 line 1", "v2"}},
		"a line not JSON":     {func(string) (string, string) { return "5", "v1\n{\"path\":" }, []string{"_spark_metadata", "5 line 2", "not a JSON object"}},
		"a file elsewhere": {func(string) (string, string) {
			return "5", "v1\n" + `{"path":"file:/elsewhere/day=2024-01-05/part-0.parquet","size":9,"isDir":false,"action":"add"}`
		}, []string{"5 line 2", "file:/elsewhere/day=2024-01-05/part-0.parquet", "outside"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			sparkSinkOutput(t, dir)
			file, text := c.log(dir)
			writeFile(t, filepath.Join(dir, "_spark_metadata"), file, text)
			r := sluice(t, nil, "import", dir, "--from", dir)
			failsWithOneLine(t, r, append([]string{"import " + dir + ": "}, c.says...)...)
			if _, err := os.Stat(filepath.Join(dir, "_sluice")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("after the refusal %s/_sluice: %v, want none", dir, err)
			}
		})
	}
	t.Run("nested", func(t *testing.T) {
		outer := t.TempDir()
		sparkSinkOutput(t, filepath.Join(outer, "region=eu"))
		r := sluice(t, nil, "import", filepath.Join(t.TempDir(), "t"), "--from", outer)
		failsWithOneLine(t, r, filepath.Join(outer, "region=eu", "_spark_metadata")+" is a Spark Structured Streaming sink's log", "failed batch")
	})
}
