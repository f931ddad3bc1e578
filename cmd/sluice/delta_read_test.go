package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

// deltaEvent is one row of the events Delta table the tests build: user,
// at and amount are in the files; country and region are partition
// columns, in the log only.
type deltaEvent struct {
	user    int64
	country *string
	at      time.Time
	amount  int64
	region  *int32
}

// key is the row as text, the same whoever reads it: NULL for a NULL.
func (e deltaEvent) key() string {
	country, region := "NULL", "NULL"
	if e.country != nil {
		country = *e.country
	}
	if e.region != nil {
		region = fmt.Sprint(*e.region)
	}
	return fmt.Sprintf("%d|%s|%d|%d|%s", e.user, country, e.at.Unix(), e.amount, region)
}

// deltaEvents builds a Delta table of events as another engine would:
// its schema puts the partition columns country (string) and region
// (integer) between data columns, and its files hold only user, at and
// amount. It remembers every file's rows and which were removed, so a
// test knows the table's live rows without reading it.
type deltaEvents struct {
	t       *testing.T
	dir     string
	id      string
	tbl     *delta.Table
	st      cloud.Store
	rng     *rand.Rand
	version int64
	files   map[string][]deltaEvent
	removed map[string]bool
}

const deltaEventsSchema = `{"type":"struct","fields":[` +
	`{"name":"user","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"country","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"at","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"amount","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"region","type":"integer","nullable":true,"metadata":{}}]}`

