package warehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

const redshiftRole = "arn:aws:iam::123456789012:role/sluice-loader"

// TestRedshiftStatementsGolden: the statements a Redshift publish runs,
// in order, for a first publish and a replacing one (--keep-old too),
// and the manifest COPY reads. Never run against Redshift: these are
// what its documentation says it takes.
func TestRedshiftStatementsGolden(t *testing.T) {
	cols, err := redshiftColumnDefs(mustSchema(t, "id:int64,u:uuid?,ts:timestamp?,d:date?,dec:decimal(38,10)?,i:int32?,f:float64?,b:bool?,s:string?,bin:binary?"))
	if err != nil {
		t.Fatal(err)
	}
	tgt := target{schema: "mart", name: "events"}
	const manifest = "s3://lake/events/_sluice_publish/redshift-mart.events-v7.manifest"
	var out strings.Builder
	query, add := redshiftIdentityColumn(tgt)
	for _, c := range []struct {
		title                    string
		exists, oldKept, keepOld bool
	}{{"first publish", false, false, false}, {"replacing NAME", true, false, false}, {"replacing NAME, --keep-old", true, false, true},
		{"replacing NAME and the NAME_old an earlier --keep-old kept", true, true, false}} {
		p, err := planRedshift(tgt, cols, manifest, redshiftRole, c.exists, c.oldKept, c.keepOld)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("-- " + c.title + "\nBEGIN;\n")
		for _, s := range redshiftRecordTable(tgt) {
			out.WriteString(s + ";\n")
		}
		out.WriteString(query + ";\n-- when it counts none, records of an older sluice:\n" + add + ";\n")
		for _, s := range slices.Concat(p.before, []string{p.copy}, p.swap) {
			out.WriteString(s + ";\n")
		}
		del, ins := redshiftRecord(tgt)
		out.WriteString(del + ";\n" + ins + ";\nCOMMIT;\n\n")
	}
	golden(t, "redshift/publish.sql", []byte(out.String()))

	var entries []manifestEntry
	for i, n := range []int64{1024, 2_000_000_000} {
		var e manifestEntry
		e.URL, e.Mandatory, e.Meta.ContentLength = "s3://lake/events/day=2024-01-0"+string(rune('1'+i))+"/part-0.parquet", true, n
		entries = append(entries, e)
	}
	b, err := encodeManifest(entries)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "redshift/manifest.json", b)
}

// copyFromManifest stands in for Redshift's COPY on PostgreSQL, which
// cannot read S3: it reads the manifest the publish wrote, checks that it
// lists exactly the version's live files with their sizes, and loads
// those files into the table the COPY names, with binary COPY.
func copyFromManifest(t *testing.T, tbl *catalog.Table) redshiftLoader {
	return func(ctx context.Context, tx pgx.Tx, stmt string) error {
		m := regexp.MustCompile(`^COPY "([^"]+)"\."([^"]+)" FROM '(s3://[^']+)' IAM_ROLE '` + regexp.QuoteMeta(redshiftRole) + `' FORMAT AS PARQUET MANIFEST$`).FindStringSubmatch(stmt)
		if m == nil {
			t.Errorf("COPY statement %q", stmt)
			return errors.New("unexpected COPY")
		}
		key := strings.TrimPrefix(strings.TrimPrefix(m[3], tbl.Store().URL("")), "/")
		rc, _, err := tbl.Store().Get(ctx, key)
		if err != nil {
			return err
		}
		defer rc.Close()
		body, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		var man struct{ Entries []manifestEntry }
		if err := json.Unmarshal(body, &man); err != nil {
			return err
		}
		ver, err := tbl.Latest(ctx)
		if err != nil {
			return err
		}
		files, err := tbl.Files(ctx, ver)
		if err != nil {
			return err
		}
		byURL := map[string]catalog.DataFile{}
		for _, f := range files {
			byURL[tbl.FileURL(f)] = f
		}
		var listed []catalog.DataFile
		for _, e := range man.Entries {
			f, ok := byURL[e.URL]
			if !ok || !e.Mandatory || e.Meta.ContentLength != f.Bytes {
				t.Errorf("manifest entry %+v: not a live file of the version with its size", e)
			}
			listed = append(listed, f)
		}
		if len(listed) != len(files) {
			t.Errorf("manifest lists %d files, the version has %d", len(listed), len(files))
		}
		_, err = copyIn(ctx, tx.Conn().PgConn(), tbl, ver.Schema, target{schema: m[1], name: m[2]}, &fileQueue{files: listed}, false, nil)
		return err
	}
}

