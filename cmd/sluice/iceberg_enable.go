package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/iceberg"
)

func (a *app) icebergEnableCommand() *cobra.Command {
	var mf mirrorFlags
	cmd := &cobra.Command{
		Use:   "enable TABLE --catalog sqlite:///path/catalog.db [--namespace NS] [--name N]",
		Short: "Mirror a table into an Iceberg catalog after every commit",
		Long: `Sync TABLE's mirror up to the latest version (which records it as TABLE's
mirror, see 'sluice iceberg sync'), then have every command that commits to
TABLE (ingest, compact, import, rollback, rollup) sync it after its commit;
vacuum then syncs it too before it keeps the files the mirror's retained
snapshots reference and expires older snapshots with the same retention. A
sync that fails never fails or undoes the commit: the command reports it as
a warning ("iceberg" in --json) and the next commit, or 'sluice iceberg
sync', catches up. 'sluice history' shows which versions the mirror holds.

The settings are kept in TABLE/_sluice/mirrors/iceberg.json, with the
table's own metadata and outside its versions (a rollback restores a
version's data, and leaves the mirror on), never in the mirror's Iceberg
location TABLE/_iceberg/, where Iceberg's orphan-file cleanup would delete
them; settings an older sluice kept in TABLE/_iceberg/properties.json move
there at the next sync. A catalog URL with a password is refused, since it
is stored in the table: give PostgreSQL's password through PGPASSWORD to
every command. A table has one mirror: enabling into another catalog or
under another name is refused. 'sluice iceberg disable' turns the sync
after every commit off.`,
		Example: `  sluice iceberg enable ./lake/events --catalog sqlite:///var/lib/sluice/catalog.db
  PGPASSWORD=... sluice iceberg enable s3://lake/events --catalog postgres://sluice@db/lake --namespace lake`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if mf.catURL == "" {
				return usageError{cmd: "enable", err: errors.New("iceberg enable: --catalog URL is required")}
			}
			set, err := mf.settings("enable", args[0])
			if err != nil {
				return err
			}
			out := map[string]any{"command": "iceberg enable", "table": args[0], "catalog": cloud.Redact(set.Catalog),
				"identifier": set.Identifier()}
			a.summary(out)
			if err := iceberg.CheckCatalogURL(set.Catalog); err != nil {
				return usageError{cmd: "enable", err: fmt.Errorf("iceberg enable: %w", err)}
			}
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			if _, err := t.LatestVersion(cmd.Context()); err != nil {
				return fmt.Errorf("iceberg enable %s: %w", args[0], err)
			}
			if rec, ok, err := iceberg.ReadSettings(cmd.Context(), t); err != nil {
				return fmt.Errorf("iceberg enable %s: the mirror's settings: %w", args[0], err)
			} else if ok {
				set = mergeSettings(cmd, rec, set) // the recorded mirror's name, unless given
			}
			// The first sync runs before the sync after every commit is
			// on: a catalog that cannot be reached, or a table it cannot
			// mirror, is found now, not at every commit after.
			res, err := a.syncMirror(cmd.Context(), t, args[0], set)
			for k, v := range res {
				out[k] = v
			}
			if err != nil {
				return fmt.Errorf("iceberg enable %s: %w", args[0], err)
			}
			if err := iceberg.SetAfterCommit(cmd.Context(), t, true); err != nil {
				return fmt.Errorf("iceberg enable %s: %w", args[0], err)
			}
			out["enabled"] = true
			a.note("%s is mirrored as %s in %s after every commit", args[0], set.Identifier(), set.Catalog)
			return nil
		},
	}
	mf.register(cmd)
	return cmd
}

func (a *app) icebergDisableCommand() *cobra.Command {
	var forget bool
	cmd := &cobra.Command{
		Use:   "disable TABLE [--forget]",
		Short: "Stop mirroring a table after every commit",
		Long: `Turn off the sync after every commit of TABLE's mirror. The mirror stays
in its catalog, as it was, and stays recorded as TABLE's: 'sluice iceberg
sync TABLE' brings it up, and vacuum goes on expiring its old snapshots and
keeping the files the others reference.

--forget also removes the record (TABLE/_sluice/mirrors/iceberg.json), for
a mirror dropped from its catalog, before mirroring TABLE anew elsewhere.
Vacuum then refuses to run while TABLE/_iceberg/ holds a mirror's
metadata, since it can no longer tell which files its snapshots reference:
drop the mirror and remove TABLE/_iceberg/ first.`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.summary(map[string]any{"command": "iceberg disable", "table": args[0]})
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			if forget {
				err = iceberg.Forget(cmd.Context(), t)
			} else {
				err = iceberg.SetAfterCommit(cmd.Context(), t, false)
			}
			if err != nil {
				return fmt.Errorf("iceberg disable %s: %w", args[0], err)
			}
			a.summary(map[string]any{"command": "iceberg disable", "table": args[0], "disabled": true, "forgotten": forget})
			return nil
		},
	}
	cmd.Flags().BoolVar(&forget, "forget", false, "also remove the record of the mirror (one dropped from its catalog)")
	return cmd
}

// syncMirror opens set's catalog and syncs t (named table on the command
// line) into it, returning what a --json summary says of it: the catalog,
// identifier, snapshot id (as a number and as a string), version mirrored
// and metadata location.
func (a *app) syncMirror(ctx context.Context, t *catalog.Table, table string, set iceberg.Settings) (map[string]any, error) {
	out := map[string]any{"catalog": cloud.Redact(set.Catalog), "identifier": set.Identifier()}
	cat, err := iceberg.OpenCatalog(ctx, set.Catalog)
	if err != nil {
		return out, err
	}
	defer cat.Close()
	res, err := iceberg.Sync(ctx, t, cat, iceberg.Options{Namespace: set.Namespace, Name: set.Name,
		Progress: func(s iceberg.Snapshot) {
			a.logger.Info("mirrored", "version", s.Version, "snapshot_id", s.SnapshotID, "operation", s.Operation)
		}})
	setSnapshotID(out, res.SnapshotID)
	out["version"] = res.Version
	out["metadata_location"] = res.MetadataLocation
	out["mirrored"] = res.Mirrored
	return out, mirrorAdvice(t, table, err)
}
