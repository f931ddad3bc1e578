package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/faults"
)

var chaosJobs = []string{"ingest-kafka", "ingest-landing", "compact-events", "rollup-lists", "publish-lists"}

// finish turns the faults off and lets one serve instance run every job
// for an interval that started after the last record was produced.
func (c *chaos) finish() {
	t := c.t
	c.in.SetEnabled(false)
	c.brokerOut.Store(0)
	c.cleanFrom = time.Now()
	c.start(0)
	defer c.stop(0)
	// The clean run is done when every job succeeded for an interval that
	// started after the faults went off, and no interval is left running
	// by a killed instance: serve's sweep must take each over once its
	// lease expired, however long before it started.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		done := map[string]bool{}
		var left []string
		for _, r := range runsOf(t, mustSluiceEnv(t, c.env, "--json", "runs", "--config", c.config)) {
			if r["status"] == "succeeded" && !timeOf(t, r["interval_start"]).Before(c.cleanFrom) {
				done[r["job"].(string)] = true
			}
			// A run claimed ahead of its start is running too, started in
			// the future: not left by anyone.
			if r["status"] == "running" && timeOf(t, r["started"]).Before(c.cleanFrom) {
				left = append(left, r["job"].(string)+" "+r["interval"].(string))
			}
		}
		if len(done) == len(chaosJobs) && len(left) == 0 {
			c.awaitIdle()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the clean run did not finish in 3 minutes: jobs done %v, intervals still running since before it %v\nlog of serve-0 is %s",
				done, left, filepath.Join(c.dir, "serve-0.log"))
		}
		time.Sleep(2 * time.Second)
	}
}

