package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// Sentinel errors of a run; test with errors.Is.
var (
	// ErrFilesFailed: some landing files could not be read as a whole
	// (a truncated gzip stream, a Parquet file of an incompatible schema).
	// The run committed the other files; the failed ones are not recorded
	// in the checkpoint, so a fixed copy is taken by the next run.
	ErrFilesFailed = errors.New("landing files failed")
	// ErrNoSuchSource: a local --from folder does not exist, or is not a
	// folder: most likely a typo, which must not pass as "no new files".
	// (An object-store prefix holding nothing is not an error: there,
	// nothing may have arrived yet.)
	ErrNoSuchSource = errors.New("no such landing folder")
)

// QuarantineSchema is the schema of a quarantine table: where a bad record
// came from (the landing file's URL; its position as name:line), why it
// was refused, its raw bytes, and when it was ingested. The table is
// partitioned by day(ingested_at).
const QuarantineSchema = "source:string,position:string,reason:string,raw:binary,ingested_at:timestamp"

// FileFailure is one landing file that failed as a whole.
type FileFailure struct {
	File string // URL of the landing file
	Err  error
}

// Result says what one run did. RecordsIn = RowsWritten +
// RecordsQuarantined + RecordsDeduplicated always; the records of failed
// files are counted in none of them.
type Result struct {
	RecordsIn          int64
	RowsWritten        int64
	RecordsQuarantined int64
	// RecordsDeduplicated counts the valid records dropped because their
	// Options.DedupKey was already written, or read earlier in the run.
	RecordsDeduplicated int64
	// FilesIn are the landing files taken (recorded in the checkpoint);
	// FilesFailed those that failed whole; FilesWaiting those younger than
	// MinAge; FilesSeen every file listed.
	FilesIn, FilesFailed, FilesWaiting, FilesSeen int
	// BytesIn is the stored size of the files taken.
	BytesIn int64
	// FilesOut are the data files written to the table.
	FilesOut int
	// Version is the table's version after the run (unchanged when there
	// was nothing to take); QuarantineVersion the quarantine table's, 0
	// when it was not written.
	Version, QuarantineVersion int64
	// Partitions the run's commit touched, sorted.
	Partitions []string
	// Failures lists the failed files.
	Failures []FileFailure
	// RecordsSkipped counts the Kafka records that retention deleted
	// before any run read them, skipped under GapSkip.
	RecordsSkipped int64
	// KafkaPartitions are the topic's partitions whose offsets this run
	// committed, sorted: its share of the consumer group's work.
	KafkaPartitions []int32
	// KafkaLag is, for each of KafkaPartitions still this run's at its
	// end, the records between the offset it committed and the partition's
	// last stable offset when the run started: what it left unread
	// (Until, MaxRecords) of what had arrived.
	KafkaLag map[int32]int64
	// TableSchemaWidened counts the schema changes a Kafka run with a
	// Schema Registry committed: records of a newer schema version added
	// columns or widened types.
	TableSchemaWidened int

	grow *catalog.Schema // the table schema a Kafka run stopped for
}

// landingFile is one listed file to take.
type landingFile struct {
	name string // key relative to the source prefix
	size int64
}

