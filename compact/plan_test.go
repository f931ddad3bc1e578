package compact

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

const (
	planKiB = int64(1) << 10
	planMiB = int64(1) << 20
	planGiB = int64(1) << 30
)

// planNow is the clock of the tests unless a case sets now=.
var planNow = time.Date(2024, 1, 31, 12, 0, 0, 0, time.UTC)

// planFile builds a live file of partition p ("" unpartitioned) named
// name, of size bytes, added age before planNow.
func planFile(p, name string, size int64, age time.Duration) catalog.DataFile {
	f := catalog.DataFile{
		Path:      planPath(p, name),
		Partition: p,
		Bytes:     size,
		AddedAt:   planNow.Add(-age),
	}
	f.Rows = size / 100
	if p != "" {
		f.PartitionValues = map[string]*string{}
		for seg := range strings.SplitSeq(p, "/") {
			k, v, _ := strings.Cut(seg, "=")
			f.PartitionValues[k] = &v
		}
	}
	return f
}

func planPath(p, name string) string {
	if p == "" {
		return name
	}
	return p + "/" + name
}

// planFiles returns n files of partition p of size bytes each, named
// prefix-00000.parquet and on, two days old.
func planFiles(p, prefix string, n int, size int64) []catalog.DataFile {
	fs := make([]catalog.DataFile, n)
	for i := range fs {
		fs[i] = planFile(p, fmt.Sprintf("%s-%05d.parquet", prefix, i), size, 48*time.Hour)
	}
	return fs
}

// planApply returns the live files after the plan's rewrites: each bin's
// inputs replaced by Outputs files sharing its bytes and rows as evenly as
// integers allow, named after round.
func planApply(files []catalog.DataFile, plan Plan, round int) []catalog.DataFile {
	gone := map[string]bool{}
	var out []catalog.DataFile
	for bi, b := range plan.Bins() {
		for _, f := range b.Inputs {
			gone[f.Path] = true
		}
		n := int64(b.Outputs)
		for i := range n {
			size := b.Bytes / n
			if i < b.Bytes%n {
				size++
			}
			f := planFile(b.Partition, fmt.Sprintf("r%d-b%03d-%05d.parquet", round, bi, i), size, 0)
			f.PartitionValues = b.Inputs[0].PartitionValues
			f.AddedAt = b.Inputs[0].AddedAt // a rewrite keeps data, not freshness; tests keep Now fixed
			out = append(out, f)
		}
	}
	for _, f := range files {
		if !gone[f.Path] {
			out = append(out, f)
		}
	}
	return out
}

