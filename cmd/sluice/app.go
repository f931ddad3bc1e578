package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
	"unicode"

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
	// logHandler is logger's handler without the run: the scheduler's
	// commands log many runs, each line with its own.
	logHandler slog.Handler
	// result is the command's --json summary, printed by run once the
	// command returns: with "error" added when it failed. It is a job's
	// typed result, or a map.
	result any
	// extra are keys the commit observers add to the summary ("iceberg"),
	// warns the warnings they add to it and to the summary line.
	extra   map[string]any
	warns   []string
	mirror  *mirrorObserver
	quiet   bool
	version bool
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
2 usage error (an unknown command or flag included). --json prints a
one-object summary on stdout; on a failure {"error": "...", ...} with what
was done before it.`,
		SilenceErrors:              true,
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
		// Args and RunE make an unknown command a usage error (cobra's
		// own "unknown command" is a plain error) and serve --version.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 0:
				err := fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					err = fmt.Errorf("%w; did you mean %s?", err, strings.Join(s, " or "))
				}
				return usageError{cmd: cmd.Name(), err: err}
			case a.version:
				return a.printVersion()
			}
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setup(cmd)
		},
	}
	root.Flags().BoolVar(&a.version, "version", false, "print the version and commit sluice was built from")
	root.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "print a one-object JSON summary on stdout; on a failure {\"error\": ..., ...} with what was done before it")
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log each phase to stderr (JSON lines when stderr is not a terminal)")
	root.PersistentFlags().BoolVarP(&a.quiet, "quiet", "q", false, "print no summary line on stderr on success (warnings are still logged)")
	root.PersistentFlags().StringVar(&a.runID, "run-id", "", "identifier recorded in the manifest as the run that wrote it, without control characters (default: a new UUID)")
	root.PersistentFlags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file (for performance reports)")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{cmd: cmd.Name(), err: err}
	})
	root.AddCommand(a.initCommand(), a.importCommand(), a.filesCommand(), a.historyCommand(),
		a.rollbackCommand(), a.vacuumCommand(), a.compactCommand(), a.ingestCommand(), a.publishCommand(), a.rollupCommand(), a.icebergCommand(), a.versionCommand(), a.showCommand(), a.describeCommand())
	root.AddCommand(a.schedulerCommands()...)
	for _, nb := range notBuilt {
		root.AddCommand(nb.command())
	}
	root.SetHelpCommand(helpCommand())
	return root
}

// helpCommand is cobra's help command, except that an unknown topic is a
// usage error, as an unknown command is.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usageError{cmd: cmd.Name(), err: fmt.Errorf("help: unknown help topic %q", strings.Join(args, " "))}
			}
			return topic.Help()
		},
	}
}

func (a *app) setup(cmd *cobra.Command) error {
	if strings.IndexFunc(a.runID, unicode.IsControl) >= 0 {
		// A run ID prints in history's lines: a newline in it would
		// fake a row.
		bad := a.runID
		a.runID = ""
		return usageError{cmd: cmd.Name(), err: fmt.Errorf("--run-id %s: control characters are not allowed", strconv.Quote(bad))}
	}
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
	a.logHandler = h
	a.logger = slog.New(h).With("run", a.runID)
	return nil
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

// countsAtLeastOne refuses, as a usage error, a count flag of cmd given
// below 1: the flags' zero means their default, and a negative count
// means nothing.
func countsAtLeastOne(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if n, err := strconv.ParseInt(f.Value.String(), 10, 64); err != nil || n < 1 {
			return usageError{cmd: cmd.Name(), err: fmt.Errorf("%s: --%s %s: want a whole number >= 1", cmd.Name(), name, f.Value)}
		}
	}
	return nil
}

// summary sets the command's --json summary: what it did. run prints it
// when the command returns, with "error" added if it then fails; so a
// command sets it as soon as it knows what it did, even on a failure.
// It returns nil.
func (a *app) summary(v any) error {
	a.result = v
	return nil
}

// summaryMap is the summary as a map, with what the observers added: a
// job's typed result through its JSON encoding, which is what --json
// prints.
func (a *app) summaryMap() map[string]any {
	var v map[string]any
	switch r := a.result.(type) {
	case nil:
	case map[string]any:
		v = r
	default:
		b, err := json.Marshal(r)
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil {
			v = map[string]any{"summary_error": err.Error()}
		}
	}
	if len(a.extra) == 0 && len(a.warns) == 0 {
		return v
	}
	if v == nil {
		v = map[string]any{}
	}
	maps.Copy(v, a.extra)
	if len(a.warns) > 0 {
		ws, _ := v["warnings"].([]any)
		for _, w := range a.warns {
			ws = append(ws, w)
		}
		v["warnings"] = ws
	}
	return v
}

// printSummary prints the --json object of cmd's run: its summary, with
// "error" set to msg when msg is not empty and "usage" when the command
// line was wrong, plus seconds and the run ID. A command that set no
// summary and succeeded (help) prints nothing.
func (a *app) printSummary(cmd *cobra.Command, msg string, usage bool) error {
	v := a.summaryMap()
	if v == nil {
		if msg == "" {
			return nil
		}
		v = map[string]any{}
	}
	if _, ok := v["command"]; !ok && cmd.HasParent() {
		v["command"] = strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	}
	if msg != "" {
		v["error"] = msg
	}
	if usage {
		v["usage"] = true
	}
	redactSummary(v)
	v["seconds"] = time.Since(a.started).Seconds()
	if _, ok := v["run"]; !ok && a.runID != "" {
		v["run"] = a.runID
	}
	return json.NewEncoder(a.stdout).Encode(v)
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
