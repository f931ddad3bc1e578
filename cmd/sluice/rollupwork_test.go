package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/testenv"
)

// A rollup spread over processes on S3 as an Argo workflow runs it: a
// --plan step for 8 shards, 8 --worker processes (the shard from
// JOB_COMPLETION_INDEX) of which a random one is killed by SIGKILL 20
// times while they run and started again, as Kubernetes restarts a failed
// pod, and a --commit started with the workers that waits for their
// shards. The output has the rows and values of a one-process
// rollup --full of the same input; a last --commit finds it committed,
// and a one-process rollup after it finds the output up to date.
func TestRollupWorkOverKilledWorkers(t *testing.T) {
	ctx := context.Background()
	base := testenv.Location(t, testenv.S3)
	src, snap, sharded, single := base+"/events", base+"/snapshot", base+"/sharded", base+"/single"
	rng := rand.New(rand.NewPCG(11, 29))
	d0 := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	var events, snapshot [][]any
	for k := int64(1); k <= 300; k++ {
		for range 1 + rng.IntN(5) {
			at := d0.AddDate(0, 0, rng.IntN(12)).Add(time.Duration(rng.IntN(86400)) * time.Second)
			events = append(events, []any{k, int32(rng.IntN(9) - 3), at})
		}
		if k%5 != 0 { // every fifth key is new since the snapshot
			snapshot = append(snapshot, []any{k, int64(rng.IntN(100)), d0})
		}
	}
	rollupTable(t, src, "list:int64,tally:int32,at:timestamp", "day(at)", events)
	rollupTable(t, snap, "list:int64,subscribers:int64,date:date", "", snapshot)
	opts := []string{"--source", src, "--snapshot", snap, "--key", "list", "--time", "at",
		"--measure", "subscribers=sum(tally)", "--measure", "events=count()", "--json"}
	mustSluice(t, append([]string{"rollup", single, "--full"}, opts...)...)

	const workers, kills, planID = 8, 20, "sluice-rollup-lists-7h2kq"
	step := func(flags ...string) []string { return append(append([]string{"rollup", sharded}, opts...), flags...) }
	plan := summaryOf(t, mustSluice(t, step("--plan", "--shard", "0/8", "--plan-id", planID)...))
	if plan["planned"] != true || plan["shards"] != 8.0 || plan["full"] != true || plan["plan_id"] != planID {
		t.Fatalf("--plan: %v; want plan %s written, full, on 8 shards", plan, planID)
	}

	commit := exec.Command(sluiceBin, step("--commit", "--plan-id", planID, "--commit-wait", "3m")...)
	commit.Env = append(os.Environ(), testenv.Env()...)
	var commitOut, commitErr strings.Builder
	commit.Stdout, commit.Stderr = &commitOut, &commitErr
	if err := commit.Start(); err != nil {
		t.Fatal(err)
	}
	killed, took := killWorkers(t, rng, workers, kills, step("--worker", "--plan-id", planID, "--lease-ttl", "1s"))
	t.Logf("%d workers, %d kills, done in %s", workers, killed, took.Round(time.Millisecond))

	if err := commit.Wait(); err != nil {
		t.Fatalf("the --commit started with the workers: %v: %s", err, commitErr.String())
	}
	c, _ := summaryOf(t, result{0, commitOut.String(), commitErr.String()})["commit"].(map[string]any)
	if pending, _ := c["pending"].([]any); c["committed"] != true || c["full"] != true || len(pending) != 0 {
		t.Fatalf("the --commit started with the workers: %v; want the plan committed in full by it", c)
	}
	last := summaryOf(t, mustSluice(t, step("--commit", "--plan-id", planID)...))
	if lc, _ := last["commit"].(map[string]any); lc["already_committed"] != true || lc["committed"] != false {
		t.Fatalf("a last --commit: %v; want the plan found committed already", last)
	}

	got, want := openTable(t, sharded), openTable(t, single)
	if g, w := tableMultiset(t, got), tableMultiset(t, want); !slices.Equal(g, w) {
		t.Fatalf("after %d kills the sharded output has %d rows, the one-process one %d (or their values differ):\n%s",
			killed, len(g), len(w), firstDiff(g, w))
	}
	if again := summaryOf(t, mustSluice(t, append([]string{"rollup", sharded}, opts...)...)); again["version"] != 0.0 || again["full"] != false {
		t.Fatalf("a one-process rollup after the sharded one: %v; want it up to date, nothing committed", again)
	}
	m, err := got.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if float64(m.Version) != c["version"] {
		t.Fatalf("the sharded output at version %d; want the commit's, %v", m.Version, c["version"])
	}
}

// openTable opens the table at loc, closed when the test ends.
func openTable(t *testing.T, loc string) *catalog.Table {
	t.Helper()
	tb, err := catalog.Open(context.Background(), loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

// firstDiff names the first row two sorted row lists differ at.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("row %d: %s, want %s", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d rows, want %d", len(got), len(want))
}
