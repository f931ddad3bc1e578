package rollup_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/rollup"
)

// Each bad input fails with one line naming what is wrong, and commits
// nothing: the output table is not even created.
func TestRollupBadInput(t *testing.T) {
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	ctx := context.Background()

	int32Keys := filepath.Join(dir, "int32keys.parquet")
	writeSnapshot(t, int32Keys, "a:int32,b:string,date:date,total:int64", [][]any{{int32(1), "eu", day0, int64(3)}})
	stringTime := filepath.Join(dir, "stringtime")
	st, err := catalog.Open(ctx, stringTime, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, _ := catalog.ParseSchema("a:int64,b:string,ts:string,v:int32")
	if _, err := st.Create(ctx, s, catalog.PartitionSpec{}, nil, "test"); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		edit func(*rollup.Options)
		want string
	}{
		"a snapshot missing the measure's column": {func(o *rollup.Options) {
			o.Measures = measures(t, "subscribers=sum(v)")
		}, `has no column "subscribers" for the base of measure subscribers=sum(v)`},
		"a key type that differs between snapshot and events": {func(o *rollup.Options) {
			o.Snapshot = int32Keys
		}, `key column "a" is int32, the events' is int64`},
		"a --through before the snapshot day": {func(o *rollup.Options) {
			o.Through = day(-1)
		}, "--through 2024-02-29 is before the snapshot day 2024-03-01"},
		"a time column that is a string": {func(o *rollup.Options) {
			o.Source = stringTime
		}, `time column "ts" is string: want date or timestamp`},
		"a source that is not a table": {func(o *rollup.Options) {
			o.Source = t.TempDir()
		}, "is not a sluice table"},
		"a measure over a non-numeric column": {func(o *rollup.Options) {
			o.Measures = append(o.Measures, measures(t, "x=max(b)")...)
		}, `measure x=max(b) is over column "b", which is string: want int32, int64, float64 or decimal`},
		"a snapshot that does not exist": {func(o *rollup.Options) {
			o.Snapshot = filepath.Join(dir, "nothing.parquet")
		}, "nothing.parquet"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := options(t, src, snap)
			c.edit(&o)
			out := filepath.Join(t.TempDir(), "rollup")
			tb, err := catalog.Open(ctx, out, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tb.Close()
			_, err = rollup.Run(ctx, tb, o)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, c.want)
			}
			if _, err := tb.Latest(ctx); !errors.Is(err, catalog.ErrTableNotFound) {
				t.Fatalf("after the failure the output reads %v, want %v: something was committed", err, catalog.ErrTableNotFound)
			}
		})
	}
}

func TestParseMeasure(t *testing.T) {
	good := map[string]rollup.Measure{
		"subscribers=sum(tally)": {Name: "subscribers", Func: rollup.Sum, Column: "tally"},
		"n=count()":              {Name: "n", Func: rollup.Count},
		"lo=min(v)":              {Name: "lo", Func: rollup.Min, Column: "v"},
		"d=sum_day(v)":           {Name: "d", Func: rollup.SumDay, Column: "v"},
	}
	for s, want := range good {
		if m, err := rollup.ParseMeasure(s); err != nil || !reflect.DeepEqual(m, want) {
			t.Errorf("ParseMeasure(%q) = %+v, %v; want %+v", s, m, err, want)
		}
	}
	for _, s := range []string{"sum(v)", "x=avg(v)", "x=count(v)", "x=sum()", "x=sum(v"} {
		if _, err := rollup.ParseMeasure(s); err == nil {
			t.Errorf("ParseMeasure(%q) succeeded", s)
		}
	}
}
