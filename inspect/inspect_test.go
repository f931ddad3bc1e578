package inspect_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/inspect"
)

const testSchema = "id:int64,event_time:timestamp,note:string?,s:struct<a:int64,b:string?>?"

// fixture is a sluice table made through catalog: one big file and two
// small ones on 2024-01-01, six small ones on 2024-01-02 (one holding a
// note with a newline), the target the big file's size; and a quarantine
// beside it holding one bad record.
type fixture struct {
	loc     string
	target  int64
	version int64
}

func row(id int64, day int, note string) []any {
	return []any{id, time.Date(2024, 1, day, 10, 0, 0, 0, time.UTC), note, map[string]any{"a": id, "b": nil}}
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "events")
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	schema, err := catalog.ParseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := catalog.ParsePartitionSpec("day(event_time)", schema)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tbl.Create(ctx, schema, spec, nil, "run-create")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(rows [][]any, cps map[string]json.RawMessage) {
		t.Helper()
		files, err := tbl.WriteFiles(ctx, m, rows)
		if err != nil {
			t.Fatal(err)
		}
		if m, err = tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: "run-small", Add: files, DataChange: true, Checkpoints: cps}); err != nil {
			t.Fatal(err)
		}
	}
	// Hex notes do not compress: the big file is big.
	var big [][]any
	for i := range 4000 {
		big = append(big, row(int64(i), 1, fmt.Sprintf("%x", sha256.Sum256([]byte(strconv.Itoa(i))))))
	}
	files, err := tbl.WriteFiles(ctx, m, big)
	if err != nil {
		t.Fatal(err)
	}
	target := files[0].Bytes
	if m, err = tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: "run-big", Add: files, DataChange: true,
		Properties: map[string]string{catalog.PropTargetFileSize: strconv.FormatInt(target, 10)}}); err != nil {
		t.Fatal(err)
	}
	id := int64(10000)
	for range 2 {
		commit([][]any{row(id, 1, "small"), row(id+1, 1, "small")}, nil)
		id += 2
	}
	for k := range 6 {
		note := "small"
		if k == 0 {
			note = "line one\nline two"
		}
		var cps map[string]json.RawMessage
		if k == 5 {
			cps = map[string]json.RawMessage{
				"kafka:b1:9092,b2:9092/clicks": json.RawMessage(`{"v":1,"partitions":{"0":45,"1":7}}`),
				"landing:/in":                  json.RawMessage(`{"v":1,"files":["a.jsonl"]}`),
			}
		}
		commit([][]any{row(id, 2, note), row(id+1, 2, "small")}, cps)
		id += 2
	}

	// The quarantine, as ingest makes it.
	q, err := catalog.Open(ctx, inspect.QuarantineOf(loc), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	qs, _ := catalog.ParseSchema("source:string,position:string,reason:string,raw:binary,ingested_at:timestamp")
	qspec, _ := catalog.ParsePartitionSpec("day(ingested_at)", qs)
	qm, err := q.Create(ctx, qs, qspec, nil, "run-q")
	if err != nil {
		t.Fatal(err)
	}
	qf, err := q.WriteFiles(ctx, qm, [][]any{{"landing", "a.jsonl:3", "line 3: want an object", []byte("[1]"), time.Now().UTC()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Commit(ctx, catalog.Change{Operation: "append", Add: qf, DataChange: true}); err != nil {
		t.Fatal(err)
	}
	return fixture{loc: loc, target: target, version: m.Version}
}

func open(t *testing.T, loc string) *inspect.Table {
	t.Helper()
	tbl, err := inspect.Open(context.Background(), loc, inspect.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	return tbl
}

// Describe's small-file debt is the compaction planner's own decision,
// partition by partition; its histogram, partitions and totals agree.
func TestDescribeReportsThePlannersSmallFileDebt(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	tbl := open(t, fx.loc)
	d, err := inspect.Describe(ctx, tbl, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != "sluice" || d.Version != fx.version || d.Files != 9 || d.Rows != 4016 || d.TargetFileSize != fx.target {
		t.Fatalf("format %s, version %d, %d files, %d rows, target %d; want sluice, %d, 9, 4016, %d",
			d.Format, d.Version, d.Files, d.Rows, d.TargetFileSize, fx.version, fx.target)
	}
	if d.Partitioning != "day(event_time)" {
		t.Errorf("partitioning %q", d.Partitioning)
	}

	// What the planner would rewrite, computed here from its plan.
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := compact.PlanCompaction(files, compact.PlanOptions{TargetFileSize: m.TargetFileSize(), IncludeCurrent: true})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles, wantBytes := map[string]int64{}, map[string]int64{}
	var smallFiles, smallBytes int64
	for _, b := range plan.Bins() {
		for _, f := range b.Inputs {
			wantFiles[b.Partition]++
			wantBytes[b.Partition] += f.Bytes
			smallFiles++
			smallBytes += f.Bytes
		}
	}
	if d.SmallFiles != smallFiles || d.SmallBytes != smallBytes || smallFiles != 6 {
		t.Fatalf("small-file debt %d files, %d bytes; the planner rewrites %d files, %d bytes (want the 6 of 2024-01-02)",
			d.SmallFiles, d.SmallBytes, smallFiles, smallBytes)
	}
	var sum inspect.Partition
	for _, p := range d.Partitions {
		if p.SmallFiles != wantFiles[p.Partition] || p.SmallBytes != wantBytes[p.Partition] {
			t.Errorf("partition %s: debt %d files, %d bytes; the planner's %d, %d", p.Partition, p.SmallFiles, p.SmallBytes, wantFiles[p.Partition], wantBytes[p.Partition])
		}
		sum.Files += p.Files
		sum.Bytes += p.Bytes
		sum.Rows += p.Rows
	}
	if got := []string{d.Partitions[0].Partition, d.Partitions[1].Partition}; len(d.Partitions) != 2 || !slices.Equal(got, []string{"date=2024-01-01", "date=2024-01-02"}) {
		t.Fatalf("partitions %+v", d.Partitions)
	}
	if sum.Files != d.Files || sum.Bytes != d.Bytes || sum.Rows != d.Rows {
		t.Errorf("partitions add up to %d files, %d bytes, %d rows; the table has %d, %d, %d", sum.Files, sum.Bytes, sum.Rows, d.Files, d.Bytes, d.Rows)
	}

	var histFiles, histBytes int64
	edges := map[int64]bool{}
	for _, b := range d.Histogram {
		histFiles += b.Files
		histBytes += b.Bytes
		edges[b.Min] = true
	}
	if histFiles != d.Files || histBytes != d.Bytes {
		t.Errorf("histogram counts %d files, %d bytes; the table has %d, %d: %+v", histFiles, histBytes, d.Files, d.Bytes, d.Histogram)
	}
	if !edges[fx.target*3/4] || !edges[fx.target] {
		t.Errorf("histogram %+v: want edges at the small-file edge %d and the target %d", d.Histogram, fx.target*3/4, fx.target)
	}

	want := inspect.Column{Name: "s", Type: "struct<a:int64,b:string?>", Nullable: true}
	if i := slices.IndexFunc(d.Schema, func(c inspect.Column) bool { return c.Name == "s" }); i < 0 || d.Schema[i] != want {
		t.Errorf("schema %+v: want %+v", d.Schema, want)
	}
	if len(d.Versions) != int(fx.version) || d.Versions[0].Version != fx.version || d.Versions[0].Operation != "append" || d.OldestVersion != 1 {
		t.Errorf("versions %+v, oldest %d: want %d, newest first, oldest 1", d.Versions, d.OldestVersion, fx.version)
	}
	if q := d.Quarantine; q == nil || q.Rows != 1 || len(q.Reasons) != 1 || q.Reasons[0] != (inspect.ReasonCount{Reason: "line 3: want an object", Count: 1}) {
		t.Errorf("quarantine %+v", d.Quarantine)
	}
	if d.LastPublish != nil {
		t.Errorf("last publish %+v before any", d.LastPublish)
	}
	if len(d.Checkpoints) != 2 || d.Checkpoints[0].Kind != "kafka" || d.Checkpoints[1].Kind != "files" {
		t.Fatalf("checkpoints %+v", d.Checkpoints)
	}
	if tp := d.Checkpoints[0].Topics; len(tp) != 1 || tp[0].Topic != "clicks" || tp[0].Partitions[0] != 45 || tp[0].Partitions[1] != 7 {
		t.Errorf("kafka offsets %+v", tp)
	}
}

// Once vacuum deleted a file older versions list, the oldest readable
// version is the first one without it.
func TestOldestVersionFollowsVacuum(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	ct, err := catalog.Open(ctx, fx.loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ct.Close()
	m, err := ct.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := ct.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(files, func(f catalog.DataFile) bool { return f.Bytes == fx.target })
	if m, err = ct.Commit(ctx, catalog.Change{Operation: "delete", Remove: files[i : i+1], DataChange: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Vacuum(ctx, catalog.VacuumOptions{Retain: 0, Force: true}); err != nil {
		t.Fatal(err)
	}
	d, err := inspect.Describe(ctx, open(t, fx.loc), inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.OldestVersion != m.Version || d.Rows != 16 {
		t.Fatalf("oldest version %d, %d rows; want %d (the big file's removal), 16", d.OldestVersion, d.Rows, m.Version)
	}
}

// Rows stops at the limit, reads the columns asked for in their order and
// one partition only, and refuses an unknown column or partition by
// name; a value holding a newline reads as it is.
func TestRowsLimitColumnsAndPartition(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	tbl := open(t, fx.loc)
	read := func(o inspect.RowOptions) (names []any, rows [][]any, err error) {
		_, err = inspect.Rows(ctx, tbl, o, func(row []any) error {
			if names == nil {
				names = row
				return nil
			}
			rows = append(rows, row)
			return nil
		})
		return names, rows, err
	}
	_, rows, err := read(inspect.RowOptions{Limit: 3})
	if err != nil || len(rows) != 3 || len(rows[0]) != 4 {
		t.Fatalf("limit 3: %d rows of %v, %v", len(rows), rows, err)
	}
	names, rows, err := read(inspect.RowOptions{Columns: []string{"note", "id"}, Partition: "date=2024-01-02"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []any{"note", "id"}) || len(rows) != 12 {
		t.Fatalf("columns %v, %d rows; want [note id], 12", names, len(rows))
	}
	if !slices.ContainsFunc(rows, func(r []any) bool { return r[0] == "line one\nline two" }) {
		t.Errorf("no row holds the note with a newline: %v", rows)
	}
	for _, r := range rows {
		if r[1].(int64) < 10004 {
			t.Errorf("row %v is not of 2024-01-02", r)
		}
	}
	if _, _, err := read(inspect.RowOptions{Columns: []string{"nope"}}); !errors.Is(err, inspect.ErrUnknownColumn) {
		t.Errorf("unknown column: %v", err)
	}
	if _, _, err := read(inspect.RowOptions{Partition: "date=1999-01-01"}); !errors.Is(err, inspect.ErrUnknownPartition) {
		t.Errorf("unknown partition: %v", err)
	}
	// Version 2 held the big file only.
	if _, rows, err := read(inspect.RowOptions{Version: 2, Columns: []string{"id"}}); err != nil || len(rows) != 4000 {
		t.Errorf("version 2: %d rows, %v; want 4000", len(rows), err)
	}
}

// A publish's note is what Describe reports as the last publish, the
// newest of them.
func TestRecordPublishThenDescribe(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	tbl := open(t, fx.loc)
	at := time.Date(2024, 2, 1, 12, 0, 0, 0, time.UTC)
	if err := inspect.RecordPublish(ctx, tbl.Store(), inspect.Publish{Target: "main.old", Warehouse: "sqlite:///w.db", Version: 2, Rows: 4000, At: at, Run: "r1"}); err != nil {
		t.Fatal(err)
	}
	want := inspect.Publish{Target: "main.events", Warehouse: "postgres://u:secret@host/db", Version: fx.version, Rows: 4016, At: at.Add(time.Hour), Run: "r2"}
	if err := inspect.RecordPublish(ctx, tbl.Store(), want); err != nil {
		t.Fatal(err)
	}
	d, err := inspect.Describe(ctx, tbl, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := d.LastPublish
	if p == nil || p.Target != want.Target || p.Version != want.Version || p.Rows != want.Rows || !p.At.Equal(want.At) || p.Run != "r2" {
		t.Fatalf("last publish %+v, want %+v", p, want)
	}
	if p.Warehouse == want.Warehouse {
		t.Errorf("the warehouse's password was recorded: %s", p.Warehouse)
	}
}
