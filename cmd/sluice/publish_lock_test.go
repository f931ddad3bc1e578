package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/internal/testenv"
)

// TestPublishWaitsOutALongReader: a reader's transaction holds the table
// for 30s (3s under -short). The publish gives up each lock attempt at
// --lock-timeout and retries; meanwhile other readers, whose own
// lock_timeout is 4 times --lock-timeout, keep reading the old rows (had
// the swap queued them behind the long reader, they would fail with a
// lock timeout). Once the reader ends the publish swaps and its --json
// summary reports the wait and the attempts.
func TestPublishWaitsOutALongReader(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	hold := 30 * time.Second
	if testing.Short() {
		hold = 3 * time.Second
	}
	const lockTimeout = 500 * time.Millisecond
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, land, "a.jsonl", 0, 100)
	mustSluice(t, "ingest", loc, "--from", land)
	mustSluice(t, "publish", loc, "--to", url, "--as", "events")
	writeEvents(t, land, "b.jsonl", 100, 50)
	mustSluice(t, "ingest", loc, "--from", land)

	holder := pgConnect(t, url)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if n := pgCount(t, tx, "SELECT count(*) FROM events"); n != 100 {
		t.Fatalf("events has %d rows, want 100", n)
	}
	held := time.Now()

	cmd := exec.Command(sluiceBin, "publish", loc, "--to", url, "--as", "events", "--json", "-v", "--lock-timeout", lockTimeout.String())
	cmd.Env = append(os.Environ(), testenv.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	finished := false
	defer func() { // a failed test kills the publish it started
		if !finished {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	reader := pgConnect(t, url)
	if _, err := reader.Exec(ctx, "SET lock_timeout = '"+(4*lockTimeout).String()+"'"); err != nil {
		t.Fatal(err)
	}
	reads := 0
	for time.Since(held) < hold {
		if n := pgCount(t, reader, "SELECT count(*) FROM events"); n != 100 {
			t.Fatalf("a reader saw %d rows while the long reader held the old table", n)
		}
		reads++
		select {
		case err := <-exited:
			finished = true
			t.Fatalf("publish ended while the long reader held the table: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	finished = true
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, stderr.String())
	}
	s := summaryOf(t, result{0, stdout.String(), stderr.String()})
	wait, _ := s["lock_wait_seconds"].(float64)
	attempts, _ := s["swap_attempts"].(float64)
	if s["rows"] != 150.0 || attempts < 2 || wait < lockTimeout.Seconds() {
		t.Fatalf("summary %v: want 150 rows, several attempts and a lock wait past the lock timeout", s)
	}
	if !strings.Contains(stderr.String(), "retrying") {
		t.Fatalf("the log does not say the swap retried:\n%s", stderr.String())
	}
	if n := pgCount(t, reader, "SELECT count(*) FROM events"); n != 150 {
		t.Fatalf("events has %d rows after the publish, want 150", n)
	}
	t.Logf("%d reads during the hold; publish waited %.1fs over %.0f attempts", reads, wait, attempts)
}

func pgConnect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func pgCount(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, query string) int64 {
	t.Helper()
	var n int64
	if err := q.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