// Run takes the landing files under source (a path, file://, s3:// or az://
// prefix) that table t's checkpoint does not record yet and appends their
// records to t, exactly once; see the package documentation. A
// kafka://host:port[,host:port]/topic source is read by offsets instead
// (see runKafka): each record's value is one JSON object.
//
// Commit order: the quarantine table first, then t. The quarantine commit
// records, under its own checkpoint, which landing files' bad records it
// holds; a rerun after a crash between the two commits still takes those
// files (t's checkpoint does not have them) but does not quarantine their
// records again. So neither table loses or duplicates a record, whatever
// the crash point. The reverse order could lose quarantined records: t
// would record the files as taken and no rerun would read them again.
//
// When some files fail as a whole, Run still commits the others and then
// returns the Result with an error wrapping ErrFilesFailed that names the
// first failed file and its cause.
func Run(ctx context.Context, t *catalog.Table, source string, o Options) (Result, error) {
	var res Result
	if strings.HasPrefix(strings.ToLower(source), "kafka://") {
		return runKafka(ctx, t, source, o)
	}
	if err := o.Validate(); err != nil {
		return res, err
	}
	if o.SchemaRegistry != "" || registryFormat(o.Format) {
		return res, fmt.Errorf("ingest: --from %s: a Schema Registry's records come from Kafka, not landing files", cloud.Redact(source))
	}
	o = o.withDefaults()
	log := o.Logger.With("table", t.Location(), "source", source)
	m, err := t.Latest(ctx)
	if err != nil {
		return res, fmt.Errorf("ingest into %s: %w", t.Location(), err)
	}
	if err := checkColumnTypes(m.Schema); err != nil {
		return res, fmt.Errorf("ingest into %s: %w", t.Location(), err)
	}
	dd, err := newDedup(t, m, o)
	if err != nil {
		return res, err
	}
	res.Version = m.Version
	loc, err := cloud.ParseLocation(source)
	if err != nil {
		return res, fmt.Errorf("ingest: --from: %w", err)
	}
	if err := checkFolder(loc); err != nil {
		return res, err
	}
	src, err := cloud.Open(ctx, source)
	if err != nil {
		return res, fmt.Errorf("ingest: %w", err)
	}
	defer src.Close()

	cpKey := "landing:" + loc.String()
	cpBase := m.Checkpoints[cpKey]
	cp, err := parseCheckpoint(cpBase)
	if err != nil {
		return res, fmt.Errorf("ingest into %s: %s: %w", t.Location(), cpKey, err)
	}

	// The quarantine table, and which files' bad records it already holds.
	qt, qm, err := quarantineOf(ctx, t, o)
	if err != nil {
		return res, err
	}
	defer qt.Close()
	qKey := "quarantined:" + canonicalLocation(t.Location()) + " " + loc.String()
	var qBase json.RawMessage
	if qm != nil {
		qBase = qm.Checkpoints[qKey]
	}
	qcp, err := parseCheckpoint(qBase)
	if err != nil {
		return res, fmt.Errorf("ingest: quarantine %s: %s: %w", qt.Location(), qKey, err)
	}

	start := time.Now()
	listed, todo, err := listLanding(ctx, src, cp, o, &res)
	if err != nil {
		return res, fmt.Errorf("ingest: list %s: %w", source, err)
	}
	res.FilesSeen = len(listed)
	log.LogAttrs(ctx, slog.LevelInfo, "list", slog.Int("files", len(listed)), slog.Int("new", len(todo)),
		slog.Int("waiting", res.FilesWaiting), slog.Duration("took", time.Since(start)))
	if len(todo) == 0 {
		return res, nil
	}

	target := o.targetFileSize(m)

	codecs, qCodecs := pqio.NewCodecs(), pqio.NewCodecs()
	rd, err := readPasses(ctx, log, todo, func() *reading {
		return &reading{o: o, src: src, srcURL: loc.String(), qcp: qcp, now: time.Now().UTC().Truncate(time.Microsecond),
			main: newSink(t, m, o.MemoryBudget*3/4, target, codecs),
			quar: newSink(qt, quarantineShape, o.MemoryBudget/4, target, qCodecs),
			dec:  newDecoder(m.Schema, o), dedup: dd.forFiles()}
	})
	var mainFiles, qFiles []catalog.DataFile
	if err == nil {
		mainFiles, err = rd.main.close(ctx)
	}
	if err == nil {
		qFiles, err = rd.quar.close(ctx)
	}
	if err != nil {
		cleanup := context.WithoutCancel(ctx)
		rd.main.abort(cleanup)
		rd.quar.abort(cleanup)
		return res, fmt.Errorf("ingest %s: %w", source, err)
	}
	res.RecordsIn, res.RowsWritten, res.RecordsQuarantined = rd.recordsIn, rd.rowsOut, rd.quarantined
	res.RecordsDeduplicated = rd.dedup.count()
	res.FilesIn, res.BytesIn, res.FilesOut = len(rd.taken), rd.bytesIn, len(mainFiles)
	res.Failures = rd.failures
	res.FilesFailed = len(rd.failures)
	log.LogAttrs(ctx, slog.LevelInfo, "read", slog.Int("files", len(rd.taken)), slog.Int64("records", rd.recordsIn),
		slog.Int64("quarantined", rd.quarantined), slog.Int("failed", len(rd.failures)), slog.Duration("took", time.Since(start)))

	// Commit the quarantine table first (see above), then the table.
	var newQ json.RawMessage
	if len(qFiles) > 0 {
		newQ = qcp.without(cp.has).with(rd.quarantinedFiles, nil, false).raw()
	}
	var newCP json.RawMessage
	if len(rd.taken) > 0 {
		newCP = cp.with(rd.taken, listed, o.OrderedNames).raw()
	}
	err = commitRun(ctx, &res, runCommit{runID: o.RunID,
		qt: qt, qExists: qm != nil, qFiles: qFiles, qKey: qKey, qBase: qBase, qNew: newQ,
		t: t, files: mainFiles, cpKey: cpKey, cpBase: cpBase, cpNew: newCP})
	if err != nil {
		return res, fmt.Errorf("ingest %s: %w", source, err)
	}
	log.LogAttrs(ctx, slog.LevelInfo, "commit", slog.Int64("version", res.Version),
		slog.Int64("quarantine_version", res.QuarantineVersion), slog.Duration("took", time.Since(start)))
	if len(rd.failures) > 0 {
		return res, filesFailed(rd.failures)
	}
	return res, nil
}

