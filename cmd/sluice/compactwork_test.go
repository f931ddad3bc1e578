package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

// A compaction spread over 8 worker processes on S3, as the pods of an
// Indexed Job run it (every one --plan --worker --commit under the Job's
// name, the shard from JOB_COMPLETION_INDEX), with a random worker killed
// by SIGKILL 20 times while they run and started again, as Kubernetes
// restarts a failed pod of an index: every unit is committed exactly once,
// the rows are the same before and after, a last --commit finds nothing
// to do, and after vacuum every data file left is a live one.
func TestCompactSpreadOverKilledWorkers(t *testing.T) {
	ctx := context.Background()
	loc := testenv.Location(t, testenv.S3)
	const days, perDay = 6, 64
	writeSmallFiles(t, loc, days, perDay, 40)
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	before := tableMultiset(t, tbl)

	const workers, kills, planID = 8, 20, "sluice-compact-events-29384756"
	args := []string{"compact", loc, "--plan", "--worker", "--commit", "--plan-id", planID,
		"--target-file-size", "4KiB", "--lease-ttl", "2s", "--json"}
	rng := rand.New(rand.NewPCG(7, 37))
	killed, took := killWorkers(t, rng, workers, kills, args)
	t.Logf("8 workers, %d kills, done in %s", killed, took.Round(time.Millisecond))

	plan, err := compact.ReadPlan(ctx, tbl.Store(), planID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the plan has %d units", len(plan.Units))
	if len(plan.Units) < 2*workers {
		t.Fatalf("the plan has %d units; the test wants at least two per worker", len(plan.Units))
	}
	last := summaryOf(t, mustSluice(t, "compact", loc, "--commit", "--plan-id", planID, "--json"))
	c, _ := last["commit"].(map[string]any)
	if c["done"] != true || len(c["committed"].([]any)) != 0 || len(c["already_committed"].([]any)) != len(plan.Units) {
		t.Fatalf("a last --commit: %v; want every one of the %d units already committed and nothing more", c, len(plan.Units))
	}
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cp map[string]struct {
		Units []string `json:"units"`
	}
	if err := json.Unmarshal(m.Checkpoints[compact.WorkCheckpoint], &cp); err != nil {
		t.Fatal(err)
	}
	units := cp[planID].Units
	if len(units) != len(plan.Units) || len(slices.Compact(slices.Clone(units))) != len(units) {
		t.Fatalf("the manifest records units %v committed; want each of the %d once", units, len(plan.Units))
	}
	if after := tableMultiset(t, tbl); !slices.Equal(after, before) {
		t.Fatalf("after %d kills the table has %d rows; before it had %d (or their values differ)", killed, len(after), len(before))
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) >= days*perDay {
		t.Fatalf("%d files live after the compaction; want fewer than the %d written", len(files), days*perDay)
	}

	time.Sleep(1100 * time.Millisecond)
	mustSluice(t, "vacuum", loc, "--retain", "1s", "--force")
	live := map[string]bool{}
	for _, f := range files {
		live[f.Path] = true
	}
	var orphans []string
	if err := tbl.Store().List(ctx, "", func(o cloud.ObjectInfo) error {
		if strings.HasSuffix(o.Key, ".parquet") && !strings.HasPrefix(o.Key, "_sluice/") && !live[o.Key] {
			orphans = append(orphans, o.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(orphans) > 0 {
		t.Fatalf("after vacuum, %d data files no version references are left: %v", len(orphans), orphans)
	}
}

// killWorkers runs n worker processes of args at once, each with its index
// in JOB_COMPLETION_INDEX and n in JOB_COMPLETIONS as an Indexed Job's pods
// have, and kills a random running one by SIGKILL every 30 to 200 ms,
// starting it again under a new instance name, until kills processes have
// been killed; then it waits for every worker to succeed. It returns the
// kills and how long the workers took.
func killWorkers(t *testing.T, rng *rand.Rand, n, kills int, args []string) (int, time.Duration) {
	t.Helper()
	type proc struct {
		cmd  *exec.Cmd
		out  strings.Builder
		done chan struct{}
		err  error
	}
	procs := make([]*proc, n)
	start := func(i int) {
		p := &proc{cmd: exec.Command(sluiceBin, args...), done: make(chan struct{})}
		p.cmd.Env = append(os.Environ(), append(testenv.Env(), fmt.Sprint("JOB_COMPLETION_INDEX=", i),
			fmt.Sprint("JOB_COMPLETIONS=", n), fmt.Sprintf("SLUICE_INSTANCE=pod-%d-%d", i, rng.IntN(1e6)))...)
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
		go func() { p.err = p.cmd.Wait(); close(p.done) }()
	}
	finished := func(p *proc) bool {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	began := time.Now()
	for i := range n {
		start(i)
	}
	killed := 0
	for killed < kills {
		time.Sleep(time.Duration(30+rng.IntN(170)) * time.Millisecond)
		var running []int
		for i, p := range procs {
			if !finished(p) {
				running = append(running, i)
			}
		}
		if len(running) == 0 {
			break
		}
		i := running[rng.IntN(len(running))]
		_ = procs[i].cmd.Process.Signal(syscall.SIGKILL)
		<-procs[i].done
		if procs[i].err == nil {
			continue // it finished before the signal
		}
		killed++
		start(i)
	}
	if killed < kills {
		t.Fatalf("the workers finished after %d kills in %s; the test wants %d during the run", killed, time.Since(began), kills)
	}
	deadline := time.After(3 * time.Minute)
	for i, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			t.Fatalf("worker %d had not finished 3 minutes after the last kill: %s", i, p.out.String())
		}
		if p.err != nil {
			t.Fatalf("worker %d: %v: %s", i, p.err, p.out.String())
		}
	}
	return killed, time.Since(began)
}

// tableMultiset reads every row of the table's newest version, each
// printed, sorted: equal multisets are equal tables.
func tableMultiset(t *testing.T, tbl *catalog.Table) []string {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, f := range files {
		rs, err := pqio.ReadParquetRows(ctx, tbl.Store(), f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			rows = append(rows, fmt.Sprint(r))
		}
	}
	slices.Sort(rows)
	return rows
}
