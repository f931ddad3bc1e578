package delta_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/internal/testenv"
)

// newDeltaTable creates an empty Delta table (protocol 1/2, one long
// column) at loc and returns it.
func newDeltaTable(t *testing.T, loc string) *delta.Table {
	t.Helper()
	st, err := cloud.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tbl := delta.New(st)
	err = tbl.Commit(context.Background(), 0, []delta.Action{
		{Protocol: &delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{Metadata: &delta.Metadata{ID: "t", Format: delta.Format{Provider: "parquet", Options: map[string]string{}},
			SchemaString:     `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`,
			PartitionColumns: []string{}, Configuration: map[string]string{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func add(path string) delta.Action {
	return delta.Action{Add: &delta.Add{Path: path, PartitionValues: map[string]*string{}, Size: 1, DataChange: true}}
}

func remove(path string) delta.Action {
	return delta.Action{Remove: &delta.Remove{Path: path, DataChange: false}}
}

func livePaths(t *testing.T, tbl *delta.Table) map[string]bool {
	t.Helper()
	s, err := tbl.Snapshot(context.Background(), delta.Latest)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range s.Files {
		out[f.Path] = true
	}
	return out
}

// On every store: appenders racing for the same versions all land, each
// once, in versions without a gap; of two compactions of the same file
// one lands and the other fails with ErrConflict; a compaction racing a
// DELETE of one of its inputs, or a metadata change, aborts.
func TestCommitsRaceOnEveryStore(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range testenv.Locations(t) {
		t.Run(kind, func(t *testing.T) {
			tbl := newDeltaTable(t, loc)
			const writers, each = 6, 4
			var wg sync.WaitGroup
			errs := make(chan error, writers*each)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						s, err := tbl.Snapshot(ctx, delta.Latest)
						if err != nil {
							errs <- err
							return
						}
						_, err = tbl.CommitRebased(ctx, delta.Rebase{Read: s.Version}, []delta.Action{add(fmt.Sprintf("w%d-%d.parquet", w, i))})
						if err != nil {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("an append failed: %v", err)
			}
			s, err := tbl.Snapshot(ctx, delta.Latest)
			if err != nil {
				t.Fatal(err)
			}
			if s.Version != writers*each || len(s.Files) != writers*each {
				t.Fatalf("after %d appends: version %d with %d files", writers*each, s.Version, len(s.Files))
			}

			// Two compactions of w0-0 and w0-1, both planned on s.
			in := []string{"w0-0.parquet", "w0-1.parquet"}
			compaction := func(out string) []delta.Action {
				return []delta.Action{remove(in[0]), remove(in[1]), add(out)}
			}
			r := delta.Rebase{Read: s.Version, Removes: in}
			if _, err := tbl.CommitRebased(ctx, r, compaction("c1.parquet")); err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.CommitRebased(ctx, r, compaction("c2.parquet")); !errors.Is(err, delta.ErrConflict) {
				t.Fatalf("the second compaction of the same files: %v; want ErrConflict", err)
			}
			live := livePaths(t, tbl)
			if !live["c1.parquet"] || live["c2.parquet"] || live[in[0]] || len(live) != writers*each-1 {
				t.Fatalf("live files after the race: %v", live)
			}

			// A DELETE of an input lands first: the compaction aborts.
			s2, _ := tbl.Snapshot(ctx, delta.Latest)
			if err := tbl.Commit(ctx, s2.Version+1, []delta.Action{remove("w1-0.parquet")}); err != nil {
				t.Fatal(err)
			}
			_, err = tbl.CommitRebased(ctx, delta.Rebase{Read: s2.Version, Removes: []string{"w1-0.parquet", "w1-1.parquet"}},
				[]delta.Action{remove("w1-0.parquet"), remove("w1-1.parquet"), add("c3.parquet")})
			if !errors.Is(err, delta.ErrConflict) {
				t.Fatalf("a compaction whose input a DELETE removed: %v; want ErrConflict", err)
			}
			if live := livePaths(t, tbl); live["c3.parquet"] || !live["w1-1.parquet"] {
				t.Fatalf("the aborted compaction changed the table: %v", live)
			}
			if kind == testenv.Local {
				// The commits read back through the independent reader
				// as they do through sluice's.
				got, _ := tbl.Snapshot(ctx, delta.Latest)
				want, err := deltarows(t, loc, -1)
				if err != nil {
					t.Fatalf("independent reader: %v", err)
				}
				sameSnapshot(t, got, want)
			}

			// A metadata change lands first: the compaction aborts.
			s3, _ := tbl.Snapshot(ctx, delta.Latest)
			md := s3.Metadata
			md.Configuration = map[string]string{"delta.appendOnly": "false"}
			if err := tbl.Commit(ctx, s3.Version+1, []delta.Action{{Metadata: &md}}); err != nil {
				t.Fatal(err)
			}
			_, err = tbl.CommitRebased(ctx, delta.Rebase{Read: s3.Version, Removes: []string{"w2-0.parquet"}},
				[]delta.Action{remove("w2-0.parquet"), add("c4.parquet")})
			if !errors.Is(err, delta.ErrConflict) {
				t.Fatalf("a compaction racing a metadata change: %v; want ErrConflict", err)
			}
		})
	}
}

// A commit the log already has fails with ErrConflict and leaves the
// winner's commit as it was.
func TestCommitOfATakenVersionConflicts(t *testing.T) {
	ctx := context.Background()
	tbl := newDeltaTable(t, t.TempDir())
	if err := tbl.Commit(ctx, 1, []delta.Action{add("a.parquet")}); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Commit(ctx, 1, []delta.Action{add("b.parquet")}); !errors.Is(err, delta.ErrConflict) {
		t.Fatalf("second commit of version 1: %v; want ErrConflict", err)
	}
	if live := livePaths(t, tbl); !live["a.parquet"] || live["b.parquet"] {
		t.Fatalf("live files %v; want a.parquet alone", live)
	}
}
