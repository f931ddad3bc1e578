package catalog_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// recorder is a CommitObserver that notes the versions it is told of.
type recorder struct {
	mu       sync.Mutex
	versions []int64
}

func (r *recorder) Committed(_ context.Context, t *catalog.Table, m *catalog.Manifest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, m.Version)
}

// Every version a table commits is told to its observers, once, after it
// landed: create, appends, a rollback; a commit that fails tells nothing.
func TestObserversAreToldOfEveryCommit(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	tbl, err := catalog.Open(ctx, t.TempDir(), catalog.Options{Observers: []catalog.CommitObserver{rec}})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if _, err := tbl.Create(ctx, eventSchema, daySpec(t), nil, "test"); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)
	appendRows(t, tbl, eventRows(day, 0, 5))
	appendRows(t, tbl, eventRows(day, 5, 5))
	if _, err := tbl.Rollback(ctx, 2, "rb"); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Create(ctx, eventSchema, daySpec(t), nil, "again"); err == nil {
		t.Fatal("a second create succeeded")
	}
	if got := rec.versions; len(got) != 4 || got[0] != 1 || got[3] != 4 {
		t.Fatalf("observer told of versions %v, want [1 2 3 4]", got)
	}
	if len(tbl.Options().Observers) != 1 {
		t.Fatalf("the table's options lost its observer")
	}
}