// listLanding lists the source, oldest name first (paged by the store),
// and returns every name listed and the files that checkpoint cp does not
// record and that are old enough to take (and not modified after
// o.Until), counting the others in res.FilesWaiting.
func listLanding(ctx context.Context, src cloud.Store, cp checkpoint, o Options, res *Result) (listed []string, todo []landingFile, err error) {
	cutoff := time.Now().Add(-o.MinAge)
	err = src.List(ctx, "", func(oi cloud.ObjectInfo) error {
		if hidden(oi.Key) {
			return nil
		}
		listed = append(listed, oi.Key)
		if cp.has(oi.Key) {
			return nil
		}
		if o.MinAge > 0 && oi.ModTime.After(cutoff) || !o.Until.IsZero() && oi.ModTime.After(o.Until) {
			res.FilesWaiting++
			return nil
		}
		todo = append(todo, landingFile{name: oi.Key, size: oi.Size})
		return nil
	})
	return listed, todo, err
}

// readPasses reads todo in a pass that newPass starts, starting over
// without a file that failed after its rows reached a writer (see
// errRestart), and returns the last pass.
func readPasses(ctx context.Context, log *slog.Logger, todo []landingFile, newPass func() *reading) (*reading, error) {
	excluded := map[string]error{}
	for {
		rd := newPass()
		err := rd.readAll(ctx, todo, excluded)
		if !errors.Is(err, errRestart) {
			return rd, err
		}
		// The pass is dropped whole: stop its writer goroutines, remove
		// their temporary files and the files they uploaded.
		cleanup := context.WithoutCancel(ctx)
		rd.main.abort(cleanup)
		rd.quar.abort(cleanup)
		log.LogAttrs(ctx, slog.LevelWarn, "restart", slog.String("failed", rd.restartFile))
	}
}

// filesFailed is a run's error when some files failed as a whole: it
// names the first and wraps ErrFilesFailed.
func filesFailed(failures []FileFailure) error {
	first := failures[0]
	more := ""
	if n := len(failures) - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more failed file(s))", n)
	}
	return fmt.Errorf("ingest %s: %w%s: %w", first.File, first.Err, more, ErrFilesFailed)
}

// runCommit is what one run commits: the quarantine table's new rows and
// checkpoint, then the table's files and checkpoint.
type runCommit struct {
	runID string

	qt            *catalog.Table
	qExists       bool // the quarantine table exists; else it is created first
	qFiles        []catalog.DataFile
	qKey          string
	qBase, qNew   json.RawMessage
	t             *catalog.Table
	files         []catalog.DataFile
	cpKey         string
	cpBase, cpNew json.RawMessage // cpNew nil: nothing to commit to t

	// qMerge and cpMerge, when set, replace qBase/qNew and cpBase/cpNew:
	// the run advances only its own part of the checkpoint (see
	// catalog.Change.CheckpointMerge).
	qMerge, cpMerge func(current json.RawMessage) (json.RawMessage, error)
}

