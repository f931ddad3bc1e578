package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/internal/testenv"
)

// TestPublishSurvivesKill9: the sluice binary publishing to PostgreSQL is
// killed with SIGKILL at random points, half the rounds during the COPY
// (seen in pg_stat_activity), half within 5ms of the log line that the
// swap begins (during the swap transaction, or just after its commit). After each kill the
// target holds one whole version, old or new; the next publish succeeds
// and leaves no _new or _old behind. 10 rounds, 4 under -short.
func TestPublishSurvivesKill9(t *testing.T) {
	url := testenv.PostgresURL(t)
	rounds := 10
	if testing.Short() {
		rounds = 4
	}
	dir := t.TempDir()
	// Two tables of different sizes published in turn to one target, so
	// every round replaces one whole version by the other.
	const rowsA, rowsB = 60_000, 90_000
	tables := make([]string, 2)
	whole := map[[2]int64]string{}
	for i, n := range []int{rowsA, rowsB} {
		loc, land := filepath.Join(dir, fmt.Sprint("t", i)), filepath.Join(dir, fmt.Sprint("land", i))
		initEvents(t, loc)
		writeEvents(t, land, "a.jsonl", 0, n)
		mustSluice(t, "ingest", loc, "--from", land)
		tables[i] = loc
		whole[[2]int64{int64(n), int64(n-1) * int64(n) / 2}] = loc
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	began := time.Now()
	mustSluice(t, "publish", tables[0], "--to", url, "--as", "events")
	loadTime := time.Since(began)

	state := func() (got [2]int64, leftover int64) {
		t.Helper()
		ctx := context.Background()
		if err := conn.QueryRow(ctx, "SELECT count(*), coalesce(sum(list_id), 0) FROM events").Scan(&got[0], &got[1]); err != nil {
			t.Fatalf("read events: %v", err)
		}
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname IN ('events_new', 'events_old')").Scan(&leftover); err != nil {
			t.Fatal(err)
		}
		return got, leftover
	}
	killed := map[string]int{}
	for r := range rounds {
		next := tables[(r+1)%2]
		phase := "copy"
		if r%2 == 1 {
			phase = "swap"
		}
		outcome := publishAndKill(t, conn, url, next, phase, loadTime)
		got, _ := state()
		if whole[got] == "" {
			t.Fatalf("round %d (%s, %s): events holds count %d, sum %d: no whole version", r, phase, outcome, got[0], got[1])
		}
		held := "old"
		if whole[got] == next {
			held = "new" // the swap had committed
		}
		killed[phase+" "+outcome+", "+held+" version held"]++
		mustSluice(t, "publish", next, "--to", url, "--as", "events")
		got, leftover := state()
		if whole[got] != next || leftover != 0 {
			t.Fatalf("round %d: after the next publish events holds %v (%s), %d of _new/_old left: want %s whole, none left",
				r, got, whole[got], leftover, next)
		}
	}
	t.Logf("rounds by phase and outcome: %v", killed)
	if killed["copy killed, old version held"] == 0 {
		t.Fatal("no round killed a publish during the COPY")
	}
}

// publishAndKill starts a publish of loc and kills it with SIGKILL at a
// random point of phase: "copy" a random time into the COPY, up to half
// a whole load; "swap" up to 5ms after the swap is logged to begin. It
// returns "killed", or "finished" when the publish ended first.
func publishAndKill(t *testing.T, conn *pgx.Conn, url, loc, phase string, loadTime time.Duration) string {
	t.Helper()
	cmd := exec.Command(sluiceBin, "publish", loc, "--to", url, "--as", "events", "-v")
	cmd.Env = append(os.Environ(), testenv.Env()...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	loaded := make(chan struct{})
	drained := make(chan struct{})
	go func() { // read the log; closes loaded when the swap begins
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), `"msg":"analyzed: swapping"`) {
				seen = true
				close(loaded)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	exited := make(chan error, 1)
	go func() {
		<-drained
		exited <- cmd.Wait()
	}()
	var delay time.Duration
	switch phase {
	case "copy":
		if !waitForCopy(t, conn, exited) {
			return "finished"
		}
		delay = rand.N(loadTime/2 + time.Millisecond)
	case "swap":
		select {
		case <-loaded:
		case err := <-exited:
			t.Fatalf("publish ended before its swap began: %v", err)
		}
		delay = rand.N(5 * time.Millisecond)
	}
	time.Sleep(delay)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err = <-exited
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
		return "killed"
	}
	if err != nil {
		t.Fatalf("publish failed before the kill: %v", err)
	}
	return "finished"
}

