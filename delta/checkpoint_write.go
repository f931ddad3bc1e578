package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// LastCheckpointKey is the key of the _last_checkpoint hint.
const LastCheckpointKey = LogDir + "_last_checkpoint"

// CheckpointKey is the key of the classic checkpoint of version v.
func CheckpointKey(v int64) string { return fmt.Sprintf("%s%020d.checkpoint.parquet", LogDir, v) }

// ErrV2Checkpoints: the table asks for V2 checkpoints, and sluice writes
// classic ones only.
var ErrV2Checkpoints = errors.New("the table asks for V2 checkpoints (sluice writes classic ones)")

// CheckpointResult says what WriteCheckpoint wrote.
type CheckpointResult struct {
	// Version is the version checkpointed; Key the checkpoint's key.
	Version int64
	Key     string
	// Existed is true when a checkpoint of Version was there already:
	// nothing was written.
	Existed bool
	// Actions are the checkpoint's rows; Adds its live files; Bytes its
	// size.
	Actions, Adds, Bytes int64
}

// checkpointRowGroup bounds the rows parquet-go holds before it writes a
// row group out: a checkpoint of any size is written in bounded memory.
const checkpointRowGroup = 16384

// WriteCheckpoint writes a classic single-file Parquet checkpoint of
// version v, as Spark writes one (its columns, adds and tombstones with
// dataChange false, no commitInfo), then points _last_checkpoint at it
// unless that names a newer one. Removed files whose tombstones are
// younger than the table's delta.deletedFileRetentionDuration are kept
// as tombstones, so that a vacuum after the log before the checkpoint is
// cleaned up still knows them.
//
// It holds only the keys of the live files and tombstones: it reads the
// log twice, once to learn which action of each file wins, once to copy
// the winners into the file, a row group at a time. A checkpoint of
// version v that exists already is left as it is.
func (t *Table) WriteCheckpoint(ctx context.Context, v int64, now time.Time) (CheckpointResult, error) {
	res := CheckpointResult{Version: v, Key: CheckpointKey(v)}
	l, err := listLog(ctx, t.st)
	if err != nil {
		return res, err
	}
	if len(l.usable(v)) > 0 {
		res.Existed = true
		return res, nil
	}
	src, err := t.source(l, v)
	if err != nil {
		return res, err
	}
	w, err := t.winners(ctx, src)
	if err != nil {
		return res, err
	}
	where := fmt.Sprintf("%s at version %d", cloud.Redact(t.st.URL("")), v)
	switch {
	case w.protocol == nil:
		return res, fmt.Errorf("%s: %w: no protocol action", where, ErrCorruptLog)
	case w.metadata == nil:
		return res, fmt.Errorf("%s: %w: no metaData action", where, ErrCorruptLog)
	case slices.Contains(w.protocol.WriterFeatures, "v2Checkpoint") || w.metadata.Configuration[PropCheckpointPolicy] == "v2":
		return res, fmt.Errorf("%s: %w", where, ErrV2Checkpoints)
	}
	keep, err := retention(w.metadata.Configuration, PropDeletedFileRetention, defaultDeletedFileRetention)
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	tmp, err := os.CreateTemp("", "sluice-checkpoint-*.parquet")
	if err != nil {
		return res, fmt.Errorf("checkpoint %s: %w", where, err)
	}
	defer func() { _ = tmp.Close(); _ = os.Remove(tmp.Name()) }()
	if err := t.writeCheckpointFile(ctx, tmp, src, w, now.Add(-keep).UnixMilli(), &res); err != nil {
		return res, fmt.Errorf("checkpoint %s: %w", where, err)
	}
	if _, err := cloud.PutFile(ctx, t.st, res.Key, tmp, res.Bytes, cloud.PutOptions{}); err != nil {
		return res, fmt.Errorf("checkpoint %s: %w", where, err)
	}
	if err := t.pointLastCheckpoint(ctx, res); err != nil {
		return res, fmt.Errorf("checkpoint %s: written, but %w", where, err)
	}
	return res, nil
}

// winnerSet is what the first pass learns: the number of the action that
// holds each live file and each tombstone (with its deletion time), and
// the table-wide actions.
type winnerSet struct {
	live     map[fileKey]int64
	tombs    map[fileKey]tombstone
	protocol *Protocol
	metadata *Metadata
	txns     map[string]Txn
	domains  map[string]DomainMetadata
}

// tombstone is the remove that holds a removed file: its action's
// number, and its deletionTimestamp (milliseconds; noTime when it has
// none).
type tombstone struct{ n, at int64 }

const noTime = -1

