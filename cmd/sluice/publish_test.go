package main

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/sluice-data/sluice/internal/testenv"
)

// TestPublishCommand: ingest, publish with --json, republish (unchanged),
// and the rows are in PostgreSQL.
func TestPublishCommand(t *testing.T) {
	url := testenv.PostgresURL(t)
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, land, "a.jsonl", 0, 120)
	mustSluice(t, "ingest", loc, "--from", land)

	s := summaryOf(t, mustSluice(t, "publish", loc, "--to", url, "--as", "events", "--json"))
	for k, want := range map[string]any{"command": "publish", "target": "public.events", "version": 2.0,
		"unchanged": false, "rows": 120.0, "swap_attempts": 1.0} {
		if s[k] != want {
			t.Errorf("summary %s = %v, want %v (%v)", k, s[k], want, s)
		}
	}
	for _, k := range []string{"bytes", "seconds", "lock_wait_seconds"} {
		if _, ok := s[k].(float64); !ok {
			t.Errorf("summary has no number %s: %v", k, s)
		}
	}
	if strings.Contains(strings.Join(mapStrings(s), " "), testenv.PostgresPassword) {
		t.Fatalf("the summary prints the password: %v", s)
	}
	s = summaryOf(t, mustSluice(t, "publish", loc, "--to", url, "--as", "events", "--json"))
	if s["unchanged"] != true || s["rows"] != 0.0 {
		t.Fatalf("republish summary %v: want unchanged, 0 rows", s)
	}
	// The password from PGPASSWORD, the URL without one.
	bare := strings.Replace(url, ":"+testenv.PostgresPassword+"@", "@", 1)
	r := sluice(t, []string{"PGPASSWORD=" + testenv.PostgresPassword}, "publish", loc, "--to", bare, "--as", "events_too", "--json")
	if r.code != 0 || summaryOf(t, r)["rows"] != 120.0 {
		t.Fatalf("publish with PGPASSWORD: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, sum int64
	if err := conn.QueryRow(context.Background(), "SELECT count(*), sum(list_id) FROM events").Scan(&n, &sum); err != nil || n != 120 || sum != 119*120/2 {
		t.Fatalf("events: %d rows, sum %d (%v): want 120, %d", n, sum, err, 119*120/2)
	}
}

func mapStrings(m map[string]any) []string {
	var out []string
	for _, v := range m {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestPublishCommandBadInput: one line on stderr (and in --json's error),
// exit 1 or 2, the password nowhere.
func TestPublishCommandBadInput(t *testing.T) {
	url := testenv.PostgresURL(t)
	loc := filepath.Join(t.TempDir(), "events")
	initEvents(t, loc)
	const secret = "Wr0ng-Pa55-sentinel"
	wrong := strings.Replace(url, testenv.PostgresPassword, secret, 1)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE TABLE y (a int); CREATE VIEW a_view AS SELECT 1 AS a"); err != nil {
		t.Fatal(err)
	}
	before := pgRelations(t, conn)
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"a wrong password":        {[]string{"--to", wrong, "--as", "events"}, 1, "password authentication failed"},
		"an unreachable host":     {[]string{"--to", "postgres://postgres:" + secret + "@127.0.0.1:1/x?connect_timeout=5", "--as", "events"}, 1, "connect: failed to connect"},
		"a missing database":      {[]string{"--to", strings.Replace(url, "/sluice_", "/nosuch_", 1), "--as", "events"}, 1, "does not exist"},
		"a name that is a view":   {[]string{"--to", url, "--as", "a_view"}, 1, "public.a_view is a view"},
		"an unknown scheme":       {[]string{"--to", "mysql://u:" + secret + "@h/db", "--as", "events"}, 2, "warehouse URL: scheme \"mysql\": want postgres://"},
		"an injecting name":       {[]string{"--to", url, "--as", "x; DROP TABLE y"}, 2, "invalid target name"},
		"redshift, a local table": {[]string{"--to", "redshift://u:" + secret + "@h/db", "--as", "events", "--iam-role", "arn:aws:iam::123456789012:role/r"}, 1, "redshift loads only a table on s3://"},
		"no --as":                 {[]string{"--to", url}, 2, "--as NAME"},
		"a zero lock timeout":     {[]string{"--to", url, "--as", "e", "--lock-timeout", "0s"}, 2, "--lock-timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, json := range []bool{false, true} {
				args := append([]string{"publish", loc}, c.args...)
				if json {
					args = append(args, "--json", "-v")
				}
				r := sluice(t, nil, args...)
				if r.code != c.code {
					t.Fatalf("exit %d, want %d: %s", r.code, c.code, r.stderr)
				}
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Fatalf("the password is printed:\n%s\n%s", r.stdout, r.stderr)
				}
				if !json {
					msg := strings.TrimRight(r.stderr, "\n")
					if c.code == 2 { // a usage error adds where to find the usage
						msg, _, _ = strings.Cut(msg, "\nRun 'sluice publish --help' for usage.")
					}
					if strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
						t.Fatalf("stderr %q: want one line saying %q", r.stderr, c.want)
					}
					continue
				}
				if s := summaryOf(t, r); !strings.Contains(s["error"].(string), c.want) {
					t.Fatalf("--json error %q does not say %q", s["error"], c.want)
				}
			}
		})
	}
	if after := pgRelations(t, conn); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("the warehouse changed:\nbefore %v\nafter  %v", before, after)
	}
}

