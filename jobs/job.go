package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/iceberg"
)

// Job is one kind's options, set from a command's flags or a pipeline
// file's keys through the same Bind.
type Job interface {
	// Kind names the job kind: "ingest", "compact", ...
	Kind() string
	// Bind registers the options as flags on fs: their names, defaults
	// and help are the command line's, and in snake_case the pipeline
	// file's keys.
	Bind(fs *pflag.FlagSet)
	// Validate checks every option without touching a table or a
	// server, and reports each bad one as a *BadOption (joined).
	Validate() error
	// Run runs the job once. Its result is meaningful on an error too:
	// it says what was done before it (a commit stays committed).
	Run(ctx context.Context, env Env) (Result, error)
}

// Result is what a run did: it marshals to the command's --json summary
// (and the run record's), and says it in one line for people.
type Result interface {
	// Line is the one summary line printed on stderr on success
	// ("ingested 1,204 records into events version 7 (3 quarantined)").
	Line() string
	// Warnings are signs of a success that may not be one (an ingest
	// that took nothing while files wait); they are in Line, in the
	// --json summary and in the run record too.
	Warnings() []string
}

// Env is what a job is given by the process that runs it.
type Env struct {
	// RunID is recorded in every manifest the job commits.
	RunID string
	// Logger receives the job's phases; nil: none.
	Logger *slog.Logger
	// Progress starts a progress report of a phase; nil: none.
	Progress func(name string) Progress
	// Observers are given to every table the job opens (catalog
	// Options.Observers): the Iceberg mirror.
	Observers []catalog.CommitObserver
	// MirrorKeep, when set, gives a vacuum of t (named table, as the user
	// spelled it) what the table's mirror needs: the files its retained
	// snapshots reference (catalog VacuumOptions.Keep, nil when t has no
	// mirror) and a report for the summary's "iceberg". An error refuses
	// the vacuum: it could not tell which files the mirror needs.
	MirrorKeep func(ctx context.Context, t *catalog.Table, table string, dryRun bool) (keep func(context.Context, time.Time) (map[string]bool, error), report map[string]any, err error)
	// OpenFormat, when set, is given the handle a job opened on its
	// table's location and returns the table of another format there (a
	// Delta table), as o says, which then owns t's store; nil, for a
	// sluice table, keeps t. Unset, every table is a sluice table.
	OpenFormat func(ctx context.Context, t *catalog.Table, o FormatOptions) (catalog.Maintainable, error)
	// OpenRead, when set, is given the handle a job opened on a table it
	// only reads (rollup's source, publish's table) and returns a view
	// of the table of another format there (a Delta table's newest
	// version, catalog.View), which then owns t's store; nil, for a
	// sluice table, keeps t. Unset, every table read is a sluice table.
	OpenRead func(ctx context.Context, t *catalog.Table) (catalog.Readable, error)
	// OpenCatalogTable, when set, opens a table named by its catalog
	// (an iceberg+ location) for maintenance, as o says. Unset, such a
	// location is refused.
	OpenCatalogTable func(ctx context.Context, loc string, o FormatOptions) (catalog.Maintainable, error)
}

// IsCatalogTable reports whether loc names a table in an Iceberg catalog
// (iceberg+sqlite:///path#ns.table and the like) rather than a folder.
func IsCatalogTable(loc string) bool { return iceberg.IsTableURL(loc) }

// ErrCatalogTable refuses an iceberg+ location to a job that does not
// work on Iceberg tables in their catalogs yet.
var ErrCatalogTable = errors.New("not built yet for an Iceberg table in its catalog")

// FormatOptions say how a job opens a table of another format.
type FormatOptions struct {
	// Format is the format the user named: "" to tell it from the
	// location, "sluice", "delta" or "iceberg".
	Format string
	// DeltaS3ConditionalWriters is the user's word that every writer of
	// a Delta table on S3 commits with conditional puts.
	DeltaS3ConditionalWriters bool
	// DryRun opens the table to plan only: nothing is committed.
	DryRun bool
	// Deletes says the job deletes what the table does not reference
	// (vacuum): a folder holding a sluice table beside a Delta log is
	// refused, as either's vacuum would delete the other's files.
	Deletes bool
}