// newTableAt is newTable at loc.
func newTableAt(t *testing.T, loc, schema string, batches ...[][]any) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	if _, err := tbl.Create(ctx, mustSchema(t, schema), catalog.PartitionSpec{}, nil, "test"); err != nil {
		t.Fatal(err)
	}
	for _, rows := range batches {
		appendRows(t, tbl, rows)
	}
	return tbl
}

// TestRedshiftPublishOnPostgres runs a Redshift publish against the real
// PostgreSQL server, everything but the COPY (copyFromManifest stands in):
// the records table and its lock, NAME_new in Redshift's types, the
// rename swap, the record; a republish changes nothing; the next version
// replaces the table whole and leaves no _new or _old.
func TestRedshiftPublishOnPostgres(t *testing.T) {
	pg := testenv.PostgresURL(t)
	to := "redshift" + strings.TrimPrefix(pg, "postgres")
	conn := connectT(t, pg)
	ctx := context.Background()
	const schema = "id:int64,ts:timestamp?,dec:decimal(38,10)?,i:int32?,f:float64?,b:bool?,s:string?"
	tbl := newTableAt(t, testenv.Location(t, testenv.S3), schema, xRows7(0, 100))
	publish := func(o Options) Result {
		t.Helper()
		u := mustURL(t, to)
		tgt, err := parseTarget("events")
		if err != nil {
			t.Fatal(err)
		}
		o.To, o.IAMRole, o.Logger = to, redshiftRole, discard
		res, err := publishRedshift(ctx, tbl, tgt, u, o, copyFromManifest(t, tbl))
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		return res
	}
	if res := publish(Options{}); res.Rows != 100 || res.Unchanged {
		t.Fatalf("first publish: %+v, want 100 rows", res)
	}
	if res := publish(Options{}); !res.Unchanged {
		t.Fatalf("republish: %+v, want unchanged", res)
	}
	appendRows(t, tbl, xRows7(100, 50))
	res := publish(Options{})
	if res.Rows != 150 {
		t.Fatalf("second publish: %+v, want 150 rows", res)
	}
	if n := count(t, conn, "SELECT count(*) FROM events"); n != 150 {
		t.Fatalf("events has %d rows, want 150", n)
	}
	// DuckDB cannot read S3 offline (httpfs): compare with the table's own reading.
	if got, want := warehouseRows(t, conn, "events", mustSchema(t, schema)), tableRows(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("rows differ from the table's:\n got %q\nwant %q", got, want)
	}
	var typ string
	if err := conn.QueryRow(ctx, "SELECT data_type || coalesce('(' || character_maximum_length || ')', '') FROM information_schema.columns WHERE table_name = 'events' AND column_name = 's'").Scan(&typ); err != nil || typ != "character varying(65535)" {
		t.Fatalf("s is %q (%v), want Redshift's longest VARCHAR", typ, err)
	}
	if v := count(t, conn, "SELECT version FROM sluice_published WHERE target = 'events'"); v != res.Version {
		t.Fatalf("sluice_published records version %d, want %d", v, res.Version)
	}
	if n := count(t, conn, "SELECT count(*) FROM pg_class WHERE relname IN ('events_new', 'events_old')"); n != 0 {
		t.Fatalf("%d of events_new/_old left behind", n)
	}
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, conn, "SELECT count(*) FROM sluice_published WHERE identity = $1", tbl.Identity(m)); n != 1 {
		t.Fatal("sluice_published does not record the table's identity")
	}

	// The events_old a publish kept is the next one's to drop; someone's
	// events_new or events_old is refused and left as it is.
	appendRows(t, tbl, xRows7(150, 1))
	publish(Options{KeepOld: true})
	appendRows(t, tbl, xRows7(151, 1))
	if res := publish(Options{}); res.Rows != 152 {
		t.Fatalf("publish after --keep-old: %+v", res)
	}
	for _, name := range []string{"events_new", "events_old"} {
		execAll(t, conn, "CREATE TABLE "+name+" (mine int)")
		u := mustURL(t, to)
		_, err := publishRedshift(ctx, tbl, target{name: "events"}, u, Options{To: to, IAMRole: redshiftRole, Logger: discard, Force: true}, copyFromManifest(t, tbl))
		if !errors.Is(err, ErrTaken) || !strings.Contains(err.Error(), "public."+name+" ") {
			t.Fatalf("publish beside someone's %s: %v, want ErrTaken naming it", name, err)
		}
		execAll(t, conn, "DROP TABLE "+name)
	}
}

