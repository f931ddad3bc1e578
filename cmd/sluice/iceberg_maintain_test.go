package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"

	"github.com/sluice-data/sluice/internal/icebergtest"
)

func TestVacuumOfAnIcebergTable(t *testing.T) {
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 10, RowsPerAppend: 200, Concurrent: 3, Seed: 11})
	mustSluice(t, "compact", tb.URL(), "--min-input-files", "2", "-q")
	snaps := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	want := snaps[len(snaps)-1]
	filesBefore := parquetAt(t, tb.Location)

	// Everything was written just now: a day's retention expires no
	// snapshot and deletes no file.
	r := summaryOf(t, mustSluice(t, "--json", "vacuum", tb.URL(), "--retain", "24h"))
	if r["files_deleted"].(float64) != 0 || len(icebergtest.SnapshotRows(t, tb.MetadataLocation(t))) != len(snaps) {
		t.Fatalf("a day's retention on a table written just now: %v", r)
	}

	// With no retention, a dry run lists the expiring snapshots and the
	// files no retained snapshot references (the compaction's inputs, the
	// files of appends that lost their race), and changes nothing.
	dry := summaryOf(t, mustSluice(t, "--json", "vacuum", tb.URL(), "--retain", "0h", "--force", "--dry-run"))
	live, _ := liveDataFiles(t, tb.Load(t))
	var orphans []string
	for p := range filesBefore {
		if _, ok := live[p]; !ok {
			orphans = append(orphans, p)
		}
	}
	if len(orphans) == 0 {
		t.Fatal("the test table has no unreferenced data file")
	}
	listed := map[string]bool{}
	for _, d := range dry["deleted"].([]any) {
		listed[d.(string)] = true
	}
	for _, o := range orphans {
		if !listed[o] && !listed[strings.TrimPrefix(o, "file://")] {
			t.Errorf("the dry run does not list %s, which no retained snapshot references", o)
		}
	}
	for p := range live {
		if listed[p] || listed[strings.TrimPrefix(p, "file://")] {
			t.Errorf("the dry run would delete %s, a live file", p)
		}
	}
	if got := len(dry["log_deleted"].([]any)); got != len(snaps)-1 {
		t.Errorf("the dry run expires %d snapshots, want all but the newest of %d", got, len(snaps))
	}
	if got := parquetAt(t, tb.Location); len(got) != len(filesBefore) || len(icebergtest.SnapshotRows(t, tb.MetadataLocation(t))) != len(snaps) {
		t.Fatal("the dry run changed the table")
	}

	mustSluice(t, "vacuum", tb.URL(), "--retain", "0h", "--force", "-q")
	after := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	if len(after) != 1 || after[0].ID != want.ID || after[0].Rows != want.Rows || after[0].Checksum != want.Checksum {
		t.Fatalf("after the vacuum the table has snapshots %+v; want the newest alone, %+v", after, want)
	}
	left := parquetAt(t, tb.Location)
	for p := range live {
		if !left[p] {
			t.Errorf("the vacuum deleted %s, a live file", p)
		}
	}
	if len(left) != len(live) {
		t.Errorf("%d Parquet files left, %d live", len(left), len(live))
	}

	// A retention under a day needs --force.
	failsWithOneLine(t, sluice(t, nil, "vacuum", tb.URL(), "--retain", "1h"), "--force")
}

func TestVacuumRefusesAnIcebergTableWithoutGC(t *testing.T) {
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 3, RowsPerAppend: 50, Seed: 3})
	tx := tb.Load(t).NewTransaction()
	if err := tx.SetProperties(ice.Properties{"gc.enabled": "false"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := parquetAt(t, tb.Location)
	failsWithOneLine(t, sluice(t, nil, "vacuum", tb.URL(), "--retain", "0h", "--force"), "gc.enabled is false")
	if got := parquetAt(t, tb.Location); len(got) != len(before) {
		t.Errorf("%d files before, %d after a refused vacuum", len(before), len(got))
	}
}

func TestImportAdoptsAnIcebergTablesFiles(t *testing.T) {
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 6, RowsPerAppend: 100, Seed: 5})
	snaps := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	want := snaps[len(snaps)-1]
	live, _ := liveDataFiles(t, tb.Load(t))

	for _, from := range []string{tb.URL(), tb.MetadataLocation(t)} {
		dir := filepath.Join(t.TempDir(), "events")
		r := summaryOf(t, mustSluice(t, "--json", "import", dir, "--from", from))
		if int(r["files_added"].(float64)) != len(live) || int64(r["rows_in"].(float64)) != want.Rows {
			t.Errorf("import --from %s: %v; want %d files, %d rows", from, r, len(live), want.Rows)
		}
		files := lines(mustSluice(t, "files", dir).stdout)
		for _, f := range files {
			_, a := live["file://"+f]
			if _, b := live[f]; !a && !b {
				t.Errorf("import --from %s adopted %s, not a live file of the Iceberg table", from, f)
			}
		}
		if got := dataRead(t, files); got.Rows != want.Rows || got.Checksum != want.Checksum {
			t.Errorf("import --from %s: the table reads %+v; the Iceberg table %+v", from, got, want)
		}
		// A second import adds nothing.
		if again := summaryOf(t, mustSluice(t, "--json", "import", dir, "--from", from)); again["files_added"].(float64) != 0 {
			t.Errorf("a second import added %v files", again["files_added"])
		}
	}
}

