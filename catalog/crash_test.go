package catalog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// TestCrashChild is not a test on its own: the crash tests run the test
// binary again with SLUICE_CRASH_TABLE set, and this commits in a loop,
// killing itself with SIGKILL at SLUICE_CRASH_POINT (or being killed by
// the parent at a random moment).
func TestCrashChild(t *testing.T) {
	loc := os.Getenv("SLUICE_CRASH_TABLE")
	if loc == "" {
		t.Skip("helper process for the crash tests")
	}
	point := os.Getenv("SLUICE_CRASH_POINT")
	catalog.SetCrashHook(func(p string) {
		if p == point {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	})
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; ; i++ {
		m, err := tbl.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		files, err := tbl.WriteFiles(ctx, m, eventRows(day.AddDate(0, 0, i%3), int(m.Version)*100, 3))
		if err != nil {
			t.Fatal(err)
		}
		if point == "after-data" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		// Every third commit is a compaction-style rewrite of a partition,
		// so crashes also hit removes.
		ch := catalog.Change{Operation: "append", Add: files, DataChange: true}
		if i%3 == 2 {
			live, err := tbl.Files(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			var keep [][]any
			for _, f := range live {
				if f.Partition == files[0].Partition {
					rows, err := pqio.ReadParquetRows(ctx, tbl.Store(), f.Path, f.Bytes, m.Schema)
					if err != nil {
						t.Fatal(err)
					}
					keep = append(keep, rows...)
					ch.Remove = append(ch.Remove, f)
				}
			}
			merged, err := tbl.WriteFiles(ctx, m, keep)
			if err != nil {
				t.Fatal(err)
			}
			ch.Add = append(ch.Add, merged...)
			ch.Operation = "compact"
		}
		if _, err := tbl.Commit(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
}

func runCrashChild(t *testing.T, loc, point string, killAfter time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SLUICE_CRASH_TABLE="+loc, "SLUICE_CRASH_POINT="+point)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { cmd.Process.Kill() })
		defer timer.Stop()
	}
	err := cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("crash child at %q: want death by SIGKILL, got %v\n%s", point, err, out.String())
	}
}

// checkReadable asserts that the latest version is whole: every file it
// lists exists and reads, and the rows add up to what the manifest says.
func checkReadable(t *testing.T, tbl *catalog.Table) *catalog.Manifest {
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
	var rows int64
	for _, f := range files {
		got, err := pqio.ReadParquetRows(ctx, tbl.Store(), f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatalf("version %d: %v", m.Version, err)
		}
		if int64(len(got)) != f.Rows {
			t.Fatalf("version %d: %s has %d rows, manifest says %d", m.Version, f.Path, len(got), f.Rows)
		}
		rows += int64(len(got))
	}
	if _, want, _ := m.Totals(); rows != want {
		t.Fatalf("version %d: read %d rows, manifest totals say %d", m.Version, rows, want)
	}
	return m
}

// A commit killed with SIGKILL at any point leaves the table at its old or
// its new version, never between; vacuum then removes the orphans and
// nothing live.
func TestCrashAtAnyPointLeavesOldOrNewVersion(t *testing.T) {
	ctx := context.Background()
	loc := t.TempDir()
	tbl, _ := newTable(t, loc)
	appendRows(t, tbl, eventRows(time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), 0, 5))
	points := []string{"after-data", "after-pieces", "before-manifest", "after-manifest"}
	for round := range 3 {
		for _, p := range points {
			before, err := tbl.LatestVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			runCrashChild(t, loc, p, 0)
			m := checkReadable(t, tbl)
			switch p {
			case "after-manifest":
				if m.Version < before+1 {
					t.Fatalf("round %d, %s: latest %d, want the new version %d", round, p, m.Version, before+1)
				}
			default:
				if m.Version != before {
					t.Fatalf("round %d, %s: latest %d, want the old version %d", round, p, m.Version, before)
				}
			}
		}
	}
	// Random moments: the parent kills the child while it commits in a
	// loop.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		runCrashChild(t, loc, "", time.Duration(50+rng.IntN(400))*time.Millisecond)
		checkReadable(t, tbl)
	}
	m := checkReadable(t, tbl)
	// The crashes left orphans: data files and pieces no version lists.
	st := tbl.Store()
	live := livePaths(t, tbl, m)
	orphans := 0
	_ = st.List(ctx, "", func(o cloud.ObjectInfo) error {
		if strings.HasSuffix(o.Key, ".parquet") {
			if _, ok := live[o.Key]; !ok {
				orphans++
			}
		}
		return nil
	})
	if orphans == 0 {
		t.Fatal("expected the crashes to leave orphan data files")
	}
	res, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: time.Second, Force: true, Now: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) < orphans {
		t.Fatalf("vacuum deleted %d objects, want at least the %d orphan data files", len(res.Deleted), orphans)
	}
	// Nothing live was deleted, and only live data files remain.
	checkReadable(t, tbl)
	var left []string
	_ = st.List(ctx, "", func(o cloud.ObjectInfo) error {
		if strings.HasSuffix(o.Key, ".parquet") {
			if _, ok := live[o.Key]; !ok {
				left = append(left, o.Key)
			}
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("orphans left after vacuum: %v", left)
	}
	fmt.Fprintf(os.Stderr, "crash test: %d orphans removed, table at version %d\n", orphans, m.Version)
}

func TestVacuumKeepsRetainedVersionsAndRefusesShortRetention(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, t.TempDir())
	day := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	appendRows(t, tbl, eventRows(day, 0, 5))
	v2, _ := tbl.Latest(ctx)
	old := livePaths(t, tbl, v2)
	// Replace the file: compaction style.
	var rm []catalog.DataFile
	for _, f := range old {
		rm = append(rm, f)
	}
	merged, err := tbl.WriteFiles(ctx, v2, eventRows(day, 0, 5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "compact", Add: merged, Remove: rm}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: time.Hour}); err == nil {
		t.Fatal("a 1h retention without force must be refused")
	}
	// Within the retention: nothing goes.
	res, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 0 {
		t.Fatalf("vacuum within retention deleted %v", res.Deleted)
	}
	// A week later: the replaced file goes, a dry run first.
	later := time.Now().Add(8 * 24 * time.Hour)
	dry, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: catalog.DefaultRetention, DryRun: true, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Deleted) != len(old) {
		t.Fatalf("dry run lists %d files, want the %d replaced", len(dry.Deleted), len(old))
	}
	for p := range old {
		if _, err := tbl.Store().Stat(ctx, p); err != nil {
			t.Fatalf("dry run deleted %s: %v", p, err)
		}
	}
	res, err = tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: catalog.DefaultRetention, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != len(old) {
		t.Fatalf("vacuum deleted %v, want the %d replaced files", res.Deleted, len(old))
	}
	checkReadable(t, tbl)
	// Rolling back to the vacuumed version fails cleanly.
	if _, err := tbl.Rollback(ctx, v2.Version, "rb"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("rollback to a vacuumed version: got %v, want a missing-file error", err)
	}
}