// planCheck fails t unless plan keeps the planner's promises over files:
// every input taken at most once, from its own partition, never a young
// file or one of the current day unless asked; outputs of at least 3/4 of
// the target unless the partition's packed bytes are under one target; no
// more outputs than ceil(bytes in / target) for the small files of a
// partition, nor for an oversize file; bins no larger
// than MaxBinBytes plus one small file; and planning again over the
// result plans nothing.
func planCheck(t *testing.T, files []catalog.DataFile, o PlanOptions, plan Plan) {
	t.Helper()
	r := o.withDefaults()
	target := r.TargetFileSize
	today := r.Now.UTC().Format(time.DateOnly)
	taken := map[string]bool{}
	for _, pp := range plan.Partitions {
		var in, out int64
		for _, b := range pp.Bins {
			if b.Partition != pp.Partition || len(b.Inputs) == 0 || b.Outputs < 1 {
				t.Fatalf("%s: malformed bin %+v", pp.Partition, b)
			}
			var bytes, rows int64
			for _, f := range b.Inputs {
				if taken[f.Path] {
					t.Fatalf("%s taken twice", f.Path)
				}
				taken[f.Path] = true
				if f.Partition != pp.Partition {
					t.Fatalf("%s in a bin of %s", f.Path, pp.Partition)
				}
				if r.MinFileAge > 0 && r.Now.Sub(f.AddedAt) < r.MinFileAge {
					t.Fatalf("young file %s taken", f.Path)
				}
				if !r.IncludeCurrent && dateValue(f) == today {
					t.Fatalf("file %s of the current day taken", f.Path)
				}
				bytes += f.Bytes
				rows += f.Rows
			}
			if bytes != b.Bytes || rows != b.Rows {
				t.Fatalf("%s: bin says %d bytes %d rows, inputs hold %d, %d", pp.Partition, b.Bytes, b.Rows, bytes, rows)
			}
			if b.Split {
				if len(b.Inputs) != 1 || 5*b.Bytes <= 9*target {
					t.Fatalf("%s: split bin of %d files, %d bytes", pp.Partition, len(b.Inputs), b.Bytes)
				}
			} else if b.Bytes > r.MaxBinBytes+3*target/4 {
				t.Fatalf("%s: bin of %s over MaxBinBytes %s plus one small file", pp.Partition, planSize(b.Bytes), planSize(r.MaxBinBytes))
			}
			if per := b.Bytes / int64(b.Outputs); 2*per > 3*target+2 {
				t.Fatalf("%s: outputs of %s, over 1½ targets", pp.Partition, planSize(per))
			}
			if b.Split {
				if int64(b.Outputs) > ceilDiv(b.Bytes, target) {
					t.Fatalf("%s: split into %d outputs for %s: more than ceil(bytes/target)", pp.Partition, b.Outputs, planSize(b.Bytes))
				}
				continue
			}
			in += b.Bytes
			out += int64(b.Outputs)
		}
		if out > ceilDiv(in, target) {
			t.Fatalf("%s: %d outputs for %s of small files: more than ceil(bytes/target) = %d", pp.Partition, out, planSize(in), ceilDiv(in, target))
		}
		var packed int64
		for _, b := range pp.Bins {
			if !b.Split {
				packed += b.Bytes
			}
		}
		if packed >= target {
			for _, b := range pp.Bins {
				if per := b.Bytes / int64(b.Outputs); 4*per < 3*target {
					t.Fatalf("%s: outputs of %s, under 3/4 of the target: they would be packed again\n%s", pp.Partition, planSize(per), plan)
				}
			}
		}
	}
	again, err := PlanCompaction(planApply(files, plan, 1), o)
	if err != nil {
		t.Fatal(err)
	}
	if bins := again.Bins(); len(bins) != 0 {
		t.Fatalf("planning over the result planned %d bins, want none\nfirst plan:\n%s\nsecond plan:\n%s", len(bins), plan, again)
	}
}

func TestPlanOptionsValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		o    PlanOptions
		want []string // substrings of the error, none: valid
	}{
		"the zero value is valid": {},
		"the defaults are valid":  {o: DefaultPlanOptions()},
		"a small target for tests is valid": {
			o: PlanOptions{TargetFileSize: 32 << 10, MinInputFiles: 2},
		},
		"a negative target is named": {
			o: PlanOptions{TargetFileSize: -1}, want: []string{"TargetFileSize -1"},
		},
		"a target over a terabyte is named": {
			o: PlanOptions{TargetFileSize: 2 << 40}, want: []string{"TargetFileSize 2TiB"},
		},
		"negative counts and ages are named": {
			o:    PlanOptions{MinInputFiles: -1, MinFileAge: -time.Minute, MaxBinBytes: -5},
			want: []string{"MinInputFiles -1", "MinFileAge -1m0s", "MaxBinBytes -5"},
		},
		"bins smaller than six targets are refused": {
			o: PlanOptions{MaxBinBytes: 5 * 256 * planMiB}, want: []string{"MaxBinBytes 1280MiB", "at least 6 × TargetFileSize (1536MiB)"},
		},
		"bins of six targets are fine": {
			o: PlanOptions{TargetFileSize: planMiB, MaxBinBytes: 6 * planMiB},
		},
		"partitions must be Hive folders and listed once": {
			o: PlanOptions{Partitions: []string{"date=2024-01-01", "2024-01-02", "", "a=1/b", "date=2024-01-01"}},
			want: []string{
				`Partitions[1] "2024-01-02"`, `Partitions[2] ""`, `Partitions[3] "a=1/b"`,
				`Partitions[4] "date=2024-01-01": already listed as Partitions[0]`,
			},
		},
		"every bad field is named at once": {
			o:    PlanOptions{TargetFileSize: -1, MinInputFiles: -1, MinFileAge: -1, MaxBinBytes: -1, Partitions: []string{"x"}},
			want: []string{"TargetFileSize", "MinInputFiles", "MinFileAge", "MaxBinBytes", "Partitions[0]"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want an error naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v\nwant it to mention %q", err, w)
				}
			}
			if _, perr := PlanCompaction(nil, tc.o); perr == nil || perr.Error() != err.Error() {
				t.Errorf("PlanCompaction error %v, want the Validate error", perr)
			}
		})
	}
}

