package iceberg_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// mirrorMetadata is what a reader takes from a mirror's metadata file.
type mirrorMetadata struct {
	CurrentSchemaID int `json:"current-schema-id"`
	Schemas         []struct {
		ID     int `json:"schema-id"`
		Fields []struct {
			ID       int    `json:"id"`
			Name     string `json:"name"`
			Type     any    `json:"type"`
			Required bool   `json:"required"`
		} `json:"fields"`
	} `json:"schemas"`
	Properties map[string]string `json:"properties"`
}

func readMetadata(t *testing.T, loc string) mirrorMetadata {
	t.Helper()
	b, err := os.ReadFile(strings.TrimPrefix(loc, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	var md mirrorMetadata
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	return md
}

// TestIcebergSchemaEvolution: a nullable column added to the sluice
// table appears in the mirror's current schema (optional, the next field
// id) and its name mapping, and icebird reads every version, before and
// after, as DuckDB reads `sluice files`; a rollback to before the column
// keeps it in the mirror. A column whose type changes is refused with
// ErrSchemaChanged, the mirror left at the version before.
func TestIcebergSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, _, _ := compactedTable(t, ctx, filepath.Join(dir, "events"))
	cat := sqliteCatalog(t, ctx, dir)
	opts := iceberg.Options{Namespace: "lake", Name: "events"}
	if _, err := iceberg.Sync(ctx, tbl, cat, opts); err != nil {
		t.Fatal(err)
	}
	wider, err := catalog.ParseSchema("id:int64,ts:timestamp,note:string?")
	if err != nil {
		t.Fatal(err)
	}
	m, err := tbl.Commit(ctx, catalog.Change{Operation: "alter", Schema: &wider}) // v5
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.WriteFiles(ctx, m, [][]any{{int64(100), time.Date(2024, 5, 2, 1, 0, 0, 0, time.UTC), "added"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", Add: files, DataChange: true}); err != nil { // v6
		t.Fatal(err)
	}
	res, err := iceberg.Sync(ctx, tbl, cat, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mirrored != 2 || res.Version != 6 {
		t.Fatalf("sync after the column was added: %+v", res)
	}
	md := readMetadata(t, res.MetadataLocation)
	var fields []string
	for _, s := range md.Schemas {
		if s.ID != md.CurrentSchemaID {
			continue
		}
		for _, f := range s.Fields {
			fields = append(fields, f.Name)
			if f.Name == "note" && (f.ID != 3 || f.Required || f.Type != "string") {
				t.Errorf("the mirror's note column: %+v, want optional string, field id 3", f)
			}
		}
	}
	if strings.Join(fields, ",") != "id,ts,note" {
		t.Errorf("the mirror's current schema has %v, want id, ts, note", fields)
	}
	var mapping []struct {
		ID    int      `json:"field-id"`
		Names []string `json:"names"`
	}
	if err := json.Unmarshal([]byte(md.Properties["schema.name-mapping.default"]), &mapping); err != nil {
		t.Fatalf("name mapping %q: %v", md.Properties["schema.name-mapping.default"], err)
	}
	found := false
	for _, e := range mapping {
		found = found || (e.ID == 3 && len(e.Names) == 1 && e.Names[0] == "note")
	}
	if !found {
		t.Errorf("the name mapping %s does not map note to field 3", md.Properties["schema.name-mapping.default"])
	}
	checkMirror(t, ctx, tbl, res.MetadataLocation, []string{"append", "append", "append", "replace", "append", "append"})

	// A rollback to before the column keeps it in the mirror, where the
	// files of that version read it as null.
	if _, err := tbl.Rollback(ctx, 4, "test"); err != nil { // v7
		t.Fatal(err)
	}
	back, err := iceberg.Sync(ctx, tbl, cat, opts)
	if err != nil || back.Version != 7 {
		t.Fatalf("sync of a rollback to before the column: %+v, %v", back, err)
	}
	checkMirror(t, ctx, tbl, back.MetadataLocation, nil)

	// A column's type changing is not mirrored.
	changed, err := catalog.ParseSchema("id:int64,ts:timestamp,note:int64?")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "alter", Schema: &changed}); err != nil { // v8
		t.Fatal(err)
	}
	bad, err := iceberg.Sync(ctx, tbl, cat, opts)
	if !errors.Is(err, iceberg.ErrSchemaChanged) || bad.Version != 7 || !strings.Contains(err.Error(), `"note"`) {
		t.Fatalf("sync of a changed column type: %+v, %v; want ErrSchemaChanged naming note, the mirror at 7", bad, err)
	}
}
