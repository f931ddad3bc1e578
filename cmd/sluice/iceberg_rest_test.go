package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/icebergtest"
)

// TestCompactAndVacuumAnIcebergTableThroughREST: a table served by an
// Iceberg REST catalog over HTTPS (the REST protocol's routes in front of
// the SQL catalog, a prefix from its config, OAuth2 client credentials
// exchanged for a token), the catalog's certificate trusted through
// SSL_CERT_FILE. A wrong secret, or no trust in the certificate, fails in
// one line; the secret shows in no output. With both, sluice compacts the
// table through the catalog's commit route — both independent readers
// read every earlier snapshot as before and the new ones as the newest —
// and vacuums it with no retention, leaving the newest snapshot alone;
// import reads it through the catalog too.
func TestCompactAndVacuumAnIcebergTableThroughREST(t *testing.T) {
	const secret = "SENTINELRESTSECRET"
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 8, RowsPerAppend: 200,
		SpecChangeAt: 4, PositionDeletes: 2, Concurrent: 2, Seed: 23})
	srv := icebergtest.ServeREST(t, tb, icebergtest.RESTOptions{BasePath: "/api/catalog", Prefix: "lake-1",
		Credential: "sluice:" + secret, TLS: true})
	loc := srv.TableURL()
	trust := "SSL_CERT_FILE=" + srv.CACertFile()
	env := []string{trust, "SLUICE_ICEBERG_CREDENTIAL=sluice:" + secret}
	noSecret := func(r result) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("the client secret shows in the output:\n%s\n%s", r.stdout, r.stderr)
		}
	}

	for _, c := range []struct {
		env  []string
		says string
	}{
		{[]string{trust, "SLUICE_ICEBERG_CREDENTIAL=sluice:wrong-" + secret}, "refused the credentials (the OAuth2 client credential in SLUICE_ICEBERG_CREDENTIAL)"},
		{[]string{"SLUICE_ICEBERG_CREDENTIAL=sluice:" + secret}, "certificate"},
		{append(env[:2:2], "SLUICE_ICEBERG_TOKEN=t"), "set one"},
	} {
		r := sluice(t, c.env, "compact", loc, "-v")
		failsWithOneLine(t, r, "open catalog", c.says)
		noSecret(r)
	}
	if srv.Commits() != 0 {
		t.Fatalf("refused runs committed %d times", srv.Commits())
	}

	before := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	r := sluice(t, env, "--json", "-v", "compact", loc, "--min-input-files", "2")
	if r.code != 0 {
		t.Fatalf("compact through REST: exit %d\n%s", r.code, r.stderr)
	}
	noSecret(r)
	if got := int64(summaryOf(t, r)["rows_deleted"].(float64)); got != tb.RowsDeleted() {
		t.Errorf("summary: rows_deleted %d, the fixture deleted %d", got, tb.RowsDeleted())
	}
	if srv.Commits() == 0 {
		t.Fatal("the compaction committed nothing through the REST catalog")
	}
	after := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	sameSnapshotsThen(t, before, after)
	if _, deletes := liveDataFiles(t, tb.Load(t)); deletes != 0 {
		t.Errorf("%d delete files live after the compaction", deletes)
	}

	r = sluice(t, env, "--json", "vacuum", loc, "--retain", "0h", "--force")
	if r.code != 0 {
		t.Fatalf("vacuum through REST: exit %d\n%s", r.code, r.stderr)
	}
	noSecret(r)
	final := after[len(after)-1]
	if left := icebergtest.SnapshotRows(t, tb.MetadataLocation(t)); len(left) != 1 || left[0].ID != final.ID || left[0].Checksum != final.Checksum {
		t.Errorf("after the vacuum the table has snapshots %+v; want the newest alone, %+v", left, final)
	}

	// Import reads the table through the catalog too, and refuses its
	// two partition specs as it does from a SQL catalog.
	dir := filepath.Join(t.TempDir(), "events")
	r = sluice(t, env, "import", dir, "--from", loc)
	failsWithOneLine(t, r, "partition specs 0 and 1")
	noSecret(r)
}
