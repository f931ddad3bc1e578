// Command icebergbench is the iceberg-go side of bench/compact.sh's
// ICEBERG=1 mode: it registers the benchmark's small Parquet files as an
// Iceberg table in a SQLite catalog, as a streaming writer would have
// left them, and compacts that table with iceberg-go's own compaction
// (the table/compaction bin-pack planner and Table.RewriteDataFiles), so
// that sluice's compaction of an Iceberg table can be timed beside it.
//
// Usage:
//
//	icebergbench register [-batch N] DIR CATALOG_DB
//	icebergbench rewrite [-target-size BYTES] CATALOG_DB
//	icebergbench metadata CATALOG_DB
//
// register creates the catalog file CATALOG_DB (catalog "bench") with a
// table bench.events located at DIR, whose schema is the first Parquet
// file's (iceberg-go's Arrow conversion, fresh field ids), partitioned
// by day(ts), format version 2, zstd and a 256 MiB target file size;
// then it adds every *.parquet file under DIR in place with
// Transaction.AddFiles, N files per commit (default 100). The files have
// no Parquet field ids: AddFiles gives the table a name mapping, and
// infers each file's partition from its ts statistics. It prints one
// JSON line: files, snapshots, metadata_location.
//
// rewrite plans the compaction of bench.events with table/compaction
// (target BYTES, default 256 MiB; files below 75% of it are candidates;
// one input file is enough for a group, as sluice's --min-input-files 1)
// and runs it with Table.RewriteDataFiles, one atomic "replace"
// snapshot. It prints one JSON line: seconds (from the process's start),
// groups, files_in, bytes_in, rows_in, files_out, bytes_out,
// metadata_location.
//
// metadata prints the metadata_location the catalog holds for
// bench.events.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ice "github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// started is when the process began: rewrite's seconds count from it,
// as sluice's own --json summary does.
var started = time.Now()

const (
	// catalogName is the name the catalog's rows carry (catalog_name).
	catalogName = "bench"
	// namespace and tableName name the benchmark's table.
	namespace = "bench"
	tableName = "events"
	// targetFileSize is the output file size both compactions aim at:
	// sluice's default.
	targetFileSize = 256 << 20
)

// ident is the benchmark table's identifier, bench.events.
var ident = table.Identifier{namespace, tableName}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "register":
		err = register(ctx, args)
	case "rewrite":
		err = rewrite(ctx, args)
	case "metadata":
		err = metadata(ctx, args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "icebergbench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: icebergbench register [-batch N] DIR CATALOG_DB | rewrite [-target-size BYTES] CATALOG_DB | metadata CATALOG_DB")
	os.Exit(2)
}

// openCatalog opens (and with create, makes) the SQLite catalog at path,
// with the connection settings sluice uses for a SQLite catalog (WAL, a
// busy timeout, write-locking transactions).
func openCatalog(ctx context.Context, path string, create bool) (*icesql.Catalog, *sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	if !create {
		if _, err := os.Stat(abs); err != nil {
			return nil, nil, fmt.Errorf("catalog %s: %w", abs, err)
		}
	}
	dsn := "file:" + abs + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open catalog %s: %w", abs, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open catalog %s: %w", abs, err)
	}
	props := ice.Properties{}
	if !create {
		props["init_catalog_tables"] = "false"
	}
	cat, err := icesql.NewCatalog(catalogName, db, icesql.SQLite, props)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open catalog %s: %w", abs, err)
	}
	return cat, db, nil
}

// closeCatalog closes the catalog and its database.
func closeCatalog(cat *icesql.Catalog, db *sql.DB) error {
	return errors.Join(cat.Close(), db.Close())
}

// register creates bench.events at DIR and adds DIR's Parquet files to it
// in batches, one commit each.
func register(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("register", flag.ExitOnError)
	batch := fl.Int("batch", 100, "files per AddFiles commit")
	_ = fl.Parse(args)
	if fl.NArg() != 2 || *batch < 1 {
		usage()
	}
	dir, err := filepath.Abs(fl.Arg(0))
	if err != nil {
		return fmt.Errorf("table folder %s: %w", fl.Arg(0), err)
	}
	files, err := parquetFiles(dir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no *.parquet files under %s", dir)
	}
	sch, err := fileSchema(files[0])
	if err != nil {
		return err
	}
	ts, ok := sch.FindFieldByName("ts")
	if !ok {
		return fmt.Errorf("%s: no ts column to partition by day", files[0])
	}
	spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{ts.ID}, FieldID: 1000, Name: "ts_day", Transform: ice.DayTransform{}})

	cat, db, err := openCatalog(ctx, fl.Arg(1), true)
	if err != nil {
		return err
	}
	defer closeCatalog(cat, db)
	if err := cat.CreateNamespace(ctx, table.Identifier{namespace}, nil); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace %s: %w", namespace, err)
	}
	loc := "file://" + dir
	tbl, err := cat.CreateTable(ctx, ident, sch, icecat.WithLocation(loc), icecat.WithPartitionSpec(&spec),
		icecat.WithProperties(ice.Properties{
			"format-version":                  "2",
			table.ParquetCompressionKey:       "zstd",
			table.WriteTargetFileSizeBytesKey: strconv.Itoa(targetFileSize),
		}))
	if err != nil {
		return fmt.Errorf("create table %s at %s: %w", strings.Join(ident, "."), loc, err)
	}

	snapshots := 0
	for lo := 0; lo < len(files); lo += *batch {
		hi := min(lo+*batch, len(files))
		paths := make([]string, 0, hi-lo)
		for _, f := range files[lo:hi] {
			paths = append(paths, "file://"+f)
		}
		txn := tbl.NewTransaction()
		if err := txn.AddFiles(ctx, paths, nil, false); err != nil {
			return fmt.Errorf("add files %d to %d of %d (%s ...): %w", lo+1, hi, len(files), files[lo], err)
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			return fmt.Errorf("commit files %d to %d of %d: %w", lo+1, hi, len(files), err)
		}
		snapshots++
	}
	return printJSON(map[string]any{"files": len(files), "snapshots": snapshots, "metadata_location": tbl.MetadataLocation()})
}

