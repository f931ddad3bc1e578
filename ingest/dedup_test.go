package ingest_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/ingest"
)

// dupLines returns events(from, n, day) with every line written twice, as
// a producer that retried each send would.
func dupLines(from, n int, day string) []byte {
	var b strings.Builder
	for l := range strings.Lines(string(events(from, n, day))) {
		b.WriteString(l)
		b.WriteString(l)
	}
	return []byte(b.String())
}

func TestIngestDedupKey(t *testing.T) {
	ctx := context.Background()
	dedup := ingest.Options{DedupKey: "event_id"}

	t.Run("duplicates within a run are dropped, across files and within one", func(t *testing.T) {
		land := t.TempDir()
		tb := newTable(t, filepath.Join(t.TempDir(), "events"))
		put(t, land, "a.jsonl", events(0, 10, "2024-01-31"))
		put(t, land, "b.jsonl", dupLines(5, 10, "2024-02-01")) // 5..14, each twice
		res := runOK(t, tb, land, dedup)
		if res.RecordsIn != 30 || res.RowsWritten != 15 || res.RecordsDeduplicated != 15 {
			t.Fatalf("%+v", res)
		}
		if got := listIDs(t, tb); !slices.Equal(got, seq(0, 15)) {
			t.Fatalf("ids %v", got)
		}
	})

	t.Run("a landing file that fails whole takes its keys with it", func(t *testing.T) {
		land := t.TempDir()
		tb := newTable(t, filepath.Join(t.TempDir(), "events"))
		whole := gz(t, events(0, 50, "2024-01-31"))
		put(t, land, "a.jsonl.gz", whole[:len(whole)-20]) // truncated
		put(t, land, "b.jsonl", events(0, 10, "2024-01-31"))
		res, err := ingest.Run(ctx, tb, land, dedup)
		if !errors.Is(err, ingest.ErrFilesFailed) {
			t.Fatalf("err = %v", err)
		}
		reconcile(t, res)
		if res.FilesIn != 1 || res.RowsWritten != 10 || res.RecordsDeduplicated != 0 {
			t.Fatalf("%+v", res)
		}
	})

	t.Run("a run that starts over without a failed file starts its keys over too", func(t *testing.T) {
		land := t.TempDir()
		tb := newTable(t, filepath.Join(t.TempDir(), "events"))
		put(t, land, "a.jsonl", events(0, 100, "2024-01-31"))
		full := gz(t, events(1000, 5000, "2024-01-31"))
		put(t, land, "b.jsonl.gz", full[:len(full)*3/4]) // fails after its rows spilled
		put(t, land, "c.jsonl", events(50, 100, "2024-02-01"))
		put(t, land, "d.jsonl", events(1000, 10, "2024-02-01"))
		res, err := ingest.Run(ctx, tb, land, ingest.Options{DedupKey: "event_id", MemoryBudget: 64 << 10})
		if !errors.Is(err, ingest.ErrFilesFailed) {
			t.Fatalf("err = %v", err)
		}
		reconcile(t, res)
		if res.FilesIn != 3 || res.RowsWritten != 160 || res.RecordsDeduplicated != 50 {
			t.Fatalf("%+v", res)
		}
		if got := listIDs(t, tb); !slices.Equal(got, append(seq(0, 150), seq(1000, 10)...)) {
			t.Fatalf("ids: %d rows", len(got))
		}
	})

	t.Run("a later run drops the keys an earlier run wrote", func(t *testing.T) {
		land := t.TempDir()
		tb := newTable(t, filepath.Join(t.TempDir(), "events"))
		put(t, land, "a.jsonl", events(0, 10, "2024-01-31"))
		runOK(t, tb, land, dedup)
		put(t, land, "b.jsonl", events(5, 10, "2024-01-31")) // 5..9 again
		res := runOK(t, tb, land, dedup)
		if res.RecordsIn != 10 || res.RowsWritten != 5 || res.RecordsDeduplicated != 5 {
			t.Fatalf("%+v", res)
		}
		if got := listIDs(t, tb); !slices.Equal(got, seq(0, 15)) {
			t.Fatalf("ids %v", got)
		}
	})

	t.Run("a key written before the window is not dropped", func(t *testing.T) {
		land := t.TempDir()
		tb := newTable(t, filepath.Join(t.TempDir(), "events"))
		put(t, land, "a.jsonl", events(0, 10, "2024-01-31"))
		runOK(t, tb, land, dedup)
		// The next run starts two days later: the first run's commit is
		// outside its 24h window.
		defer ingest.SetDedupClock(func() time.Time { return time.Now().Add(48 * time.Hour) })()
		put(t, land, "b.jsonl", events(5, 10, "2024-01-31"))
		res := runOK(t, tb, land, dedup)
		if res.RowsWritten != 10 || res.RecordsDeduplicated != 0 {
			t.Fatalf("%+v", res)
		}
		// With a window of three days it is.
		put(t, land, "c.jsonl", events(0, 3, "2024-01-31"))
		res = runOK(t, tb, land, ingest.Options{DedupKey: "event_id", DedupWindow: 72 * time.Hour})
		if res.RowsWritten != 0 || res.RecordsDeduplicated != 3 {
			t.Fatalf("%+v", res)
		}
	})

	t.Run("the keys of a rolled back run count no more", func(t *testing.T) {
		land := t.TempDir()
		tb := newTable(t, filepath.Join(t.TempDir(), "events"))
		put(t, land, "a.jsonl", events(0, 10, "2024-01-31"))
		runOK(t, tb, land, dedup)
		if _, err := tb.Rollback(ctx, 1, "undo"); err != nil {
			t.Fatal(err)
		}
		// The checkpoint was rolled back too: the rerun takes a.jsonl again.
		res := runOK(t, tb, land, dedup)
		if res.RowsWritten != 10 || res.RecordsDeduplicated != 0 {
			t.Fatalf("%+v", res)
		}
	})

	t.Run("an unknown key column fails before reading, naming it", func(t *testing.T) {
		land := t.TempDir()
		tb := newTable(t, filepath.Join(t.TempDir(), "events"))
		put(t, land, "a.jsonl", events(0, 10, "2024-01-31"))
		res, err := ingest.Run(ctx, tb, land, ingest.Options{DedupKey: "evnet_id"})
		if err == nil || !strings.Contains(err.Error(), `"evnet_id"`) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("err = %v", err)
		}
		m, err := tb.Latest(ctx)
		if err != nil || m.Version != 1 || res.RecordsIn != 0 {
			t.Fatalf("%+v: latest %+v, %v", res, m, err)
		}
	})
}

func TestIngestDedupKeyOnKafka(t *testing.T) {
	addrs := kafkaCluster(t, 2, "events")
	cl := producer(t, addrs, "events")
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	src := "kafka://" + addrs + "/events"
	produce(t, cl, 2, append(kafkaEvents(0, 10), kafkaEvents(5, 10)...)) // 5..9 twice
	res := runOK(t, tb, src, ingest.Options{DedupKey: "event_id"})
	if res.RecordsIn != 20 || res.RowsWritten != 15 || res.RecordsDeduplicated != 5 {
		t.Fatalf("first run: %+v", res)
	}
	produce(t, cl, 2, kafkaEvents(12, 5)) // 12..14 again
	res = runOK(t, tb, src, ingest.Options{DedupKey: "event_id"})
	if res.RecordsIn != 5 || res.RowsWritten != 2 || res.RecordsDeduplicated != 3 {
		t.Fatalf("second run: %+v", res)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, 17)) {
		t.Fatalf("ids %v", got)
	}
}
