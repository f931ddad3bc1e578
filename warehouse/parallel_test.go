package warehouse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/testenv"
)

const bulkSchema = "id:int64,u:uuid,s:string?,dec:decimal(12,2)?,ts:timestamp?"

// bulkRows is n rows from id from on, deterministic, some NULLs.
func bulkRows(from, n int) [][]any {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([][]any, n)
	for i := range out {
		id := int64(from + i)
		row := []any{id, fmt.Sprintf("%08x-0000-4000-8000-%012x", id, id*7919), fmt.Sprintf("row %d", id),
			fmt.Sprintf("%d.%02d", (id*7919)%10_000_000-5_000_000, id%100), base.Add(time.Duration(id) * time.Second)}
		if id%13 == 0 {
			row[2], row[3], row[4] = nil, nil, nil
		}
		out[i] = row
	}
	return out
}

// bulkTable is a table of 6 files of 700 rows, ids 0 to 4199.
func bulkTable(t *testing.T) *catalog.Table {
	var batches [][][]any
	for f := range 6 {
		batches = append(batches, bulkRows(f*700, 700))
	}
	return newTable(t, bulkSchema, batches...)
}

// checksum is what a user compares after a load: the row count and an
// md5 of every row's text, in id order.
func checksum(t *testing.T, url, name string) string {
	t.Helper()
	var n int64
	var sum string
	err := connectT(t, url).QueryRow(context.Background(), "SELECT count(*), md5(string_agg(("+name+".*)::text, '|' ORDER BY id)) FROM "+name).Scan(&n, &sum)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d rows, md5 %s", n, sum)
}

// TestPublishOnSeveralConnections: however many connections load
// NAME_new (one, with COPY FREEZE; fewer than the files; more), the
// published table holds exactly the version's rows, value for value, and
// NAME's primary key, built after the rows.
func TestPublishOnSeveralConnections(t *testing.T) {
	url := testenv.PostgresURL(t)
	conn := connectT(t, url)
	tbl := bulkTable(t)
	m, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := tableRows(t, tbl)
	var sums []string
	for _, n := range []int{1, 4, 8} {
		t.Run(fmt.Sprintf("%d connections", n), func(t *testing.T) {
			name := fmt.Sprintf("bulk_%d", n)
			execAll(t, conn, "CREATE TABLE "+name+" (id bigint PRIMARY KEY)")
			res := mustPublish(t, tbl, Options{To: url, As: name, Connections: n})
			if res.Rows != 4200 {
				t.Fatalf("published %d rows, want the version's 4200", res.Rows)
			}
			got := warehouseRows(t, conn, name, m.Schema)
			if !slices.Equal(got, want) {
				t.Fatalf("%s differs from the table: %d rows, want %d; first got %q, want %q", name, len(got), len(want), got[:1], want[:1])
			}
			if k := count(t, conn, "SELECT count(*) FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'", name); k != 1 {
				t.Fatalf("%s has %d primary keys, want NAME's one", name, k)
			}
			if k := count(t, conn, "SELECT count(*) FROM pg_class WHERE relname = $1", name+"_new"); k != 0 {
				t.Fatalf("%s_new is left after the publish", name)
			}
			sums = append(sums, checksum(t, url, name))
		})
	}
	if len(sums) != 3 || sums[0] != sums[1] || sums[0] != sums[2] {
		t.Fatalf("checksums differ by connections: %q", sums)
	}
}

// TestPublishOnSeveralConnectionsFails: when one loader fails (a value
// PostgreSQL cannot take, in one of the files) or the rows loaded on
// several connections break NAME's unique index, the publish fails, NAME
// keeps its rows, and no NAME_new is left, half-loaded or whole.
func TestPublishOnSeveralConnectionsFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		next [][]any // appended to the published version
		want string
	}{
		{"a loader meets a NUL", [][]any{{int64(9000), "00000000-0000-4000-8000-000000000001", "a\x00b", nil, nil}}, "NUL"},
		{"the rows break the primary key", bulkRows(0, 10), "facts_pkey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := testenv.PostgresURL(t)
			conn := connectT(t, url)
			tbl := bulkTable(t)
			execAll(t, conn, "CREATE TABLE facts (id bigint PRIMARY KEY)")
			mustPublish(t, tbl, Options{To: url, As: "facts", Connections: 3})
			before, rels := checksum(t, url, "facts"), relations(t, conn)
			appendRows(t, tbl, tc.next)
			_, err := Publish(context.Background(), tbl, Options{To: url, As: "facts", Connections: 3})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("publish: %v: want a failure naming %s", err, tc.want)
			}
			if after := checksum(t, url, "facts"); after != before {
				t.Fatalf("facts after the failed publish: %s, want the old %s", after, before)
			}
			if got := relations(t, conn); !slices.Equal(got, rels) {
				t.Fatalf("relations after the failed publish:\n%q\nwant as before:\n%q", got, rels)
			}
		})
	}
}

// TestPublishConnectionsOutOfRange: a negative or too large
// Connections is refused before anything is done.
func TestPublishConnectionsOutOfRange(t *testing.T) {
	tbl := newTable(t, "id:int64", [][]any{{int64(1)}})
	for _, n := range []int{-1, MaxConnections + 1} {
		_, err := Publish(context.Background(), tbl, Options{To: "postgres://nobody@127.0.0.1:1/none", As: "t", Connections: n})
		if !errors.Is(err, ErrConnections) {
			t.Errorf("Connections %d: %v, want ErrConnections", n, err)
		}
	}
}