// Progress reports how far a phase is.
type Progress interface {
	// Set reports done of total units; safe for concurrent use.
	Set(done, total int64)
	// Done ends the report.
	Done()
}

type noProgress struct{}

func (noProgress) Set(int64, int64) {}
func (noProgress) Done()            {}

func (e Env) logger() *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Logger
}

func (e Env) progress(name string) Progress {
	if e.Progress == nil {
		return noProgress{}
	}
	if p := e.Progress(name); p != nil {
		return p
	}
	return noProgress{}
}

// begin validates j's options and opens the table at loc it works on;
// its error is classified.
func (e Env) begin(ctx context.Context, j Job, loc string) (*catalog.Table, error) {
	if err := j.Validate(); err != nil {
		return nil, classify(err)
	}
	if IsCatalogTable(loc) {
		return nil, classify(fmt.Errorf("%s: %s: %w (compact works on one)", cloud.Redact(loc), j.Kind(), ErrCatalogTable))
	}
	t, err := e.open(ctx, loc)
	if err != nil {
		return nil, classify(err)
	}
	return t, nil
}

// beginMaintained validates j's options and opens the table at loc, of
// whatever format fo says or the location shows; its error is classified.
func (e Env) beginMaintained(ctx context.Context, j Job, loc string, fo FormatOptions) (catalog.Maintainable, error) {
	if IsCatalogTable(loc) {
		return e.beginCatalogTable(ctx, j, loc, fo)
	}
	if fo.Format == "iceberg" {
		return nil, classify(bad("format", "iceberg: an Iceberg table is named by its catalog, not its folder: iceberg+sqlite:///abs/path/catalog.db#ns.table, iceberg+postgres://host/db#ns.table or iceberg+rest://host/path#ns.table"))
	}
	t, err := e.begin(ctx, j, loc)
	if err != nil {
		return nil, err
	}
	if fo.Format == "sluice" && !fo.Deletes {
		return t, nil
	}
	if e.OpenFormat != nil {
		other, err := e.OpenFormat(ctx, t, fo)
		if err != nil {
			t.Close()
			return nil, classify(err)
		}
		if other != nil {
			return other, nil
		}
	}
	if fo.Format != "" && fo.Format != "sluice" {
		t.Close()
		return nil, classify(fmt.Errorf("%s: --format %s: no such table there", loc, fo.Format))
	}
	return t, nil
}

// beginCatalogTable validates j's options and opens the table loc names
// in its Iceberg catalog.
func (e Env) beginCatalogTable(ctx context.Context, j Job, loc string, fo FormatOptions) (catalog.Maintainable, error) {
	if err := j.Validate(); err != nil {
		return nil, classify(err)
	}
	if fo.Format != "" && fo.Format != "iceberg" {
		return nil, classify(bad("format", "%s: %s names an Iceberg table", fo.Format, cloud.Redact(loc)))
	}
	if e.OpenCatalogTable == nil {
		return nil, classify(fmt.Errorf("%s: %s: %w", cloud.Redact(loc), j.Kind(), ErrCatalogTable))
	}
	t, err := e.OpenCatalogTable(ctx, loc, fo)
	if err != nil {
		return nil, classify(err)
	}
	return t, nil
}

