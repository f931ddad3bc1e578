// Package scheduler runs a lake's jobs from a pipeline file: it parses and
// validates the file (tables, jobs, triggers, dependencies), turns each
// job's cron schedule into data intervals (previous tick to this tick, with
// sluice's own daylight-saving rules on top of robfig/cron's parser), and
// runs intervals exactly once per lake by claiming them with a create-only
// write under <lake>/_sluice/runs/ and holding a lease renewed by
// heartbeat. The run records there are the history. serve claims a
// tick's interval a moment before the tick so that the
// job's work starts on it, takes over an interval whose instance died
// once its lease ends (queued if the job is busy), and every lease TTL
// sweeps the last day's run records for what no instance will run unless
// it does: a run left running with its lease expired, however long ago
// it started, and an interval of a job with after: whose upstreams
// succeeded but which no instance ran. The sweep lists the records and
// reads only those it does not already know final.
//
// A lease ends, for an instance other than its holder, when that instance
// has seen the run record unchanged for a full lease (the longer of its
// own TTL and the holder's), timed on its own clock from when it first saw
// that generation of the record. The holder renews the record every third
// of its lease, so an unchanged record means a dead holder. The
// lease_until a record carries is the holder's clock, for people: machines
// never compare it with theirs, so a clock running ahead cannot steal a
// live run, nor one running behind delay a takeover by its skew.
//
// Each job also has a run index, <lake>/_sluice/runindex/<job>/index.json
// (History.Recent, RecentAll): the records of its newest 30 intervals and
// of every run started within a day of its newest start, at most 500,
// newest interval first, so that a page of recent runs costs one read a
// job, not one a record. Every record write merges the record into it by
// compare-and-swap; the record is the truth and the index a cache, so a
// failed index write never fails the record's, a missing or unreadable
// index is rebuilt from the records when read, and serve rebuilds every
// job's at its start (a crash between the two writes leaves it stale).
// In serve the index writes are batched (History.Flush, Close): a job's
// updates wait up to a second and go in one compare-and-swap, and what is
// still waiting is written at shutdown; a crash may lose the last
// second's updates, which the rebuild at serve's next start puts back.
// run and backfill write through.
// Each index has a folder of its own: on local disk a compare-and-swap
// locks its folder, and 200 jobs' indexes in one folder would take turns.
//
// It imports only cloud and internal/lease (the lease judge it shares
// with compaction's workers). It never imports ingest, compact, rollup or
// warehouse: a job runs through the Kind interface, which the command
// wires to those packages, so a new kind plugs in without touching the
// scheduler. All waiting goes through a Clock, so tests drive time.
//
// The pipeline file's keys, beyond docs/contract.md's example:
//
//	lake: LOCATION        # where _sluice/runs/ lives (default: the tables' common parent)
//	tables:
//	  NAME: {location, schema, partition_by, target_file_size, format}   # format: sluice|delta|iceberg
//	jobs:
//	  NAME:
//	    schedule: SPEC    # robfig/cron: 5 fields, or 6 with seconds first; @daily, @every 5m; CRON_TZ=Zone prefix
//	    after: [JOB]      # same intervals as JOB (the schedule is inherited when not given)
//	    retries: {max: N, backoff: 30s, max_backoff: 10m}
//	    timeout: 30m
//	    overlap: skip | queue
//	    catchup: N        # missed intervals run after downtime (default 1)
//	    parallel: N       # intervals a backfill may run at once (default 1)
//	    KIND: {OPTIONS}   # exactly one kind; options are its command's flags in snake_case
//
// Values may hold ${NAME}, expanded from the environment and never
// printed. Relative local locations are relative to the file's folder.
// Job names become key segments of the run records.
package scheduler
