package main

import "github.com/spf13/cobra"

// schedulerCommands are the scheduler's commands: validate, run,
// backfill, runs, jobs and serve.
func (a *app) schedulerCommands() []*cobra.Command {
	return []*cobra.Command{a.validateCommand(), a.runCommand(), a.backfillCommand(), a.runsCommand(), a.jobsCommand(), a.serveCommand()}
}