// checkpointChange sets key's checkpoint in ch: merged when merge is set, else
// replaced with base as a requirement.
func checkpointChange(ch *catalog.Change, key string, base, next json.RawMessage, merge func(json.RawMessage) (json.RawMessage, error)) {
	if merge != nil {
		ch.CheckpointMerge = map[string]func(json.RawMessage) (json.RawMessage, error){key: merge}
		return
	}
	ch.Checkpoints = map[string]json.RawMessage{key: next}
	ch.CheckpointBase = map[string]json.RawMessage{key: base}
}

// commitRun commits the quarantine first, then the table, each with the
// checkpoint it started from as a requirement; see Run for why in this
// order. It sets the versions in res.
func commitRun(ctx context.Context, res *Result, c runCommit) error {
	if len(c.qFiles) > 0 {
		if !c.qExists {
			if _, err := createQuarantine(ctx, c.qt, c.runID); err != nil {
				return err
			}
		}
		qch := catalog.Change{Operation: "ingest", RunID: c.runID, Add: c.qFiles, DataChange: true}
		checkpointChange(&qch, c.qKey, c.qBase, c.qNew, c.qMerge)
		qv, err := c.qt.Commit(ctx, qch)
		if err != nil {
			return fmt.Errorf("commit quarantine %s: %w", c.qt.Location(), err)
		}
		res.QuarantineVersion = qv.Version
	}
	if c.cpNew == nil && c.cpMerge == nil {
		return nil
	}
	ch := catalog.Change{Operation: "ingest", RunID: c.runID, Add: c.files, DataChange: true}
	checkpointChange(&ch, c.cpKey, c.cpBase, c.cpNew, c.cpMerge)
	v, err := c.t.Commit(ctx, ch)
	if err != nil {
		return fmt.Errorf("commit %s: %w", c.t.Location(), err)
	}
	res.Version = v.Version
	res.Partitions = v.Summary.Partitions
	return nil
}

// checkFolder fails a local landing location that is not an existing
// folder: listing it would find nothing, and a typo would look like a
// quiet day. An object store has no folders to check: a prefix with
// nothing under it is where files have not arrived yet, and a bucket or
// container that does not exist fails the listing.
func checkFolder(loc cloud.Location) error {
	if loc.Kind != cloud.KindLocal {
		return nil
	}
	fi, err := os.Stat(loc.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("ingest: --from %s: %w", loc.Path, ErrNoSuchSource)
	case err != nil:
		return fmt.Errorf("ingest: --from %s: %w", loc.Path, err)
	case !fi.IsDir():
		return fmt.Errorf("ingest: --from %s: a file, not a folder: %w", loc.Path, ErrNoSuchSource)
	}
	return nil
}

// hidden tells whether a landing key is metadata, not data: a file or
// folder whose name starts with '_' or '.' (_SUCCESS, .tmp files), as
// Spark and Hadoop writers leave them.
func hidden(key string) bool {
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, "_") || strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// quarantineShape holds the schema and partition spec of every quarantine
// table (QuarantineSchema, partitioned by day(ingested_at)), parsed once.
var quarantineShape = func() *catalog.Manifest {
	s, err := catalog.ParseSchema(QuarantineSchema)
	if err != nil {
		panic(err)
	}
	spec, err := catalog.ParsePartitionSpec("day(ingested_at)", s)
	if err != nil {
		panic(err)
	}
	return &catalog.Manifest{Schema: s, Spec: spec}
}()

// quarantineOf opens the quarantine table of t (o.Quarantine, else t's
// location + "_quarantine") and its latest version, nil if it does not
// exist yet. The caller closes the table.
func quarantineOf(ctx context.Context, t *catalog.Table, o Options) (*catalog.Table, *catalog.Manifest, error) {
	qloc := o.Quarantine
	if qloc == "" {
		qloc = strings.TrimRight(t.Location(), "/") + "_quarantine"
	}
	// The quarantine shares t's options: its logger, and its commit
	// observers (a mirrored quarantine is synced as t is).
	qt, err := catalog.Open(ctx, qloc, t.Options())
	if err != nil {
		return nil, nil, fmt.Errorf("ingest: quarantine %s: %w", qloc, err)
	}
	qm, err := openQuarantine(ctx, qt)
	if err != nil {
		qt.Close()
		return nil, nil, err
	}
	return qt, qm, nil
}

