package main

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/iceberg"
)

func (a *app) icebergCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "iceberg",
		Short: "Mirror a table's versions as Apache Iceberg snapshots",
		Long: `Mirror a table as an Apache Iceberg table, so that any Iceberg reader
(Spark, Trino, DuckDB, ...) sees exactly the live files of a committed version,
and older versions by snapshot. sluice's own versions stay the source of truth;
the mirror is registered in an Iceberg SQL catalog (SQLite or PostgreSQL) and
its metadata is written under the table's _iceberg/ folder. Data files are
registered where they are, never copied.`,
		Args: exactArgs(0, "a subcommand"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.icebergSyncCommand(), a.icebergEnableCommand(), a.icebergDisableCommand())
	return cmd
}

// mirrorFlags are the flags naming a mirror: --catalog, --namespace,
// --name.
type mirrorFlags struct {
	catURL, namespace, name string
}

func (f *mirrorFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.catURL, "catalog", "", "Iceberg SQL catalog: sqlite:///path/catalog.db or postgres://user@host/db")
	fl.StringVar(&f.namespace, "namespace", "sluice", "Iceberg namespace of the mirror (created if missing)")
	fl.StringVar(&f.name, "name", "", "Iceberg table name (default: the table folder's name)")
}

// settings returns the mirror the flags name for table, checked: a
// usage error for a name that is not plain.
func (f *mirrorFlags) settings(cmdName, table string) (iceberg.Settings, error) {
	s := iceberg.Settings{Catalog: f.catURL, Namespace: f.namespace, Name: f.name}
	if s.Name == "" {
		s.Name = path.Base(strings.TrimRight(table, "/"))
	}
	for flag, v := range map[string]string{"--namespace": s.Namespace, "--name": s.Name} {
		if v == "" || v == "." || v == "/" || strings.ContainsAny(v, "./\x00") {
			return s, usageError{cmd: cmdName, err: fmt.Errorf("iceberg %s: %s %q: want a plain name (no '.' or '/')", cmdName, flag, v)}
		}
	}
	return s, nil
}

func (a *app) icebergSyncCommand() *cobra.Command {
	var mf mirrorFlags
	cmd := &cobra.Command{
		Use:   "sync TABLE [--catalog sqlite:///path/catalog.db] [--namespace NS] [--name N]",
		Short: "Bring the Iceberg mirror of a table up to its latest version",
		Long: `Bring the Iceberg mirror of TABLE, in the SQL catalog --catalog, up to the
table's latest version: every version not yet mirrored becomes one Iceberg
snapshot, in order. Appends are Iceberg appends, compactions replaces, and a
rollback or other removal an overwrite to exactly that version's files. Each
snapshot's summary carries sluice.version=N: sync is idempotent, and resumes
where a killed or failed sync stopped. The mirror is created on first sync
(and its namespace, if missing) with the table's schema and day(col)
partitioning. A nullable column added to the table is added to the mirror's
schema; a column whose type changes, or new partitioning, is not mirrored
(the sync fails, saying so, and the mirror stays at the version before).

--catalog is sqlite:///path/catalog.db (one file, created if missing) or
postgres://user@host/db (the password from the URL or PGPASSWORD, never
printed). The catalog's rows carry the catalog name "sluice": configure a
JDBC catalog reading them under that name.

A table has one mirror, recorded in TABLE/_sluice/mirrors/iceberg.json by
its first sync (catalog URL without its password, identifier, location,
Iceberg table uuid): later, --catalog, --namespace and --name default to
the recorded ones, and a sync into any other Iceberg table is refused, as
is a sync into an Iceberg table that mirrors another sluice table (the
mirror carries the table's id as sluice.table-id: two lakes' "events"
folders need two names). Vacuum keeps what the recorded mirror references.
The mirror is gc.enabled=false, so that Iceberg's own snapshot expiry
refuses to delete sluice's files; sluice's vacuum expires its snapshots.

--json prints {"catalog", "identifier", "snapshot_id", "snapshot_id_string",
"version", "metadata_location", "mirrored", ...}: hand metadata_location to a
reader. A snapshot id is a 64-bit integer, usually beyond the 2^53 that a
JavaScript number (or jq before 1.7) holds exactly: "snapshot_id" is the
exact number, "snapshot_id_string" the same in decimal text, for those.`,
		Example: `  sluice iceberg sync ./lake/events --catalog sqlite:///var/lib/sluice/catalog.db
  sluice iceberg sync s3://lake/events --catalog postgres://sluice@db/lake --namespace lake --name events --json`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := mf.settings("sync", args[0])
			if err != nil {
				return err
			}
			out := map[string]any{"command": "iceberg sync", "table": args[0], "catalog": cloud.Redact(set.Catalog)}
			a.summary(out)
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			rec, ok, err := iceberg.ReadSettings(cmd.Context(), t)
			if err != nil {
				return fmt.Errorf("iceberg sync %s: the mirror's settings: %w", args[0], err)
			}
			if set.Catalog == "" && !ok {
				return usageError{cmd: "sync", err: fmt.Errorf("iceberg sync: --catalog URL is required (%s has no mirror yet)", args[0])}
			}
			if ok {
				set = mergeSettings(cmd, rec, set)
			}
			cat, err := iceberg.OpenCatalog(cmd.Context(), set.Catalog)
			if err != nil {
				return err
			}
			defer cat.Close()
			out["catalog"] = cat.URL()
			res, syncErr := iceberg.Sync(cmd.Context(), t, cat, iceberg.Options{
				Namespace: set.Namespace, Name: set.Name,
				Progress: func(s iceberg.Snapshot) {
					a.logger.Info("mirrored", "version", s.Version, "snapshot_id", s.SnapshotID, "operation", s.Operation)
				},
			})
			out["identifier"] = res.Identifier
			setSnapshotID(out, res.SnapshotID)
			out["version"] = res.Version
			out["metadata_location"] = res.MetadataLocation
			out["mirrored"] = res.Mirrored
			out["created"] = res.Created
			if syncErr != nil {
				return fmt.Errorf("iceberg sync %s: %w", args[0], mirrorAdvice(t, args[0], syncErr))
			}
			if !a.jsonOut {
				if res.Mirrored == 0 {
					fmt.Fprintf(a.stdout, "%s already mirrors version %d (snapshot %d)\n", res.Identifier, res.Version, res.SnapshotID)
				} else {
					fmt.Fprintf(a.stdout, "mirrored versions %d..%d as %s: snapshot %d, metadata %s\n", res.From+1, res.Version, res.Identifier, res.SnapshotID, res.MetadataLocation)
				}
			}
			return nil
		},
	}
	mf.register(cmd)
	return cmd
}

// setSnapshotID puts a snapshot id into a --json summary twice: as the
// exact number, and as decimal text, which JavaScript and older jq do not
// round (a double holds integers exactly only up to 2^53).
func setSnapshotID(out map[string]any, id int64) {
	out["snapshot_id"] = id
	out["snapshot_id_string"] = strconv.FormatInt(id, 10)
}

// mergeSettings gives the table's recorded mirror rec precedence over
// the flags' defaults, not over flags given.
func mergeSettings(cmd *cobra.Command, rec, flags iceberg.Settings) iceberg.Settings {
	if flags.Catalog != "" {
		rec.Catalog = flags.Catalog
	}
	if cmd.Flags().Changed("namespace") {
		rec.Namespace = flags.Namespace
	}
	if cmd.Flags().Changed("name") {
		rec.Name = flags.Name
	}
	return rec
}
