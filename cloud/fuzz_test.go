package cloud

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The fuzz targets of cloud's parsers. Their seeds, in
// testdata/fuzz/<target>, run in every `go test`; `make fuzz` runs each
// target for $(FUZZTIME).

// A location parses to one whose canonical form parses back to it, with a
// clean prefix, or fails with ErrUnsupportedURL; it never takes a query or
// user info into a bucket, container or prefix.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{
		"/abs/path", "rel/path", "file:///abs/p", "file://localhost/abs", "file://host/x", "file:///a%3Fb",
		"s3://bucket/prefix/x", "s3://b//p//", "s3://b/p?x=1", "s3://key:secret@b/p", "s3:///p",
		"az://acct/cont/pre/fix", "az://acct", "abfss://cont@acct.dfs.core.windows.net/p",
		"wasbs://cont@acct.blob.core.windows.net/", "wasbs://c:pw@acct.blob.core.windows.net/",
		"gs://b/p", "S3://B/P", "s3://b/../../x", "s3://b/%2e%2e/%2F", "file:///a/%2e%2e/%2e%2e/etc",
		"s3://b/a\\..\\x", "", "://", "s3://", "a://b/c\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocation(s)
		if err != nil {
			if !errors.Is(err, ErrUnsupportedURL) {
				t.Fatalf("%q: %v does not wrap ErrUnsupportedURL", s, err)
			}
			return
		}
		_ = Join(s, "_sluice/latest")
		switch l.Kind {
		case KindLocal:
			if !filepath.IsAbs(l.Path) {
				t.Fatalf("%q: local path %q is not absolute", s, l.Path)
			}
			return
		case KindS3, KindAzure:
		default:
			t.Fatalf("%q: kind %q", s, l.Kind)
		}
		if l.Bucket == "" || (l.Kind == KindAzure && l.Account == "") {
			t.Fatalf("%q: %+v has no bucket or account", s, l)
		}
		if strings.Contains(l.Bucket+l.Prefix, "?") || strings.HasPrefix(l.Prefix, "/") || strings.HasSuffix(l.Prefix, "/") || strings.Contains(l.Prefix, "//") {
			t.Fatalf("%q: %+v", s, l)
		}
		for _, seg := range strings.Split(l.Prefix, "/") {
			if seg == "." || seg == ".." || strings.ContainsAny(seg, "\\\x00") {
				t.Fatalf("%q: prefix %q climbs or holds NUL or a backslash", s, l.Prefix)
			}
		}
		back, err := ParseLocation(l.String())
		if err != nil {
			t.Fatalf("%q: its canonical form %q does not parse: %v", s, l.String(), err)
		}
		if back != l {
			t.Fatalf("%q: parsed %+v, its canonical form %q parses to %+v", s, l, l.String(), back)
		}
	})
}

// Every key a store takes stays inside the store's root however it is
// read: as a '/'-separated key, as a local path, and with '\' as a
// separator as on Windows.
func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{
		"a/b.parquet", "_sluice/latest", "../x", "a/../../x", "/abs", "a//b", "./a", "a/.", ".tmp-1", "a/.tmp-x",
		"a\x00b", "%2e%2e/x", "..%2Fx", "a\\..\\..\\x", "..\\x", "C:\\x", "a/" + strings.Repeat("n", 300), strings.Repeat("a/", 600) + "b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if err := checkKey(key); err != nil {
			return
		}
		if !filepath.IsLocal(filepath.FromSlash(key)) {
			t.Fatalf("%q: taken, but not a local path", key)
		}
		if strings.ContainsAny(key, "\\\x00") {
			t.Fatalf("%q: taken with a backslash or NUL", key)
		}
		if len(key) > maxKeyBytes {
			t.Fatalf("%q: taken at %d bytes", key, len(key))
		}
		for _, seg := range strings.Split(key, "/") {
			if seg == "" || seg == "." || seg == ".." || len(seg) > maxSegmentBytes {
				t.Fatalf("%q: taken with segment %q", key, seg)
			}
		}
	})
}
