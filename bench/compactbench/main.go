// Command compactbench is the sluice side of bench/compact.sh until the
// `sluice compact` command lands: it rewrites every Hive partition folder
// of -in (many small Parquet files) into -out with compact.Rewrite, one
// call per partition, runtime.NumCPU() partitions at a time, and prints one
// JSON line {"seconds":S,"rows":N,"bytes":B,"files":F}.
//
// Usage: go run ./bench/compactbench -in DIR -out DIR -schema SCHEMA [-workers N] [-cpuprofile FILE]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
)

func main() {
	in := flag.String("in", "", "input folder: <in>/<key=value>/*.parquet")
	out := flag.String("out", "", "output folder (emptied first)")
	schemaStr := flag.String("schema", "", "table schema, name:type,...")
	workers := flag.Int("workers", runtime.NumCPU(), "partitions rewritten at once")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if err := run(*in, *out, *schemaStr, *workers, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "compactbench:", err)
		os.Exit(1)
	}
}

func run(in, out, schemaStr string, workers int, cpuprofile string) error {
	if in == "" || out == "" || schemaStr == "" {
		return fmt.Errorf("-in, -out and -schema are required")
	}
	schema, err := catalog.ParseSchema(schemaStr)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	src, err := cloud.Open(ctx, in)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := cloud.Open(ctx, out)
	if err != nil {
		return err
	}
	defer dst.Close()

	parts := map[string][]catalog.DataFile{}
	err = src.List(ctx, "", func(o cloud.ObjectInfo) error {
		if !strings.HasSuffix(o.Key, ".parquet") {
			return nil
		}
		dir := path.Dir(o.Key)
		if dir == "." {
			dir = ""
		}
		parts[dir] = append(parts[dir], catalog.DataFile{Path: o.Key, Partition: dir, Bytes: o.Size})
		return nil
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(parts))
	for p := range parts {
		names = append(names, p)
	}
	sort.Strings(names)

	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	open := func(ctx context.Context, f catalog.DataFile) (io.ReaderAt, int64, error) {
		return catalog.NewReaderAt(ctx, src, f.Path, f.Bytes), f.Bytes, nil
	}
	start := time.Now()
	var mu sync.Mutex
	var rows, bytes, files int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, p := range names {
		g.Go(func() error {
			res, err := compact.Rewrite(gctx, open, dst, schema, p, parts[p], compact.RewriteOptions{})
			if err != nil {
				return err
			}
			mu.Lock()
			rows += res.RowsOut
			bytes += res.BytesOut
			files += int64(len(res.Outputs))
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"seconds": float64(int64(secs*1e6)) / 1e6, "rows": rows, "bytes": bytes, "files": files,
	})
}
