package catalog

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// ImportResult says what an import did.
type ImportResult struct {
	// Manifest is the version committed; nil when there was nothing new.
	Manifest *Manifest
	// Created is true when the import created the table.
	Created bool
	// FilesFound are the Parquet files under the folder; FilesAdded those
	// the table never had, FilesSkipped those it has or had.
	FilesFound, FilesAdded, FilesSkipped int
	// FilesReplaced are the skipped files that an earlier version
	// referenced and the latest does not: replaced by a compaction or
	// dropped by a rollback, left on disk for vacuum.
	FilesReplaced int
	// FilesUncommitted are the skipped files under the table's root that
	// sluice itself wrote (named as NewDataFilePath names them) and no
	// version lists: the output of a run that crashed or has not committed
	// yet. Only a commit makes such a file part of the table.
	FilesUncommitted int
	Rows, Bytes      int64
}

// isDataFile reports whether key (relative to a folder being imported) is
// a data file: a .parquet file with no folder or name that is hidden, as
// Spark decides it (InMemoryFileIndex.shouldFilterOutPathName): starting
// with '.', or with '_' unless it is a partition folder ("_2=x"). Spark,
// Delta and Hadoop keep metadata, checksums and temp files there.
func isDataFile(key string) bool {
	if !strings.HasSuffix(key, ".parquet") {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if hiddenName(seg) {
			return false
		}
	}
	return true
}

// hiddenName reports whether a folder or file name is one that Spark's
// file index skips.
func hiddenName(seg string) bool {
	return strings.HasPrefix(seg, ".") || (strings.HasPrefix(seg, "_") && !strings.Contains(seg, "="))
}

// A table log is a folder whose files, not a listing, say which data files
// of a table are live: Delta Lake's _delta_log/, an Iceberg table's
// metadata/ and a Spark Structured Streaming sink's _spark_metadata/.
// What a glob of such a table finds besides its live files is not news:
// files a delete, a MERGE, an OPTIMIZE or an overwrite removed (the log
// removed them; the files stay until that format's vacuum), and the partial
// output of a failed streaming batch, which no log entry ever committed.
type tableLog struct {
	dir  string // the log folder, relative to the folder listed
	what string // what it is, for the error
	why  string // what a glob of its table would do
}

// findTableLog reports the table log that key (relative to a folder being
// imported) lies in, if any: anywhere below the folder, since a table
// nested inside it would be globbed as well. A log under a hidden folder
// (sluice's own Iceberg mirror in _iceberg/, a Spark _temporary/ folder)
// belongs to files that import never globs, and does not count.
func findTableLog(key string) (tableLog, bool) {
	if !strings.Contains(key, "_delta_log/") && !strings.Contains(key, "_spark_metadata/") &&
		!strings.HasSuffix(key, ".metadata.json") {
		return tableLog{}, false
	}
	segs := strings.Split(key, "/")
	for i, seg := range segs[:len(segs)-1] {
		dir := strings.Join(segs[:i+1], "/")
		switch {
		case seg == "_delta_log":
			return tableLog{dir, "a Delta Lake log", "globbing would bring back rows it deleted"}, true
		case seg == "_spark_metadata":
			return tableLog{dir, "a Spark Structured Streaming sink's log", "globbing would adopt the partial output of a failed batch"}, true
		case seg == "metadata" && i == len(segs)-2 && strings.HasSuffix(segs[i+1], ".metadata.json"):
			return tableLog{dir, "an Iceberg table's metadata", "globbing would bring back rows it deleted"}, true
		case hiddenName(seg):
			return tableLog{}, false
		}
	}
	return tableLog{}, false
}

// ImportOptions tune Import.
type ImportOptions struct {
	// RunID is recorded in the manifest as the run that imported.
	RunID string
	// Progress, when set, is called after each file's footer is read with
	// the number read so far and the total. It is called from several
	// goroutines.
	Progress func(done, total int)
	// Listed, when set, are the files to adopt as a table log names them
	// (a Delta table's live files, or a Spark Structured Streaming sink's),
	// instead of the Parquet files a listing of the folder finds.
	Listed *Listed
}

// Listed are the live data files of a folder as its table log names them.
type Listed struct {
	// Log says which log, at which version, for messages: "the Delta log
	// at version 7", "the Spark sink log at batch 12".
	Log string
	// PartitionKeys are the table's partition columns, in order.
	PartitionKeys []string
	// Files are the live files.
	Files []ListedFile
}

