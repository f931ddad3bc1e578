package main

import (
	"context"
	"strings"
	"testing"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/icebergtest"
	"github.com/sluice-data/sluice/internal/testenv"
)

// s3Props are iceberg-go's file IO properties that reach the S3 test
// server, for the writers of the test tables.
func s3Props(t *testing.T) map[string]string {
	return map[string]string{
		iceio.S3EndpointURL:     testenv.S3Endpoint(t),
		iceio.S3AccessKeyID:     testenv.S3AccessKeyID,
		iceio.S3SecretAccessKey: testenv.S3SecretAccessKey,
		iceio.S3Region:          testenv.S3Region,
	}
}

// parquetAt lists the Parquet files under a location of any store
// (file://, s3://), as location/key.
func parquetAt(t *testing.T, loc string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string]bool{}
	err = st.List(ctx, "", func(o cloud.ObjectInfo) error {
		if strings.HasSuffix(o.Key, ".parquet") {
			out[strings.TrimSuffix(loc, "/")+"/"+o.Key] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompactAndVacuumAnIcebergTableOnS3: a table whose catalog is a
// SQLite file and whose files are on the S3 test server (over HTTP, as
// iceberg-go's writer put them there, with position deletes and the
// leftovers of appends that lost their race). sluice compacts it in place
// on S3 — iceberg-go's scan reads the same rows, deletes applied, from
// fewer files, none of them a delete file — and then vacuums it with no
// retention: the Parquet objects left under its location are exactly the
// live data files, and the rows are the same.
func TestCompactAndVacuumAnIcebergTableOnS3(t *testing.T) {
	bucket := testenv.NewBucket(t)
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Warehouse: "s3://" + bucket + "/warehouse", Props: s3Props(t),
		Appends: 8, RowsPerAppend: 200, SpecChangeAt: 4, PositionDeletes: 2, Concurrent: 2, Seed: 21})
	if !strings.HasPrefix(tb.Location, "s3://"+bucket+"/") {
		t.Fatalf("the test table is at %s, not on S3", tb.Location)
	}
	before := icebergtest.Scan(t, tb.Load(t))
	if before.Rows != tb.Rows() || before.DeleteFiles == 0 {
		t.Fatalf("the test table reads %+v; want %d rows and delete files", before, tb.Rows())
	}

	t.Logf("before: %+v", before)
	sum := summaryOf(t, mustSluice(t, "--json", "compact", tb.URL(), "--min-input-files", "2"))
	if got := int64(sum["rows_deleted"].(float64)); got != tb.RowsDeleted() {
		t.Errorf("summary: rows_deleted %d, the fixture deleted %d", got, tb.RowsDeleted())
	}
	after := icebergtest.Scan(t, tb.Load(t))
	if after.Rows != before.Rows || after.Checksum != before.Checksum {
		t.Fatalf("after the compaction iceberg-go reads %+v; before %+v", after, before)
	}
	if after.DataFiles >= before.DataFiles || after.DeleteFiles != 0 {
		t.Errorf("after the compaction %d data files and %d delete files; before %d and %d", after.DataFiles, after.DeleteFiles, before.DataFiles, before.DeleteFiles)
	}
	if op := tb.Load(t).CurrentSnapshot().Summary.Operation; op != "replace" {
		t.Errorf("the compaction's snapshot is a %q, want replace", op)
	}
	live, _ := liveDataFiles(t, tb.Load(t))
	for p := range live {
		if !strings.HasPrefix(p, tb.Location+"/data/") {
			t.Errorf("live file %s is not under the table's data folder on S3", p)
		}
	}
	if n := len(parquetAt(t, tb.Location)); n <= len(live) {
		t.Fatalf("%d Parquet objects for %d live files before the vacuum: nothing to clean", n, len(live))
	}

	t.Logf("after: %+v; %d live files", after, len(live))
	v := summaryOf(t, mustSluice(t, "--json", "vacuum", tb.URL(), "--retain", "0h", "--force"))
	t.Logf("vacuum: files_deleted %v", v["files_deleted"])
	if v["files_deleted"].(float64) == 0 {
		t.Errorf("the vacuum deleted nothing: %v", v)
	}
	left := parquetAt(t, tb.Location)
	for p := range live {
		if !left[p] {
			t.Errorf("the vacuum deleted %s, a live file", p)
		}
	}
	if len(left) != len(live) {
		t.Errorf("%d Parquet objects left on S3, %d live", len(left), len(live))
	}
	if got := icebergtest.Scan(t, tb.Load(t)); got.Rows != before.Rows || got.Checksum != before.Checksum {
		t.Errorf("after the vacuum iceberg-go reads %+v; before %+v", got, before)
	}
}
