package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/scheduler"
)

// loadPipeline reads and validates the --config file. Every problem but
// the first goes to stderr, one a line; the error is the first, so the
// command's one failure line names it.
func (a *app) loadPipeline(cmd *cobra.Command, config string) (*scheduler.Pipeline, error) {
	if config == "" {
		return nil, usageError{cmd: cmd.Name(), err: fmt.Errorf("%s: --config is required", cmd.Name())}
	}
	p, err := scheduler.LoadFile(config, a.jobKinds(a.logger))
	var list scheduler.ErrorList
	if errors.As(err, &list) {
		for _, e := range list[1:] {
			fmt.Fprintf(a.stderr, "sluice: %s\n", e)
		}
		if len(list) > 1 {
			return nil, fmt.Errorf("%w (and %d more above)", list[0], len(list)-1)
		}
		return nil, list[0]
	}
	return p, err
}

func (a *app) validateCommand() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "validate --config pipeline.yaml",
		Short: "Check a pipeline file and run nothing",
		Long: `Check a pipeline file: its YAML, every key, the cron specs, table names,
after-dependencies (no cycles), durations and each job kind's options (the
command's flags in snake_case). Each problem prints as FILE:LINE:COLUMN: KEY:
REASON. Values taken from the environment (${NAME}) are never printed.`,
		Example: `  sluice validate --config pipeline.yaml`,
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.loadPipeline(cmd, config)
			if err != nil {
				return err
			}
			jobs := []map[string]any{}
			for _, name := range p.Order {
				j := p.Jobs[name]
				jobs = append(jobs, map[string]any{"job": name, "kind": j.Kind, "schedule": j.Spec, "after": orEmpty(j.After)})
			}
			if !a.jsonOut {
				fmt.Fprintf(a.stdout, "%s: ok: %d tables, %d jobs\n", config, len(p.Tables), len(p.Jobs))
			}
			return a.summary(map[string]any{"command": "validate", "config": config, "lake": p.Lake,
				"tables": len(p.Tables), "jobs": jobs})
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the pipeline file (required)")
	return cmd
}
