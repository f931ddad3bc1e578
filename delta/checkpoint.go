package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// sidecarDir is where a V2 checkpoint's sidecar files live.
const sidecarDir = LogDir + "_sidecars/"

// readCheckpoint calls fn with every action of checkpoint c, file by
// file, a batch at a time: a checkpoint of many files is never held
// whole. A V2 checkpoint's sidecars are read after its top file.
func readCheckpoint(ctx context.Context, st cloud.Store, c checkpoint, fn func([]Action) error) error {
	for _, f := range c.files {
		var sidecars []Sidecar
		each := func(as []Action) error {
			for _, a := range as {
				if a.Sidecar != nil {
					sidecars = append(sidecars, *a.Sidecar)
				}
			}
			return fn(as)
		}
		var err error
		if f.v2 == "json" {
			err = readJSONCheckpoint(ctx, st, f.key, each)
		} else {
			err = readParquetActions(ctx, st, f.key, f.size, each)
		}
		if err != nil {
			return err
		}
		if f.v2 == "" && len(sidecars) > 0 {
			return fmt.Errorf("%s: %w: sidecar actions in a checkpoint that is not V2", st.URL(f.key), ErrCorruptLog)
		}
		for _, s := range sidecars {
			key, err := sidecarKey(s.Path)
			if err != nil {
				return fmt.Errorf("%s: %w", st.URL(f.key), err)
			}
			size := s.SizeInBytes
			if size <= 0 {
				info, err := st.Stat(ctx, key)
				if err != nil {
					return fmt.Errorf("sidecar of %s: %w", st.URL(f.key), err)
				}
				size = info.Size
			}
			if err := readParquetActions(ctx, st, key, size, fn); err != nil {
				return fmt.Errorf("sidecar of %s: %w", st.URL(f.key), err)
			}
		}
	}
	return nil
}

// sidecarKey is the key of a sidecar file the log names by p: a name in
// _delta_log/_sidecars/, as every writer makes it. An absolute URI is
// refused: sluice reads a table's log under its own root only.
func sidecarKey(p string) (string, error) {
	name, err := decodePath(p)
	if err != nil {
		return "", err
	}
	if strings.Contains(name, ":") || strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
		return "", fmt.Errorf("%w: sidecar path %q is not a file of %s", ErrCorruptLog, p, sidecarDir)
	}
	return path.Join(sidecarDir, name), nil
}

// readJSONCheckpoint reads a V2 checkpoint written as JSON lines.
func readJSONCheckpoint(ctx context.Context, st cloud.Store, key string, fn func([]Action) error) error {
	b, err := readAll(ctx, st, key)
	if err != nil {
		return err
	}
	as, err := parseActions(st.URL(key), b)
	if err != nil {
		return err
	}
	return fn(as)
}

// checkpointBatch is how many actions a checkpoint read hands on at once.
const checkpointBatch = 4096

// readParquetActions reads the actions of a Parquet checkpoint (or
// sidecar) file, checkpointBatch rows at a time. Columns the file lacks
// read as absent actions; columns sluice does not know are skipped.
func readParquetActions(ctx context.Context, st cloud.Store, key string, size int64, fn func([]Action) error) error {
	f, err := pqio.OpenParquetFile(st.URL(key), pqio.NewReaderAt(ctx, st, key, size), size)
	if err != nil {
		return err
	}
	return pqio.NoPanic(func() error {
		r := parquet.NewGenericReader[Action](f)
		defer r.Close()
		buf := make([]Action, checkpointBatch)
		for {
			clear(buf)
			n, err := r.Read(buf)
			if n > 0 {
				if err := fn(buf[:n]); err != nil {
					return err
				}
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w: %v", st.URL(key), ErrCorruptLog, err)
			}
		}
	})
}
