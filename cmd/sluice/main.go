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
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code: 0 success, 1
// failure, 2 usage error.
func run(ctx context.Context, args []string) int {
	app := newApp()
	root := app.rootCommand()
	root.SetArgs(args)
	err := redactErr(root.ExecuteContext(ctx))
	if app.stopProfile != nil {
		app.stopProfile()
	}
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "sluice: %s\n", oneLine(err.Error()))
		fmt.Fprintf(os.Stderr, "Run 'sluice %s --help' for usage.\n", ue.cmd)
		return 2
	}
	fmt.Fprintf(os.Stderr, "sluice: %s\n", oneLine(err.Error()))
	return 1
}

// usageError marks a mistake in the command line (exit 2).
type usageError struct {
	cmd string
	err error
}

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// oneLine folds an error onto one line: users grep logs line by line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
