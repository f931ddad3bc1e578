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
		Long: `Set TABLE's iceberg.catalog property (with iceberg.namespace and
iceberg.name), then sync the mirror up to the latest version. From then on
every command that commits to TABLE (ingest, compact, import, rollback,
rollup) syncs the mirror after its commit, and vacuum keeps the files the
mirror's retained snapshots reference and expires older snapshots with the
same retention. A sync that fails never fails or undoes the commit: the
command reports it as a warning ("iceberg" in --json) and the next commit,
or 'sluice iceberg sync', catches up. 'sluice history' shows which versions
the mirror holds.

The properties are kept in TABLE/_iceberg/properties.json, not in a
version: a rollback restores a version's data, and leaves the mirror on.
A catalog URL with a password is refused, since the property is stored in
the table: give PostgreSQL's password through PGPASSWORD to every command.
Enabling again replaces the properties; 'sluice iceberg disable' removes
them.`,
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
			// The first sync runs before the property is set: a catalog
			// that cannot be reached, or a table it cannot mirror, is
			// found now, not at every commit after.
			res, err := a.syncMirror(cmd.Context(), t, set)
			for k, v := range res {
				out[k] = v
			}
			if err != nil {
				return fmt.Errorf("iceberg enable %s: %w", args[0], err)
			}
			if err := iceberg.WriteSettings(cmd.Context(), t, set); err != nil {
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
	return &cobra.Command{
		Use:   "disable TABLE",
		Short: "Stop mirroring a table after every commit",
		Long: `Remove TABLE's iceberg.catalog property: commits no longer sync the mirror.
The mirror itself stays in its catalog, as it was; vacuum then refuses to
run while TABLE/_iceberg/ holds it, since it can no longer tell which files
the mirror's snapshots reference (enable again, or drop the mirror and
remove TABLE/_iceberg/).`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.summary(map[string]any{"command": "iceberg disable", "table": args[0]})
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			if err := iceberg.RemoveSettings(cmd.Context(), t); err != nil {
				return fmt.Errorf("iceberg disable %s: %w", args[0], err)
			}
			a.summary(map[string]any{"command": "iceberg disable", "table": args[0], "disabled": true})
			return nil
		},
	}
}

// syncMirror opens set's catalog and syncs t into it, returning what a
// --json summary says of it: the catalog, identifier, snapshot id (as a
// number and as a string), version mirrored and metadata location.
func (a *app) syncMirror(ctx context.Context, t *catalog.Table, set iceberg.Settings) (map[string]any, error) {
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
	return out, err
}