func TestPlanRules(t *testing.T) {
	rules := planSizeRules()
	maps.Copy(rules, planSelectionRules())
	for name, tc := range rules {
		t.Run(name, func(t *testing.T) { checkPlanRule(t, tc) })
	}
}

// planRule is a case of TestPlanRules: the live files, the options, and
// the plan wanted for each partition.
type planRule struct {
	files []catalog.DataFile
	o     PlanOptions
	want  map[string]planWant
}

// planWant is one partition's plan as TestPlanRules sees it.
type planWant struct {
	outputs []int  // per bin, packed bins first then splits
	split   []bool // per bin, nil: none
	skip    string // prefix of Skip
}

// planDay is the date partition of day d of January 2024.
func planDay(d int) string { return fmt.Sprintf("date=2024-01-%02d", d) }

// planCat is the files of fss, one after the other.
func planCat(fss ...[]catalog.DataFile) []catalog.DataFile { return slices.Concat(fss...) }

// planSizeRules are the rules of packing and splitting by size.
func planSizeRules() map[string]planRule {
	day, cat := planDay, planCat
	type want = planWant
	return map[string]planRule{
		"five small files are packed into one output": {
			files: planFiles(day(1), "part", 5, 10*planMiB),
			want:  map[string]want{day(1): {outputs: []int{1}}},
		},
		"four small files of less than one target are too few": {
			files: planFiles(day(1), "part", 4, 10*planMiB),
			want:  map[string]want{day(1): {skip: "too few small files (4 < 5)"}},
		},
		"MinInputFiles lowers the threshold": {
			files: planFiles(day(1), "part", 4, 10*planMiB),
			o:     PlanOptions{MinInputFiles: 3},
			want:  map[string]want{day(1): {outputs: []int{1}}},
		},
		"three small files of more than one target together are enough": {
			// 3 × 100 MiB = 300 MiB > 256 MiB: into one output, 44 MiB folded in.
			files: planFiles(day(1), "part", 3, 100*planMiB),
			want:  map[string]want{day(1): {outputs: []int{1}}},
		},
		"two small files of more than one target are already compacted": {
			// 300 MiB as 2 × 150 MiB: ceil(300/256) = 2 files already.
			files: planFiles(day(1), "part", 2, 150*planMiB),
			want:  map[string]want{day(1): {skip: "already compacted (2 small files <= ceil(300MiB / 256MiB) = 2)"}},
		},
		"one small file alone in its partition is left alone": {
			files: planFiles(day(1), "part", 1, 40*planMiB),
			want:  map[string]want{day(1): {skip: "too few small files (1 < 5)"}},
		},
		"one small file is left alone even with MinInputFiles 1": {
			files: planFiles(day(1), "part", 1, 40*planMiB),
			o:     PlanOptions{MinInputFiles: 1},
			want:  map[string]want{day(1): {skip: "already compacted (1 small file <= ceil(40MiB / 256MiB) = 1)"}},
		},
		"a remainder under half a target is folded into the other outputs": {
			// 10 × 60 MiB = 600 MiB = 2 × 256 + 88: two outputs of 300 MiB.
			files: planFiles(day(1), "part", 10, 60*planMiB),
			want:  map[string]want{day(1): {outputs: []int{2}}},
		},
		"a remainder of half a target or more gets an output": {
			// 10 × 64 MiB = 640 MiB = 2 × 256 + 128: three outputs of 213 MiB.
			files: planFiles(day(1), "part", 10, 64*planMiB),
			want:  map[string]want{day(1): {outputs: []int{3}}},
		},
		"files between 75% and 180% of the target are not touched": {
			files: cat(planFiles(day(1), "mid", 3, 200*planMiB), planFiles(day(1), "big", 2, 460*planMiB)),
			want:  map[string]want{day(1): {skip: "no small files"}},
		},
		"an oversize file is split even without small files": {
			// 600 MiB = 2 × 256 + 88: split in two, the remainder folded.
			files: cat(planFiles(day(1), "huge", 1, 600*planMiB), planFiles(day(1), "mid", 1, 200*planMiB)),
			want:  map[string]want{day(1): {outputs: []int{2}, split: []bool{true}}},
		},
		"an oversize file is split into ceil(size/target) when the remainder is large": {
			files: planFiles(day(1), "huge", 1, 700*planMiB),
			want:  map[string]want{day(1): {outputs: []int{3}, split: []bool{true}}},
		},
		"splits come after the packed bins": {
			files: cat(planFiles(day(1), "a-huge", 1, 1000*planMiB), planFiles(day(1), "z-part", 8, 10*planMiB)),
			want:  map[string]want{day(1): {outputs: []int{1, 4}, split: []bool{false, true}}},
		},
		"a large partition spreads over bins of at most 8 targets": {
			// 400 × 50 MiB = 20000 MiB = 78 × 256 + 32:
			// 78 outputs of 256.4 MiB, 7 per bin of at most 2 GiB: 12 bins.
			files: planFiles(day(1), "part", 400, 50*planMiB),
			want: map[string]want{day(1): {outputs: []int{
				7, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 6,
			}}},
		},
	}
}

