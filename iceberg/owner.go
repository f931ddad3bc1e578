package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ice "github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// Iceberg table properties every mirror carries.
const (
	// PropTableID names the sluice table the Iceberg table mirrors
	// (catalog.Table.Identity): a sync of any other table into it is
	// refused (ErrAnotherTable).
	PropTableID = "sluice.table-id"
	// PropGCEnabled is Iceberg's gc.enabled, "false" on a mirror: the
	// data files are sluice's, referenced by versions the mirror may no
	// longer hold, and only sluice's vacuum may delete them. Iceberg's
	// standard snapshot expiry (iceberg-go's, Spark's expire_snapshots)
	// refuses to run on such a table, and Spark's remove_orphan_files
	// too; sluice's vacuum expires the mirror's snapshots itself.
	PropGCEnabled = "gc.enabled"
)

// Errors of a sync into an Iceberg table that is not, or cannot be, the
// table's one mirror; nothing is written when they are returned.
var (
	// ErrAnotherTable: the Iceberg table mirrors another sluice table
	// (another id, or its metadata elsewhere): two tables' files would
	// mix in one Iceberg table.
	ErrAnotherTable = errors.New("the Iceberg table mirrors another table")
	// ErrMirroredElsewhere: the table's settings record its mirror as
	// another Iceberg table (in another catalog, under another name, or
	// dropped from its catalog): a table has one mirror.
	ErrMirroredElsewhere = errors.New("the table already has its Iceberg mirror")
	// ErrUnrecordedMirror: the table's _iceberg folder holds the metadata
	// of an Iceberg table that its settings do not record, so what its
	// snapshots reference is unknown.
	ErrUnrecordedMirror = errors.New("the table's _iceberg folder holds an Iceberg table its settings do not record")
)

// maxClaims bounds how often claim starts again after a rival changed
// the settings under it.
const maxClaims = 8

// claim returns the Iceberg table ident in c as tbl's one mirror (created
// from version first if tbl has none yet), whose latest version is latest:
// it checks that the Iceberg table mirrors tbl and is the one the
// settings record, records it (moving settings from LegacySettingsKey),
// and gives it the properties every mirror carries.
//
// The settings are the lock: a mirror is recorded (without its uuid)
// before it is created, by a create-only write, so that of two syncs
// into two catalogs at once one makes the mirror and the other is
// refused; the uuid is recorded once the table exists.
func (c *Catalog) claim(ctx context.Context, tbl *catalog.Table, ident table.Identifier, first, latest *catalog.Manifest) (*table.Table, bool, error) {
	for range maxClaims {
		rec, recorded, err := ReadSettings(ctx, tbl)
		if err != nil {
			return nil, false, err
		}
		if !recorded {
			if err := c.reserve(ctx, tbl, ident, first, latest); err != nil && !errors.Is(err, cloud.ErrPreconditionFailed) {
				return nil, false, err
			}
			continue // recorded now, by this sync or a rival
		}
		if rec.TableUUID == "" && !rec.names(c, ident) {
			return nil, false, elsewhere(tbl, rec)
		}
		it, err := c.cat.LoadTable(ctx, ident)
		created := false
		switch {
		case errors.Is(err, icecat.ErrNoSuchTable) && rec.TableUUID == "":
			// Recorded before it was made (by this sync, a rival, or one
			// that crashed there), or in settings an older sluice wrote
			// and then dropped from the catalog: make it.
			if it, created, err = c.create(ctx, ident, tbl, first, latest); err != nil {
				return nil, false, err
			}
		case errors.Is(err, icecat.ErrNoSuchTable) && rec.names(c, ident):
			return nil, false, fmt.Errorf("%w: %s in %s, recorded as %s's mirror (Iceberg table %s), is not in that catalog (dropped?)",
				ErrMirroredElsewhere, rec.Identifier(), rec.Catalog, tbl.Location(), rec.TableUUID)
		case errors.Is(err, icecat.ErrNoSuchTable):
			return nil, false, elsewhere(tbl, rec)
		case err != nil:
			return nil, false, fmt.Errorf("load %s: %w", strings.Join(ident, "."), err)
		}
		if err := checkOwner(it, tbl, latest, c.url); err != nil {
			return nil, false, err
		}
		uuid := it.Metadata().TableUUID().String()
		if rec.TableUUID != "" && rec.TableUUID != uuid {
			return nil, false, elsewhere(tbl, rec)
		}
		next := Settings{Catalog: c.stored, Namespace: ident[0], Name: ident[1], Location: it.Location(), TableUUID: uuid, AfterCommit: rec.AfterCommit}
		if rec.legacy || !rec.same(next) {
			err := writeSettings(ctx, tbl, next, rec, true)
			if errors.Is(err, cloud.ErrPreconditionFailed) {
				continue // a rival changed them meanwhile: check against theirs
			}
			if err != nil {
				return nil, false, err
			}
		}
		it, err = withMirrorProperties(ctx, it, tbl.Identity(latest))
		return it, created, err
	}
	return nil, false, fmt.Errorf("record the mirror in %s: the settings kept changing under rival syncs", tbl.Store().URL(SettingsKey))
}

