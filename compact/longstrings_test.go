package compact_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/internal/pqio"
)

// Compaction writes its own files: their footers and manifest entries keep
// long strings' bounds truncated too, and the verification, which never
// takes a bound for a value, still passes.
func TestCompactionOfLongStringsVerifiesAndKeepsBoundsShort(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, err := catalog.Open(ctx, dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	m, err := tbl.Create(ctx, mustSchema("id:int64,s:string"), catalog.PartitionSpec{}, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("z", 2<<20)
	for i := range 3 {
		files, err := tbl.WriteFiles(ctx, m, [][]any{{int64(i), fmt.Sprint(i) + big}})
		if err != nil {
			t.Fatal(err)
		}
		if m, err = tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: "test", Add: files, DataChange: true}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{TargetFileSize: 64 << 20, MinInputFiles: 2}, RunID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	m, _ = tbl.Latest(ctx)
	files, _ := tbl.Files(ctx, m)
	if m.Operation != "compact" || len(files) != 1 {
		t.Fatalf("latest is %q with %d files, want a compaction into one", m.Operation, len(files))
	}
	b, err := os.ReadFile(filepath.Join(dir, files[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint32(b[len(b)-8:]); n > 4<<10 {
		t.Errorf("the output's footer is %d bytes, want under 4 KiB", n)
	}
	cs := files[0].Columns["s"]
	if cs.Min == nil || cs.Max == nil || !cs.MinTruncated || !cs.MaxTruncated ||
		len(*cs.Min) > pqio.StatsTruncateBytes || len(*cs.Max) > pqio.StatsTruncateBytes ||
		*cs.Min > "0"+big || *cs.Max < "2"+big {
		t.Errorf("stats of s: %d-byte min, %d-byte max, truncated %v/%v", len(str(cs.Min)), len(str(cs.Max)), cs.MinTruncated, cs.MaxTruncated)
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