// parquetFiles lists the *.parquet files under dir, sorted by path (the
// generator's order within each partition folder).
func parquetFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the Parquet files under %s: %w", dir, err)
	}
	sort.Strings(out)
	return out, nil
}

// fileSchema is the Iceberg schema of a Parquet file without field ids:
// its Arrow schema converted by iceberg-go, with fresh ids.
func fileSchema(path string) (*ice.Schema, error) {
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	asch, err := pqarrow.FromParquet(md.Schema, &pqarrow.ArrowReadProperties{}, md.KeyValueMetadata())
	if err != nil {
		return nil, fmt.Errorf("%s: Arrow schema: %w", path, err)
	}
	sch, err := table.ArrowSchemaToIcebergWithFreshIDs(asch, false)
	if err != nil {
		return nil, fmt.Errorf("%s: Iceberg schema of %s: %w", path, asch, err)
	}
	return sch, nil
}

// rewrite compacts bench.events with iceberg-go: the bin-pack planner's
// groups, rewritten and committed atomically by RewriteDataFiles.
func rewrite(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("rewrite", flag.ExitOnError)
	target := fl.Int64("target-size", targetFileSize, "target output file size in bytes")
	_ = fl.Parse(args)
	if fl.NArg() != 1 || *target <= 0 {
		usage()
	}
	cat, db, err := openCatalog(ctx, fl.Arg(0), false)
	if err != nil {
		return err
	}
	defer closeCatalog(cat, db)
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Errorf("load %s: %w", strings.Join(ident, "."), err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan the files of %s: %w", strings.Join(ident, "."), err)
	}
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = *target
	cfg.MinFileSizeBytes = *target * 3 / 4
	cfg.MaxFileSizeBytes = *target * 9 / 5
	cfg.MinInputFiles = 1
	plan, err := cfg.PlanCompaction(tasks)
	if err != nil {
		return fmt.Errorf("plan the compaction of %s: %w", strings.Join(ident, "."), err)
	}
	groups := make([]table.CompactionTaskGroup, 0, len(plan.Groups))
	var filesIn int
	var bytesIn, rowsIn int64
	for _, g := range plan.Groups {
		groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
		filesIn += len(g.Tasks)
		bytesIn += g.TotalSizeBytes
		for _, t := range g.Tasks {
			rowsIn += t.File.Count()
		}
	}
	res, err := tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{
		GroupOptions: []table.CompactionGroupOption{table.WithCompactionTargetFileSize(*target)},
	})
	if err != nil {
		return fmt.Errorf("rewrite %d files in %d groups of %s: %w", filesIn, len(groups), strings.Join(ident, "."), err)
	}
	loc := tbl.MetadataLocation()
	if res.Table != nil {
		loc = res.Table.MetadataLocation()
	}
	return printJSON(map[string]any{
		"seconds":           time.Since(started).Seconds(),
		"groups":            res.RewrittenGroups,
		"files_in":          res.RemovedDataFiles,
		"planned_files_in":  filesIn,
		"bytes_in":          bytesIn,
		"rows_in":           rowsIn,
		"files_out":         res.AddedDataFiles,
		"bytes_out":         res.BytesAfter,
		"metadata_location": loc,
	})
}

// metadata prints the catalog's metadata_location of bench.events.
func metadata(ctx context.Context, args []string) error {
	if len(args) != 1 {
		usage()
	}
	cat, db, err := openCatalog(ctx, args[0], false)
	if err != nil {
		return err
	}
	defer closeCatalog(cat, db)
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Errorf("load %s: %w", strings.Join(ident, "."), err)
	}
	fmt.Println(tbl.MetadataLocation())
	return nil
}

// printJSON prints v as one JSON line on stdout.
func printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the summary: %w", err)
	}
	_, err = fmt.Println(string(b))
	return err
}