// reserve records ident in c as the mirror of tbl, which has no mirror
// settings, before the mirror is made; cloud.ErrPreconditionFailed when
// a rival recorded one first. An Iceberg table ident that exists must
// mirror tbl; when it does not exist, tbl's _iceberg folder must hold no
// other Iceberg table's metadata (one that an older sluice synced into
// another catalog, say, without recording it), and version first must be
// one the mirror can be made of: a table that cannot be mirrored is not
// recorded as mirrored.
func (c *Catalog) reserve(ctx context.Context, tbl *catalog.Table, ident table.Identifier, first, latest *catalog.Manifest) error {
	it, err := c.cat.LoadTable(ctx, ident)
	switch {
	case err == nil:
		if err := checkOwner(it, tbl, latest, c.url); err != nil {
			return err
		}
	case errors.Is(err, icecat.ErrNoSuchTable):
		if unrecorded := CheckRecorded(ctx, tbl); unrecorded != nil {
			// A rival reserves before it writes metadata: if it is one,
			// its settings are there now.
			if _, ok, err := ReadSettings(ctx, tbl); err != nil || ok {
				return errors.Join(err, cloud.ErrPreconditionFailed)
			}
			return unrecorded
		}
		sch, err := icebergSchema(first.Schema, first.Spec)
		if err != nil {
			return err
		}
		if _, err := icebergSpec(first.Spec, sch); err != nil {
			return err
		}
	default:
		return fmt.Errorf("load %s: %w", strings.Join(ident, "."), err)
	}
	s := Settings{Catalog: c.stored, Namespace: ident[0], Name: ident[1], Location: fileLocation(tbl.Store().URL(MetadataFolder))}
	return writeSettings(ctx, tbl, s, Settings{}, false)
}

// names tells whether s record the mirror as ident in c.
func (s Settings) names(c *Catalog, ident table.Identifier) bool {
	return s.Namespace == ident[0] && s.Name == ident[1] && (s.Catalog == c.stored || s.Catalog == c.url)
}

// same tells whether s and o record the same mirror the same way.
func (s Settings) same(o Settings) bool {
	return s.Catalog == o.Catalog && s.Namespace == o.Namespace && s.Name == o.Name && s.Location == o.Location &&
		s.TableUUID == o.TableUUID && s.AfterCommit == o.AfterCommit
}

// elsewhere is ErrMirroredElsewhere for tbl, whose settings rec record
// another mirror.
func elsewhere(tbl *catalog.Table, rec Settings) error {
	what := rec.Identifier() + " in " + rec.Catalog
	if rec.TableUUID != "" {
		what += " (Iceberg table " + rec.TableUUID + ")"
	}
	return fmt.Errorf("%w: %s is mirrored as %s, and a table has one mirror", ErrMirroredElsewhere, tbl.Location(), what)
}

// checkOwner returns ErrAnotherTable unless the Iceberg table it mirrors
// tbl, whose latest version is latest: its metadata in tbl's _iceberg
// folder, and its PropTableID (if set) tbl's id. A table that got its id
// after the mirror recorded its location instead is the same table.
func checkOwner(it *table.Table, tbl *catalog.Table, latest *catalog.Manifest, catURL string) error {
	id := tbl.Identity(latest)
	mine := strings.TrimSuffix(fileLocation(tbl.Store().URL(MetadataFolder)), "/")
	loc := strings.TrimSuffix(it.Location(), "/")
	has, set := it.Properties()[PropTableID]
	if (!set || has == id || has == "location:"+tbl.Store().URL("")) && loc == mine {
		return nil
	}
	other := strings.TrimSuffix(loc, "/"+MetadataFolder)
	if set {
		other += " (table id " + has + ")"
	}
	return fmt.Errorf("%w: %s in %s mirrors the table at %s, not %s (table id %s)",
		ErrAnotherTable, strings.Join(it.Identifier(), "."), catURL, other, tbl.Location(), id)
}

// withMirrorProperties gives it, the mirror of the table whose id is id,
// the properties every mirror carries, in one metadata commit when one
// is missing (a mirror an older sluice made, or a table given an id
// since).
func withMirrorProperties(ctx context.Context, it *table.Table, id string) (*table.Table, error) {
	want := ice.Properties{PropGCEnabled: "false", PropTableID: id}
	set := ice.Properties{}
	for k, v := range want {
		if it.Properties()[k] != v {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return it, nil
	}
	tx := it.NewTransaction()
	if err := tx.SetProperties(set); err != nil {
		return nil, fmt.Errorf("set %s's properties: %w", strings.Join(it.Identifier(), "."), err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("set %s's properties: %w", strings.Join(it.Identifier(), "."), err)
	}
	return next, nil
}
