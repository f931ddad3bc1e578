package sparklog

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// A logged path decodes as a URI (%20 a space, %25 a '%', '+' itself) into
// a location spelled as the stores spell theirs.
func TestDecodePath(t *testing.T) {
	for raw, want := range map[string]struct {
		loc      string
		absolute bool
	}{
		"file:///out/part-0.parquet":                   {"/out/part-0.parquet", true},
		"file:/out/part-0.parquet":                     {"/out/part-0.parquet", true},
		"file://localhost/out/a%20b.parquet":           {"/out/a b.parquet", true},
		"file:///out/d=x%253Ay/a+b.parquet":            {"/out/d=x%3Ay/a+b.parquet", true},
		"file:///out/d=%C3%A9t%C3%A9/x.parquet":        {"/out/d=été/x.parquet", true},
		"file:///out/d=été/x.parquet":                  {"/out/d=été/x.parquet", true},
		"file:///out/../etc/x.parquet":                 {"/etc/x.parquet", true},
		"/out/part-0.parquet":                          {"/out/part-0.parquet", true},
		"s3a://bkt/out/part-0.parquet":                 {"s3://bkt/out/part-0.parquet", true},
		"S3N://bkt/out/part-0.parquet":                 {"s3://bkt/out/part-0.parquet", true},
		"abfss://ctr@acct.dfs.core.windows.net/out/x":  {"az://acct/ctr/out/x", true},
		"wasbs://ctr@acct.blob.core.windows.net/out/x": {"az://acct/ctr/out/x", true},
		"hdfs://nn:8020/out/x":                         {"hdfs://nn:8020/out/x", true},
		"part-0.parquet":                               {"part-0.parquet", false},
		"d=1/./part-0.parquet":                         {"d=1/part-0.parquet", false},
	} {
		base, p, abs, err := decodePath(raw)
		if err != nil || base+p != want.loc || abs != want.absolute {
			t.Errorf("decodePath(%q) = %q, %v, %v; want %q, %v", raw, base+p, abs, err, want.loc, want.absolute)
		}
	}
}

// sinkAt writes a log of one batch naming paths, into a new folder, and
// returns its log.
func sinkAt(t *testing.T, paths ...string) *Log {
	t.Helper()
	return sinkWith(t, func(string) []string { return paths })
}

// sinkWith is sinkAt with the paths made by paths from the new folder's
// root, as rootOf spells it.
func sinkWith(t *testing.T, paths func(root string) []string) *Log {
	t.Helper()
	st := openStore(t, t.TempDir())
	var lines []string
	for _, p := range paths(rootOf(st)) {
		lines = append(lines, logLine(t, p, 10, "add"))
	}
	putText(t, st, MetadataDir+"0", batchFile(lines...))
	return New(st)
}

// Paths under where the folder is now are keys relative to it. A folder
// moved or copied since the sink wrote it is read relative to where the
// sink wrote it: its files moved with it.
func TestKeysOfAMovedFolder(t *testing.T) {
	ctx := context.Background()
	for name, paths := range map[string][]string{
		"moved": {"file:///old/place/out/d=1/h=2/a.parquet", "file:///old/place/out/d=1/h=3/b.parquet", "file:///old/place/out/d=2/h=1/c%20c.parquet"},
		// every file in one partition: that folder is no part of the root
		"moved, one partition": {"file:///old/out/d=1/h=2/a.parquet", "file:///old/out/d=1/h=2/b.parquet", "file:///old/out/d=1/h=2/c%20c.parquet"},
		"from S3":              {"s3a://bkt/out/d=1/h=2/a.parquet", "s3a://bkt/out/d=1/h=3/b.parquet", "s3a://bkt/out/d=2/h=1/c%20c.parquet"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := sinkAt(t, paths...).Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := s.Keys()
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range paths {
				_, dp, _, _ := decodePath(p)
				if want := strings.Join(strings.Split(dp, "/")[len(strings.Split(dp, "/"))-3:], "/"); keys[i] != want {
					t.Errorf("%s: key %q, want %q", p, keys[i], want)
				}
			}
		})
	}
	// Not moved: relative to where it is, even where every file sits in
	// one partition.
	s, err := sinkWith(t, func(root string) []string {
		return []string{"file://" + encodePath(root+"/d=1/a b.parquet")}
	}).Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := s.Keys(); err != nil || !slices.Equal(keys, []string{"d=1/a b.parquet"}) {
		t.Fatalf("keys %q, %v; want [d=1/a b.parquet]", keys, err)
	}
}

// A file the log names outside the output folder is refused with
// ErrOutsideFolder, naming it and the log line.
func TestKeysRefuseAFileOutsideTheFolder(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		paths func(root string) []string
		bad   string
	}{
		"elsewhere": {func(root string) []string {
			return []string{"file://" + encodePath(root+"/d=1/a.parquet"), "file:///elsewhere/d=1/b.parquet"}
		}, "file:///elsewhere/d=1/b.parquet"},
		"climbing out": {func(root string) []string {
			return []string{"file://" + encodePath(root+"/d=1/a.parquet"), "file://" + encodePath(root) + "/../other/d=1/b.parquet"}
		}, "/../other/d=1/b.parquet"},
		"relative, climbing": {func(string) []string { return []string{"d=1/a.parquet", "../b.parquet"} }, "../b.parquet"},
		"moved, one astray": {func(string) []string {
			return []string{"file:///old/out/d=1/a.parquet", "file:///old/out/d=2/b.parquet", "file:///tmp/d=3/c.parquet"}
		}, "file:///tmp/d=3/c.parquet"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := sinkWith(t, c.paths).Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Listed()
			if !errors.Is(err, ErrOutsideFolder) || !strings.Contains(err.Error(), c.bad) || !strings.Contains(err.Error(), "_spark_metadata/0 line ") {
				t.Fatalf("Listed: %v; want %v naming %s and its line", err, ErrOutsideFolder, c.bad)
			}
		})
	}
}

// A file that is not Parquet, or whose partition keys differ from the
// others', is refused, naming it.
func TestListedRefusesFilesImportCannotAdopt(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		paths []string
		want  string
	}{
		"JSON output":           {[]string{"d=1/part-0.json"}, "not a Parquet file"},
		"partition keys differ": {[]string{"d=1/a.parquet", "e=1/b.parquet"}, "partition keys [e] differ from [d]"},
		"no Hive folder":        {[]string{"d=1/a.parquet", "d=1/sub/b.parquet"}, `folder "sub" is not a Hive partition`},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := sinkAt(t, c.paths...).Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Listed(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Listed: %v; want an error saying %q", err, c.want)
			}
		})
	}
}
