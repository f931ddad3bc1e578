package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/console"
	"github.com/sluice-data/sluice/inspect"
	"github.com/sluice-data/sluice/scheduler"
)

func (a *app) serveCommand() *cobra.Command {
	var f runnerFlags
	var grace time.Duration
	var logFormat, listen, token string
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
			if token == "" {
				token = os.Getenv("SLUICE_TOKEN")
			}
			if err := checkListen(listen, token); err != nil {
				return usageError{cmd: "serve", err: err}
			}
			a.logger = logger
			r, closeLake, err := a.runner(cmd, &f)
			if err != nil {
				return err
			}
			defer closeLake()
			tune(r, 1)
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			r.OnFinish = scheduler.NewMetrics(reg).Observe
			s := &scheduler.Server{Runner: r, Grace: grace}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("serve: listen on %s: %w", listen, err)
			}
			pages := console.New(s, token, pipelineTables(r.Pipeline), describeTable)
			pages.Logger = logger
			hs := (&scheduler.Admin{Server: s, Token: token, Registry: reg, Pages: pages.Handler()}).HTTPServer()
			httpDone := make(chan error, 1)
			go func() { httpDone <- hs.Serve(ln) }()
			logger.Info("serving", "config", f.config, "lake", r.Pipeline.Lake, "jobs", len(r.Pipeline.Jobs),
				"instance", r.Instance, "listen", ln.Addr().String())
			serveErr := s.Serve(cmd.Context())
			sctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 5*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
			if err := <-httpDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("admin HTTP", "error", err)
			}
			if serveErr != nil {
				return fmt.Errorf("serve: %w", serveErr)
			}
			logger.Info("stopped")
			return nil
		},
	}
	f.add(cmd, true)
	cmd.Flags().DurationVar(&grace, "grace", scheduler.DefaultGrace, "at shutdown, how long running runs may finish before they are cancelled")
	cmd.Flags().StringVar(&logFormat, "log-format", "auto", "auto (text on a terminal, JSON otherwise), text or json")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address of the admin HTTP API (/healthz, /metrics, /api/...) and the web console (/); off loopback it needs --token")
	cmd.Flags().StringVar(&token, "token", "", "bearer token every mutating API call must carry (default: SLUICE_TOKEN); required off loopback")
	return cmd
}

// pipelineTables are the pipeline's tables by name, at their resolved
// locations: the console's tables pages.
func pipelineTables(p *scheduler.Pipeline) map[string]string {
	out := make(map[string]string, len(p.Tables))
	for name, t := range p.Tables {
		out[name] = t.Location
	}
	return out
}

// describeTable is describe's report of the table at loc, for the
// console.
func describeTable(ctx context.Context, loc string) (*inspect.Detail, error) {
	t, err := inspect.Open(ctx, loc, inspect.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return inspect.Describe(ctx, t, inspect.Options{})
}

// checkListen refuses an address off loopback without a token: the API
// can start and cancel runs.
func checkListen(listen, token string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT", listen)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && token == "" {
		return fmt.Errorf("--listen %s is not a loopback address: give --token or SLUICE_TOKEN, which every mutating call must carry", listen)
	}
	return nil
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