// awaitIdle waits, up to a minute, for a moment when the clean instance
// runs nothing, so that the SIGTERM that ends it finds no run to cancel
// (one started just before it has its grace to finish). On a loaded
// machine a job stopped midway could take longer than stop waits.
func (c *chaos) awaitIdle() {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		busy := false
		for _, r := range runsOf(c.t, mustSluiceEnv(c.t, c.env, "--json", "runs", "--config", c.config)) {
			if r["status"] == "running" && !timeOf(c.t, r["started"]).After(time.Now()) {
				busy = true
			}
		}
		if !busy {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// check asserts what a user would check after the run, and prints the
// figures.
func (c *chaos) check() {
	t := c.t
	ctx := context.Background()
	check := filepath.Join(c.dir, "check.db")
	pub := func(table, as string) {
		mustSluiceEnv(t, c.env, "publish", c.lake+"/"+table, "--to", "sqlite://"+check, "--as", as, "--force")
	}
	mustSluiceEnv(t, c.env, "rollup", c.lake+"/list_full", "--source", c.lake+"/events", "--snapshot", c.snapshot,
		"--key", "list_id", "--time", "event_time", "--measure", "subscribers=sum(tally)", "--through", "2024-01-08", "--full")
	pub("events", "events")
	pub("events_quarantine", "quarantine")
	pub("list_rollup", "pipeline_rollup")
	pub("list_full", "full_rollup")
	db, err := sql.Open("sqlite", "file:"+check)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("ATTACH DATABASE ? AS wh", "file:"+filepath.Join(c.dir, "warehouse.db")+"?mode=ro"); err != nil {
		t.Fatal(err)
	}
	query := func(q string) int64 {
		var n int64
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}

	// Every produced record exactly once.
	inTable := map[string]int{}
	rows, err := db.Query("SELECT event_id, count(*) FROM events GROUP BY event_id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		inTable[id] = n
	}
	rows.Close()
	var dups, lost, extra, total int
	for id, n := range inTable {
		total += n
		if n > 1 {
			dups += n - 1
		}
		if !c.produced[id] {
			extra++
		}
	}
	for id := range c.produced {
		if inTable[id] == 0 {
			lost++
		}
	}
	quarantined := query("SELECT count(*) FROM quarantine")
	noReason := query("SELECT count(*) FROM quarantine WHERE reason IS NULL OR reason = ''")
	rollupVsFull := query("SELECT (SELECT count(*) FROM (SELECT * FROM pipeline_rollup EXCEPT SELECT * FROM full_rollup)) + (SELECT count(*) FROM (SELECT * FROM full_rollup EXCEPT SELECT * FROM pipeline_rollup))")
	whVsRollup := query("SELECT (SELECT count(*) FROM (SELECT * FROM wh.list_daily EXCEPT SELECT * FROM pipeline_rollup)) + (SELECT count(*) FROM (SELECT * FROM pipeline_rollup EXCEPT SELECT * FROM wh.list_daily))")
	rollupRows := query("SELECT count(*) FROM pipeline_rollup")

	// No live file missing; after vacuum, no orphan.
	var missing, orphans int
	for _, table := range []string{"events", "events_quarantine", "list_rollup"} {
		loc := c.lake + "/" + table
		missing += len(c.absent(ctx, loc))
		mustSluiceEnv(t, c.env, "vacuum", loc, "--retain", "0s", "--force")
		o := c.orphans(ctx, loc)
		for _, k := range o {
			t.Errorf("%s: orphan %s after vacuum", table, k)
		}
		orphans += len(o)
		missing += len(c.absent(ctx, loc))
	}

	// Every interval in the history that ran succeeded, once. An
	// interval recorded as skipped (missed while no instance ran, older
	// than catchup allows) never ran, and neither did the jobs after it,
	// recorded skipped too; ingest takes its records in the next
	// interval, which the table checks above prove. An interval claimed
	// ahead of its start when the clean run's instance stopped is given
	// back: cancelled, never started.
	statuses := map[string]int{}
	intervals := map[string]int{}
	runs := runsOf(t, mustSluiceEnv(t, c.env, "--json", "runs", "--config", c.config))
	for _, r := range runs {
		intervals[r["job"].(string)+" "+r["interval"].(string)]++
		statuses[r["status"].(string)]++
		switch {
		case r["status"] == "skipped":
			t.Logf("skipped: %s %s: %v", r["job"], r["interval"], r["error"])
		case r["status"] == "succeeded":
			if r["trigger"] == "takeover" {
				c.takenOver++
			}
		case r["status"] == "cancelled" && r["started"] == nil && !timeOf(t, r["interval_start"]).Before(c.cleanFrom):
		default:
			t.Errorf("run %s %s: %s (started %v): %v", r["job"], r["interval"], r["status"], r["started"], r["error"])
		}
	}
	for k, n := range intervals {
		if n != 1 {
			t.Errorf("interval %s has %d records", k, n)
		}
	}

	t.Logf("chaos figures (seed %d): iterations %d; serve starts %d, processes killed %d; broker outages %d; faults %s (total %d); "+
		"records produced %d good + %d bad; in table %d rows, %d distinct; duplicates %d, lost %d, not produced %d; quarantined %d (%d without reason); "+
		"rollup rows %d, rollup vs --full mismatches %d, warehouse vs rollup mismatches %d; live files missing %d, orphans after vacuum %d; runs by status %v, "+
		"runs that took over an interval a killed instance left %d",
		c.seed, c.iters, c.starts, c.killed, c.outages, faults.FormatCounts(c.in.Counts()), c.in.Total(),
		len(c.produced), c.bad, total, len(inTable), dups, lost, extra, quarantined, noReason,
		rollupRows, rollupVsFull, whVsRollup, missing, orphans, statuses, c.takenOver)
	if dups != 0 || lost != 0 || extra != 0 {
		t.Errorf("events: %d duplicates, %d lost, %d never produced", dups, lost, extra)
	}
	if quarantined != int64(c.bad) || noReason != 0 {
		t.Errorf("quarantine holds %d records (%d without reason); %d bad ones were produced", quarantined, noReason, c.bad)
	}
	if rollupVsFull != 0 || whVsRollup != 0 || rollupRows == 0 {
		t.Errorf("rollup: %d rows, %d differ from --full, %d differ in the warehouse", rollupRows, rollupVsFull, whVsRollup)
	}
	if missing != 0 {
		t.Errorf("%d live files missing", missing)
	}
	if c.in.Total() == 0 || c.killed == 0 {
		t.Errorf("no chaos: %d faults, %d kills", c.in.Total(), c.killed)
	}
}

// liveKeys returns the live files of the table at loc, as keys under it.
func (c *chaos) liveKeys(loc string) map[string]bool {
	out := map[string]bool{}
	for _, u := range lines(mustSluiceEnv(c.t, c.env, "files", loc).stdout) {
		out[strings.TrimPrefix(u, loc+"/")] = true
	}
	return out
}

// objects lists the data objects (outside _sluice/) of the table at loc,
// straight from the S3 server.
func (c *chaos) objects(ctx context.Context, loc string) map[string]bool {
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		c.t.Fatal(err)
	}
	defer st.Close()
	out := map[string]bool{}
	err = st.List(ctx, "", func(o cloud.ObjectInfo) error {
		if !strings.HasPrefix(o.Key, "_sluice") {
			out[o.Key] = true
		}
		return nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// absent returns the live files of loc the store does not hold.
func (c *chaos) absent(ctx context.Context, loc string) []string {
	objs := c.objects(ctx, loc)
	var out []string
	for k := range c.liveKeys(loc) {
		if !objs[k] {
			c.t.Errorf("%s: live file %s is missing", loc, k)
			out = append(out, k)
		}
	}
	return out
}

// orphans returns the data objects of loc that no live version lists.
func (c *chaos) orphans(ctx context.Context, loc string) []string {
	live := c.liveKeys(loc)
	var out []string
	for k := range c.objects(ctx, loc) {
		if !live[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
