package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/testenv"
)

var sluiceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-bin-")
	if err != nil {
		panic(err)
	}
	sluiceBin = filepath.Join(dir, "sluice")
	if out, err := exec.Command("go", "build", "-o", sluiceBin, ".").CombinedOutput(); err != nil {
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := testenv.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// sluice runs the built binary as a user would, with the test servers'
// endpoints and credentials in its environment.
func sluice(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runSluice(t, "", append(append(os.Environ(), testenv.Env()...), env...), args...)
}

// runSluice runs the built binary in dir ("": the test's own) with
// exactly the environment env.
func runSluice(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func mustSluice(t *testing.T, args ...string) result {
	t.Helper()
	r := sluice(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("sluice %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// summaryOf decodes the --json summary r printed.
func summaryOf(t *testing.T, r result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("--json output %q: %v (stderr %s)", r.stdout, err, r.stderr)
	}
	return m
}

// failsWithOneLine asserts exit code 1 and a single stderr line that
// mentions every one of want.
func failsWithOneLine(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s", r.code, r.stderr)
	}
	msg := strings.TrimRight(r.stderr, "\n")
	if strings.Contains(msg, "\n") || msg == "" {
		t.Fatalf("want one line on stderr, got %q", r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("stderr %q does not mention %q", msg, w)
		}
	}
}

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func sparkDir(t testing.TB) string {
	d := filepath.Join(repoRoot(t), "testdata", "spark-written")
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("Spark fixtures: %v", err)
	}
	return d
}

// copyDir copies a folder tree (fixtures are read-only; import adopts files
// in place, so tests work on copies).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyFiles copies the files of folder src, not its subfolders, into dst.
func copyFiles(t testing.TB, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type duck struct {
	Rows     int64    `json:"rows"`
	Checksum string   `json:"checksum"`
	Columns  []string `json:"columns"`
}

// duckRead reads Parquet files with DuckDB, the independent reader, and
// returns the row count and an order-independent checksum of all rows,
// Hive partition folders read as columns.
func duckRead(t testing.TB, files []string) duck { return duckReadFiles(t, files, "--hive") }

// dataRead reads files with DuckDB without Hive columns: the data columns
// alone, as the independent Delta reader reads a Delta table's files.
func dataRead(t testing.TB, files []string) duck { return duckReadFiles(t, files) }

func duckReadFiles(t testing.TB, files []string, flags ...string) duck {
	t.Helper()
	list := filepath.Join(t.TempDir(), "files.txt")
	if err := os.WriteFile(list, []byte(strings.Join(files, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{filepath.Join(repoRoot(t), "tools", "duckrows.mjs")}, flags...)
	out, err := exec.Command("node", append(args, "--list", list)...).Output()
	if err != nil {
		t.Fatalf("duckrows: %v: %s (run \"make tools\" if DuckDB is missing)", err, stderrOf(err))
	}
	var d duck
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("duckrows output %q: %v", out, err)
	}
	return d
}

// parquetFiles lists the data files under dir as a reader globbing the
// folder would (skipping _ and . folders and files).
func parquetFiles(t testing.TB, dir string) []string {
	var out []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		name := info.Name()
		if p != dir && (strings.HasPrefix(name, ".") || (strings.HasPrefix(name, "_") && !strings.Contains(name, "="))) {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !info.IsDir() && strings.HasSuffix(name, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// killedRun starts sluice with args, as a user would, and kills it with
// SIGKILL after a moment drawn from [0, within): the crash tests' run. It
// returns how the process ended.
func killedRun(t *testing.T, rng *rand.Rand, within time.Duration, args ...string) error {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = append(os.Environ(), testenv.Env()...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(rng.Int64N(int64(within))))
	_ = cmd.Process.Signal(syscall.SIGKILL)
	return cmd.Wait()
}

// tableRead reads the live files of a table with DuckDB.
func tableRead(t *testing.T, loc string) duck {
	t.Helper()
	return duckRead(t, lines(mustSluice(t, "files", loc).stdout))
}
