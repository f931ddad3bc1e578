package warehouse

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/testenv"
)

const everyType = "id:int64,u:uuid?,ts:timestamp?,d:date?,dec:decimal(38,10)?,small:decimal(5,2)?,i:int32?,f:float64?,b:bool?,s:string?,bin:binary?"

func everyTypeRows() [][]any {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	return [][]any{
		{int64(1), "6f1c2d3e-4b5a-4c6d-8e7f-0123456789ab", time.Date(1969, 7, 20, 20, 17, 40, 123456000, time.UTC), day(1900, 1, 1),
			"1234567890123456789012345678.1234567890", "-999.99", int32(math.MinInt32), -1.5e300, true, "héllo wörld 世界 🎉", []byte{0, 1, 2, 255}},
		{int64(2), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{int64(3), "00000000-0000-0000-0000-000000000000", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), day(1, 1, 1),
			"-9999999999999999999999999999.9999999999", "0.01", int32(math.MaxInt32), math.Inf(1), false, "", []byte{}},
		{int64(4), "ffffffff-ffff-ffff-ffff-ffffffffffff", time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), day(9999, 12, 31),
			"0.0000000001", "0.00", int32(0), math.SmallestNonzeroFloat64, true, "quote ' and \" and \\ and \t tab", []byte("x")},
		{int64(5), "6F1C2D3E-4B5A-4C6D-8E7F-0123456789AC", time.Date(2024, 2, 29, 12, 0, 0, 1000, time.UTC), day(1970, 1, 1),
			"0E-10", "12.30", int32(-1), math.NaN(), nil, "日本語テキスト", nil},
	}
}

// TestPublishRoundTripEveryType publishes a table with every supported
// type and reads it back equal, row for row, to what the table holds.
func TestPublishRoundTripEveryType(t *testing.T) {
	url := testenv.PostgresURL(t)
	rows := everyTypeRows()
	rows[4][4] = "0.0000000000" // canonical form of zero at scale 10
	tbl := newTable(t, everyType, rows[:3], rows[3:])
	res := mustPublish(t, tbl, Options{To: url, As: "every_type"})
	if res.Rows != 5 || res.Version != 3 || res.Unchanged || res.Bytes <= 0 {
		t.Fatalf("result %+v: want 5 rows of version 3 loaded", res)
	}
	conn := connectT(t, url)
	m, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, want := warehouseRows(t, conn, "every_type", m.Schema), tableRows(t, tbl)
	// uuid text is lower case in PostgreSQL, as it is canonical.
	for i := range want {
		want[i] = lowerUUIDs(want[i])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("warehouse rows differ from the table's:\n got %q\nwant %q", got, want)
	}
	var nullable string
	err = conn.QueryRow(context.Background(), `SELECT is_nullable FROM information_schema.columns
		WHERE table_name = 'every_type' AND column_name = 'id'`).Scan(&nullable)
	if err != nil || nullable != "NO" {
		t.Fatalf("id is_nullable = %q, %v: want NO, as the table says", nullable, err)
	}
	if left := count(t, conn, "SELECT count(*) FROM pg_class WHERE relname IN ('every_type_new', 'every_type_old')"); left != 0 {
		t.Fatalf("%d of every_type_new/_old left behind", left)
	}
}

// lowerUUIDs lower-cases the uuid column (the second) of a row's text.
func lowerUUIDs(s string) string {
	parts := strings.SplitN(s, "|", 3)
	if parts[1] != "NULL" {
		parts[1] = strings.ToLower(parts[1])
	}
	return strings.Join(parts, "|")
}

// TestPublishRoundTripMatchesDuckDB publishes a table with every
// supported type (NULLs, timestamps and dates before 1970, decimals at
// full precision, non-ASCII strings) to PostgreSQL and to SQLite; each
// reads back equal, row for row, to DuckDB's reading of the table's
// files. SQLite cannot hold a NaN, so its table has none (a NaN is
// refused: TestPublishSQLiteRefusesNaN).
func TestPublishRoundTripMatchesDuckDB(t *testing.T) {
	url := testenv.PostgresURL(t)
	rows := everyTypeRows()
	rows[4][4] = "0.0000000000"
	withNaN := newTable(t, everyType, rows[:3], rows[3:])
	sch := mustSchema(t, everyType)

	mustPublish(t, withNaN, Options{To: url, As: "every_type"})
	got, want := pgCanonRows(t, connectT(t, url), "every_type", sch), duckRows(t, withNaN)
	if len(want) != 5 || !slices.Equal(got, want) {
		t.Fatalf("PostgreSQL rows differ from DuckDB's:\n got %q\nwant %q", got, want)
	}

	rows[4][7] = -0.25
	noNaN := newTable(t, everyType, rows[:3], rows[3:])
	path := filepath.Join(t.TempDir(), "warehouse.db")
	res := mustPublish(t, noNaN, Options{To: "sqlite://" + path, As: "every_type"})
	if res.Rows != 5 || res.Unchanged || res.Target != "main.every_type" {
		t.Fatalf("result %+v: want 5 rows published as main.every_type", res)
	}
	db := openSQLite(t, path)
	got, want = sqliteCanonRows(t, db, "every_type", sch), duckRows(t, noNaN)
	if len(want) != 5 || !slices.Equal(got, want) {
		t.Fatalf("SQLite rows differ from DuckDB's:\n got %q\nwant %q", got, want)
	}
	// The storage classes the README promises, for a reader without sluice.
	var classes string
	err := db.QueryRow(`SELECT typeof(id)||typeof(u)||typeof(ts)||typeof(d)||typeof(dec)||typeof(i)||typeof(f)||typeof(b)||typeof(s)||typeof(bin)
		FROM every_type WHERE id = 1`).Scan(&classes)
	if want := "integertexttexttexttextintegerrealintegertextblob"; err != nil || classes != want {
		t.Fatalf("storage classes %q (%v), want %q", classes, err, want)
	}
	var day string
	if err := db.QueryRow(`SELECT date(ts) FROM every_type WHERE id = 1`).Scan(&day); err != nil || day != "1969-07-20" {
		t.Fatalf("SQLite's date() of a timestamp: %q (%v), want 1969-07-20", day, err)
	}
}
