// Package jobs owns sluice's job kinds as typed calls: for each kind
// (init, ingest, compact, rollup, publish, vacuum, iceberg sync) its
// options, bound once as flags (Job.Bind) so that the command line and a
// pipeline file's keys (the flags in snake_case) are one spec; their full
// validation (Job.Validate), which sluice validate runs on every job of a
// file; the run (Job.Run) against the packages that do the work; and a
// typed result that prints as the command's --json summary, its one
// summary line and its warnings, and is kept in the scheduler's run
// record. Kinds wires them into the scheduler: a scheduled job and the
// command with the same options do the same thing, with no command line
// rebuilt and no JSON read back.
//
// It also owns what spans the jobs of one process: every table a job
// opens carries the process's commit observers (the Iceberg mirror), the
// errors a job returns are classified for the scheduler (transient or
// permanent), and the memory limit and GC headroom are set once per
// process from the budgets of the jobs it may run at once (Tune), never
// by a job while another runs beside it.
//
// jobs imports the job packages (ingest, compact, rollup, warehouse,
// iceberg), catalog, cloud and scheduler; only cmd/sluice imports it.
package jobs
