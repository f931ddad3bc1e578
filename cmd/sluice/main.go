// Command sluice keeps a data lake tidy: it ingests event batches into
// partitioned Parquet tables, compacts small files, maintains rolling daily
// aggregates and publishes tables to a SQL warehouse, committing every
// change atomically by a manifest swap. See README.md and CONTRACT.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluice-data/sluice/cloud"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code: 0 success, 1
// failure, 2 usage error. Every command's outcome goes through here: the
// --json object (its summary, with "error" on a failure) on stdout, and
// on a failure one line on stderr.
func run(ctx context.Context, args []string) int {
	app := newApp()
	root := app.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	err = redactErr(err)
	if cmd == nil {
		cmd = root
	}
	if app.stopProfile != nil {
		app.stopProfile()
	}
	var ue usageError
	usage := errors.As(err, &ue)
	code := 0
	switch {
	case usage:
		code = 2
	case err != nil:
		code = 1
	}
	var msg string
	if err != nil {
		msg = cloud.OneLine(err.Error(), 0)
	}
	// A usage error may stop flag parsing before --json is read, and a
	// command that parses its own flags never reads it: the command line
	// says then.
	if app.jsonOut || ((usage || cmd.DisableFlagParsing) && jsonRequested(args)) {
		if perr := app.printSummary(cmd, msg, usage); perr != nil && err == nil {
			err, msg, code = perr, cloud.OneLine(perr.Error(), 0), 1
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice: %s\n", msg)
	}
	if usage {
		fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// jsonRequested tells whether args hold --json (before a "--"), for when
// the flags were not, or not all, parsed.
func jsonRequested(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if v, ok := strings.CutPrefix(a, "--json"); ok {
			if v == "" {
				return true
			}
			if v, ok := strings.CutPrefix(v, "="); ok {
				b, err := strconv.ParseBool(v)
				return err == nil && b
			}
		}
	}
	return false
}

// usageError marks a mistake in the command line (exit 2).
type usageError struct {
	cmd string
	err error
}

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }
