package iceberg

import (
	"context"
	"fmt"
	"strings"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
)

// RetainResult says what Retain expired and which files the snapshots it
// kept reference.
type RetainResult struct {
	// Expired counts the snapshots expired (on a dry run, that would be).
	Expired int `json:"snapshots_expired"`
	// Retained counts the snapshots kept.
	Retained int `json:"snapshots_retained"`
	// Keep holds the data files the kept snapshots reference, located as
	// catalog.Table.FileURL locates a table's files.
	Keep map[string]bool `json:"-"`
	// MetadataLocation is the mirror's metadata after the expiry.
	MetadataLocation string `json:"metadata_location"`
}

// Retain expires the snapshots of tbl's mirror committed before cutoff, as
// vacuum expires sluice versions: the current snapshot always stays. It
// returns every data file a kept snapshot references, which vacuum must
// not delete. Expired snapshots' data files are never deleted here (they
// are sluice's, and vacuum decides); their Iceberg manifests stay too, as
// earlier metadata files name them. On a dry run nothing is committed,
// and the files are those of the snapshots an expiry would keep. An
// Iceberg table that does not mirror tbl (ErrAnotherTable), or is not the
// one opts.TableUUID names (ErrMirroredElsewhere), is refused.
func Retain(ctx context.Context, tbl *catalog.Table, cat *Catalog, opts Options, cutoff time.Time, dryRun bool) (RetainResult, error) {
	var res RetainResult
	ident := table.Identifier{opts.Namespace, opts.Name}
	it, err := cat.Load(ctx, ident)
	if err != nil {
		return res, fmt.Errorf("load the mirror %s: %w", strings.Join(ident, "."), err)
	}
	latest, err := tbl.Latest(ctx)
	if err != nil {
		return res, fmt.Errorf("read the table's latest version: %w", err)
	}
	if err := checkOwner(it, tbl, latest, cat.url); err != nil {
		return res, err
	}
	if uuid := it.Metadata().TableUUID().String(); opts.TableUUID != "" && uuid != opts.TableUUID {
		return res, fmt.Errorf("%w: %s in %s is the Iceberg table %s, not %s, the mirror the table's settings record",
			ErrMirroredElsewhere, strings.Join(ident, "."), cat.url, uuid, opts.TableUUID)
	}
	kept := keptSnapshots(it, cutoff)
	res.Expired = len(it.Metadata().Snapshots()) - len(kept)
	if !dryRun && res.Expired > 0 {
		if it, err = expire(ctx, it, cutoff); err != nil {
			return res, fmt.Errorf("expire snapshots of %s: %w", strings.Join(ident, "."), err)
		}
		if err := writeHint(ctx, tbl, it.MetadataLocation()); err != nil {
			return res, err
		}
		kept = it.Metadata().Snapshots()
	}
	res.Retained = len(kept)
	res.MetadataLocation = it.MetadataLocation()
	fs, err := it.FS(ctx)
	if err != nil {
		return res, fmt.Errorf("open the mirror's files: %w", err)
	}
	res.Keep = map[string]bool{}
	seen := map[string]bool{}
	for _, s := range kept {
		mans, err := s.Manifests(fs)
		if err != nil {
			return res, fmt.Errorf("snapshot %d: %w", s.SnapshotID, err)
		}
		for _, man := range mans {
			if seen[man.FilePath()] {
				continue
			}
			seen[man.FilePath()] = true
			for e, err := range man.Entries(fs, true) {
				if err != nil {
					return res, fmt.Errorf("snapshot %d: manifest %s: %w", s.SnapshotID, man.FilePath(), err)
				}
				res.Keep[tableLocation(e.DataFile().FilePath())] = true
			}
		}
	}
	return res, nil
}

// expire expires it's snapshots committed before cutoff but the current
// one, deleting no file, in one commit. The mirror is gc.enabled=false, so
// that Iceberg's own expiry refuses to run on it (iceberg-go's
// ExpireSnapshots checks the property as staged in its transaction): the
// transaction turns it on for the expiry and off again after, so no
// metadata file ever has it on, and WithPostCommit(false) keeps
// iceberg-go from deleting the expired snapshots' files (it would not
// with the property off either: two locks on one door).
func expire(ctx context.Context, it *table.Table, cutoff time.Time) (*table.Table, error) {
	tx := it.NewTransaction()
	if err := tx.SetProperties(ice.Properties{PropGCEnabled: "true"}); err != nil {
		return nil, err
	}
	if err := tx.ExpireSnapshots(table.WithOlderThan(max(time.Since(cutoff), 0)), table.WithRetainLast(1), table.WithPostCommit(false)); err != nil {
		return nil, err
	}
	if err := tx.SetProperties(ice.Properties{PropGCEnabled: "false"}); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

// keptSnapshots are the snapshots an expiry at cutoff keeps: the ones a
// branch or tag points at and those committed at or after cutoff.
func keptSnapshots(it *table.Table, cutoff time.Time) []table.Snapshot {
	refs := map[int64]bool{}
	for _, r := range it.Metadata().Refs() {
		refs[r.SnapshotID] = true
	}
	var kept []table.Snapshot
	for _, s := range it.Metadata().Snapshots() {
		if refs[s.SnapshotID] || s.TimestampMs >= cutoff.UnixMilli() {
			kept = append(kept, s)
		}
	}
	return kept
}

// tableLocation is the inverse of fileLocation: a file:// URL is the
// absolute path catalog.Table.FileURL gives for a local file.
func tableLocation(loc string) string {
	if p, ok := strings.CutPrefix(loc, "file://"); ok {
		return p
	}
	return loc
}

// SnapshotVersions returns, by the sluice version it mirrors, the id of
// each of the mirror's snapshots (those expired are gone), and the
// version its current snapshot mirrors (0: none yet).
func SnapshotVersions(ctx context.Context, cat *Catalog, opts Options) (map[int64]int64, int64, error) {
	ident := table.Identifier{opts.Namespace, opts.Name}
	it, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, 0, fmt.Errorf("load the mirror %s: %w", strings.Join(ident, "."), err)
	}
	out := map[int64]int64{}
	for _, s := range it.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		var v int64
		if _, err := fmt.Sscan(s.Summary.Properties[PropVersion], &v); err == nil && v > 0 {
			out[v] = s.SnapshotID
		}
	}
	cur, err := mirroredVersion(it)
	return out, cur, err
}

// VacuumKeep returns a catalog.VacuumOptions.Keep for tbl, mirrored
// in cat: at vacuum's cutoff it expires the mirror's older snapshots
// (none on a dry run) and keeps the files of the others. What it did is
// stored in *res.
func VacuumKeep(tbl *catalog.Table, cat *Catalog, opts Options, dryRun bool, res *RetainResult) func(context.Context, time.Time) (map[string]bool, error) {
	return func(ctx context.Context, cutoff time.Time) (map[string]bool, error) {
		r, err := Retain(ctx, tbl, cat, opts, cutoff, dryRun)
		*res = r
		if err != nil {
			return nil, fmt.Errorf("the Iceberg mirror: %w", err)
		}
		return r.Keep, nil
	}
}
