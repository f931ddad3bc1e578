package cloud_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
)

func TestParseLocation(t *testing.T) {
	wd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]cloud.Location{
		"/data/lake/t":          {Kind: cloud.KindLocal, Path: "/data/lake/t"},
		"/data/lake/t/":         {Kind: cloud.KindLocal, Path: "/data/lake/t"},
		"lake/t":                {Kind: cloud.KindLocal, Path: filepath.Join(wd, "lake/t")},
		"file:///data/lake/t":   {Kind: cloud.KindLocal, Path: "/data/lake/t"},
		"s3://bkt":              {Kind: cloud.KindS3, Bucket: "bkt"},
		"s3://bkt/":             {Kind: cloud.KindS3, Bucket: "bkt"},
		"s3://bkt/lake/t/":      {Kind: cloud.KindS3, Bucket: "bkt", Prefix: "lake/t"},
		"az://acct/cont/lake/t": {Kind: cloud.KindAzure, Account: "acct", Bucket: "cont", Prefix: "lake/t"},
		"az://acct/cont":        {Kind: cloud.KindAzure, Account: "acct", Bucket: "cont"},
		"abfss://cont@acct.dfs.core.windows.net/lake/t": {Kind: cloud.KindAzure, Account: "acct", Bucket: "cont", Prefix: "lake/t"},
		"wasbs://cont@acct.blob.core.windows.net/lake":  {Kind: cloud.KindAzure, Account: "acct", Bucket: "cont", Prefix: "lake"},
	} {
		got, err := cloud.ParseLocation(in)
		if err != nil || got != want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ftp://x/y", "s3://", "az://acct/", "abfss://acct.dfs.core.windows.net/x", "file://host/x",
		"abfs://0@@", "az://Acct/c", "az://ac/c", "az://a-b-c/c", "wasbs://c@@acct.blob.core.windows.net/x"} {
		if _, err := cloud.ParseLocation(in); !errors.Is(err, cloud.ErrUnsupportedURL) {
			t.Errorf("ParseLocation(%q): %v, want ErrUnsupportedURL", in, err)
		}
	}
}

func TestLocationStringAndJoin(t *testing.T) {
	for _, c := range []struct{ loc, key, joined, canonical string }{
		{"s3://b/t/", "_sluice/v/1.json", "s3://b/t/_sluice/v/1.json", "s3://b/t"},
		{"s3://b", "k", "s3://b/k", "s3://b"},
		{"abfss://c@acct.dfs.core.windows.net/t", "k", "az://acct/c/t/k", "az://acct/c/t"},
		{"/lake/t", "date=2024-01-31/part-0.parquet", "/lake/t/date=2024-01-31/part-0.parquet", "/lake/t"},
		{"file:///lake/t", "k", "/lake/t/k", "/lake/t"},
	} {
		if got := cloud.Join(c.loc, c.key); got != c.joined {
			t.Errorf("Join(%q, %q) = %q, want %q", c.loc, c.key, got, c.joined)
		}
		l, err := cloud.ParseLocation(c.loc)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.String(); got != c.canonical {
			t.Errorf("ParseLocation(%q).String() = %q, want %q", c.loc, got, c.canonical)
		}
	}
}

// A query or user info on a URL location is refused, never folded into
// object names or dropped, and the refusal names the location without
// the secret it held.
func TestParseLocationRefusesQueryAndUserInfo(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{"az://devstoreaccount1/c/t?sv=2022-11-02&sig=SENTINELSIG", "SharedAccessSignature"},
		{"abfss://c@acct.dfs.core.windows.net/t?sig=SENTINELSIG", "SharedAccessSignature"},
		{"wasbs://c@acct.blob.core.windows.net/t?sig=SENTINELSIG", "SharedAccessSignature"},
		{"s3://bkt/t?X-Amz-Signature=SENTINELSIG", "object names"},
		{"s3://bkt?X-Amz-Security-Token=SENTINELSIG", "object names"},
		{"file:///lake/t?token=SENTINELSIG", "%3F"},
		{"s3://AKIA:SENTINELSIG@bkt/t", "no user info"},
		{"az://user:SENTINELSIG@acct/c/t", "no user info"},
		{"abfss://c:SENTINELSIG@acct.dfs.core.windows.net/t", "no user info"},
	} {
		l, err := cloud.ParseLocation(c.in)
		if !errors.Is(err, cloud.ErrUnsupportedURL) {
			t.Errorf("ParseLocation(%q) = %+v, %v; want ErrUnsupportedURL", c.in, l, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "SENTINELSIG") || !strings.Contains(msg, c.says) {
			t.Errorf("ParseLocation(%q): %q; want it to say %q and not hold the secret", c.in, msg, c.says)
		}
	}
	// A '?' that belongs to a folder's name is still reachable.
	for in, want := range map[string]string{
		"/lake/what?":          "/lake/what?",
		"file:///lake/what%3F": "/lake/what?",
	} {
		l, err := cloud.ParseLocation(in)
		if err != nil || l.Path != want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want path %q", in, l, err, want)
		}
	}
}
