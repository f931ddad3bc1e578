package sparklog

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// openStore opens loc, closed when the test ends.
func openStore(t *testing.T, loc string) cloud.Store {
	t.Helper()
	st, err := cloud.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// putText stores text under key.
func putText(t *testing.T, st cloud.Store, key, text string) {
	t.Helper()
	if _, err := st.Put(context.Background(), key, strings.NewReader(text), int64(len(text)), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// sparkURI is the URI Spark's file sink logs for the file at key under
// the output folder at loc (a location as sluice takes it), as Hadoop's
// Path.toUri spells it: the scheme Spark's Hadoop file systems use
// (file:, s3a:, abfss:), each segment percent-encoded.
func sparkURI(t *testing.T, loc, key string) string {
	t.Helper()
	l, err := cloud.ParseLocation(loc)
	if err != nil {
		t.Fatal(err)
	}
	p := key
	switch l.Kind {
	case cloud.KindLocal:
		return "file://" + encodePath(l.Path+"/"+p)
	case cloud.KindS3:
		return "s3a://" + l.Bucket + encodePath("/"+l.Prefix+"/"+p)
	default:
		return "abfss://" + l.Bucket + "@" + l.Account + ".dfs.core.windows.net" + encodePath("/"+l.Prefix+"/"+p)
	}
}

// encodePath percent-encodes each segment of p as a URI path.
func encodePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// logLine is one JSON line of a batch file, as Spark's sink writes it.
func logLine(t *testing.T, path string, size int64, action string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"path": path, "size": size, "isDir": false,
		"modificationTime": 1718000000000, "blockReplication": 1, "blockSize": 33554432, "action": action})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// batchFile is the text of a batch file: the v1 header and lines, with no
// newline after the last, as Spark writes it.
func batchFile(lines ...string) string {
	return strings.Join(append([]string{"v1"}, lines...), "\n")
}