// planSelectionRules are the rules of which partitions and files are
// candidates: the current day, the files' age, the Partitions filter.
func planSelectionRules() map[string]planRule {
	day, cat := planDay, planCat
	type want = planWant
	return map[string]planRule{
		"the current UTC day is skipped": {
			files: cat(planFiles(day(30), "part", 8, 10*planMiB), planFiles(day(31), "part", 8, 10*planMiB)),
			want:  map[string]want{day(30): {outputs: []int{1}}, day(31): {skip: "current day"}},
		},
		"the current day is judged in UTC": {
			// 2024-02-01T01:00+02:00 is still 2024-01-31 in UTC.
			files: cat(planFiles(day(31), "part", 8, 10*planMiB), planFiles("date=2024-02-01", "part", 8, 10*planMiB)),
			o:     PlanOptions{Now: time.Date(2024, 2, 1, 1, 0, 0, 0, time.FixedZone("EET", 2*3600))},
			want:  map[string]want{day(31): {skip: "current day"}, "date=2024-02-01": {outputs: []int{1}}},
		},
		"IncludeCurrent takes the current day too": {
			files: planFiles(day(31), "part", 8, 10*planMiB),
			o:     PlanOptions{IncludeCurrent: true},
			want:  map[string]want{day(31): {outputs: []int{1}}},
		},
		"partitions without a date are never current": {
			files: cat(planFiles("", "part", 6, planMiB), planFiles("region=eu", "part", 6, planMiB)),
			want:  map[string]want{"": {outputs: []int{1}}, "region=eu": {outputs: []int{1}}},
		},
		"young files are not candidates": {
			files: cat(planFiles(day(1), "old", 4, 10*planMiB), []catalog.DataFile{
				planFile(day(1), "young-1.parquet", 10*planMiB, 10*time.Minute),
				planFile(day(1), "young-2.parquet", 10*planMiB, 59*time.Minute),
			}),
			o:    PlanOptions{MinFileAge: time.Hour},
			want: map[string]want{day(1): {skip: "too few small files (4 < 5)"}},
		},
		"files as old as MinFileAge are taken": {
			files: cat(planFiles(day(1), "old", 4, 10*planMiB), []catalog.DataFile{
				planFile(day(1), "hour.parquet", 10*planMiB, time.Hour),
			}),
			o:    PlanOptions{MinFileAge: time.Hour},
			want: map[string]want{day(1): {outputs: []int{1}}},
		},
		"a partition of young files says so": {
			files: []catalog.DataFile{planFile(day(1), "young.parquet", 10*planMiB, time.Minute)},
			o:     PlanOptions{MinFileAge: time.Hour},
			want:  map[string]want{day(1): {skip: "no small files old enough (1 younger than 1h0m0s)"}},
		},
		"a young oversize file is not split": {
			files: []catalog.DataFile{planFile(day(1), "young.parquet", 1000*planMiB, time.Minute)},
			o:     PlanOptions{MinFileAge: time.Hour},
			want:  map[string]want{day(1): {skip: "no small files old enough"}},
		},
		"the Partitions filter plans only those, and names missing ones": {
			files: cat(planFiles(day(1), "part", 8, planMiB), planFiles(day(2), "part", 8, planMiB)),
			o:     PlanOptions{Partitions: []string{day(2), day(3)}},
			want:  map[string]want{day(2): {outputs: []int{1}}, day(3): {skip: "no live files"}},
		},
	}
}

