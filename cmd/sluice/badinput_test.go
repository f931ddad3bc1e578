package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

// Each bad input fails with one line naming the object and the cause,
// commits nothing, and leaves the table as it was.
func TestBadInputFailsCleanly(t *testing.T) {
	sample := filepath.Join(repoRoot(t), "testdata", "sample", "events")
	good, err := os.ReadFile(parquetFiles(t, sample)[0])
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		write func(t *testing.T, path string)
		want  []string
	}{
		"a truncated Parquet file": {
			write: func(t *testing.T, path string) { os.WriteFile(path, good[:len(good)/2], 0o644) },
			want:  []string{"bad.parquet"},
		},
		"a file whose bytes are not Parquet": {
			write: func(t *testing.T, path string) { os.WriteFile(path, []byte("event_id,list_id\n1,2\n"), 0o644) },
			want:  []string{"bad.parquet"},
		},
		"a date column where the table has a timestamp": {
			write: func(t *testing.T, path string) {
				ctx := context.Background()
				st, err := cloud.Open(ctx, filepath.Dir(path))
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				sc, _ := catalog.ParseSchema("event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:date")
				day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
				row := []any{"00000000-0000-4000-8000-000000000001", int64(1), "00000000-0000-4000-8000-000000000002", int32(1), day}
				if _, _, err := pqio.WriteParquet(ctx, st, filepath.Base(path), sc, [][]any{row}); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"bad.parquet", "event_time", "date", "timestamp"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "events")
			copyDir(t, sample, dir)
			mustSluice(t, "import", dir, "--from", dir)
			before := mustSluice(t, "history", dir, "--json").stdout
			filesBefore := mustSluice(t, "files", dir).stdout
			days, _ := filepath.Glob(filepath.Join(dir, "date=*"))
			c.write(t, filepath.Join(days[0], "bad.parquet"))
			r := sluice(t, nil, "import", dir, "--from", dir)
			failsWithOneLine(t, r, c.want...)
			if after := mustSluice(t, "history", dir, "--json").stdout; !sameVersions(before, after) {
				t.Fatalf("history changed:\nbefore %s\nafter  %s", before, after)
			}
			if after := mustSluice(t, "files", dir).stdout; after != filesBefore {
				t.Fatal("live files changed")
			}
		})
	}
}

// sameVersions compares the versions of two `history --json` outputs.
func sameVersions(a, b string) bool {
	var x, y struct {
		Versions json.RawMessage `json:"versions"`
	}
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return string(x.Versions) == string(y.Versions)
}

func TestBadLocationsFailCleanly(t *testing.T) {
	s3loc := testenv.Location(t, "s3")
	azloc := testenv.Location(t, "azure")
	mustSluice(t, "init", s3loc, "--schema", "a:int64")
	mustSluice(t, "init", azloc, "--schema", "a:int64")
	bucket := strings.SplitN(strings.TrimPrefix(s3loc, "s3://"), "/", 2)[0]
	t.Run("an unknown URL scheme", func(t *testing.T) {
		failsWithOneLine(t, sluice(t, nil, "files", "ftp://host/table"), "ftp://host/table")
	})
	t.Run("a missing bucket", func(t *testing.T) {
		failsWithOneLine(t, sluice(t, nil, "files", "s3://no-such-bucket-here/t"), "no-such-bucket-here")
	})
	t.Run("a missing container", func(t *testing.T) {
		failsWithOneLine(t, sluice(t, nil, "files", "az://devstoreaccount1/no-such-container/t"), "no-such-container")
	})
	t.Run("wrong S3 credentials", func(t *testing.T) {
		r := sluice(t, []string{"AWS_ACCESS_KEY_ID=AKIAWRONGWRONGWRONG"}, "files", s3loc)
		failsWithOneLine(t, r, bucket)
		if strings.Contains(r.stderr, "AKIAWRONG") {
			t.Fatal("the error prints the access key")
		}
	})
	t.Run("wrong Azure credentials", func(t *testing.T) {
		var conn string
		for _, kv := range testenv.Env() {
			if v, ok := strings.CutPrefix(kv, "AZURE_STORAGE_CONNECTION_STRING="); ok {
				conn = v
			}
		}
		i := strings.Index(conn, "AccountKey=")
		j := strings.Index(conn[i:], ";")
		bad := conn[:i] + "AccountKey=" + "d3Jvbmd3cm9uZ3dyb25nd3Jvbmd3cm9uZ3dyb25nd3Jvbmc=" + conn[i+j:]
		r := sluice(t, []string{"AZURE_STORAGE_CONNECTION_STRING=" + bad}, "files", azloc)
		failsWithOneLine(t, r, "az://")
		if strings.Contains(r.stderr, "d3Jvbmd3") {
			t.Fatal("the error prints the account key")
		}
	})
	// The tables are as they were.
	for _, loc := range []string{s3loc, azloc} {
		if r := mustSluice(t, "history", loc, "--json"); !strings.Contains(r.stdout, `"version":1`) || strings.Contains(r.stdout, `"version":2`) {
			t.Fatalf("%s history: %s", loc, r.stdout)
		}
	}
}
