package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/inspect"
)

// writeEvents makes a sluice table at loc through catalog: four commits
// of small files on two days, and a quarantine beside it holding one bad
// record, as ingest leaves them.
func writeEvents(t *testing.T, loc string) {
	t.Helper()
	ctx := context.Background()
	create := func(loc, schema, part string, commits [][][]any) {
		tbl, err := catalog.Open(ctx, loc, catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Close()
		s, err := catalog.ParseSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := catalog.ParsePartitionSpec(part, s)
		if err != nil {
			t.Fatal(err)
		}
		m, err := tbl.Create(ctx, s, spec, nil, "run-create")
		if err != nil {
			t.Fatal(err)
		}
		for _, rows := range commits {
			files, err := tbl.WriteFiles(ctx, m, rows)
			if err != nil {
				t.Fatal(err)
			}
			if m, err = tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: "run-1", Add: files, DataChange: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	day := func(d int) time.Time { return time.Date(2024, 1, d, 10, 0, 0, 0, time.UTC) }
	var commits [][][]any
	for i := range 12 {
		commits = append(commits, [][]any{{int64(2 * i), day(1 + i%2)}, {int64(2*i + 1), day(1 + i%2)}})
	}
	create(loc, "id:int64,event_time:timestamp", "day(event_time)", commits)
	create(inspect.QuarantineOf(loc), "source:string,position:string,reason:string,raw:binary,ingested_at:timestamp", "day(ingested_at)",
		[][][]any{{{"landing", "a.jsonl:3", "line 3: want an object <b>", []byte("[1]"), time.Now().UTC()}}})
}

// A table's page draws what describe reports: the histogram and the
// small-file debt as labelled SVG, the versions with their operations,
// the quarantine's reasons with counts; the tables page lists it and
// its quarantine.
func TestTablePages(t *testing.T) {
	l := newLake(t)
	writeEvents(t, l.p.Tables["events"].Location)
	b := l.serveConsole(t, "")

	list := b.get("/tables")
	tables := one(t, "table#tables", find(list.doc, sel("table", "id", "tables")))
	row := find(tables, sel("tr", "data-table", "events"))
	if len(row) != 2 || !hasClass(row[1], "quarantine") {
		t.Fatalf("events rows: %d, want the table and its quarantine", len(row))
	}
	if a := one(t, "link", find(row[0], sel("a"))); attr(a, "href") != "/tables/events" {
		t.Errorf("link %q", attr(a, "href"))
	}
	if cells := text(row[0]); !strings.Contains(cells, "sluice") || !strings.Contains(cells, "24") {
		t.Errorf("events row %q: want its format and 24 rows", cells)
	}

	page := b.get("/tables/events")
	detail := one(t, "section#table-detail", find(page.doc, sel("section", "id", "table-detail")))
	hist := one(t, "svg#histogram", find(detail, sel("svg", "id", "histogram")))
	if attr(hist, "role") != "img" || !strings.Contains(attr(hist, "aria-label"), "files") || len(find(hist, sel("rect"))) == 0 {
		t.Errorf("histogram: %v, %d bars", hist.Attr, len(find(hist, sel("rect"))))
	}
	debt := one(t, "svg#debt", find(detail, sel("svg", "id", "debt")))
	if bars := find(debt, sel("rect")); len(bars) != 2 || !strings.Contains(attr(debt, "aria-label"), "date=2024-01-01: ") {
		t.Errorf("debt: %d bars, label %q; want the two days", len(bars), attr(debt, "aria-label"))
	}
	versions := one(t, "table#versions", find(detail, sel("table", "id", "versions")))
	if rows := find(versions, sel("tr")); len(rows) < 5 || !strings.Contains(text(versions), "append") {
		t.Errorf("versions: %d rows %q", len(rows), text(versions))
	}
	q := one(t, "table#quarantine", find(detail, sel("table", "id", "quarantine")))
	if !strings.Contains(text(q), "line 3: want an object <b>") {
		t.Errorf("quarantine reasons %q", text(q))
	}
}