// checkPlanRule plans tc.files with tc.o (planNow and a 256 MiB target
// unless tc.o sets them) and checks the plan against tc.want and planCheck.
func checkPlanRule(t *testing.T, tc planRule) {
	const target = 256 << 20
	if tc.o.Now.IsZero() {
		tc.o.Now = planNow
	}
	if tc.o.TargetFileSize == 0 {
		tc.o.TargetFileSize = target
	}
	plan, err := PlanCompaction(tc.files, tc.o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]planWant{}
	for _, pp := range plan.Partitions {
		w := planWant{skip: pp.Skip}
		for _, b := range pp.Bins {
			w.outputs = append(w.outputs, b.Outputs)
			w.split = append(w.split, b.Split)
		}
		got[pp.Partition] = w
	}
	for p, w := range tc.want {
		g, ok := got[p]
		if !ok {
			t.Errorf("%q: not in the plan", p)
			continue
		}
		if !slices.Equal(g.outputs, w.outputs) || !strings.HasPrefix(g.skip, w.skip) ||
			(w.split != nil && !slices.Equal(g.split, w.split)) || (w.split == nil && slices.Contains(g.split, true)) {
			t.Errorf("%q: got outputs %v split %v skip %q\nwant outputs %v split %v skip %q", p, g.outputs, g.split, g.skip, w.outputs, w.split, w.skip)
		}
	}
	for p := range got {
		if _, ok := tc.want[p]; !ok {
			t.Errorf("%q: planned, want it left out", p)
		}
	}
	if t.Failed() {
		t.Logf("plan:\n%s", plan)
	}
	planCheck(t, tc.files, tc.o, plan)
}

func TestPlanCompactsTwoThousandSmallFilesOverTenDays(t *testing.T) {
	// A streaming writer's leftovers: 2,000 files of 0.1 to 24 MiB over ten
	// days, the last of which is today's.
	rng := rand.New(rand.NewPCG(1, 2))
	var files []catalog.DataFile
	for i := range 2000 {
		p := fmt.Sprintf("date=2024-01-%02d", 22+i%10)
		size := planMiB/10 + rng.Int64N(24*planMiB)
		files = append(files, planFile(p, fmt.Sprintf("part-%05d.parquet", i), size, 48*time.Hour))
	}
	for name, o := range map[string]PlanOptions{
		"at the default target":          {Now: planNow},
		"at a 64 MiB target":             {Now: planNow, TargetFileSize: 64 * planMiB},
		"at a 16 MiB target, small bins": {Now: planNow, TargetFileSize: 16 * planMiB, MaxBinBytes: 96 * planMiB},
		"with the current day":           {Now: planNow, IncludeCurrent: true, TargetFileSize: 100 * planMiB},
	} {
		t.Run(name, func(t *testing.T) {
			plan, err := PlanCompaction(files, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Partitions) != 10 {
				t.Fatalf("%d partitions planned, want 10", len(plan.Partitions))
			}
			after := planApply(files, plan, 1)
			counts := map[string]int64{}
			for _, f := range after {
				counts[f.Partition]++
			}
			for _, pp := range plan.Partitions {
				current := pp.Partition == "date=2024-01-31"
				if current && !o.IncludeCurrent {
					if pp.Skip != "current day" {
						t.Errorf("%s: skip %q, want the current day skipped", pp.Partition, pp.Skip)
					}
					continue
				}
				if want := ceilDiv(pp.Bytes, plan.Target); counts[pp.Partition] > want {
					t.Errorf("%s: %d files after compaction, want at most ceil(%s / %s) = %d",
						pp.Partition, counts[pp.Partition], planSize(pp.Bytes), planSize(plan.Target), want)
				}
			}
			planCheck(t, files, o, plan)
		})
	}
}

