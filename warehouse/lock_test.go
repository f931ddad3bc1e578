package warehouse

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/testenv"
)

// signalWriter closes hit the first time a log line holds want.
type signalWriter struct {
	want string
	once sync.Once
	hit  chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	w.mu.Unlock()
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.hit) })
	}
	return len(p), nil
}

// TestPublishWaitsForALongReader: a reader's open transaction holds the
// table; the swap gives up each lock attempt at the lock timeout (so new
// readers are held back no longer), retries, and once the reader ends it
// swaps, reporting the wait.
func TestPublishWaitsForALongReader(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	tbl := newTable(t, "x:int64", xRows(0, 10))
	mustPublish(t, tbl, Options{To: url, As: "facts"})
	appendRows(t, tbl, xRows(10, 5))

	holder := connectT(t, url)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, holder, "SELECT count(*) FROM facts"); n != 10 {
		t.Fatalf("facts has %d rows", n)
	}
	w := &signalWriter{want: "retrying", hit: make(chan struct{})}
	const timeout = 100 * time.Millisecond
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Publish(ctx, tbl, Options{To: url, As: "facts", LockTimeout: timeout,
			Logger: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		done <- outcome{res, err}
	}()
	select {
	case <-w.hit:
	case o := <-done:
		t.Fatalf("publish ended before retrying: %+v %v", o.res, o.err)
	}
	// Between attempts, and during one for at most the lock timeout, a
	// new reader gets in; its own lock_timeout, far longer, would fail it
	// had the swap queued it behind the long reader.
	reader := connectT(t, url)
	if _, err := reader.Exec(ctx, "SET lock_timeout = '5s'"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if n := count(t, reader, "SELECT count(*) FROM facts"); n != 10 {
			t.Fatalf("a new reader saw %d rows while the old version stood", n)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Attempts < 2 || o.res.LockWait < timeout {
		t.Fatalf("result %+v: want at least 2 attempts and a lock wait of at least %s", o.res, timeout)
	}
	if n := count(t, reader, "SELECT count(*) FROM facts"); n != 15 {
		t.Fatalf("facts has %d rows after the publish, want 15", n)
	}
}

// TestPublishTwoAtOnce: two publishes of different tables to one target
// at once both succeed, one after the other (the advisory lock), and the
// target holds one of them whole.
func TestPublishTwoAtOnce(t *testing.T) {
	url := testenv.PostgresURL(t)
	a := newTable(t, "x:int64", xRows(0, 2000))
	b := newTable(t, "x:int64", xRows(0, 3000))
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, tbl := range []*catalog.Table{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Publish(context.Background(), tbl, Options{To: url, As: "facts"})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	conn := connectT(t, url)
	if n := count(t, conn, "SELECT count(*) FROM facts"); n != 2000 && n != 3000 {
		t.Fatalf("facts has %d rows: a mix", n)
	}
	if n := count(t, conn, "SELECT count(*) FROM pg_class WHERE relname IN ('facts_new', 'facts_old')"); n != 0 {
		t.Fatal("facts_new or facts_old left behind")
	}
}