// waitForCopy polls pg_stat_activity until a COPY into events_new runs;
// false if the publish exited first.
func waitForCopy(t *testing.T, conn *pgx.Conn, exited <-chan error) bool {
	t.Helper()
	for {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'active' AND query ILIKE 'copy %events_new%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return true
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("publish failed before its COPY was seen: %v", err)
			}
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// TestPublishSQLiteSurvivesKill9: the sluice binary publishing to a SQLite
// file is killed with SIGKILL at a random point after it took the write
// lock (logged), up to a whole load's time later: the target holds one
// whole version, and the next publish succeeds and leaves no _new or _old
// (load and swap share one transaction, so the kill leaves neither). 6
// rounds, 3 under -short.
func TestPublishSQLiteSurvivesKill9(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	dir := t.TempDir()
	const rowsA, rowsB = 60_000, 90_000
	tables := make([]string, 2)
	whole := map[[2]int64]string{}
	for i, n := range []int{rowsA, rowsB} {
		loc, land := filepath.Join(dir, fmt.Sprint("t", i)), filepath.Join(dir, fmt.Sprint("land", i))
		initEvents(t, loc)
		writeEvents(t, land, "a.jsonl", 0, n)
		mustSluice(t, "ingest", loc, "--from", land)
		tables[i] = loc
		whole[[2]int64{int64(n), int64(n-1) * int64(n) / 2}] = loc
	}
	path := filepath.Join(dir, "w.db")
	to := "sqlite://" + path
	began := time.Now()
	mustSluice(t, "publish", tables[0], "--to", to, "--as", "events")
	loadTime := time.Since(began)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	state := func() (got [2]int64, leftover int64) {
		t.Helper()
		if err := db.QueryRow("SELECT count(*), coalesce(sum(list_id), 0) FROM events").Scan(&got[0], &got[1]); err != nil {
			t.Fatalf("read events: %v", err)
		}
		if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name IN ('events_new', 'events_old')").Scan(&leftover); err != nil {
			t.Fatal(err)
		}
		return got, leftover
	}
	outcomes := map[string]int{}
	for r := range rounds {
		next := tables[(r+1)%2]
		cmd := exec.Command(sluiceBin, "publish", next, "--to", to, "--as", "events", "-v")
		cmd.Env = append(os.Environ(), testenv.Env()...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		locked, drained := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(drained)
			sc := bufio.NewScanner(stderr)
			seen := false
			for sc.Scan() {
				if !seen && strings.Contains(sc.Text(), `"msg":"write lock taken: loading"`) {
					seen = true
					close(locked)
				}
			}
			_, _ = io.Copy(io.Discard, stderr)
			if !seen {
				close(locked)
			}
		}()
		<-locked
		time.Sleep(rand.N(loadTime + time.Millisecond))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-drained // Wait closes the pipe: read it to the end first
		err = cmd.Wait()
		outcome := "finished"
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
			outcome = "killed"
		} else if err != nil {
			t.Fatalf("round %d: publish failed before the kill: %v", r, err)
		}
		got, leftover := state()
		if whole[got] == "" || leftover != 0 {
			t.Fatalf("round %d (%s): events holds count %d, sum %d, %d of _new/_old: want one whole version, none left", r, outcome, got[0], got[1], leftover)
		}
		held := "old"
		if whole[got] == next {
			held = "new"
		}
		outcomes[outcome+", "+held+" version held"]++
		mustSluice(t, "publish", next, "--to", to, "--as", "events")
		if got, leftover := state(); whole[got] != next || leftover != 0 {
			t.Fatalf("round %d: after the next publish events holds %v, %d of _new/_old left: want %s whole", r, got, leftover, next)
		}
	}
	t.Logf("rounds by outcome: %v", outcomes)
	if outcomes["killed, old version held"] == 0 {
		t.Fatal("no round killed a publish before its commit")
	}
}