// pgRelations lists the public schema's relations with kind and oid.
func pgRelations(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT c.relname || ':' || c.relkind::text || ':' || c.oid::text FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestPublishCommandSQLite: publish into a SQLite file with --json, the
// rows are there, and a republish says nothing changed.
func TestPublishCommandSQLite(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, land, "a.jsonl", 0, 120)
	mustSluice(t, "ingest", loc, "--from", land)
	to := "sqlite://" + filepath.Join(dir, "warehouse.db")
	s := summaryOf(t, mustSluice(t, "publish", loc, "--to", to, "--as", "events", "--json"))
	for k, want := range map[string]any{"target": "main.events", "version": 2.0, "unchanged": false, "rows": 120.0} {
		if s[k] != want {
			t.Errorf("summary %s = %v, want %v (%v)", k, s[k], want, s)
		}
	}
	if s = summaryOf(t, mustSluice(t, "publish", loc, "--to", to, "--as", "events", "--json")); s["unchanged"] != true {
		t.Fatalf("republish summary %v: want unchanged", s)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "warehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, sum int64
	if err := db.QueryRow("SELECT count(*), sum(list_id) FROM events").Scan(&n, &sum); err != nil || n != 120 || sum != 119*120/2 {
		t.Fatalf("events: %d rows, sum %d (%v): want 120, %d", n, sum, err, 119*120/2)
	}
}

// TestPublishCommandProgressOnATTY: at a terminal (script(1) gives the
// command a pseudo-terminal of 120 columns), publish draws a progress bar
// that reaches every row; with --json it draws none.
func TestPublishCommandProgressOnATTY(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1), from util-linux, runs the command at a terminal: %v", err)
	}
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, land, "a.jsonl", 0, 3000)
	mustSluice(t, "ingest", loc, "--from", land)
	at := func(args ...string) string {
		t.Helper()
		line := "stty cols 120 rows 40; exec " + sluiceBin + " publish " + loc + " --to sqlite://" + filepath.Join(dir, "w.db") + " --as events --force"
		cmd := exec.Command(script, "-qefc", line+" "+strings.Join(args, " "), "/dev/null")
		cmd.Env = append(os.Environ(), testenv.Env()...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	if out := at(); !strings.Contains(out, "publishing 3000/3000") || !strings.Contains(out, "100 %") {
		t.Fatalf("no progress bar reaching 3000/3000 at a terminal:\n%q", out)
	}
	if out := at("--json"); strings.Contains(out, "publishing ") {
		t.Fatalf("a progress bar with --json:\n%q", out)
	}
}

// TestPublishCommandDropDependents: a trigger on the target cannot
// follow it to the new table; publish refuses before loading, on one
// line naming it, and --drop-dependents (in --help) leaves it behind.
func TestPublishCommandDropDependents(t *testing.T) {
	if help := mustSluice(t, "publish", "--help").stdout; !strings.Contains(help, "--drop-dependents") {
		t.Fatalf("publish --help does not tell of --drop-dependents:\n%s", help)
	}
	url := testenv.PostgresURL(t)
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, land, "a.jsonl", 0, 50)
	mustSluice(t, "ingest", loc, "--from", land)
	mustSluice(t, "publish", loc, "--to", url, "--as", "events")
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{"CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$",
		"CREATE TRIGGER events_touch BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION touch()"} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	writeEvents(t, land, "b.jsonl", 50, 10)
	mustSluice(t, "ingest", loc, "--from", land)
	failsWithOneLine(t, sluice(t, nil, "publish", loc, "--to", url, "--as", "events"), "events_touch", "--drop-dependents")
	s := summaryOf(t, mustSluice(t, "publish", loc, "--to", url, "--as", "events", "--drop-dependents", "--json"))
	if s["rows"] != 60.0 {
		t.Fatalf("publish --drop-dependents: %v, want 60 rows", s)
	}
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d triggers on the new events (%v), want none", n, err)
	}
}
