package sparklog

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A batch file that does not parse fails the read in one line naming the
// file and the line, with ErrCorruptLog; a version newer than v1 with
// ErrUnsupportedVersion, naming it.
func TestSnapshotRefusesBadBatchFiles(t *testing.T) {
	ctx := context.Background()
	good := logLine(t, "file:///out/a.parquet", 1, "add")
	for name, c := range map[string]struct {
		text string
		is   error
		want []string // in the error
	}{
		"a newer version":      {"v2\n" + good, ErrUnsupportedVersion, []string{"_spark_metadata/0 line 1", "v2", "v1"}},
		"no version header":    {good, ErrCorruptLog, []string{"_spark_metadata/0 line 1", "version header"}},
		"an empty file":        {"", ErrCorruptLog, []string{"_spark_metadata/0", "empty file"}},
		"a line not JSON":      {batchFile(good, `{"path":"file:///out/b.parquet","size":1,`), ErrCorruptLog, []string{"_spark_metadata/0 line 3", "not a JSON object"}},
		"an unknown action":    {batchFile(good, logLine(t, "file:///out/b.parquet", 1, "remove")), ErrCorruptLog, []string{"_spark_metadata/0 line 3", `unknown action "remove"`}},
		"no path":              {batchFile(`{"size":1,"action":"add"}`), ErrCorruptLog, []string{"_spark_metadata/0 line 2", `no "path"`}},
		"no size":              {batchFile(`{"path":"file:///out/a.parquet","action":"add"}`), ErrCorruptLog, []string{"line 2", `no "size"`}},
		"a blank line":         {batchFile(good, "", good), ErrCorruptLog, []string{"_spark_metadata/0 line 3"}},
		"a bad percent escape": {batchFile(logLine(t, "file:///out/a%zz.parquet", 1, "add")), ErrCorruptLog, []string{"line 2", "a%zz.parquet"}},
	} {
		t.Run(name, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			putText(t, st, MetadataDir+"0", c.text)
			_, err := New(st).Snapshot(ctx, -1)
			if !errors.Is(err, c.is) {
				t.Fatalf("Snapshot: %v; want %v", err, c.is)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if !strings.Contains(msg, st.URL(MetadataDir+"0")) {
				t.Errorf("error %q does not name the file %s", msg, st.URL(MetadataDir+"0"))
			}
		})
	}
}
