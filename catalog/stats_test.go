package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// footerLen is the size of a Parquet file's footer.
func footerLen(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(binary.LittleEndian.Uint32(b[len(b)-8:]))
}

// A single accepted 50 MB string made a 100 MB footer and a 100 MB
// manifest piece: min and max were stored whole, twice.
func TestLongStringsLeaveFooterAndManifestSmall(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	schema := pqSchema(t, "id:int64,s:string,b:binary")
	m, err := tbl.Create(ctx, schema, PartitionSpec{}, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	big := strings.Repeat("z", size)
	bigBin := bytes.Repeat([]byte{0xFF}, size)
	rows := [][]any{{int64(1), "a" + big, bigBin}, {int64(2), "y" + big, append([]byte{0x01}, bigBin...)}}
	files, err := tbl.WriteFiles(ctx, m, rows)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = tbl.Commit(ctx, Change{Operation: "append", RunID: "test", Add: files, DataChange: true}); err != nil {
		t.Fatal(err)
	}
	if n := footerLen(t, filepath.Join(dir, files[0].Path)); n > 4<<10 {
		t.Errorf("footer of %d bytes for two rows, want under 4 KiB", n)
	}
	piece := m.Pages[0].Key
	pg, err := tbl.page(ctx, piece)
	if err != nil {
		t.Fatal(err)
	}
	pieceKey := pg.Partitions[0].Pieces[0].Key
	info, err := tbl.store.Stat(ctx, pieceKey)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size > 4<<10 {
		t.Errorf("manifest piece of %d bytes for one file, want under 4 KiB", info.Size)
	}
	live, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	cs := live[0].Columns["s"]
	if cs.Min == nil || cs.Max == nil || !cs.MinTruncated || !cs.MaxTruncated {
		t.Fatalf("stats of s: min %.70q max %.70q truncated %v/%v, want both bounds, truncated", str(cs.Min), str(cs.Max), cs.MinTruncated, cs.MaxTruncated)
	}
	if len(*cs.Min) > pqio.StatsTruncateBytes || len(*cs.Max) > pqio.StatsTruncateBytes {
		t.Errorf("bounds of %d and %d bytes, want at most %d", len(*cs.Min), len(*cs.Max), pqio.StatsTruncateBytes)
	}
	if *cs.Min > "a"+big || *cs.Max < "y"+big {
		t.Errorf("[%.10q…, %.10q…] does not bound the values", *cs.Min, *cs.Max)
	}
	// The page index bounds are cut as well.
	f, err := os.Open(filepath.Join(dir, files[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	for i, ci := range pf.ColumnIndexes() {
		for k := range ci.MaxValues {
			if len(ci.MinValues[k]) > pqio.StatsTruncateBytes || len(ci.MaxValues[k]) > pqio.StatsTruncateBytes {
				t.Errorf("column %d page %d: page index bounds of %d and %d bytes", i, k, len(ci.MinValues[k]), len(ci.MaxValues[k]))
			}
		}
	}
	// And the footer's own bounds still bound the values.
	st := pf.Metadata().RowGroups[0].Columns[1].MetaData.Statistics
	if string(st.MinValue) > "a"+big || string(st.MaxValue) < "y"+big || len(st.MaxValue) > pqio.StatsTruncateBytes {
		t.Errorf("footer bounds [%.10q…, %.10q…] (%d bytes)", st.MinValue, st.MaxValue, len(st.MaxValue))
	}
	// A binary max of 0xFF bytes cannot be rounded up: no bounds.
	if st := pf.Metadata().RowGroups[0].Columns[2].MetaData.Statistics; st.MaxValue != nil || len(st.MinValue) > pqio.StatsTruncateBytes {
		t.Errorf("binary footer bounds of %d and %d bytes, want none", len(st.MinValue), len(st.MaxValue))
	}
}

// An imported file is not rewritten, but its footer's bounds are
// truncated into the manifest.
func TestImportTruncatesAForeignFootersBounds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := cloud.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	big := strings.Repeat("q", 2<<20)
	group := parquet.Group{"s": parquet.String()}
	putRaw(t, st, "part-0.parquet", group, []parquet.Row{{parquet.ByteArrayValue([]byte(big)).Level(0, 0, 0)}})
	tbl, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if _, err := tbl.Import(ctx, dir, ImportOptions{RunID: "test"}); err != nil {
		t.Fatal(err)
	}
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(live[0])
	if len(b) > 1<<10 {
		t.Errorf("the manifest's entry for the file is %d bytes, want under 1 KiB", len(b))
	}
	cs := live[0].Columns["s"]
	if cs.Min == nil || cs.Max == nil || !cs.MinTruncated || !cs.MaxTruncated || *cs.Min > big || *cs.Max < big {
		t.Errorf("stats: min %.70q max %.70q truncated %v/%v", str(cs.Min), str(cs.Max), cs.MinTruncated, cs.MaxTruncated)
	}
}

// Manifests written before truncation carry no flags: their bounds read
// as exact.
func TestStatsWithoutTruncationFlagsReadAsExact(t *testing.T) {
	var cs ColumnStats
	if err := json.Unmarshal([]byte(`{"min":"a","max":"b","nulls":0}`), &cs); err != nil {
		t.Fatal(err)
	}
	if cs.MinTruncated || cs.MaxTruncated || str(cs.Min) != "a" || str(cs.Max) != "b" {
		t.Errorf("%+v", cs)
	}
	b, _ := json.Marshal(ColumnStats{Min: cs.Min, Max: cs.Max})
	if string(b) != `{"min":"a","max":"b","nulls":0}` {
		t.Errorf("exact stats encode as %s", b)
	}
}
