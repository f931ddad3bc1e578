package iceberg

import (
	"context"
	"fmt"
	"strings"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
)

// evolve makes the mirror's schema take version m's: a column m has and
// the mirror has not is added (optional, with the next field id, and to
// the name mapping readers resolve sluice's files by), in a commit of
// its own before m's snapshot, so a crash between the two leaves it for
// the next sync to find done. A column of the mirror m lacks (a rollback
// to before it was added) stays: it must be optional, and reads as null
// in files without it. A column whose type or nullability differs, or a
// different partitioning, fails with ErrSchemaChanged.
func evolve(ctx context.Context, it *table.Table, m *catalog.Manifest) (*table.Table, error) {
	want, err := icebergSchema(m.Schema, m.Spec)
	if err != nil {
		return nil, err
	}
	have := it.Schema()
	if spec := it.Spec(); spec.NumFields() != len(m.Spec.Fields) {
		return nil, fmt.Errorf("version %d: %w: partitioned by %q, the mirror by %s", m.Version, ErrSchemaChanged, m.Spec, spec)
	}
	var added []ice.NestedField
	for _, f := range want.Fields() {
		h, ok := have.FindFieldByName(f.Name)
		switch {
		case !ok && f.Required:
			return nil, fmt.Errorf("version %d: %w: column %q is new and not nullable, which an Iceberg table cannot add", m.Version, ErrSchemaChanged, f.Name)
		case !ok:
			added = append(added, f)
		case !h.Type.Equals(f.Type) || h.Required != f.Required:
			return nil, fmt.Errorf("version %d: %w: column %q is %s%s, in the mirror %s%s: changing a column is not mirrored", m.Version, ErrSchemaChanged,
				f.Name, f.Type, requiredText(f.Required), h.Type, requiredText(h.Required))
		}
	}
	for _, h := range have.Fields() {
		if _, ok := want.FindFieldByName(h.Name); !ok && h.Required {
			return nil, fmt.Errorf("version %d: %w: the mirror's required column %q is gone", m.Version, ErrSchemaChanged, h.Name)
		}
	}
	if len(added) == 0 {
		return it, nil
	}
	tx := it.NewTransaction()
	up := tx.UpdateSchema(true, false, table.WithNameMapping(it.NameMapping()))
	names := make([]string, len(added))
	for i, f := range added {
		up = up.AddColumn([]string{f.Name}, f.Type, "", false, nil)
		names[i] = f.Name
	}
	if err := up.Commit(); err != nil {
		return nil, fmt.Errorf("version %d: add columns %s to the mirror: %w", m.Version, strings.Join(names, ", "), err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("version %d: add columns %s to the mirror: %w", m.Version, strings.Join(names, ", "), err)
	}
	return next, nil
}

func requiredText(required bool) string {
	if required {
		return ""
	}
	return " (nullable)"
}