func TestImportRefusesIcebergTablesItCannotAdopt(t *testing.T) {
	withDeletes := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 4, RowsPerAppend: 100, PositionDeletes: 1, Seed: 9})
	twoSpecs := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 4, RowsPerAppend: 100, SpecChangeAt: 2, Seed: 9})
	for _, c := range []struct {
		from string
		says []string
	}{
		{withDeletes.URL(), []string{"has deletes", "bring deleted rows back"}},
		{twoSpecs.URL(), []string{"partition specs 0 and 1"}},
		{strings.Replace(twoSpecs.URL(), "#lake.events", "#lake.nope", 1), []string{"no table lake.nope"}},
	} {
		dir := filepath.Join(t.TempDir(), "t")
		failsWithOneLine(t, sluice(t, nil, "import", dir, "--from", c.from), c.says...)
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("import --from %s refused, but created %s", c.from, dir)
		}
	}
}

func TestIcebergTableLocationsRefused(t *testing.T) {
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 2, RowsPerAppend: 10, Seed: 1})
	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{"compact", "iceberg+sqlite:///nowhere/catalog.db#lake.events"}, []string{"open catalog", "no such file"}},
		{[]string{"compact", "iceberg+sqlite:///x/catalog.db"}, []string{"namespace.table"}},
		{[]string{"compact", "iceberg+rest://id:SENTINELRESTPASS@localhost:8181/api#lake.events"}, []string{"SLUICE_ICEBERG_CREDENTIAL", "never in the location"}},
		{[]string{"compact", "iceberg+rest://localhost:8181/api?tlss=false#lake.events"}, []string{`unknown parameter "tlss"`}},
		{[]string{"compact", "iceberg+rest://127.0.0.1:1/api?tls=false#lake.events"}, []string{"open catalog", "connection refused"}},
		{[]string{"compact", tb.URL(), "--format", "delta"}, []string{"names an Iceberg table"}},
		{[]string{"compact", tb.Location, "--format", "iceberg"}, []string{"named by its catalog"}},
		{[]string{"ingest", tb.URL(), "--from", "x.jsonl"}, []string{"not built yet for an Iceberg table in its catalog"}},
		{[]string{"compact", tb.URL() + "?catalog=other"}, []string{"lake.events"}},
	} {
		r := sluice(t, nil, c.args...)
		if r.code == 0 {
			t.Errorf("sluice %s: exit 0; want it refused", strings.Join(c.args, " "))
			continue
		}
		msg := strings.TrimSpace(r.stderr)
		if strings.Contains(msg, "SENTINELRESTPASS") {
			t.Errorf("sluice %s: the password shows in %q", strings.Join(c.args, " "), msg)
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("sluice %s: want one line, got %q", strings.Join(c.args, " "), msg)
		}
		for _, w := range c.says {
			if !strings.Contains(msg, w) {
				t.Errorf("sluice %s: %q does not say %q", strings.Join(c.args, " "), msg, w)
			}
		}
	}
}

func TestPipelineCompactsAndVacuumsAnIcebergTable(t *testing.T) {
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 8, RowsPerAppend: 100, Seed: 13})
	before := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	config := filepath.Join(t.TempDir(), "p.yaml")
	yaml := fmt.Sprintf(`lake: %s
tables:
  events: {location: "%s"}
jobs:
  c:
    schedule: "@daily"
    compact: {table: events, min_input_files: 2}
  v:
    schedule: "@daily"
    after: [c]
    vacuum: {table: events, retain: 24h}
`, filepath.Join(filepath.Dir(config), "lake"), tb.URL())
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSluice(t, "validate", "--config", config)
	runs := runsOf(t, mustSluice(t, "run", "--config", config, "c", "--json"))
	if len(runs) != 2 || runs[0]["job"] != "c" || runs[1]["job"] != "v" {
		t.Fatalf("runs %v; want c, then v after it", runs)
	}
	for _, r := range runs {
		if r["status"] != "succeeded" {
			t.Fatalf("job %s: %v", r["job"], r)
		}
	}
	after := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	sameSnapshotsThen(t, before, after)
}
