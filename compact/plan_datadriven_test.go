package compact

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// The -update flag rewrites the expected output of testdata/plan files.
// It is registered only if no other test file of the package registered
// one, since both would share this test binary.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the expected output of datadriven test files")
	}
}

func planUpdate() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	v, _ := g.Get().(bool)
	return v
}

// TestPlanDataDriven runs the files of testdata/plan, Pebble's datadriven
// style: a command, its input lines, "----", and the expected output up
// to a blank line. go test -run PlanDataDriven -update rewrites the
// expected outputs.
//
// Commands:
//
//	plan [target=SIZE] [min-input-files=N] [include-current] [min-file-age=D]
//	     [partitions=P,P] [max-bin=SIZE] [now=RFC3339]
//	file PARTITION|- [size=SIZE|SIZE..SIZE] [count=N] [age=D] [rows=N] [name=NAME]
//	     (input lines: the live files; age defaults to 48h)
//	replan
//	     applies the previous plan (each bin's inputs replaced by its outputs,
//	     bytes shared evenly) and plans again with the same options.
func TestPlanDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/plan/*")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata/plan files (%v)", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) { runPlanFile(t, p) })
	}
}

func runPlanFile(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out   strings.Builder // the file as -update writes it
		pre   []string        // lines since the last case
		files []catalog.DataFile
		opts  PlanOptions
		plan  Plan
		round int
	)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		if line != "----" {
			pre = append(pre, line)
			continue
		}
		// The case: the first line of pre that is neither blank nor a
		// comment is the command, the rest its input.
		var cmd []string
		var input []string
		for _, l := range pre {
			switch {
			case cmd == nil && (strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#")):
			case cmd == nil:
				cmd = strings.Fields(l)
			default:
				input = append(input, l)
			}
		}
		if cmd == nil {
			t.Fatalf("%s:%d: ---- without a command", file, lineNo)
		}
		caseLine := lineNo
		var expected []string
		for {
			l, ok := next()
			if !ok || l == "" {
				break
			}
			expected = append(expected, l)
		}
		var got string
		switch cmd[0] {
		case "plan":
			opts = planParseOptions(t, fmt.Sprintf("%s:%d", file, caseLine), cmd[1:])
			files = planParseFiles(t, fmt.Sprintf("%s:%d", file, caseLine), input, opts.Now)
			round = 0
		case "replan":
			if len(cmd) > 1 || len(input) > 0 {
				t.Fatalf("%s:%d: replan takes no arguments or input", file, caseLine)
			}
			round++
			files = planApply(files, plan, round)
		default:
			t.Fatalf("%s:%d: unknown command %q", file, caseLine, cmd[0])
		}
		plan, err = PlanCompaction(files, opts)
		if err != nil {
			got = "error: " + err.Error() + "\n"
		} else {
			got = plan.String()
		}
		if want := strings.Join(expected, "\n") + "\n"; got != want && !planUpdate() {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, caseLine, strings.Join(cmd, " "), got, want)
		}
		for _, l := range pre {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n" + got + "\n")
		pre = nil
	}
	for _, l := range pre {
		out.WriteString(l + "\n")
	}
	if planUpdate() {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func planParseOptions(t *testing.T, where string, args []string) PlanOptions {
	o := PlanOptions{Now: planNow}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch k {
		case "target":
			o.TargetFileSize, err = planParseSize(v)
		case "max-bin":
			o.MaxBinBytes, err = planParseSize(v)
		case "min-input-files":
			o.MinInputFiles, err = strconv.Atoi(v)
		case "include-current":
			o.IncludeCurrent = true
		case "min-file-age":
			o.MinFileAge, err = time.ParseDuration(v)
		case "partitions":
			o.Partitions = strings.Split(v, ",")
		case "now":
			o.Now, err = time.Parse(time.RFC3339, v)
		default:
			err = fmt.Errorf("unknown option")
		}
		if err != nil {
			t.Fatalf("%s: %s: %v", where, a, err)
		}
	}
	return o
}

func planParseFiles(t *testing.T, where string, lines []string, now time.Time) []catalog.DataFile {
	var files []catalog.DataFile
	seq := map[string]int{}
	for _, l := range lines {
		fields := strings.Fields(l)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] != "file" || len(fields) < 2 {
			t.Fatalf("%s: %q: want file PARTITION [key=value...]", where, l)
		}
		p := fields[1]
		if p == "-" {
			p = ""
		}
		var (
			lo, hi = 10 * planMiB, 10 * planMiB
			count  = 1
			age    = 48 * time.Hour
			rows   = int64(-1)
			name   string
			err    error
		)
		for _, a := range fields[2:] {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "size":
				l, h, isRange := strings.Cut(v, "..")
				if lo, err = planParseSize(l); err == nil {
					hi = lo
					if isRange {
						hi, err = planParseSize(h)
					}
				}
			case "count":
				count, err = strconv.Atoi(v)
			case "age":
				age, err = time.ParseDuration(v)
			case "rows":
				rows, err = strconv.ParseInt(v, 10, 64)
			case "name":
				name = v
			default:
				err = fmt.Errorf("unknown key")
			}
			if err != nil {
				t.Fatalf("%s: %q: %s: %v", where, l, a, err)
			}
		}
		if name != "" && count != 1 {
			t.Fatalf("%s: %q: name= wants count=1", where, l)
		}
		for range count {
			n := name
			if n == "" {
				n = fmt.Sprintf("part-%05d.parquet", seq[p])
				seq[p]++
			}
			size := lo
			if hi > lo {
				// Spread over the range by a hash of the name: deterministic
				// and not sorted like the paths.
				h := fnv.New64a()
				h.Write([]byte(planPath(p, n)))
				size = lo + int64(h.Sum64()%uint64(hi-lo+1))
			}
			f := planFile(p, n, size, age)
			f.AddedAt = now.Add(-age)
			if rows >= 0 {
				f.Rows = rows
			}
			files = append(files, f)
		}
	}
	return files
}

// planParseSize parses "10MiB", "1.5GiB", "300KiB", "12B" or "12".
func planParseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"TiB", 1 << 40}, {"GiB", planGiB}, {"MiB", planMiB}, {"KiB", planKiB}, {"B", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = num, u.size
			break
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return int64(f * float64(mult)), nil
}
