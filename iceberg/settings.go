package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// SettingsKey is the object, under the table root, recording the table's
// Iceberg mirror. It lives with the table's own metadata under _sluice/,
// never in the mirror's Iceberg location (_iceberg/): Iceberg's orphan-file
// cleanup deletes whatever it finds there that the mirror's metadata does
// not name. It is outside the versioned manifest on purpose: a rollback
// restores a version's properties, and must not turn the mirror off (or
// on) with them.
const SettingsKey = "_sluice/mirrors/iceberg.json"

// LegacySettingsKey is where sluice kept the settings before, inside the
// mirror's location, where an orphan-file cleanup deletes them. The next
// sync moves them to SettingsKey.
const LegacySettingsKey = MetadataFolder + "/properties.json"

// Settings record a table's one Iceberg mirror: which table of which
// catalog it is, and whether every commit syncs it. Sync writes them; a
// sync into any other Iceberg table is refused (ErrMirroredElsewhere),
// and vacuum keeps what the recorded mirror's snapshots reference.
type Settings struct {
	// Catalog is the catalog's URL, without a password.
	Catalog   string `json:"catalog"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Location is where the mirror's Iceberg metadata lives: the table's
	// _iceberg folder, as an Iceberg location.
	Location string `json:"location,omitempty"`
	// TableUUID is the mirror's Iceberg table uuid, which tells it from
	// another Iceberg table of the same name (in another catalog, or
	// made again after a drop) whatever the catalog URL's spelling.
	// Empty in settings read from LegacySettingsKey.
	TableUUID string `json:"table_uuid,omitempty"`
	// AfterCommit is set by `sluice iceberg enable`: every commit then
	// syncs the mirror.
	AfterCommit bool `json:"after_commit"`

	etag   string // of the object read, for a compare-and-swap
	legacy bool   // read from LegacySettingsKey
}

// Identifier is the mirror's Iceberg identifier, namespace.name.
func (s Settings) Identifier() string { return s.Namespace + "." + s.Name }

// Options returns the sync options of s.
func (s Settings) Options() Options {
	return Options{Namespace: s.Namespace, Name: s.Name, TableUUID: s.TableUUID}
}

// ErrPasswordInURL is returned by CheckCatalogURL for a catalog URL
// holding a password: the settings are stored in the table, readable by
// whoever reads it.
var ErrPasswordInURL = errors.New("the catalog URL holds a password")

// ErrNotMirrored is returned for a table that has no mirror settings.
var ErrNotMirrored = errors.New("the table has no Iceberg mirror settings")

// ReadSettings returns the mirror settings of tbl; ok is false when the
// table has none. Settings still at LegacySettingsKey are returned as they
// were (mirrored after every commit) until the next sync moves them.
// Settings that cannot be read or parsed are an error naming the object.
func ReadSettings(ctx context.Context, tbl *catalog.Table) (s Settings, ok bool, err error) {
	b, etag, found, err := readObject(ctx, tbl.Store(), SettingsKey)
	if err != nil {
		return s, false, err
	}
	if found {
		if err := json.Unmarshal(b, &s); err != nil || s.Catalog == "" || s.Namespace == "" || s.Name == "" {
			return Settings{}, false, fmt.Errorf("%s: corrupt: want {\"catalog\", \"namespace\", \"name\", ...}", tbl.Store().URL(SettingsKey))
		}
		s.etag = etag
		return s, true, nil
	}
	b, _, found, err = readObject(ctx, tbl.Store(), LegacySettingsKey)
	if err != nil || !found {
		return s, false, err
	}
	var old struct {
		Catalog   string `json:"iceberg.catalog"`
		Namespace string `json:"iceberg.namespace"`
		Name      string `json:"iceberg.name"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.Catalog == "" || old.Namespace == "" || old.Name == "" {
		return s, false, fmt.Errorf("%s: corrupt: want {\"iceberg.catalog\", \"iceberg.namespace\", \"iceberg.name\"}", tbl.Store().URL(LegacySettingsKey))
	}
	return Settings{Catalog: old.Catalog, Namespace: old.Namespace, Name: old.Name, AfterCommit: true, legacy: true}, true, nil
}

// readObject returns the content and ETag of key, found false when it
// does not exist.
func readObject(ctx context.Context, st cloud.Store, key string) ([]byte, string, bool, error) {
	rc, info, err := st.Get(ctx, key)
	if errors.Is(err, cloud.ErrNotFound) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("read %s: %w", st.URL(key), err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, "", false, fmt.Errorf("read %s: %w", st.URL(key), err)
	}
	return b, info.ETag, true, nil
}

