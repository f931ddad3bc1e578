package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// Vacuum deletes the folders of work plans (compaction's and rollup's)
// whose objects are all older than the retention, done or abandoned, and
// keeps a plan with any object newer than it, however old its plan.json;
// a dry run lists the same and deletes nothing. The output file that an
// abandoned plan's result names, never committed, is an unreferenced data
// file that the vacuum's data-file pass removes by age.
func TestVacuumDeletesOldWorkPlans(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel() // each waits three seconds for its cutoff
			ctx := context.Background()
			tbl, _ := newTable(t, testenv.Location(t, kind))
			st := tbl.Store()
			put := func(key, body string) {
				t.Helper()
				if _, err := st.Put(ctx, key, strings.NewReader(body), int64(len(body)), cloud.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			done := "_sluice/work/20261201T000000Z-0a0a0a0a/"
			abandoned := "_sluice/work/rollup-nightly-1/"
			working := "_sluice/work/20261202T000000Z-0b0b0b0b/"
			orphan := "date=2026-12-01/part-20261201T000000-00000000-0000-0000-0000-000000000001.zstd.parquet"
			old := []string{done + "plan.json", done + "claims/u00001.json", done + "results/u00001.json", done + "done",
				abandoned + "plan.json", abandoned + "claims/0000.json", abandoned + "results/0000.json",
				working + "plan.json", working + "results/u00001.json"}
			for _, key := range old {
				put(key, `{"worker":"w1"}`)
			}
			put(orphan, "PAR1 not committed")

			// Store times are whole seconds on S3: the cutoff falls a
			// second clear of the objects on both sides.
			time.Sleep(1500 * time.Millisecond)
			cutoff := time.Now()
			time.Sleep(1500 * time.Millisecond)
			put(working+"claims/u00002.json", `{"worker":"w2"}`) // renewed after the cutoff

			opts := catalog.VacuumOptions{Retain: catalog.DefaultRetention, Now: cutoff.Add(catalog.DefaultRetention), DryRun: true}
			dry, err := tbl.Vacuum(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			wantPlans := []string{st.URL(strings.TrimSuffix(done, "/")), st.URL(strings.TrimSuffix(abandoned, "/"))}
			slices.Sort(wantPlans)
			if !slices.Equal(dry.WorkPlans, wantPlans) {
				t.Fatalf("dry run: work plans %v; want %v", dry.WorkPlans, wantPlans)
			}
			var want []string
			for _, key := range append(old[:7:7], orphan) {
				want = append(want, st.URL(key))
			}
			slices.Sort(want)
			got := slices.Sorted(slices.Values(dry.Deleted))
			if !slices.Equal(got, want) {
				t.Fatalf("dry run would delete\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if why := dry.Why[st.URL(done+"done")]; !strings.Contains(why, "work plan 20261201T000000Z-0a0a0a0a") {
				t.Errorf("why a plan's object goes: %q; want it to name the plan", why)
			}
			for _, key := range append(old, orphan) {
				if _, err := st.Stat(ctx, key); err != nil {
					t.Fatalf("after a dry run, %s: %v; want it kept", key, err)
				}
			}

			opts.DryRun = false
			res, err := tbl.Vacuum(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.WorkPlans, wantPlans) || len(res.Deleted) != len(want) {
				t.Fatalf("vacuum deleted plans %v and %d objects; want %v and %d", res.WorkPlans, len(res.Deleted), wantPlans, len(want))
			}
			var left []string
			if err := st.List(ctx, "_sluice/work/", func(o cloud.ObjectInfo) error {
				left = append(left, o.Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			wantLeft := []string{working + "claims/u00002.json", working + "plan.json", working + "results/u00001.json"}
			if !slices.Equal(left, wantLeft) {
				t.Fatalf("left after vacuum:\n%s\nwant the plan still worked on:\n%s", strings.Join(left, "\n"), strings.Join(wantLeft, "\n"))
			}
			if _, err := st.Stat(ctx, orphan); !errors.Is(err, cloud.ErrNotFound) {
				t.Fatalf("the uncommitted output after vacuum: %v; want it deleted", err)
			}
		})
	}
}