// newDeltaEvents creates the table in dir: version 0, no file.
func newDeltaEvents(t *testing.T, dir string, seed uint64) *deltaEvents {
	t.Helper()
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &deltaEvents{t: t, dir: dir, id: uuid.NewString(), tbl: delta.New(st), st: st, rng: rand.New(rand.NewPCG(seed, 7)),
		files: map[string][]deltaEvent{}, removed: map[string]bool{}}
	err = d.tbl.Commit(context.Background(), 0, []delta.Action{
		{Protocol: &delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{Metadata: &delta.Metadata{ID: d.id, Format: delta.Format{Provider: "parquet", Options: map[string]string{}},
			SchemaString: deltaEventsSchema, PartitionColumns: []string{"country", "region"}, Configuration: map[string]string{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// deltaPart is one partition of the table: its country and region, nil for
// NULL.
type deltaPart struct {
	country *string
	region  *int32
}

func deltaPtr[T any](v T) *T { return &v }

// deltaParts are the partitions files go to; one has a NULL region.
var deltaParts = []deltaPart{{deltaPtr("de"), deltaPtr[int32](1)}, {deltaPtr("de"), deltaPtr[int32](2)}, {deltaPtr("fr"), deltaPtr[int32](1)}, {deltaPtr("se"), nil}}

// commit commits actions as the next version and returns it.
func (d *deltaEvents) commit(actions []delta.Action) int64 {
	d.t.Helper()
	snap, err := d.tbl.Snapshot(context.Background(), delta.Latest)
	if err != nil {
		d.t.Fatal(err)
	}
	v, err := d.tbl.CommitRebased(context.Background(), delta.Rebase{Read: snap.Version}, actions)
	if err != nil {
		d.t.Fatal(err)
	}
	d.version = v
	return v
}

// add writes perPart files of rows random events in every partition,
// on days first to first+days-1, and commits them in one version.
func (d *deltaEvents) add(perPart, rows int, first time.Time, days int) int64 {
	d.t.Helper()
	schema, err := catalog.ParseSchema("user:int64,at:timestamp?,amount:int64?")
	if err != nil {
		d.t.Fatal(err)
	}
	var adds []delta.Action
	for _, p := range deltaParts {
		vals := map[string]*string{"country": p.country, "region": nil}
		if p.region != nil {
			vals["region"] = deltaPtr(fmt.Sprint(*p.region))
		}
		for range perPart {
			name := catalog.HiveDir([]string{"country", "region"}, vals) + "/part-" + uuid.NewString() + ".parquet"
			var evs []deltaEvent
			var data [][]any
			for range rows {
				e := deltaEvent{user: 1 + d.rng.Int64N(12), country: p.country, region: p.region,
					at: first.Add(time.Duration(d.rng.Int64N(int64(days)*86400)) * time.Second), amount: d.rng.Int64N(2000) - 500}
				evs = append(evs, e)
				data = append(data, []any{e.user, e.at, e.amount})
			}
			size, _, err := pqio.WriteParquet(context.Background(), d.st, name, schema, data)
			if err != nil {
				d.t.Fatal(err)
			}
			d.files[name] = evs
			adds = append(adds, delta.Action{Add: &delta.Add{Path: delta.EncodePath(name), PartitionValues: vals, Size: size,
				ModificationTime: time.Now().UnixMilli(), DataChange: true, Stats: fmt.Sprintf(`{"numRecords":%d}`, rows)}})
		}
	}
	return d.commit(adds)
}

// remove deletes one live file of partition p, as a DELETE of its rows
// would (dataChange true), and returns the version.
func (d *deltaEvents) remove(p deltaPart) int64 {
	d.t.Helper()
	for _, name := range sortedKeys(d.files) {
		if d.removed[name] || d.files[name][0].part() != p.String() {
			continue
		}
		d.removed[name] = true
		now := time.Now().UnixMilli()
		return d.commit([]delta.Action{{Remove: &delta.Remove{Path: delta.EncodePath(name), DeletionTimestamp: &now, DataChange: true}}})
	}
	d.t.Fatalf("no live file in partition %s to remove", p)
	return 0
}

// String is the partition's values as text, NULL for a NULL.
func (p deltaPart) String() string { return deltaEvent{country: p.country, region: p.region}.part() }

// part is the event's partition as text.
func (e deltaEvent) part() string {
	k := strings.Split(e.key(), "|")
	return k[1] + "|" + k[4]
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// live are the rows of the files not removed: the table's rows, as the
// test wrote them.
func (d *deltaEvents) live() []deltaEvent {
	var out []deltaEvent
	for name, evs := range d.files {
		if !d.removed[name] {
			out = append(out, evs...)
		}
	}
	return out
}

// removedRows counts the rows of the removed files.
func (d *deltaEvents) removedRows() int {
	n := 0
	for name := range d.removed {
		n += len(d.files[name])
	}
	return n
}

// deltaEventKeys are rows as text, sorted.
func deltaEventKeys(evs []deltaEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.key()
	}
	slices.Sort(out)
	return out
}

// buildDeltaEvents is the table the read tests share: 4 partitions of 3
// files of 40 events over 10 days, one file removed by a DELETE-like
// commit, then sluice's compaction of the rest (an OPTIMIZE commit that
// removes the files it rewrites).
func buildDeltaEvents(t *testing.T, dir string) *deltaEvents {
	t.Helper()
	d := newDeltaEvents(t, dir, 42)
	d.add(3, 40, time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), 10)
	d.remove(deltaParts[0])
	sum := summaryOf(t, mustSluice(t, "--json", "compact", dir, "--min-input-files", "2", "--include-current"))
	vs, _ := sum["versions"].([]any)
	if len(vs) == 0 {
		t.Fatalf("compaction of the Delta table committed nothing: %v", sum)
	}
	d.version = int64(vs[len(vs)-1].(float64))
	if r := deltaRead(t, dir, -1); r.Rows != int64(len(d.live())) || d.removedRows() == 0 {
		t.Fatalf("the independent reader reads %d rows; the test wrote %d live ones (%d removed)", r.Rows, len(d.live()), d.removedRows())
	}
	return d
}

// rollupOutputRows are a sluice table's rows as text, sorted, and its schema.
func rollupOutputRows(t *testing.T, loc string) ([]string, string) {
	t.Helper()
	ctx := context.Background()
	tb, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		st, key, err := tb.DataFileStore(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := pqio.ReadParquetRows(ctx, st, key, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = "NULL"
				if v != nil {
					cells[i] = pqio.FormatValue(m.Schema.Columns[i].Type, v)
				}
			}
			out = append(out, strings.Join(cells, "|"))
		}
	}
	slices.Sort(out)
	return out, m.Schema.String()
}

// checkRollupTotals checks a rollup output (keys country, user; measures
// total=sum(amount) over the snapshot's bases, events=count()) against
// the events the test wrote: per country, the events counted over every
// day and the running totals on the last day.
func checkRollupTotals(t *testing.T, rows []string, live []deltaEvent, base map[string]int64, through string) {
	t.Helper()
	want := map[string][2]int64{} // country: events, last day's total
	for k, b := range base {
		country, _, _ := strings.Cut(k, "|")
		w := want[country]
		w[1] += b
		want[country] = w
	}
	for _, e := range live {
		w := want[*e.country]
		w[0]++
		w[1] += e.amount
		want[*e.country] = w
	}
	got := map[string][2]int64{}
	for _, r := range rows {
		c := strings.Split(r, "|") // country, user, date, total, events
		var total, events int64
		fmt.Sscan(c[3], &total)
		fmt.Sscan(c[4], &events)
		g := got[c[0]]
		g[0] += events
		if c[2] == through {
			g[1] += total
		}
		got[c[0]] = g
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("per country [events, last day's total]: the output has %v; the events written %v", got, want)
	}
}

// rollup --source reads a Delta table as a sluice table: the partition
// columns from the log, the files its log removed not at all. Its output
// is row for row the rollup of the same rows imported as a sluice table,
// and its totals those of the events written. A rerun with the Delta
// table unchanged commits nothing; after a new Delta commit it recomputes
// in full, saying the source is a Delta table, and still agrees.
func TestRollupReadsADeltaTable(t *testing.T) {
	dir := t.TempDir()
	src, imported := filepath.Join(dir, "events"), filepath.Join(dir, "imported")
	d := buildDeltaEvents(t, src)
	mustSluice(t, "import", imported, "--from", src)
	snap := filepath.Join(dir, "snapshot.csv")
	base := map[string]int64{"de|1": 100, "fr|3": 7, "se|12": -40, "xx|5": 1}
	var csv strings.Builder
	csv.WriteString("country,user,total,date\n")
	for _, k := range sortedKeys(base) {
		c, u, _ := strings.Cut(k, "|")
		fmt.Fprintf(&csv, "%s,%s,%d,2024-05-31\n", c, u, base[k])
	}
	if err := os.WriteFile(snap, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rollup := func(out, source string) map[string]any {
		t.Helper()
		return summaryOf(t, mustSluice(t, "--json", "rollup", out, "--source", source, "--snapshot", snap, "--key", "country,user",
			"--time", "at", "--measure", "total=sum(amount)", "--measure", "events=count()"))
	}
	compare := func(outD, outS string, live []deltaEvent) {
		t.Helper()
		rowsD, schemaD := rollupOutputRows(t, outD)
		rowsS, schemaS := rollupOutputRows(t, outS)
		if schemaD != schemaS || !slices.Equal(rowsD, rowsS) {
			t.Fatalf("the rollup of the Delta table (%s, %d rows) differs from the rollup of its import (%s, %d rows)",
				schemaD, len(rowsD), schemaS, len(rowsS))
		}
		through := ""
		for _, e := range live {
			through = max(through, e.at.UTC().Format(time.DateOnly))
		}
		checkRollupTotals(t, rowsD, live, base, through)
	}
	outD, outS := filepath.Join(dir, "out-delta"), filepath.Join(dir, "out-sluice")
	sd, ss := rollup(outD, src), rollup(outS, imported)
	if sd["events_read"] != float64(len(d.live())) || sd["source_version_to"] != float64(d.version) || sd["full_reason"] != "a new output table" {
		t.Errorf("rollup of the Delta table: %v; want %d events read, source version %d", sd, len(d.live()), d.version)
	}
	if ss["events_read"] != sd["events_read"] || ss["cells_written"] != sd["cells_written"] {
		t.Errorf("rollup of the import %v; of the Delta table %v", ss, sd)
	}
	compare(outD, outS, d.live())

	if again := rollup(outD, src); again["version"] != 0.0 || again["source_version_to"] != float64(d.version) {
		t.Errorf("a rerun on the same Delta version: %v; want nothing committed", again)
	}
	d.add(1, 25, time.Date(2024, 6, 8, 0, 0, 0, 0, time.UTC), 3) // late events and new ones
	mustSluice(t, "import", imported, "--from", src)
	sd, ss = rollup(outD, src), rollup(outS, imported)
	if sd["full"] != true || sd["full_reason"] != "the source is a Delta table" || sd["source_version_to"] != float64(d.version) {
		t.Errorf("rollup after a Delta commit: %v; want a full run because the source is a Delta table, at version %d", sd, d.version)
	}
	if sd["events_read"] != float64(len(d.live())) || ss["version"] == 0.0 {
		t.Errorf("rollup after a Delta commit read %v events (%d are live); of the import: %v", sd["events_read"], len(d.live()), ss)
	}
	compare(outD, outS, d.live())
}

// deltaSQLiteRows reads the published events from SQLite, as text, sorted,
// with the count and the sum of amount a user would check them by.
func deltaSQLiteRows(t *testing.T, path, table string) (rows []string, n, sum int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT count(*), coalesce(sum(amount), 0) FROM "+table).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	rs, err := db.Query(`SELECT "user", country, CAST(strftime('%s', at) AS INTEGER), amount, region FROM ` + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var e deltaEvent
		var unix int64
		var country sql.NullString
		var region sql.NullInt32
		if err := rs.Scan(&e.user, &country, &unix, &e.amount, &region); err != nil {
			t.Fatal(err)
		}
		e.at = time.Unix(unix, 0)
		if country.Valid {
			e.country = &country.String
		}
		if region.Valid {
			e.region = &region.Int32
		}
		rows = append(rows, e.key())
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	return rows, n, sum
}

// deltaAmountSum is the sum of amount over evs: the checksum a user would
// compare.
func deltaAmountSum(evs []deltaEvent) int64 {
	var s int64
	for _, e := range evs {
		s += e.amount
	}
	return s
}

// publish loads a Delta table into SQLite as it does a sluice table: the
// live rows exactly (count, sum of amount, and row by row, partition
// columns from the log, a NULL region as NULL), none of the file its log
// removed; the records name the Delta table's id and version. Publishing
// again at that version does nothing; after a new commit it loads again.
func TestPublishADeltaTableToSQLite(t *testing.T) {
	dir := t.TempDir()
	src, db := filepath.Join(dir, "events"), filepath.Join(dir, "warehouse.db")
	d := buildDeltaEvents(t, src)
	publish := func() map[string]any {
		t.Helper()
		return summaryOf(t, mustSluice(t, "--json", "publish", src, "--to", "sqlite://"+db, "--as", "events"))
	}
	check := func(s map[string]any) {
		t.Helper()
		live := d.live()
		if s["unchanged"] != false || s["version"] != float64(d.version) || s["rows"] != float64(len(live)) {
			t.Fatalf("publish summary %v: want version %d loaded, %d rows", s, d.version, len(live))
		}
		rows, n, sum := deltaSQLiteRows(t, db, "events")
		if n != int64(len(live)) || sum != deltaAmountSum(live) {
			t.Errorf("SQLite holds %d rows, sum(amount) %d; the live rows are %d, sum %d (%d rows removed)", n, sum, len(live), deltaAmountSum(live), d.removedRows())
		}
		if want := deltaEventKeys(live); !slices.Equal(rows, want) {
			t.Errorf("SQLite's rows differ from the live rows written (%d and %d)", len(rows), len(want))
		}
		conn, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var id string
		var v int64
		if err := conn.QueryRow("SELECT identity, version FROM sluice_published WHERE target = 'events'").Scan(&id, &v); err != nil || id != "delta:"+d.id || v != d.version {
			t.Errorf("sluice_published: identity %q, version %d (%v); want delta:%s, %d", id, v, err, d.id, d.version)
		}
	}
	check(publish())
	if s := publish(); s["unchanged"] != true || s["version"] != float64(d.version) {
		t.Errorf("publish again at version %d: %v; want unchanged", d.version, s)
	}
	d.add(1, 30, time.Date(2024, 6, 11, 0, 0, 0, 0, time.UTC), 2)
	check(publish())
}

// publish loads a Delta table into PostgreSQL with its columns in the
// Delta schema's order and of its types (region integer, from the log),
// the live rows exactly; a second publish at that version does nothing.
func TestPublishADeltaTableToPostgres(t *testing.T) {
	url := testenv.PostgresURL(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "events")
	d := buildDeltaEvents(t, src)
	s := summaryOf(t, mustSluice(t, "--json", "publish", src, "--to", url, "--as", "events"))
	live := d.live()
	if s["unchanged"] != false || s["version"] != float64(d.version) || s["rows"] != float64(len(live)) {
		t.Fatalf("publish summary %v: want version %d loaded, %d rows", s, d.version, len(live))
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cols, err := conn.Query(ctx, `SELECT column_name || ' ' || data_type FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name = 'events' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(cols, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"user bigint", "country text", "at timestamp with time zone", "amount bigint", "region integer"}; !slices.Equal(got, want) {
		t.Errorf("PostgreSQL columns %v; the Delta schema's are %v", got, want)
	}
	var n, sum int64
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(amount) FROM events").Scan(&n, &sum); err != nil || n != int64(len(live)) || sum != deltaAmountSum(live) {
		t.Errorf("PostgreSQL holds %d rows, sum(amount) %d (%v); the live rows are %d, sum %d", n, sum, err, len(live), deltaAmountSum(live))
	}
	rs, err := conn.Query(ctx, `SELECT "user", country, extract(epoch FROM at)::bigint, amount, region FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for rs.Next() {
		var e deltaEvent
		var unix int64
		if err := rs.Scan(&e.user, &e.country, &unix, &e.amount, &e.region); err != nil {
			t.Fatal(err)
		}
		e.at = time.Unix(unix, 0)
		rows = append(rows, e.key())
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	if want := deltaEventKeys(live); !slices.Equal(rows, want) {
		t.Errorf("PostgreSQL's rows differ from the live rows written (%d and %d)", len(rows), len(want))
	}
	if s := summaryOf(t, mustSluice(t, "--json", "publish", src, "--to", url, "--as", "events")); s["unchanged"] != true {
		t.Errorf("publish again at version %d: %v; want unchanged", d.version, s)
	}
}

// A Delta table sluice cannot read as Delta defines it is refused by
// rollup and publish, exit 1, one line naming the feature, and nothing
// is written: no output table, no warehouse file.
func TestRollupAndPublishRefuseDeltaFeatures(t *testing.T) {
	for name, says := range map[string]string{
		"dv-partitioned-with-checkpoint":     "deletion vectors",
		"table-with-columnmapping-mode-name": "column mapping",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src, out, db := filepath.Join(dir, "t"), filepath.Join(dir, "out"), filepath.Join(dir, "w.db")
			copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta-golden", name), src)
			snap := filepath.Join(dir, "snapshot.csv")
			if err := os.WriteFile(snap, []byte("k,date\n1,2024-01-01\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := sluice(t, nil, "rollup", out, "--source", src, "--snapshot", snap, "--key", "k", "--time", "at", "--measure", "n=count()")
			failsWithOneLine(t, r, "rollup "+out, says)
			if _, err := os.Stat(filepath.Join(out, "_sluice")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after the refused rollup %s/_sluice: %v, want none", out, err)
			}
			r = sluice(t, nil, "publish", src, "--to", "sqlite://"+db, "--as", "events")
			failsWithOneLine(t, r, "publish "+src+" as events", says)
			if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after the refused publish %s: %v, want no file", db, err)
			}
		})
	}
}
