package catalog

import (
	"bytes"
	"encoding/json"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
)

// The fuzz targets of the catalog's decoders. Their seeds, in
// testdata/fuzz/<target>, run in every `go test`; `make fuzz` runs each
// target for $(FUZZTIME).

// A manifest from the store either fails to decode, naming its key, or
// decodes to one that writes and reads back to the same bytes.
func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(`{"format":1,"version":3,"committed_at":"2024-01-31T10:00:00Z","commit_id":"c1","operation":"append","schema":{"columns":[{"name":"id","type":"int64"},{"name":"at","type":"timestamp","nullable":true},{"name":"amount","type":"decimal(18,2)"}]},"partition_spec":{"fields":[{"name":"date","transform":"day","source":"at","type":"date"}]},"properties":{"target_file_size":"1024"},"checkpoints":{"kafka:b/t":{"v":1,"partitions":{"0":5}}},"pages":[{"key":"_sluice/pages/p1.json","first":"date=2024-01-30","last":"date=2024-01-31","partitions":2}],"files":2,"rows":10,"bytes":100,"summary":{"files_added":2,"data_change":true,"partitions":["date=2024-01-31"]}}`))
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`{"schema":{"columns":[{"name":"x","type":"decimal(39,1)"}]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest("_sluice/versions/1.json", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "_sluice/versions/1.json: ") {
				t.Fatalf("the error does not name the key: %v", err)
			}
			return
		}
		if m.Format > FormatVersion {
			t.Fatalf("took format %d", m.Format)
		}
		out, err := json.Marshal(m)
		if err != nil {
			return // a value that parses but cannot be written, e.g. a year past 9999
		}
		m2, err := decodeManifest("k", out)
		if err != nil {
			t.Fatalf("a manifest written back does not decode: %v\n%s", err, out)
		}
		out2, err := json.Marshal(m2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the manifest:\n%s\n%s (%v)", out, out2, err)
		}
		_ = m.TargetFileSize()
		for _, p := range []string{"", "date=2024-01-31", "\xff"} {
			_ = m.pageFor(p)
		}
	})
}

// A piece or a page decodes with go-json (as Table reads them) exactly as
// encoding/json decodes it.
func FuzzDecodePiece(f *testing.F) {
	f.Add([]byte(`{"p":"date=2024-01-31","files":[{"path":"date=2024-01-31/part-1.zstd.parquet","pv":{"date":"2024-01-31","n":null},"bytes":10,"rows":3,"added_v":2,"added_at":"2024-01-31T10:00:00Z","columns":{"id":{"min":1,"max":3,"nulls":0}}}]}`))
	f.Add([]byte(`{"partitions":[{"p":"a=1/b=x","pieces":[{"key":"_sluice/pieces/1.json","files":2}],"files":2,"rows":4,"bytes":8}]}`))
	f.Add([]byte(`{"p":"","files":null}`))
	f.Add([]byte(`{"p":"\u00e9\ud800","files":[{"path":"a\\u002fb"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, mk := range []func() any{func() any { return new(Piece) }, func() any { return new(Page) }} {
			std, fast := mk(), mk()
			serr := json.Unmarshal(b, std)
			ferr := gojson.Unmarshal(b, fast)
			if serr != nil {
				continue // go-json may be laxer; what it reads is not compared
			}
			if ferr != nil {
				t.Fatalf("%T: encoding/json reads it, go-json fails: %v", std, ferr)
			}
			if !reflect.DeepEqual(std, fast) {
				sb, _ := json.Marshal(std)
				fb, _ := json.Marshal(fast)
				t.Fatalf("%T: encoding/json and go-json read it differently:\n%s\n%s", std, sb, fb)
			}
		}
	})
}

// A partition folder parses to keys and values that escape back to a
// folder that parses the same; no escaped value can be a path separator
// or a '.' or '..' segment, whatever it unescapes from.
func FuzzParseHivePath(f *testing.F) {
	for _, s := range []string{
		"date=2024-01-31", "a=1/b=x", "a=__HIVE_DEFAULT_PARTITION__", "a=%2e%2e/b=%2F", "a=%2E%2E%2F%2E%2E%2Fetc",
		"a=b=c", "=x", "x", "a=%", "a=%4", "a=%41", "k%3D=v", "a=x\\..\\..", "a=\x00", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dir string) {
		keys, vals, err := ParseHivePath(dir)
		if err != nil {
			return
		}
		if dir != "" && len(keys) != strings.Count(dir, "/")+1 {
			t.Fatalf("%q: %d keys", dir, len(keys))
		}
		var segs []string
		for _, k := range keys {
			v, ok := vals[k]
			if !ok {
				t.Fatalf("%q: key %q has no value", dir, k)
			}
			seg := hiveEscape(k) + "=" + HiveDefaultPartition
			if v != nil {
				ev := hiveEscape(*v)
				if strings.ContainsAny(ev, "/\\\x00") {
					t.Fatalf("%q: value %q escapes to %q", dir, *v, ev)
				}
				if got := hiveUnescape(ev); got != *v {
					t.Fatalf("%q: value %q escapes to %q, which unescapes to %q", dir, *v, ev, got)
				}
				seg = hiveEscape(k) + "=" + ev
			}
			segs = append(segs, seg)
		}
		folder := strings.Join(segs, "/")
		key := path.Join(folder, "part-0.parquet")
		// A segment such as "..=" is a name like any other; only "." and
		// ".." would climb.
		if folder != "" && (!strings.HasPrefix(key, folder) || strings.HasPrefix(key, "/") || slices.ContainsFunc(strings.Split(key, "/"), func(s string) bool { return s == "." || s == ".." })) {
			t.Fatalf("%q: folder %q joins to %q", dir, folder, key)
		}
		keys2, vals2, err := ParseHivePath(folder)
		if err != nil {
			t.Fatalf("%q: the folder escaped back, %q, does not parse: %v", dir, folder, err)
		}
		if !reflect.DeepEqual(keys, keys2) || !reflect.DeepEqual(vals, vals2) {
			t.Fatalf("%q and its re-escaped %q parse differently", dir, folder)
		}
	})
}
