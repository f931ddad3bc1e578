package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/faults"
	"github.com/sluice-data/sluice/internal/testenv"
)

// appendUntilDone appends rows as run id through tbl the way the
// scheduler would: a failed attempt is retried, and one whose outcome is
// unknown is settled by looking for the run in the history (read through
// clean), never retried blindly, which could append the rows twice. It
// returns the errors of the failed attempts.
func appendUntilDone(t *testing.T, tbl, clean *catalog.Table, id string, rows [][]any) []error {
	t.Helper()
	ctx := context.Background()
	var errs []error
	for attempt := 0; attempt < 50; attempt++ {
		err := func() error {
			m, err := tbl.Latest(ctx)
			if err != nil {
				return err
			}
			files, err := tbl.WriteFiles(ctx, m, rows)
			if err != nil {
				return err
			}
			_, err = tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: id, Add: files, DataChange: true})
			return err
		}()
		if err == nil {
			return errs
		}
		errs = append(errs, err)
		if errors.Is(err, cloud.ErrOutcomeUnknown) && len(runVersions(t, clean)[id]) > 0 {
			return errs
		}
	}
	t.Fatalf("append %s failed 50 times, last: %v", id, errs[len(errs)-1])
	return nil
}

// runVersions maps each run id to the versions it committed.
func runVersions(t *testing.T, tbl *catalog.Table) map[string][]int64 {
	t.Helper()
	hist, err := tbl.History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int64{}
	for _, m := range hist {
		out[m.RunID] = append(out[m.RunID], m.Version)
	}
	return out
}

