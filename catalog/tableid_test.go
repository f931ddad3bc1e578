package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// A table's id is written by the version that creates it and carried by
// every later one, rollbacks included, so records kept elsewhere (the
// warehouse's sluice_published, an Iceberg mirror) can name the table
// whatever its location is spelled as.
func TestTableIDIsCreatedOnceAndCarried(t *testing.T) {
	ctx := context.Background()
	tbl, v1 := newTable(t, t.TempDir())
	if !uuidPattern.MatchString(v1.TableID) {
		t.Fatalf("version 1 table id %q, want a UUID", v1.TableID)
	}
	day := time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)
	v2 := appendRows(t, tbl, eventRows(day, 0, 5))
	appendRows(t, tbl, eventRows(day, 5, 5))
	rb, err := tbl.Rollback(ctx, v2.Version, "rb")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*catalog.Manifest{v2, rb} {
		if m.TableID != v1.TableID {
			t.Fatalf("version %d (%s) table id %q, want version 1's %q", m.Version, m.Operation, m.TableID, v1.TableID)
		}
	}
	if got := rb.Identity("file:///elsewhere"); got != v1.TableID {
		t.Fatalf("Identity = %q, want the table id %q", got, v1.TableID)
	}

	// Another table at another location has another id.
	_, other := newTable(t, t.TempDir())
	if other.TableID == v1.TableID {
		t.Fatalf("two tables share the id %q", other.TableID)
	}
}

// A table written before ids existed has none: it is named by its
// location until its next commit gives it one, which every later version
// keeps; a rollback to a version without an id keeps the table's.
func TestTableWithoutIDGetsOneAtItsNextCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, _ := newTable(t, dir)
	day := time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)
	appendRows(t, tbl, eventRows(day, 0, 5))
	// Strip the ids, as an older sluice wrote its versions.
	for _, v := range []int{1, 2} {
		stripTableID(t, filepath.Join(dir, "_sluice", "versions", versionFile(v)))
	}
	reopened, err := catalog.Open(ctx, dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	old, err := reopened.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if old.TableID != "" {
		t.Fatalf("stripped version has table id %q", old.TableID)
	}
	if got, want := old.Identity("file://"+dir), "location:file://"+dir; got != want {
		t.Fatalf("Identity of a table without id = %q, want %q", got, want)
	}
	v3 := appendRows(t, reopened, eventRows(day, 5, 5))
	if !uuidPattern.MatchString(v3.TableID) {
		t.Fatalf("first commit after ids: table id %q, want a UUID", v3.TableID)
	}
	v4 := appendRows(t, reopened, eventRows(day, 10, 5))
	rb, err := reopened.Rollback(ctx, 2, "rb")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*catalog.Manifest{v4, rb} {
		if m.TableID != v3.TableID {
			t.Fatalf("version %d table id %q, want %q", m.Version, m.TableID, v3.TableID)
		}
	}
}

func versionFile(v int) string { return fmt.Sprintf("%020d.json", v) }

func stripTableID(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["table_id"]; !ok {
		t.Fatalf("%s has no table_id to strip", path)
	}
	delete(m, "table_id")
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Until it has an id, a table is named by its absolute URL, the same
// whether it was opened by a relative or an absolute path.
func TestIdentityWithoutIDIgnoresHowTheLocationIsSpelled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	newTable(t, dir)
	stripTableID(t, filepath.Join(dir, "_sluice", "versions", versionFile(1)))
	t.Chdir(filepath.Dir(dir))
	var ids []string
	for _, loc := range []string{dir, filepath.Base(dir), "./" + filepath.Base(dir), "file://" + dir} {
		tbl, err := catalog.Open(ctx, loc, catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := tbl.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tbl.Identity(m))
		tbl.Close()
	}
	for i, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("identities %q: location %d differs", ids, i)
		}
	}
}
