package iceberg

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// TestWriteHintNeverGoesBack: a sync that finishes after a rival that
// mirrored more leaves the rival's newer hint; a metadata file outside
// the table's _iceberg/metadata/ gets none.
func TestWriteHintNeverGoesBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, err := catalog.Open(ctx, dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	meta := func(name string) string { return "file://" + filepath.Join(dir, MetadataFolder, "metadata", name) }
	hint := func() string {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(HintKey)))
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	if err := writeHint(ctx, tbl, "file:///elsewhere/_iceberg/metadata/00001-a.metadata.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(HintKey))); !os.IsNotExist(err) {
		t.Fatalf("a hint for a mirror elsewhere: %v", err)
	}
	for _, step := range []struct{ name, want string }{
		{"00003-b.metadata.json", "00003-b\n"},
		{"00010-c.metadata.json", "00010-c\n"},
		{"00004-d.metadata.json", "00010-c\n"}, // older: left alone
		{"00011-e.metadata.json", "00011-e\n"},
	} {
		if err := writeHint(ctx, tbl, meta(step.name)); err != nil {
			t.Fatal(err)
		}
		if got := hint(); got != step.want {
			t.Errorf("after %s the hint is %q, want %q", step.name, got, step.want)
		}
	}
}
