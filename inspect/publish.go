package inspect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// publishedDir holds one note per publish target in a table's folder.
const publishedDir = "_sluice/published/"

// Publish is the note a publish leaves in the table's folder: the last
// version loaded into one warehouse table.
type Publish struct {
	// Target is the warehouse table ("analytics.events").
	Target string `json:"target"`
	// Warehouse is the warehouse's URL, its secrets redacted.
	Warehouse string    `json:"warehouse,omitempty"`
	Version   int64     `json:"version"`
	Rows      int64     `json:"rows"`
	At        time.Time `json:"at"`
	Run       string    `json:"run"`
}

// publishKey is the key of the note for a target: one per warehouse
// table, each publish overwriting the last.
func publishKey(p Publish) string {
	sum := sha256.Sum256([]byte(p.Warehouse + "\n" + p.Target))
	return publishedDir + hex.EncodeToString(sum[:])[:16] + ".json"
}

// RecordPublish writes the note of publish p in st, the table's folder:
// _sluice/published/<first 16 hex digits of the SHA-256 of its warehouse
// and target>.json, replacing the last one for that target. Describe
// reads the newest of them. The warehouse URL is redacted before it is
// written.
func RecordPublish(ctx context.Context, st cloud.Store, p Publish) error {
	p.Warehouse = cloud.Redact(p.Warehouse)
	if p.At.IsZero() {
		p.At = time.Now().UTC()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	key := publishKey(p)
	if _, err := st.Put(ctx, key, bytes.NewReader(b), int64(len(b)), cloud.PutOptions{}); err != nil {
		return fmt.Errorf("record the publish in %s: %w", cloud.Redact(st.URL(key)), err)
	}
	return nil
}

// maxPublishNote bounds the note read: anything larger is not one.
const maxPublishNote = 64 << 10

// lastPublish reads the newest publish note in st, nil when there is
// none. A note that cannot be decoded is skipped: it is a report, not
// the table.
func lastPublish(ctx context.Context, st cloud.Store) (*Publish, error) {
	var keys []string
	err := st.List(ctx, publishedDir, func(o cloud.ObjectInfo) error {
		if strings.HasSuffix(o.Key, ".json") && o.Size <= maxPublishNote {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", cloud.Redact(st.URL(publishedDir)), err)
	}
	var newest *Publish
	for _, key := range keys {
		rc, _, err := st.Get(ctx, key)
		if errors.Is(err, cloud.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", cloud.Redact(st.URL(key)), err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxPublishNote))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", cloud.Redact(st.URL(key)), err)
		}
		var p Publish
		if json.Unmarshal(b, &p) != nil {
			continue
		}
		if newest == nil || p.At.After(newest.At) {
			newest = &p
		}
	}
	return newest, nil
}