// writeSettings stores s as tbl's mirror settings in place of prev (ok:
// there were some), as a compare-and-swap: it fails with
// cloud.ErrPreconditionFailed when a rival changed them since prev was
// read. Settings moved from LegacySettingsKey are removed from there.
func writeSettings(ctx context.Context, tbl *catalog.Table, s, prev Settings, ok bool) error {
	st := tbl.Store()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	opts := cloud.PutOptions{IfAbsent: true}
	if ok && !prev.legacy {
		opts = cloud.PutOptions{IfMatch: prev.etag}
	}
	if _, err := st.Put(ctx, SettingsKey, bytes.NewReader(b), int64(len(b)), opts); err != nil {
		return fmt.Errorf("write %s: %w", st.URL(SettingsKey), err)
	}
	if prev.legacy {
		if err := st.Delete(ctx, LegacySettingsKey); err != nil && !errors.Is(err, cloud.ErrNotFound) {
			return fmt.Errorf("remove %s (moved to %s): %w", st.URL(LegacySettingsKey), st.URL(SettingsKey), err)
		}
	}
	return nil
}

// SetAfterCommit turns the sync after every commit of tbl's recorded
// mirror on or off (ErrNotMirrored when there is none). The mirror stays
// recorded either way, so vacuum goes on keeping what it references.
func SetAfterCommit(ctx context.Context, tbl *catalog.Table, on bool) error {
	for range 5 {
		s, ok, err := ReadSettings(ctx, tbl)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w (%s)", ErrNotMirrored, tbl.Store().URL(SettingsKey))
		}
		next := s
		next.AfterCommit = on
		if err := writeSettings(ctx, tbl, next, s, true); !errors.Is(err, cloud.ErrPreconditionFailed) {
			return err
		}
	}
	return fmt.Errorf("write %s: it kept changing under rival writers", tbl.Store().URL(SettingsKey))
}

// Forget removes tbl's mirror settings (and any left at
// LegacySettingsKey). The mirror itself stays in its catalog.
func Forget(ctx context.Context, tbl *catalog.Table) error {
	st := tbl.Store()
	for _, key := range []string{SettingsKey, LegacySettingsKey} {
		if err := st.Delete(ctx, key); err != nil && !errors.Is(err, cloud.ErrNotFound) {
			return fmt.Errorf("remove %s: %w", st.URL(key), err)
		}
	}
	return nil
}

// CheckCatalogURL refuses, as a URL to store, a catalog URL that holds a
// password (ErrPasswordInURL) or is not one OpenCatalog takes
// (ErrCatalogURL).
func CheckCatalogURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w %q: %v", ErrCatalogURL, redact(raw), err)
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return fmt.Errorf("%w: it would be stored in the table; give it through PGPASSWORD instead", ErrPasswordInURL)
		}
	}
	if u.Query().Has("password") {
		return fmt.Errorf("%w (password=): it would be stored in the table; give it through PGPASSWORD instead", ErrPasswordInURL)
	}
	switch {
	case u.Scheme == "sqlite" && u.Host == "" && u.Path != "":
	case u.Scheme == "postgres" || u.Scheme == "postgresql":
	default:
		return fmt.Errorf("%w %q: want sqlite:///path/catalog.db or a postgres:// URL", ErrCatalogURL, redact(raw))
	}
	return nil
}

// storableURL is raw without its password (in the user info or a
// password= parameter), for the settings; everything else is kept, as
// the catalog needs it.
func storableURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redact(raw)
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if q := u.Query(); q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// CheckRecorded returns ErrUnrecordedMirror, saying where, when tbl's
// _iceberg folder holds an Iceberg table's metadata, for a tbl that has
// no mirror settings: lost, or never written (an older sluice's sync).
func CheckRecorded(ctx context.Context, tbl *catalog.Table) error {
	has, err := HasMirror(ctx, tbl)
	if err != nil {
		return fmt.Errorf("look for an Iceberg mirror in %s: %w", tbl.Store().URL(MetadataFolder), err)
	}
	if has {
		return fmt.Errorf("%w (%s holds one; %s is missing)", ErrUnrecordedMirror, tbl.Store().URL(MetadataFolder), tbl.Store().URL(SettingsKey))
	}
	return nil
}

// HasMirror tells whether tbl's folder holds Iceberg metadata that a
// sync wrote.
func HasMirror(ctx context.Context, tbl *catalog.Table) (bool, error) {
	found := errors.New("found")
	err := tbl.Store().List(ctx, MetadataFolder+"/metadata/", func(cloud.ObjectInfo) error { return found })
	if errors.Is(err, found) {
		return true, nil
	}
	return false, err
}