// TestPlanPromisesOverRandomTables runs planCheck over random tables: mixes
// of tiny, small, mid-size and oversize files, young and old, at random
// targets, bins and thresholds.
func TestPlanPromisesOverRandomTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 300
	if testing.Short() {
		n = 50
	}
	for i := range n {
		target := (1 + rng.Int64N(512)) * planMiB
		if rng.IntN(4) == 0 {
			target += rng.Int64N(planMiB) // not a multiple of anything
		}
		o := PlanOptions{
			TargetFileSize: target,
			MinInputFiles:  rng.IntN(8),
			IncludeCurrent: rng.IntN(2) == 0,
			Now:            planNow,
		}
		if rng.IntN(2) == 0 {
			o.MaxBinBytes = target * (6 + rng.Int64N(10))
		}
		if rng.IntN(3) == 0 {
			o.MinFileAge = time.Duration(rng.IntN(120)) * time.Minute
		}
		var files []catalog.DataFile
		for d := range 1 + rng.IntN(4) {
			p := fmt.Sprintf("date=2024-01-%02d", 31-d)
			for j := range rng.IntN(300) {
				var size int64
				switch rng.IntN(10) {
				case 0:
					size = rng.Int64N(3 * target) // anything, oversize included
				case 1:
					size = rng.Int64N(planKiB)
				default:
					size = 1 + rng.Int64N(target/(1+rng.Int64N(40)))
				}
				age := time.Duration(rng.IntN(240)) * time.Minute
				files = append(files, planFile(p, fmt.Sprintf("f%05d.parquet", j), size, age))
			}
		}
		rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			plan, err := PlanCompaction(files, o)
			if err != nil {
				t.Fatal(err)
			}
			planCheck(t, files, o, plan)
			slices.Reverse(files)
			again, err := PlanCompaction(files, o)
			if err != nil {
				t.Fatal(err)
			}
			if plan.String() != again.String() {
				t.Fatalf("the order of the input changed the plan:\n%s\n%s", plan, again)
			}
		})
	}
}

// TestPlanBinEdgesKeepOutputsNearTarget packs files just under 3/4 of the
// target, the worst case for where a bin ends (half a small file away from
// its outputs' end), into several bins: every bin's outputs must stay
// between 3/4 and 4/3 of the target.
func TestPlanBinEdgesKeepOutputsNearTarget(t *testing.T) {
	const target = 256 * planMiB
	for name, bin := range map[string]int64{
		"with bins of the smallest size allowed, 6 targets": 6 * target,
		"with bins of the default size, 8 targets":          0,
		"with bins of 12 targets":                           12 * target,
	} {
		t.Run(name, func(t *testing.T) {
			o := PlanOptions{TargetFileSize: target, MaxBinBytes: bin, Now: planNow}
			maxBin := o.withDefaults().MaxBinBytes
			for seed := range uint64(300) {
				rng := rand.New(rand.NewPCG(seed, uint64(bin)))
				var files []catalog.DataFile
				var sum int64
				for total := maxBin + rng.Int64N(3*maxBin); sum < total; {
					size := 1 + rng.Int64N(target/4)
					if rng.IntN(2) == 0 {
						size = 3*target/4 - 1 - rng.Int64N(target/20)
					}
					sum += size
					files = append(files, planFile("date=2024-01-01", fmt.Sprintf("f%05d.parquet", len(files)), size, time.Hour))
				}
				plan, err := PlanCompaction(files, o)
				if err != nil {
					t.Fatal(err)
				}
				if len(plan.Bins()) < 2 {
					t.Fatalf("seed %d: %d bins for %s, want several", seed, len(plan.Bins()), planSize(sum))
				}
				for _, b := range plan.Bins() {
					if per := b.Bytes / int64(b.Outputs); 4*per < 3*target || 3*per > 4*target {
						t.Fatalf("seed %d: outputs of %s, want 3/4 to 4/3 of %s\n%s", seed, planSize(per), planSize(target), plan)
					}
				}
				planCheck(t, files, o, plan)
			}
		})
	}
}