func (t *Table) winners(ctx context.Context, src logSource) (*winnerSet, error) {
	root := rootPrefix(t.st)
	w := &winnerSet{live: map[fileKey]int64{}, tombs: map[fileKey]tombstone{}, txns: map[string]Txn{}, domains: map[string]DomainMetadata{}}
	err := t.each(ctx, src, func(n int64, a *Action, fromCheckpoint bool) error {
		switch {
		case a.Add != nil:
			k := fileKey{canonical(a.Add.Path, root), a.Add.DeletionVector.uniqueID()}
			w.live[k] = n
			delete(w.tombs, k)
		case a.Remove != nil:
			k := fileKey{canonical(a.Remove.Path, root), a.Remove.DeletionVector.uniqueID()}
			if !fromCheckpoint {
				delete(w.live, k)
			}
			at := int64(noTime)
			if a.Remove.DeletionTimestamp != nil {
				at = *a.Remove.DeletionTimestamp
			}
			w.tombs[k] = tombstone{n, at}
		case a.Metadata != nil:
			w.metadata = a.Metadata
		case a.Protocol != nil:
			w.protocol = a.Protocol
		case a.Txn != nil:
			w.txns[a.Txn.AppID] = *a.Txn
		case a.DomainMetadata != nil:
			if a.DomainMetadata.Removed {
				delete(w.domains, a.DomainMetadata.Domain)
			} else {
				w.domains[a.DomainMetadata.Domain] = *a.DomainMetadata
			}
		}
		return nil
	})
	return w, err
}

// writeCheckpointFile writes the checkpoint into f: the protocol, the
// metadata, the txns and domains, then, on a second pass over the log,
// each winning add and each tombstone removed after expireBefore
// (milliseconds since the epoch).
func (t *Table) writeCheckpointFile(ctx context.Context, f *os.File, src logSource, w *winnerSet, expireBefore int64, res *CheckpointResult) error {
	pw := parquet.NewGenericWriter[cpRow](f, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(checkpointRowGroup))
	root := rootPrefix(t.st)
	batch := make([]cpRow, 0, 1024)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := pqio.NoPanic(func() error { _, err := pw.Write(batch); return err })
		res.Actions += int64(len(batch))
		clear(batch)
		batch = batch[:0]
		return err
	}
	push := func(r cpRow) error {
		batch = append(batch, r)
		if len(batch) == cap(batch) {
			return flush()
		}
		return nil
	}
	if err := push(cpRow{Protocol: cpProtocolOf(w.protocol)}); err != nil {
		return err
	}
	if err := push(cpRow{Metadata: cpMetadataOf(w.metadata)}); err != nil {
		return err
	}
	for _, app := range sortedKeys(w.txns) {
		tx := w.txns[app]
		if err := push(cpRow{Txn: &cpTxn{AppID: &tx.AppID, Version: &tx.Version, LastUpdated: tx.LastUpdated}}); err != nil {
			return err
		}
	}
	for _, d := range sortedKeys(w.domains) {
		dm := w.domains[d]
		if err := push(cpRow{DomainMetadata: &cpDomain{Domain: &dm.Domain, Configuration: &dm.Configuration, Removed: ptr(false)}}); err != nil {
			return err
		}
	}
	err := t.each(ctx, src, func(n int64, a *Action, _ bool) error {
		switch {
		case a.Add != nil:
			if w.live[fileKey{canonical(a.Add.Path, root), a.Add.DeletionVector.uniqueID()}] != n {
				return nil
			}
			res.Adds++
			return push(cpRow{Add: cpAddOf(a.Add)})
		case a.Remove != nil:
			k := fileKey{canonical(a.Remove.Path, root), a.Remove.DeletionVector.uniqueID()}
			if tb := w.tombs[k]; tb.n != n || tb.at == noTime || tb.at < expireBefore {
				return nil
			}
			return push(cpRow{Remove: cpRemoveOf(a.Remove)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if err := pqio.NoPanic(pw.Close); err != nil {
		return err
	}
	size, err := f.Seek(0, 2)
	res.Bytes = size
	return err
}

// pointLastCheckpoint writes _last_checkpoint for res, unless the one
// there names a newer checkpoint. Readers take it as a hint and list
// from it, so a race between two writers costs at most a longer list.
func (t *Table) pointLastCheckpoint(ctx context.Context, res CheckpointResult) error {
	if b, err := readAll(ctx, t.st, LastCheckpointKey); err == nil {
		var old LastCheckpoint
		if json.Unmarshal(b, &old) == nil && old.Version > res.Version {
			return nil
		}
	} else if !errors.Is(err, cloud.ErrNotFound) {
		return err
	}
	body, err := json.Marshal(LastCheckpoint{Version: res.Version, Size: res.Actions, SizeInBytes: &res.Bytes, NumAddFiles: &res.Adds})
	if err != nil {
		return err
	}
	_, err = t.st.Put(ctx, LastCheckpointKey, bytes.NewReader(body), int64(len(body)), cloud.PutOptions{})
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