// ListedFile is one live data file of a Listed.
type ListedFile struct {
	// Key is the file's key relative to the folder imported.
	Key  string
	Size int64
	// PartitionValues has a value, nil for NULL, for every partition key.
	PartitionValues map[string]*string
}

// Import adopts the Parquet files under the folder from into the table, in
// place, without rewriting them. If the table does not exist it is created
// with the schema merged from the files and the Hive partition keys of
// their folders. On an existing table it adds, in one commit, the files no
// version of it ever referenced: a file that a compaction replaced or a
// rollback dropped stays on disk until vacuum, and is history, not news
// (adopting it again would count its rows twice). A file the table's
// schema cannot read fails the whole import and nothing is committed.
//
// A folder that is, or holds below it, a table whose log says which files
// are live (Delta Lake's _delta_log/, an Iceberg table's metadata/, a Spark
// Structured Streaming sink's _spark_metadata/) is refused with
// ErrTableLog, naming the log: a glob of it would bring back what the log
// removed. ImportOptions.Listed gives the files such a log names live
// instead, and they are adopted, with the partition values the log gives.
func (t *Table) Import(ctx context.Context, from string, o ImportOptions) (ImportResult, error) {
	var res ImportResult
	src := t.store
	fromRoot, tableRoot := strings.TrimSuffix(from, "/"), strings.TrimSuffix(t.loc, "/")
	if fromRoot != tableRoot {
		var err error
		if src, err = cloud.Open(ctx, from); err != nil {
			return res, err
		}
		defer src.Close()
	}
	cur, cands, keys, err := t.importCandidates(ctx, from, src, o.Listed, &res)
	if err != nil || len(cands) == 0 {
		return res, err
	}
	if err := t.inspectCandidates(ctx, from, src, cands, o.Progress); err != nil {
		return res, err
	}

	var schema Schema
	var spec PartitionSpec
	if cur != nil {
		schema, spec = cur.Schema, cur.Spec
	} else {
		schemas, urls := make([]Schema, len(cands)), make([]string, len(cands))
		for i, c := range cands {
			schemas[i], urls[i] = c.schema, src.URL(c.info.Key)
		}
		if schema, spec, err = inferTable(schemas, urls, keys); err != nil {
			return res, fmt.Errorf("import %s: %w", from, err)
		}
	}
	add := make([]DataFile, 0, len(cands))
	for _, c := range cands {
		if err := pqio.CheckCompatible(schema, c.schema, src.URL(c.info.Key)); err != nil {
			return res, fmt.Errorf("import %s: %w", from, err)
		}
		add = append(add, DataFile{Path: c.tpath, Partition: c.dir, PartitionValues: c.vals,
			Bytes: c.info.Size, FileStats: c.stats})
		res.Rows += c.stats.Rows
		res.Bytes += c.info.Size
	}
	ch := Change{Operation: "import", RunID: o.RunID, Add: add, DataChange: true}
	if cur == nil {
		ch.Create, ch.Schema, ch.Spec = true, &schema, &spec
		res.Created = true
	}
	m, err := t.Commit(ctx, ch)
	if err != nil {
		return res, err
	}
	res.Manifest, res.FilesAdded = m, len(add)
	return res, nil
}

// importCand is a data file that an import may adopt.
type importCand struct {
	info   cloud.ObjectInfo
	tpath  string // its path in the table: relative under the root, else a URL
	dir    string // its partition folder, relative to the table root
	vals   map[string]*string
	schema Schema
	stats  FileStats
}