func TestPlanRefusesFileListsThatAreNoTables(t *testing.T) {
	for name, files := range map[string][]catalog.DataFile{
		"a path listed twice": {planFile("date=2024-01-01", "a.parquet", 1, 0), planFile("date=2024-01-01", "a.parquet", 2, 0)},
		"a negative size":     {planFile("date=2024-01-01", "a.parquet", -1, 0)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := PlanCompaction(files, PlanOptions{Now: planNow}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestOutputsFor(t *testing.T) {
	const mib = 256 * planMiB
	for name, tc := range map[string]struct {
		bytes, target, want int64
	}{
		"less than a target is one output":               {40 * planMiB, mib, 1},
		"an empty input still makes one output":          {0, mib, 1},
		"exactly one target is one output":               {mib, mib, 1},
		"300 MiB at 256 MiB is one output of 300 MiB":    {300 * planMiB, mib, 1},
		"a remainder just under half a target is folded": {mib + mib/2 - 1, mib, 1},
		"a remainder of half a target gets its own":      {mib + mib/2, mib, 2},
		"whole targets are that many outputs":            {5 * mib, mib, 5},
		"many targets fold a small remainder":            {100*mib + 10*planMiB, mib, 100},
		"many targets keep a remainder over half of one": {100*mib + 200*planMiB, mib, 101},
		// At a target of 667 bytes, 1001 bytes leave a remainder of 334,
		// over half a target, but two outputs of 500 bytes would be under
		// 3/4 of the target (500.25) and packed again next run.
		"an odd target never makes outputs under 3/4 of it":       {1001, 667, 1},
		"an odd target keeps a remainder when outputs stay large": {1002, 667, 2},
	} {
		t.Run(name, func(t *testing.T) {
			got := outputsFor(tc.bytes, tc.target)
			if got != tc.want {
				t.Fatalf("outputsFor(%d, %d) = %d, want %d", tc.bytes, tc.target, got, tc.want)
			}
			if got > 1 {
				if per := tc.bytes / got; 4*per < 3*tc.target {
					t.Fatalf("outputs of %d bytes are under 3/4 of %d", per, tc.target)
				}
			}
		})
	}
}

// A file whose rows other files delete (an Iceberg table's position
// deletes) is rewritten whatever its size and however few files its
// partition has, so that its deletes can go; a file with deletes past
// the split size is split, as any.
func TestPlanRewritesFilesWithDeletes(t *testing.T) {
	o := PlanOptions{TargetFileSize: 100 * planMiB, Now: planNow, IncludeCurrent: true}
	withDeletes := func(f catalog.DataFile) catalog.DataFile { f.HasDeletes = true; return f }
	files := []catalog.DataFile{
		// One large file with deletes: alone, it is rewritten.
		withDeletes(planFile("date=2024-01-01", "a", 90*planMiB, time.Hour)),
		// One small file with deletes, beside a large one without.
		withDeletes(planFile("date=2024-01-02", "b", planMiB, time.Hour)),
		planFile("date=2024-01-02", "c", 95*planMiB, time.Hour),
		// The same without deletes: too few small files.
		planFile("date=2024-01-03", "d", planMiB, time.Hour),
		planFile("date=2024-01-03", "e", 95*planMiB, time.Hour),
		// Past the split size, with deletes: split.
		withDeletes(planFile("date=2024-01-04", "f", 300*planMiB, time.Hour)),
	}
	p, err := PlanCompaction(files, o)
	if err != nil {
		t.Fatal(err)
	}
	taken := map[string][]string{}
	for _, b := range p.Bins() {
		for _, f := range b.Inputs {
			taken[b.Partition] = append(taken[b.Partition], f.Path)
		}
	}
	want := map[string][]string{
		"date=2024-01-01": {files[0].Path},
		"date=2024-01-02": {files[1].Path},
		"date=2024-01-04": {files[5].Path},
	}
	if !maps.EqualFunc(taken, want, slices.Equal) {
		t.Errorf("files taken %v; want %v", taken, want)
	}
}
