package delta_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
)

// copyDir copies the folder src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dropLogBefore deletes every commit and checkpoint of dir's log below
// version v, and the commit of v: what a metadata cleanup behind a
// checkpoint of v leaves, so that only the checkpoint can tell the table.
func dropLogThrough(t *testing.T, dir string, v int64) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		var n int64 = -1
		if len(name) > 20 && strings.Trim(name[:20], "0123456789") == "" {
			n = mustAtoi(name[:20])
		}
		switch {
		case n < 0:
		case n < v, n == v && strings.HasSuffix(name, ".json") && !strings.Contains(name, "checkpoint"),
			n == v && strings.HasSuffix(name, ".crc"):
			if err := os.Remove(filepath.Join(dir, "_delta_log", name)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mustAtoi(s string) int64 {
	var n int64
	for _, r := range s {
		n = n*10 + int64(r-'0')
	}
	return n
}

// Every golden table sluice reads is checkpointed at its newest version;
// with every log entry at or below that version then deleted, the
// independent reader, reading sluice's checkpoint alone, finds the live
// files it found before in the whole log. A table that asks for V2
// checkpoints is refused with ErrV2Checkpoints.
func TestCheckpointOfEveryGoldenTableReadsAsItsLog(t *testing.T) {
	ctx := context.Background()
	for name, dir := range tables(t) {
		if _, ok := refused[name]; ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want, err := deltarows(t, dir, -1)
			if err != nil {
				t.Fatalf("independent reader: %v", err)
			}
			cp := t.TempDir()
			copyDir(t, dir, cp)
			st, err := cloud.Open(ctx, cp)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			res, err := delta.New(st).WriteCheckpoint(ctx, want.Version, time.Now())
			if errors.Is(err, delta.ErrV2Checkpoints) {
				if !slices.Contains(want.Protocol.WriterFeatures, "v2Checkpoint") && want.Configuration["delta.checkpointPolicy"] != "v2" {
					t.Fatalf("refused as V2 without the feature: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Existed {
				return // Spark checkpointed that version already
			}
			if res.Adds != int64(len(want.Files)) {
				t.Errorf("checkpoint holds %d adds, the log %d live files", res.Adds, len(want.Files))
			}
			dropLogThrough(t, cp, want.Version)
			got, err := deltarows(t, cp, -1)
			if err != nil {
				t.Fatalf("independent reader of the checkpoint: %v", err)
			}
			if got.Checkpoint == nil || *got.Checkpoint != want.Version {
				t.Fatalf("independent reader started from checkpoint %v, want %d", got.Checkpoint, want.Version)
			}
			if !sameIndep(got, want) {
				t.Errorf("from the checkpoint:\n%+v\nfrom the log:\n%+v", got, want)
			}
			snap, err := snapshot(t, cp, delta.Latest)
			if err != nil {
				t.Fatal(err)
			}
			sameSnapshot(t, snap, got)
		})
	}
}

// sameIndep compares two independent reads but for where they started.
func sameIndep(a, b indep) bool {
	a.Checkpoint, b.Checkpoint = nil, nil
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// A checkpoint sluice writes has the columns of the one Spark wrote in
// the golden table "checkpoint" (its _last_checkpoint's
// checkpointSchema), leaf for leaf.
func TestCheckpointColumnsAreSparks(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(golden, "basic-with-inserts-deletes-checkpoint")
	spark := leafColumns(t, filepath.Join(dir, "_delta_log", "00000000000000000010.checkpoint.parquet"))
	cp := t.TempDir()
	copyDir(t, dir, cp)
	st, err := cloud.Open(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := delta.New(st).WriteCheckpoint(ctx, 13, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ours := leafColumns(t, filepath.Join(cp, filepath.FromSlash(res.Key)))
	if strings.Join(ours, "\n") != strings.Join(spark, "\n") {
		t.Errorf("sluice's checkpoint columns:\n%s\nSpark's:\n%s", strings.Join(ours, "\n"), strings.Join(spark, "\n"))
	}
	b, err := os.ReadFile(filepath.Join(cp, "_delta_log", "_last_checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	var last delta.LastCheckpoint
	if err := json.Unmarshal(b, &last); err != nil {
		t.Fatal(err)
	}
	if last.Version != 13 || last.Size != res.Actions || last.NumAddFiles == nil || *last.NumAddFiles != res.Adds {
		t.Errorf("_last_checkpoint %s, wrote version 13 with %d actions, %d adds", b, res.Actions, res.Adds)
	}
}

// leafColumns are a Parquet file's leaf column paths, with the
// repeated groups of lists and maps named the same whatever the writer
// called them, sorted.
func leafColumns(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pf.Schema().Columns() {
		var parts []string
		for _, s := range p {
			switch s {
			case "list", "key_value", "element", "array", "bag", "array_element":
				continue
			}
			parts = append(parts, s)
		}
		out = append(out, strings.Join(parts, "."))
	}
	sort.Strings(out)
	return out
}