// TestRedshiftLiteralsArePlain: COPY and COMMENT take no bind
// parameters, so the manifest's URL (which holds the table's location,
// the user's) and the role go into SQL text only when they hold no
// quote, no backslash and no control character; anything else is
// refused, never quoted by hand.
func TestRedshiftLiteralsArePlain(t *testing.T) {
	tgt := target{schema: "mart", name: "events"}
	for _, bad := range []string{`s3://lake/it's/_sluice_publish/m`, `s3://lake/a\'; DROP TABLE x; --/m`, "s3://lake/a\nb/m"} {
		if _, err := planRedshift(tgt, `"x" BIGINT`, bad, redshiftRole, true, false, true); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("manifest URL %q: %v, want a one-line refusal", bad, err)
		}
	}
	if _, err := planRedshift(tgt, `"x" BIGINT`, "s3://lake/events/m", redshiftRole+`\`, false, false, false); err == nil {
		t.Error("a role ending in a backslash was taken")
	}
}

// TestRedshiftBadInput: a table not on S3, a missing or malformed
// --iam-role: one line each, before connecting.
func TestRedshiftBadInput(t *testing.T) {
	s3 := newTableAt(t, testenv.Location(t, testenv.S3), "x:int64", xRows(0, 1))
	local := newTable(t, "x:int64", xRows(0, 1))
	const to = "redshift://loader:Wr0ng-Pa55-sentinel@127.0.0.1:1/dev"
	for name, c := range map[string]struct {
		tbl  *catalog.Table
		role string
		is   error
		want string
	}{
		"a local table":     {tbl: local, role: redshiftRole, is: ErrNotOnS3, want: "s3://"},
		"no --iam-role":     {tbl: s3, want: "--iam-role"},
		"an injecting role": {tbl: s3, role: redshiftRole + "' CREDENTIALS 'x", want: "--iam-role"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Publish(context.Background(), c.tbl, Options{To: to, As: "events", IAMRole: c.role})
			if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.want) ||
				strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "Wr0ng") {
				t.Fatalf("publish: %v, want one line saying %q", err, c.want)
			}
		})
	}
}

var discard = slog.New(slog.DiscardHandler)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// xRows7 is n rows of id,ts,dec,i,f,b,s from id from, some NULLs, some
// before 1970.
func xRows7(from, n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		id := from + i
		rows[i] = []any{int64(id), time.Unix(int64(id-50)*86_400_123, 456_000).UTC(), fmt.Sprintf("%d.%010d", id*1_000_003, id),
			int32(-id), float64(id) / 3, id%2 == 0, fmt.Sprintf("row %d — ü", id)}
		if id%10 == 0 {
			rows[i][1], rows[i][2], rows[i][6] = nil, nil, nil
		}
	}
	return rows
}