// dataFiles lists the table's data files (every key outside _sluice/).
func dataFiles(t *testing.T, st cloud.Store) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := st.List(context.Background(), "", func(o cloud.ObjectInfo) error {
		if !strings.HasPrefix(o.Key, "_sluice/") {
			out[o.Key] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Appends through a store that fails, throttles, times out before and
// after writes land, truncates reads and misses fresh keys in listings:
// every failure is one line naming an injected cause, every append lands
// exactly once, and vacuum then keeps every live file and leaves no
// orphan.
func TestCommitsUnderSeededStoreFaults(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	loc := t.TempDir()
	clean, _ := newTable(t, loc)
	in := faults.New(faults.Config{Seed: 19, Rates: map[faults.Kind]float64{
		faults.ServerError: 0.03, faults.Throttle: 0.03, faults.TimeoutBefore: 0.03,
		faults.TimeoutAfter: 0.05, faults.TruncatedRead: 0.03, faults.StaleList: 0.2,
	}})
	tbl := catalog.NewTable(loc, in.Store(clean.Store()), catalog.Options{})
	const appends, rows = 30, 10
	var failures []error
	for i := range appends {
		failures = append(failures, appendUntilDone(t, tbl, clean, fmt.Sprintf("run-%02d", i), eventRows(day, i*rows, rows))...)
	}
	t.Logf("faults: %s; %d failed attempts", in, len(failures))
	if in.Total() == 0 || len(failures) == 0 {
		t.Fatalf("faults %s, %d failed attempts: the faults never bit", in, len(failures))
	}
	for _, err := range failures {
		if msg := err.Error(); strings.Contains(msg, "\n") || !errors.Is(err, faults.ErrInjected) {
			t.Errorf("failure %q: want one line wrapping the injected cause", msg)
		}
	}
	in.SetEnabled(false)
	byRun := runVersions(t, clean)
	for i := range appends {
		if id := fmt.Sprintf("run-%02d", i); len(byRun[id]) != 1 {
			t.Errorf("%s committed versions %v; want exactly one", id, byRun[id])
		}
	}
	m, err := clean.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows != appends*rows {
		t.Errorf("the table has %d rows, want %d", m.Rows, appends*rows)
	}
	if _, err := clean.Vacuum(ctx, catalog.VacuumOptions{Retain: 0, Force: true}); err != nil {
		t.Fatal(err)
	}
	live := livePaths(t, clean, m)
	onDisk := dataFiles(t, clean.Store())
	for p := range live {
		if !onDisk[p] {
			t.Errorf("live file %s is missing", p)
		}
	}
	for p := range onDisk {
		if _, ok := live[p]; !ok {
			t.Errorf("orphan %s left after vacuum", p)
		}
	}
}

// Appends to S3 through an SDK client whose requests meet 500s,
// throttling and timeouts before and after they land: the SDK retries and
// the catalog settles ambiguous version writes by reading back, so every
// append succeeds at its first call, exactly once.
func TestCommitsThroughFaultyTransport(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	loc := testenv.Location(t, testenv.S3)
	clean, _ := newTable(t, loc)
	in := faults.New(faults.Config{Seed: 19, Rates: map[faults.Kind]float64{
		faults.ServerError: 0.05, faults.Throttle: 0.05, faults.TimeoutBefore: 0.05, faults.TimeoutAfter: 0.08,
	}})
	st, err := cloud.OpenWithOptions(ctx, loc, cloud.Options{HTTPClient: httpClient(in.Transport(nil)), MaxAttempts: 8})
	if err != nil {
		t.Fatal(err)
	}
	tbl := catalog.NewTable(loc, st, catalog.Options{})
	defer tbl.Close()
	// File names are random, so which writes a seed faults differs from
	// run to run: append until at least two writes lost their answer
	// (at least ten appends, at most sixty), rather than hoping ten do.
	appends := 0
	for appends < 10 || (in.Counts()[faults.TimeoutAfter] < 2 && appends < 60) {
		id := fmt.Sprintf("run-%02d", appends)
		if errs := appendUntilDone(t, tbl, clean, id, eventRows(day, appends*10, 10)); len(errs) > 0 {
			t.Errorf("append %s failed first: %v", id, errs[0])
		}
		appends++
	}
	t.Logf("faults: %s after %d appends", in, appends)
	if in.Counts()[faults.TimeoutAfter] == 0 {
		t.Errorf("faults %s: no write lost its answer", in)
	}
	for id, vs := range runVersions(t, clean) {
		if id != "test" && len(vs) != 1 {
			t.Errorf("%s committed versions %v; want one", id, vs)
		}
	}
	if m, err := clean.Latest(ctx); err != nil || m.Rows != int64(appends)*10 {
		t.Errorf("latest: %v rows, %v; want %d", m.Rows, err, appends*10)
	}
}

// A full disk and a failing one fail the write naming the file and the
// errno, and commit nothing.
func TestDiskFaultsNameTheDataFile(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	for kind, errno := range map[faults.Kind]syscall.Errno{faults.NoSpace: syscall.ENOSPC, faults.IOError: syscall.EIO} {
		t.Run(string(kind), func(t *testing.T) {
			loc := t.TempDir()
			clean, m := newTable(t, loc)
			in := faults.New(faults.Config{Seed: 1, Rates: map[faults.Kind]float64{kind: 1}})
			tbl := catalog.NewTable(loc, in.Store(clean.Store()), catalog.Options{})
			_, err := tbl.WriteFiles(ctx, m, eventRows(day, 0, 5))
			if !errors.Is(err, errno) {
				t.Fatalf("WriteFiles: %v; want %v", err, errno)
			}
			msg := err.Error()
			if !strings.Contains(msg, loc) || !strings.Contains(msg, ".parquet") || !strings.Contains(msg, errno.Error()) || strings.Contains(msg, "\n") {
				t.Errorf("WriteFiles: %q; want one line naming the file under %s and %q", msg, loc, errno.Error())
			}
			if v, err := clean.LatestVersion(ctx); err != nil || v != m.Version {
				t.Errorf("latest version %d, %v; want %d", v, err, m.Version)
			}
		})
	}
}

// httpClient is an HTTP client over rt.
func httpClient(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt} }
