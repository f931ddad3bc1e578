package cloud_test

import (
	"errors"
	"path/filepath"
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
	for _, in := range []string{"", "ftp://x/y", "s3://", "az://acct/", "abfss://acct.dfs.core.windows.net/x", "file://host/x"} {
		if _, err := cloud.ParseLocation(in); !errors.Is(err, cloud.ErrUnsupportedURL) {
			t.Errorf("ParseLocation(%q): %v, want ErrUnsupportedURL", in, err)
		}
	}
}

func TestLocationStringAndJoin(t *testing.T) {
	for _, c := range []struct{ loc, key, joined, canonical string }{
		{"s3://b/t/", "_sluice/v/1.json", "s3://b/t/_sluice/v/1.json", "s3://b/t"},
		{"s3://b", "k", "s3://b/k", "s3://b"},
		{"abfss://c@a.dfs.core.windows.net/t", "k", "az://a/c/t/k", "az://a/c/t"},
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
