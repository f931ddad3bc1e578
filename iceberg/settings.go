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

// Table properties of a mirrored table, as `sluice iceberg enable` sets
// them.
const (
	// PropCatalog is the catalog URL the table is mirrored into after
	// every commit (its password never stored).
	PropCatalog = "iceberg.catalog"
	// PropNamespace is the mirror's Iceberg namespace.
	PropNamespace = "iceberg.namespace"
	// PropName is the mirror's Iceberg table name.
	PropName = "iceberg.name"
)

// SettingsKey is the object, under the table root, holding the mirror's
// table properties. It is outside the versioned manifest on purpose: a
// rollback restores a version's properties, and must not turn the
// mirror off (or on) with them.
const SettingsKey = MetadataFolder + "/properties.json"

// Settings say where a table is mirrored after every commit.
type Settings struct {
	Catalog   string `json:"iceberg.catalog"`
	Namespace string `json:"iceberg.namespace"`
	Name      string `json:"iceberg.name"`
}

// Identifier is the mirror's Iceberg identifier, namespace.name.
func (s Settings) Identifier() string { return s.Namespace + "." + s.Name }

// Options returns the sync options of s.
func (s Settings) Options() Options { return Options{Namespace: s.Namespace, Name: s.Name} }

// ErrPasswordInURL is returned by WriteSettings for a catalog URL holding a
// password: the properties are stored in the table, readable by whoever
// reads it.
var ErrPasswordInURL = errors.New("the catalog URL holds a password")

// ReadSettings returns the mirror settings of tbl; ok is false when the
// table has none (it is not mirrored after every commit).
func ReadSettings(ctx context.Context, tbl *catalog.Table) (s Settings, ok bool, err error) {
	rc, _, err := tbl.Store().Get(ctx, SettingsKey)
	if errors.Is(err, cloud.ErrNotFound) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("read %s: %w", tbl.Store().URL(SettingsKey), err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return s, false, fmt.Errorf("read %s: %w", tbl.Store().URL(SettingsKey), err)
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Catalog == "" || s.Namespace == "" || s.Name == "" {
		return s, false, fmt.Errorf("%s: corrupt: want {%q, %q, %q}", tbl.Store().URL(SettingsKey), PropCatalog, PropNamespace, PropName)
	}
	return s, true, nil
}

// CheckCatalogURL refuses, as a property to store, a catalog URL that
// holds a password (ErrPasswordInURL) or is not one OpenCatalog takes
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

// WriteSettings stores s as tbl's mirror settings, replacing any.
func WriteSettings(ctx context.Context, tbl *catalog.Table, s Settings) error {
	if err := CheckCatalogURL(s.Catalog); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := tbl.Store().Put(ctx, SettingsKey, bytes.NewReader(b), int64(len(b)), cloud.PutOptions{}); err != nil {
		return fmt.Errorf("write %s: %w", tbl.Store().URL(SettingsKey), err)
	}
	return nil
}

// RemoveSettings removes tbl's mirror settings: commits no longer sync.
// The mirror itself stays.
func RemoveSettings(ctx context.Context, tbl *catalog.Table) error {
	if err := tbl.Store().Delete(ctx, SettingsKey); err != nil {
		return fmt.Errorf("remove %s: %w", tbl.Store().URL(SettingsKey), err)
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