// importCandidates lists the data files under src (the folder from) and
// returns the table's latest version cur (nil for none yet) and the files
// the import may adopt into it, with their Hive partition keys, which must
// be the same on every file and the table's. It counts what it finds and
// skips in res. listed, when not nil, names the files instead of a listing.
func (t *Table) importCandidates(ctx context.Context, from string, src cloud.Store, listed *Listed, res *ImportResult) (cur *Manifest, cands []*importCand, keys []string, err error) {
	// Where the files live relative to the table: under its root (a
	// relative path) or elsewhere (an absolute location).
	tr, fr := strings.TrimSuffix(t.store.URL(""), "/"), strings.TrimSuffix(src.URL(""), "/")
	prefix, external := "", false
	switch {
	case fr == tr:
	case strings.HasPrefix(fr, tr+"/"):
		prefix = fr[len(tr)+1:] + "/"
	default:
		external = true
	}

	var infos []cloud.ObjectInfo
	if listed != nil {
		for _, f := range listed.Files {
			infos = append(infos, cloud.ObjectInfo{Key: f.Key, Size: f.Size})
		}
		if len(infos) == 0 {
			return nil, nil, nil, fmt.Errorf("import %s: %s has no live files", from, listed.Log)
		}
	} else if infos, err = listDataFiles(ctx, from, src); err != nil {
		return nil, nil, nil, err
	}
	res.FilesFound = len(infos)
	cur, err = t.Latest(ctx)
	if err != nil && !errors.Is(err, ErrTableNotFound) {
		return nil, nil, nil, err
	}
	live := map[string]bool{}
	if cur != nil {
		files, err := t.Files(ctx, cur)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, f := range files {
			live[f.Path] = true
		}
	}

	// Partition keys must be the same on every file.
	for i, o := range infos {
		var dir string
		var ks []string
		var vals map[string]*string
		if listed != nil {
			ks, vals = listed.PartitionKeys, listed.Files[i].PartitionValues
			dir = HiveDir(ks, vals)
		} else {
			if dir = path.Dir(o.Key); dir == "." {
				dir = ""
			}
			if ks, vals, err = ParseHivePath(dir); err != nil {
				return nil, nil, nil, fmt.Errorf("import %s: %s: %w", from, src.URL(o.Key), err)
			}
		}
		if i == 0 {
			keys = ks
		} else if !slices.Equal(ks, keys) {
			return nil, nil, nil, fmt.Errorf("import %s: %s: partition keys %v differ from %v of %s", from, src.URL(o.Key), ks, keys, src.URL(infos[0].Key))
		}
		tpath := prefix + o.Key
		if external {
			tpath = src.URL(o.Key)
		}
		if live[tpath] {
			res.FilesSkipped++
			continue
		}
		cands = append(cands, &importCand{info: o, tpath: tpath, dir: prefix + dir, vals: vals})
	}
	if cur != nil {
		var names []string
		for _, f := range cur.Spec.Fields {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, keys) && !(len(names) == 0 && len(keys) == 0) {
			return nil, nil, nil, fmt.Errorf("import %s: the files are partitioned by %v, the table by %v", from, keys, names)
		}
	}
	cands, err = t.dropKnownFiles(ctx, cur, cands, external, res)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("import %s: %w", from, err)
	}
	return cur, cands, keys, nil
}

// listDataFiles lists the data files under src (the folder from),
// refusing a folder that is or holds a table whose log says which files
// are live.
func listDataFiles(ctx context.Context, from string, src cloud.Store) ([]cloud.ObjectInfo, error) {
	var infos []cloud.ObjectInfo
	var found *tableLog
	errLog := errors.New("a table log") // stops the listing at the first one
	err := src.List(ctx, "", func(o cloud.ObjectInfo) error {
		if l, ok := findTableLog(o.Key); ok {
			found = &l
			return errLog
		}
		if isDataFile(o.Key) {
			infos = append(infos, o)
		}
		return nil
	})
	if found != nil {
		return nil, fmt.Errorf("import %s: %s is %s: it, not the folder's files, says which are live (%s): %w",
			from, src.URL(found.dir), found.what, found.why, ErrTableLog)
	}
	if err != nil {
		return nil, fmt.Errorf("import %s: list: %w", from, err)
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("import %s: no Parquet files found", from)
	}
	return infos, nil
}

// dropKnownFiles removes from cands, which are not live at version cur,
// the files that are not news: those a former version referenced, and on
// a table's own folders sluice's own uncommitted writes. It counts them in
// res.
func (t *Table) dropKnownFiles(ctx context.Context, cur *Manifest, cands []*importCand, external bool, res *ImportResult) ([]*importCand, error) {
	if cur != nil && cur.Version > 1 && len(cands) > 0 {
		// Every file of version 1 is live or was referenced by a later
		// version too; with one version there is no history to ask.
		byPart := map[string]map[string]bool{}
		for _, c := range cands {
			if byPart[c.dir] == nil {
				byPart[c.dir] = map[string]bool{}
			}
			byPart[c.dir][c.tpath] = true
		}
		former, err := t.formerFiles(ctx, byPart)
		if err != nil {
			return nil, err
		}
		cands = slices.DeleteFunc(cands, func(c *importCand) bool { return former[c.tpath] })
		res.FilesReplaced = len(former)
		res.FilesSkipped += len(former)
	}
	if cur != nil && !external {
		// sluice's own writes become part of a table by a commit alone:
		// one that is in the folder and in no version is a crashed or
		// running writer's, and adopting it would count its rows when the
		// writer retries or commits.
		n := len(cands)
		cands = slices.DeleteFunc(cands, func(c *importCand) bool { return isOwnDataFile(c.tpath) })
		res.FilesUncommitted = n - len(cands)
		res.FilesSkipped += res.FilesUncommitted
	}
	return cands, nil
}

