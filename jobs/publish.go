package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/inspect"

	"github.com/sluice-data/sluice/warehouse"
)

// Publish loads a table's latest version into a warehouse with the
// _new/_old swap.
type Publish struct {
	Table          string
	To             string
	As             string
	IAMRole        string
	KeepOld        bool
	Force          bool
	DropDependents bool
	LockTimeout    time.Duration
	Connections    int
}

// Kind is "publish".
func (*Publish) Kind() string { return "publish" }

// Bind registers publish's flags.
func (o *Publish) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&o.To, "to", "", "warehouse URL: postgres://user@host[:port]/db, sqlite:///path/warehouse.db or redshift://user@host:5439/db")
	fs.StringVar(&o.As, "as", "", "target table: NAME or SCHEMA.NAME")
	fs.StringVar(&o.IAMRole, "iam-role", "", "redshift://: the ARN of the IAM role Redshift's COPY assumes to read the table's files")
	fs.BoolVar(&o.KeepOld, "keep-old", false, "keep the replaced table as NAME_old")
	fs.BoolVar(&o.Force, "force", false, "reload even when the version is already published")
	fs.BoolVar(&o.DropDependents, "drop-dependents", false, "leave behind, dropped with the old table, what cannot follow NAME to the new table (triggers, rules, foreign keys of other tables...) instead of refusing")
	fs.DurationVar(&o.LockTimeout, "lock-timeout", warehouse.DefaultLockTimeout, "longest wait for the swap's lock per attempt; attempts retry with backoff")
	fs.IntVar(&o.Connections, "connections", warehouse.DefaultConnections, "postgres://: connections that load the new table at once, each copying a share of the files (1: one transaction, COPY FREEZE)")
}

// Validate checks every option without connecting.
func (o *Publish) Validate() error {
	var errs []error
	if o.To == "" {
		errs = append(errs, bad("to", "URL is required"))
	} else if err := warehouse.CheckURL(o.To); err != nil {
		errs = append(errs, bad("to", "%v", err))
	}
	if o.As == "" {
		errs = append(errs, bad("as", "NAME is required"))
	} else if err := warehouse.CheckName(o.As); err != nil {
		errs = append(errs, bad("as", "%v", err))
	}
	if o.LockTimeout <= 0 {
		errs = append(errs, bad("lock-timeout", "%s: want a duration above 0", o.LockTimeout))
	}
	if o.Connections < 1 || o.Connections > warehouse.MaxConnections {
		errs = append(errs, bad("connections", "%d: want 1 to %d", o.Connections, warehouse.MaxConnections))
	}
	return errors.Join(errs...)
}

// PublishResult is what a publish did; it is the --json summary.
type PublishResult struct {
	Command         string  `json:"command"`
	Table           string  `json:"table"`
	Target          string  `json:"target"`
	Version         int64   `json:"version"`
	Unchanged       bool    `json:"unchanged"`
	Rows            int64   `json:"rows"`
	Bytes           int64   `json:"bytes"`
	LockWaitSeconds float64 `json:"lock_wait_seconds"`
	SwapAttempts    int     `json:"swap_attempts"`
	seconds         float64
}

// Line says what was published.
func (r PublishResult) Line() string {
	if r.Unchanged {
		return fmt.Sprintf("%s already holds version %d of %s: nothing to do (--force reloads)", r.Target, r.Version, r.Table)
	}
	return fmt.Sprintf("published %s version %d as %s: %s rows; %.1f s (the swap waited %.3f s)",
		r.Table, r.Version, r.Target, humanize.Comma(r.Rows), r.seconds, r.LockWaitSeconds)
}

// Warnings: none.
func (PublishResult) Warnings() []string { return nil }

// Run publishes.
func (o *Publish) Run(ctx context.Context, env Env) (Result, error) {
	res := PublishResult{Command: "publish", Table: cloud.Redact(o.Table)}
	if err := o.Validate(); err != nil {
		return &res, classify(err)
	}
	t, err := env.openRead(ctx, o.Table)
	if err != nil {
		return &res, classify(fmt.Errorf("publish %s as %s: %w", o.Table, o.As, err))
	}
	defer t.Close()
	bar := env.progress("publishing")
	r, err := warehouse.Publish(ctx, t, warehouse.Options{
		To: o.To, As: o.As, IAMRole: o.IAMRole, KeepOld: o.KeepOld, Force: o.Force, DropDependents: o.DropDependents,
		LockTimeout: o.LockTimeout, Connections: o.Connections, RunID: env.RunID, Logger: env.logger(), Progress: bar.Set,
	})
	bar.Done()
	res.Target, res.Version, res.Unchanged, res.Rows, res.Bytes = r.Target, r.Version, r.Unchanged, r.Rows, r.Bytes
	res.LockWaitSeconds, res.SwapAttempts, res.seconds = r.LockWait.Seconds(), r.Attempts, r.Seconds
	if err != nil {
		return &res, classify(fmt.Errorf("publish %s as %s: %w", o.Table, o.As, err))
	}
	if !r.Unchanged {
		// The note describe reads: best effort, as the publish is done.
		note := inspect.Publish{Target: r.Target, Warehouse: o.To, Version: r.Version, Rows: r.Rows, At: time.Now().UTC(), Run: env.RunID}
		if err := inspect.RecordPublish(ctx, t.Store(), note); err != nil {
			env.logger().Warn("the publish is done, but its note for describe was not written", "table", cloud.Redact(o.Table), "err", err)
		}
	}
	return &res, nil
}
