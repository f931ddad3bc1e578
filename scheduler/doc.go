// Package scheduler runs a lake's jobs from a pipeline file: it parses and
// validates the file (tables, jobs, triggers, dependencies), turns each
// job's cron schedule into data intervals (previous tick to this tick, with
// sluice's own daylight-saving rules on top of robfig/cron's parser), and
// runs intervals exactly once per lake by claiming them with a create-only
// write under <lake>/_sluice/runs/ and holding a lease renewed by
// heartbeat. The run records there are the history.
//
// It imports only cloud. It never imports ingest, compact, rollup or
// warehouse: a job runs through the Kind interface, which the command
// wires to those packages, so a new kind plugs in without touching the
// scheduler. All waiting goes through a Clock, so tests drive time.
package scheduler