// inspectCandidates reads the footer of every candidate (their schema and
// statistics), a few at a time, and refuses a file whose column names
// clash.
func (t *Table) inspectCandidates(ctx context.Context, from string, src cloud.Store, cands []*importCand, progress func(done, total int)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	var done atomic.Int64
	for _, c := range cands {
		g.Go(func() error {
			sc, st, err := pqio.InspectParquet(gctx, src, c.info.Key, c.info.Size)
			if err != nil {
				return fmt.Errorf("import %s: %w", from, err)
			}
			if err := sc.Validate(); err != nil {
				return fmt.Errorf("import %s: %s: %w", from, src.URL(c.info.Key), err)
			}
			c.schema, c.stats = sc, st
			if progress != nil {
				progress(int(done.Add(1)), len(cands))
			}
			return nil
		})
	}
	return g.Wait()
}

// inferTable returns the schema and partition spec of a table created by
// importing files of schemas (urls name them in errors) under Hive folders
// of keys: the schemas merged, and one identity field per key.
func inferTable(schemas []Schema, urls []string, keys []string) (Schema, PartitionSpec, error) {
	schema := schemas[0]
	for i := 1; i < len(schemas); i++ {
		var err error
		if schema, err = pqio.MergeSchemas(schema, schemas[i]); err != nil {
			return Schema{}, PartitionSpec{}, fmt.Errorf("%s: %w", urls[i], err)
		}
		// Each file's names were unique regardless of case, but two files
		// may spell one column in two ways.
		if err := schema.Validate(); err != nil {
			return Schema{}, PartitionSpec{}, fmt.Errorf("%s: %w", urls[i], err)
		}
	}
	if err := pqio.NameClash("partition key", keys); err != nil {
		return Schema{}, PartitionSpec{}, fmt.Errorf("%s: %w", urls[0], err)
	}
	var spec PartitionSpec
	for _, k := range keys {
		// Spark reads a partition key as a column: it must not be one
		// already, in any case.
		if c, clash := schema.ColumnFold(k); clash {
			if c.Name == k {
				return Schema{}, PartitionSpec{}, fmt.Errorf("partition key %q is also a column inside the files", k)
			}
			return Schema{}, PartitionSpec{}, fmt.Errorf("partition key %q and column %q differ only in case (Spark, Hive and most warehouses fold case, so they would be one column)", k, c.Name)
		}
		spec.Fields = append(spec.Fields, PartitionField{Name: k, Transform: "identity", Type: Type{Kind: KindString}})
	}
	return schema, spec, nil
}

// formerFiles returns which of paths (data file paths as the table records
// them, grouped by partition) some version of the table referenced.
//
// It reads only the partitions of paths, and of those only the versions
// whose commit touched them: a commit writes pieces only for the
// partitions it touches and a rollback reuses an older version's pieces,
// so the pieces of those versions hold every file the partition ever had.
// A piece shared by many versions is read once. Vacuum deletes no
// manifest, page or piece that a version references, so versions it no
// longer retains still answer: a replaced file that it kept on disk (its
// modification time younger than the retention) is still known.
func (t *Table) formerFiles(ctx context.Context, paths map[string]map[string]bool) (map[string]bool, error) {
	hist, err := t.History(ctx)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	pieces := map[string]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	for _, m := range hist {
		if m.RolledBackTo > 0 {
			continue
		}
		for _, p := range m.Summary.Partitions {
			if paths[p] == nil {
				continue
			}
			g.Go(func() error {
				ref, err := t.partitionRef(gctx, m, p)
				if err != nil || ref == nil {
					return err
				}
				mu.Lock()
				for _, pr := range ref.Pieces {
					pieces[pr.Key] = true
				}
				mu.Unlock()
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	former := map[string]bool{}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	for key := range pieces {
		g.Go(func() error {
			pc, err := t.piece(gctx, key)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, f := range pc.Files {
				if paths[pc.Partition][f.Path] {
					former[f.Path] = true
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return former, nil
}
