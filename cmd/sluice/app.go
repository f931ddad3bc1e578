package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// app holds what every command shares: output streams and global flags.
type app struct {
	stdout, stderr io.Writer
	jsonOut        bool
	verbose        bool
	runID          string
	cpuProfile     string
	stopProfile    func()
	started        time.Time
	logger         *slog.Logger
}

func newApp() *app {
	return &app{stdout: os.Stdout, stderr: redactingWriter{os.Stderr}, started: time.Now()}
}

// stderrIsTTY tells whether a person is watching: progress bars and
// human-friendly notes go to stderr only then.
func stderrIsTTY() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "sluice",
		Short: "Keep a data lake tidy: ingest, compact, roll up and publish Parquet tables, atomically",
		Long: `sluice keeps a data lake tidy on a schedule. Tables are folders of Parquet
files (local disk, s3://bucket/prefix, az://account/container/prefix) whose
live files are named by numbered manifest versions under _sluice/. Every
change commits atomically by creating the next version; older versions stay
for history, rollback and time travel.

Exit codes: 0 success, 1 failure (one line on stderr naming what and where),
2 usage error. --json prints a one-object summary on stdout.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			a.setup()
		},
	}
	root.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "print a one-object JSON summary on stdout")
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log each phase to stderr (JSON lines when stderr is not a terminal)")
	root.PersistentFlags().StringVar(&a.runID, "run-id", "", "identifier recorded in the manifest as the run that wrote it (default: a new UUID)")
	root.PersistentFlags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file (for performance reports)")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{cmd: cmd.Name(), err: err}
	})
	root.AddCommand(a.initCommand(), a.importCommand(), a.filesCommand(), a.historyCommand(),
		a.rollbackCommand(), a.vacuumCommand(), a.compactCommand(), a.ingestCommand())
	for _, nb := range notBuilt {
		root.AddCommand(nb.command())
	}
	return root
}

func (a *app) setup() {
	if a.cpuProfile != "" {
		if f, err := os.Create(a.cpuProfile); err == nil && pprof.StartCPUProfile(f) == nil {
			a.stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		}
	}
	if a.runID == "" {
		a.runID = uuid.NewString()
	}
	level := slog.LevelWarn
	if a.verbose {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr}
	var h slog.Handler = slog.NewJSONHandler(a.stderr, opts)
	if stderrIsTTY() {
		h = slog.NewTextHandler(a.stderr, opts)
	}
	a.logger = slog.New(h).With("run", a.runID)
}

// exactArgs is cobra.ExactArgs returning a usage error.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{cmd: cmd.Name(), err: fmt.Errorf("%s: want %s, got %d argument(s)", cmd.Name(), names, len(args))}
		}
		return nil
	}
}

// summary prints the --json summary object, adding seconds.
func (a *app) summary(v map[string]any) error {
	if !a.jsonOut {
		return nil
	}
	redactSummary(v)
	v["seconds"] = time.Since(a.started).Seconds()
	if _, ok := v["run"]; !ok {
		v["run"] = a.runID
	}
	enc := json.NewEncoder(a.stdout)
	return enc.Encode(v)
}

// orEmpty returns s, or an empty slice for nil, so that a list in a --json
// summary prints as [] rather than null when it has nothing.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// note prints a human-friendly line on stderr, only for a person at a
// terminal and only without --json.
func (a *app) note(format string, args ...any) {
	if a.jsonOut || !stderrIsTTY() {
		return
	}
	fmt.Fprintf(a.stderr, strings.TrimSuffix(format, "\n")+"\n", args...)
}
