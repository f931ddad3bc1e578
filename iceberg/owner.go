package iceberg

import (
	"context"
	"fmt"
	"strings"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Iceberg table properties every mirror carries.
const (
	// PropGCEnabled is Iceberg's gc.enabled, "false" on a mirror: the
	// data files are sluice's, referenced by versions the mirror may no
	// longer hold, and only sluice's vacuum may delete them. Iceberg's
	// standard snapshot expiry (iceberg-go's, Spark's expire_snapshots)
	// refuses to run on such a table, and Spark's remove_orphan_files
	// too; sluice's vacuum expires the mirror's snapshots itself.
	PropGCEnabled = "gc.enabled"
)

// withMirrorProperties gives it the properties every mirror carries, in
// one metadata commit when one is missing (a mirror an older sluice
// made).
func withMirrorProperties(ctx context.Context, it *table.Table) (*table.Table, error) {
	want := ice.Properties{PropGCEnabled: "false"}
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
