package iceberg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// HintKey is the version hint under the table root, for readers that
// take the mirror's path rather than a catalog (DuckDB's iceberg_scan on
// TABLE/_iceberg): it holds the name of the current metadata file less
// its ".metadata.json", which DuckDB's default version_name_format
// ("v%s%s.metadata.json,%s%s.metadata.json") turns back into the file.
// Only a sync (and vacuum's expiry of snapshots) writes it.
const HintKey = MetadataFolder + "/metadata/version-hint.text"

const metadataSuffix = ".metadata.json"

// writeHint points the version hint of tbl's mirror at metadataLocation,
// unless the hint already names a newer metadata file (a rival sync's).
// A metadata file outside the table's _iceberg/metadata/ (a mirror made
// elsewhere) gets no hint.
func writeHint(ctx context.Context, tbl *catalog.Table, metadataLocation string) error {
	st := tbl.Store()
	loc := tableLocation(metadataLocation)
	dir, name := loc[:max(strings.LastIndex(loc, "/"), 0)], loc[strings.LastIndex(loc, "/")+1:]
	stem, ok := strings.CutSuffix(name, metadataSuffix)
	if !ok || dir != strings.TrimSuffix(st.URL(MetadataFolder+"/metadata"), "/") {
		return nil
	}
	seq := metadataSequence(stem)
	for range 5 {
		var opts cloud.PutOptions
		rc, info, err := st.Get(ctx, HintKey)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			opts.IfAbsent = true
		case err != nil:
			return fmt.Errorf("read %s: %w", st.URL(HintKey), err)
		default:
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return fmt.Errorf("read %s: %w", st.URL(HintKey), err)
			}
			cur := strings.TrimSpace(string(b))
			if cur == stem || metadataSequence(cur) > seq {
				return nil
			}
			opts.IfMatch = info.ETag
		}
		body := []byte(stem + "\n")
		_, err = st.Put(ctx, HintKey, bytes.NewReader(body), int64(len(body)), opts)
		if !errors.Is(err, cloud.ErrPreconditionFailed) {
			if err != nil {
				return fmt.Errorf("write %s: %w", st.URL(HintKey), err)
			}
			return nil
		}
		// A rival wrote the hint meanwhile: look again.
	}
	return fmt.Errorf("write %s: it kept changing under rival writers", st.URL(HintKey))
}

// metadataSequence is the number a metadata file's name starts with
// ("00005-<uuid>"), -1 for a name without one.
func metadataSequence(stem string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.SplitN(stem, "-", 2)[0], "v"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
