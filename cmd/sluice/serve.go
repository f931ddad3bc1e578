package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/scheduler"
)

func (a *app) serveCommand() *cobra.Command {
	var f runnerFlags
	var grace time.Duration
	var logFormat string
	cmd := &cobra.Command{
		Use:   "serve --config pipeline.yaml [--listen 127.0.0.1:8080]",
		Short: "Run the scheduler: every job on its schedule, until SIGTERM",
		Long: `Run every job of the pipeline file on its schedule. Each tick runs the
interval from the previous tick to it; jobs with after: run once their
upstream's run of the same interval succeeded. At start, missed intervals
since the last recorded one are caught up (the latest catchup: N of them,
oldest first; older ones are recorded skipped).

Several serve instances may point at one lake: each interval runs once,
claimed in <lake>/_sluice/runs/ with a create-only write and a lease
renewed by heartbeat; an instance that dies leaves its interval to another
after --lease-ttl.

SIGTERM (or Ctrl-C) stops new runs, waits up to --grace for running ones,
then cancels them: they commit nothing half-done, are recorded cancelled,
and their intervals run again on the next start.

Logs: one line per event with job, run id and interval; text on a
terminal, JSON otherwise (--log-format).`,
		Example: `  sluice serve --config pipeline.yaml
  SLUICE_TOKEN=... sluice serve --config pipeline.yaml --listen 0.0.0.0:8080`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := serveLogger(a, logFormat)
			if err != nil {
				return usageError{cmd: "serve", err: err}
			}
			a.logger = logger
			r, closeLake, err := a.runner(cmd, &f)
			if err != nil {
				return err
			}
			defer closeLake()
			s := &scheduler.Server{Runner: r, Grace: grace}
			logger.Info("serving", "config", f.config, "lake", r.Pipeline.Lake, "jobs", len(r.Pipeline.Jobs), "instance", r.Instance)
			if err := s.Serve(cmd.Context()); err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			logger.Info("stopped")
			return nil
		},
	}
	f.add(cmd, true)
	cmd.Flags().DurationVar(&grace, "grace", scheduler.DefaultGrace, "at shutdown, how long running runs may finish before they are cancelled")
	cmd.Flags().StringVar(&logFormat, "log-format", "auto", "auto (text on a terminal, JSON otherwise), text or json")
	return cmd
}

// serveLogger logs at info level: a daemon's log is its record of what
// ran.
func serveLogger(a *app, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: redactAttr}
	if a.verbose {
		opts.Level = slog.LevelDebug
	}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(a.stderr, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(a.stderr, opts)), nil
	case "auto", "":
		if stderrIsTTY() {
			return slog.New(slog.NewTextHandler(a.stderr, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(a.stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want auto, text or json", format)
}
