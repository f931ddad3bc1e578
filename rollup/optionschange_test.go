package rollup_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/rollup"
)

// A rerun with other measures (or keys, time column, zone) would drop or
// change the output's columns: it is refused, naming the difference, and
// the output is left as it was; --full recomputes it with the new ones.
// Before, the rerun silently dropped the column.
func TestRollupRefusesChangedOptionsWithoutFull(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	out := filepath.Join(dir, "rollup")
	first := run(t, out, options(t, src, snap))
	o := options(t, src, snap)
	o.Measures = measures(t, "total=sum(v)", "n=count()")
	tb, err := catalog.Open(ctx, out, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	_, err = rollup.Run(ctx, tb, o)
	if !errors.Is(err, rollup.ErrOptionsChanged) || !strings.Contains(err.Error(), "measures: was total=sum(v), n=count(), lo=min(v), hi=max(v), wday=sum_day(w), now total=sum(v), n=count()") ||
		!strings.Contains(err.Error(), "--full") {
		t.Fatalf("a rerun with fewer measures: %v; want ErrOptionsChanged naming the measures and --full", err)
	}
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != first.Version || !strings.Contains(m.Schema.String(), "wday") {
		t.Fatalf("the output moved to version %d (%s), want it left at %d", m.Version, m.Schema, first.Version)
	}
	o.Full = true
	res, err := rollup.Run(ctx, tb, o)
	if err != nil || !res.Full || res.Version != first.Version+1 {
		t.Fatalf("with --full: %+v, %v; want a full recompute committed", res, err)
	}
}