// openRead opens the table at loc for reading: a sluice table, or
// through OpenRead the table of another format there.
func (e Env) openRead(ctx context.Context, loc string) (catalog.Readable, error) {
	if IsCatalogTable(loc) {
		return nil, fmt.Errorf("%s: reading it: %w", cloud.Redact(loc), ErrCatalogTable)
	}
	t, err := catalog.Open(ctx, loc, catalog.Options{Logger: e.Logger})
	if err != nil {
		return nil, err
	}
	if e.OpenRead == nil {
		return t, nil
	}
	other, err := e.OpenRead(ctx, t)
	if err != nil {
		t.Close()
		return nil, err
	}
	if other != nil {
		return other, nil
	}
	return t, nil
}

// open opens the table at loc with the env's logger and observers.
func (e Env) open(ctx context.Context, loc string) (*catalog.Table, error) {
	return catalog.Open(ctx, loc, catalog.Options{Logger: e.Logger, Observers: e.Observers})
}

// ErrBadOption marks a job's option that Validate refused.
var ErrBadOption = errors.New("bad option")

// BadOption is one option Validate refused: the flag (its pipeline key
// is the same in snake_case) and why.
type BadOption struct {
	Flag string
	Msg  string
	// Unsafe says the value is well formed but refused as unsafe (a
	// vacuum retention under a day without --force): on the command
	// line a failure, not a usage mistake.
	Unsafe bool
}

func (e *BadOption) Error() string { return "--" + e.Flag + " " + e.Msg }

// Is makes a BadOption match ErrBadOption.
func (e *BadOption) Is(target error) bool { return target == ErrBadOption }

// Key is the option's pipeline key: the flag in snake_case.
func (e *BadOption) Key() string { return strings.ReplaceAll(e.Flag, "-", "_") }

func bad(flag, format string, args ...any) error {
	return &BadOption{Flag: flag, Msg: fmt.Sprintf(format, args...)}
}

// count is an integer option whose zero means its default: given, it
// must be at least 1.
type count struct {
	n   int64
	set bool
}

func (c *count) String() string { return strconv.FormatInt(c.n, 10) }
func (c *count) Type() string   { return "int" }
func (c *count) Set(v string) error {
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		return err
	}
	c.n, c.set = n, true
	return nil
}

// check refuses a count given below 1.
func (c *count) check(flag string) error {
	if c.set && c.n < 1 {
		return bad(flag, "%d: want a whole number >= 1", c.n)
	}
	return nil
}

// size is a byte-size option (256MiB), parsed by Validate: any text is
// accepted when set, so that the refusal is Validate's, with its reason.
type size struct {
	text string
	set  bool
}

func (s *size) String() string { return s.text }
func (s *size) Type() string   { return "size" }
func (s *size) Set(v string) error {
	s.text, s.set = v, true
	return nil
}

// bytes parses the size (0 when empty), refusing zero and anything over
// most.
func (s *size) bytes(flag string, most uint64) (int64, error) {
	if s.text == "" {
		return 0, nil
	}
	n, err := humanize.ParseBytes(s.text)
	if err != nil || n == 0 || n > most {
		return 0, bad(flag, "%q: want a size such as 256MiB", s.text)
	}
	return int64(n), nil
}

// orEmpty returns s, or an empty slice for nil, so that a list in a
// summary prints as [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// withWarnings is a line with the warnings that go with it.
func withWarnings(line string, warnings []string) string {
	if len(warnings) == 0 {
		return line
	}
	return line + "; warning: " + strings.Join(warnings, "; warning: ")
}

// smallFiles is, in a scheduled job's result, how many files of each
// table it wrote are small: /metrics' sluice_table_small_files.
type smallFiles struct {
	SmallFiles map[string]int `json:"small_files,omitempty"`
}

func (s *smallFiles) noteSmallFiles(table string, n int) {
	if s.SmallFiles == nil {
		s.SmallFiles = map[string]int{}
	}
	s.SmallFiles[table] = n
}

// sizeText spells n bytes as the size options take them and help texts
// show them, 256MiB: humanize's "256 MiB" copied after a flag would be
// two arguments.
func sizeText(n int64) string { return strings.ReplaceAll(humanize.IBytes(uint64(n)), " ", "") }