// openQuarantine returns the quarantine table's latest manifest, nil if
// the table does not exist yet. An existing table must have the
// quarantine schema.
func openQuarantine(ctx context.Context, qt *catalog.Table) (*catalog.Manifest, error) {
	qm, err := qt.Latest(ctx)
	if errors.Is(err, catalog.ErrTableNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ingest: quarantine %s: %w", qt.Location(), err)
	}
	if qm.Schema.String() != QuarantineSchema {
		return nil, fmt.Errorf("ingest: quarantine %s: schema %q is not a quarantine table's (%s)", qt.Location(), qm.Schema.String(), QuarantineSchema)
	}
	return qm, nil
}

// createQuarantine creates the quarantine table on first use; a concurrent
// run creating it too is fine.
func createQuarantine(ctx context.Context, qt *catalog.Table, runID string) (*catalog.Manifest, error) {
	qm, err := qt.Create(ctx, quarantineShape.Schema, quarantineShape.Spec, nil, runID)
	if errors.Is(err, catalog.ErrTableExists) {
		return openQuarantine(ctx, qt)
	}
	if err != nil {
		return nil, fmt.Errorf("ingest: create quarantine %s: %w", qt.Location(), err)
	}
	return qm, nil
}

// reading is one pass over the files to take.
type reading struct {
	o      Options
	src    cloud.Store
	srcURL string
	qcp    checkpoint // files whose bad records the quarantine holds
	now    time.Time
	main   *sink
	quar   *sink
	dec    *decoder
	dedup  *dedup

	taken            []string
	quarantinedFiles []string // taken files with at least one bad record
	failures         []FileFailure
	restartFile      string
	recordsIn        int64
	rowsOut          int64
	quarantined      int64
	bytesIn          int64
}

func (rd *reading) readAll(ctx context.Context, todo []landingFile, excluded map[string]error) error {
	for i, f := range todo {
		if err := ctx.Err(); err != nil {
			return err
		}
		if rd.o.MaxRecords > 0 && rd.recordsIn >= rd.o.MaxRecords {
			break
		}
		url := rd.src.URL(f.name)
		if cause, ok := excluded[f.name]; ok {
			rd.failures = append(rd.failures, FileFailure{File: url, Err: cause})
			continue
		}
		var in, rows, bad int64
		alreadyQuarantined := rd.qcp.has(f.name)
		err := rd.dec.decodeFile(ctx, rd.src, f.name, f.size, rd.o.Format, func(pos int64, raw []byte, row []any, why error) error {
			in++
			if why == nil {
				if dup, err := rd.dedup.drop(ctx, row); dup || err != nil {
					return err // a duplicate is dropped; err fails the run
				}
				rows++
				if err := rd.main.add(ctx, row, len(raw)+1, rd.dec.emitting); err != nil {
					return &writeError{err}
				}
				return nil
			}
			var re *recordError
			if !errors.As(why, &re) {
				return why
			}
			bad++
			if alreadyQuarantined {
				return nil
			}
			q := []any{url, path.Base(f.name) + ":" + strconv.FormatInt(pos, 10), re.reason, append([]byte(nil), raw...), rd.now}
			if err := rd.quar.add(ctx, q, len(raw), nil); err != nil {
				return &writeError{err}
			}
			return nil
		})
		rd.dedup.fileEnd(err == nil)
		if err != nil {
			var we *writeError
			if errors.As(err, &we) {
				return we.err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			e1, e2 := rd.main.fileFailed(), rd.quar.fileFailed()
			if e1 != nil || e2 != nil {
				excluded[f.name] = err
				rd.restartFile = url
				return errRestart
			}
			rd.failures = append(rd.failures, FileFailure{File: url, Err: err})
			continue
		}
		if err := rd.main.fileDone(ctx); err != nil {
			return err
		}
		if err := rd.quar.fileDone(ctx); err != nil {
			return err
		}
		rd.taken = append(rd.taken, f.name)
		if bad > 0 && !alreadyQuarantined {
			rd.quarantinedFiles = append(rd.quarantinedFiles, f.name)
		}
		rd.recordsIn += in
		rd.rowsOut += rows
		rd.quarantined += bad
		rd.bytesIn += f.size
		if rd.o.Progress != nil {
			rd.o.Progress(i+1, len(todo))
		}
	}
	return nil
}

// writeError is a failure to write the output, which fails the run rather
// than the landing file being read.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
