package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/testenv"
)

// lookSchema has nested columns and a note that may hold a newline.
const lookSchema = "id:int64,event_time:timestamp,note:string?,tags:list<string?>?,s:struct<a:int64,b:string?>?"

// lookTable makes a small table at loc with sluice init and ingest: three
// good records (one note holding a newline, one with nested values) and
// one bad one, so that loc_quarantine exists.
func lookTable(t *testing.T, loc string) {
	t.Helper()
	land := filepath.Join(t.TempDir(), "landing")
	writeFile(t, land, "a.jsonl", strings.Join([]string{
		`{"id":1,"event_time":"2024-01-01T10:00:00Z","note":"two\nlines"}`,
		`{"id":2,"event_time":"2024-01-01T11:00:00Z","tags":["x",null],"s":{"a":7,"b":"bee"}}`,
		`{"id":"not a number","event_time":"2024-01-02T10:00:00Z"}`,
		`{"id":3,"event_time":"2024-01-02T10:00:00Z","note":"plain"}`,
	}, "\n")+"\n")
	mustSluice(t, "init", loc, "--schema", lookSchema, "--partition-by", "day(event_time)")
	if s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json")); s["rows_written"] != 3.0 || s["records_quarantined"] != 1.0 {
		t.Fatalf("ingest: %v", s)
	}
}

// jsonLines decodes show's JSON lines, one object a line.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, l := range lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// show prints JSON lines off a terminal, one row a line whatever its
// values hold, nested values as JSON; --json one object; the quarantine
// shows its reason; a wrong column is a usage error naming it and the
// table's columns, a wrong partition one line. describe reports the same
// table (checkDescribe). On local disk and on S3 alike, one table each.
func TestShowAndDescribeATableAndItsQuarantine(t *testing.T) {
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			loc := filepath.Join(t.TempDir(), "events")
			if kind == "s3" {
				loc = testenv.Location(t, testenv.S3)
			}
			lookTable(t, loc)
			rows := jsonLines(t, mustSluice(t, "show", loc).stdout)
			if len(rows) != 3 {
				t.Fatalf("%d rows, want 3", len(rows))
			}
			byID := map[float64]map[string]any{}
			for _, r := range rows {
				byID[r["id"].(float64)] = r
			}
			if byID[1]["note"] != "two\nlines" || byID[1]["event_time"] != "2024-01-01T10:00:00Z" {
				t.Errorf("row 1: %v", byID[1])
			}
			if got, _ := json.Marshal([]any{byID[2]["tags"], byID[2]["s"]}); string(got) != `[["x",null],{"a":7,"b":"bee"}]` {
				t.Errorf("row 2's nested values: %s", got)
			}

			s := summaryOf(t, mustSluice(t, "show", loc, "--json", "--limit", "1", "--columns", "note,id", "--partition", "date=2024-01-02"))
			if s["rows_shown"] != 1.0 || fmt.Sprint(s["columns"]) != "[note id]" || fmt.Sprint(s["rows"]) != "[map[id:3 note:plain]]" {
				t.Errorf("show --json: %v", s)
			}

			q := jsonLines(t, mustSluice(t, "show", loc+"_quarantine", "--columns", "position,reason").stdout)
			if len(q) != 1 || !strings.Contains(q[0]["reason"].(string), "id") {
				t.Errorf("quarantine rows: %v", q)
			}

			r := sluice(t, nil, "show", loc, "--columns", "id,nope")
			if r.code != 2 || !strings.Contains(r.stderr, `"nope"`) || !strings.Contains(r.stderr, `"event_time"`) {
				t.Errorf("unknown column: exit %d, %s", r.code, r.stderr)
			}
			failsWithOneLine(t, sluice(t, nil, "show", loc, "--partition", "date=1999-01-01"), `partition "date=1999-01-01"`, "no such partition")

			checkDescribe(t, loc, kind == "local")
			if kind == "local" {
				// A publish leaves the note describe reports.
				db := filepath.Join(t.TempDir(), "w.db")
				mustSluice(t, "publish", loc+"_quarantine", "--to", "sqlite://"+db, "--as", "bad")
				p, _ := summaryOf(t, mustSluice(t, "describe", loc+"_quarantine", "--json"))["last_publish"].(map[string]any)
				if p["target"] != "main.bad" || p["version"] != 2.0 || p["rows"] != 1.0 {
					t.Errorf("last publish %v", p)
				}
			}
		})
	}
}

// On a terminal, show aligns the rows: a name or value holding a control
// character prints escaped on its row's line, a long value cut with "…".
func TestShowTableOnATerminalEscapesAndCuts(t *testing.T) {
	str := catalog.Type{Kind: catalog.KindString}
	cols := []catalog.Column{{Name: "id", Type: catalog.Type{Kind: catalog.KindInt64}}, {Name: "no\tte", Type: str, Nullable: true}}
	var b strings.Builder
	writeTable(&b, cols, [][]any{{int64(1), "two\nlines"}, {int64(2), strings.Repeat("x", 100)}, {int64(3), nil}})
	got := lines(b.String())
	if len(got) != 4 {
		t.Fatalf("%d lines, want a header and 3 rows:\n%s", len(got), b.String())
	}
	for i, want := range []string{`"no\tte"`, `"two\nlines"`, strings.Repeat("x", 39) + "…", "NULL"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("line %d %q does not hold %q", i, got[i], want)
		}
	}
}
