package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Protocol is the protocol action: the reader and writer versions and,
// from reader 3 and writer 7, the table features a reader or writer must
// support.
type Protocol struct {
	MinReaderVersion int32    `json:"minReaderVersion" parquet:"minReaderVersion,optional"`
	MinWriterVersion int32    `json:"minWriterVersion" parquet:"minWriterVersion,optional"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty" parquet:"readerFeatures,optional,list"`
	WriterFeatures   []string `json:"writerFeatures,omitempty" parquet:"writerFeatures,optional,list"`
}

// Format is the metadata's data file format: always "parquet".
type Format struct {
	Provider string            `json:"provider" parquet:"provider,optional"`
	Options  map[string]string `json:"options" parquet:"options,optional"`
}

// Metadata is the metaData action: the table's id, schema, partition
// columns and configuration.
type Metadata struct {
	ID               string            `json:"id" parquet:"id,optional"`
	Name             *string           `json:"name,omitempty" parquet:"name,optional"`
	Description      *string           `json:"description,omitempty" parquet:"description,optional"`
	Format           Format            `json:"format" parquet:"format,optional"`
	SchemaString     string            `json:"schemaString" parquet:"schemaString,optional"`
	PartitionColumns []string          `json:"partitionColumns" parquet:"partitionColumns,optional,list"`
	Configuration    map[string]string `json:"configuration" parquet:"configuration,optional"`
	CreatedTime      *int64            `json:"createdTime,omitempty" parquet:"createdTime,optional"`
}

// DeletionVector names the rows of a data file that are deleted.
type DeletionVector struct {
	StorageType    string `json:"storageType" parquet:"storageType,optional"`
	PathOrInlineDv string `json:"pathOrInlineDv" parquet:"pathOrInlineDv,optional"`
	Offset         *int32 `json:"offset,omitempty" parquet:"offset,optional"`
	SizeInBytes    int32  `json:"sizeInBytes" parquet:"sizeInBytes,optional"`
	Cardinality    int64  `json:"cardinality" parquet:"cardinality,optional"`
	MaxRowIndex    *int64 `json:"maxRowIndex,omitempty" parquet:"maxRowIndex,optional"`
}

// uniqueID is the deletion vector's id within the table, which with a
// file's path keys the file in the log (Action Reconciliation).
func (dv *DeletionVector) uniqueID() string {
	if dv == nil {
		return ""
	}
	if dv.Offset != nil {
		return fmt.Sprintf("%s%s@%d", dv.StorageType, dv.PathOrInlineDv, *dv.Offset)
	}
	return dv.StorageType + dv.PathOrInlineDv
}

// Add is the add action: a data file that is part of the table. Path is
// as the log holds it, a URI-encoded relative path or an absolute URI.
type Add struct {
	Path                    string             `json:"path" parquet:"path,optional"`
	PartitionValues         map[string]*string `json:"partitionValues" parquet:"partitionValues,optional"`
	Size                    int64              `json:"size" parquet:"size,optional"`
	ModificationTime        int64              `json:"modificationTime" parquet:"modificationTime,optional"`
	DataChange              bool               `json:"dataChange" parquet:"dataChange,optional"`
	Stats                   string             `json:"stats,omitempty" parquet:"stats,optional"`
	Tags                    map[string]string  `json:"tags,omitempty" parquet:"tags,optional"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty" parquet:"deletionVector,optional"`
	BaseRowID               *int64             `json:"baseRowId,omitempty" parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty" parquet:"defaultRowCommitVersion,optional"`
	ClusteringProvider      *string            `json:"clusteringProvider,omitempty" parquet:"clusteringProvider,optional"`
}

// Remove is the remove action: a data file no longer part of the table,
// kept as a tombstone until the retention has passed.
type Remove struct {
	Path                    string             `json:"path" parquet:"path,optional"`
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty" parquet:"deletionTimestamp,optional"`
	DataChange              bool               `json:"dataChange" parquet:"dataChange,optional"`
	ExtendedFileMetadata    *bool              `json:"extendedFileMetadata,omitempty" parquet:"extendedFileMetadata,optional"`
	PartitionValues         map[string]*string `json:"partitionValues,omitempty" parquet:"partitionValues,optional"`
	Size                    *int64             `json:"size,omitempty" parquet:"size,optional"`
	Stats                   string             `json:"stats,omitempty" parquet:"stats,optional"`
	Tags                    map[string]string  `json:"tags,omitempty" parquet:"tags,optional"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty" parquet:"deletionVector,optional"`
	BaseRowID               *int64             `json:"baseRowId,omitempty" parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty" parquet:"defaultRowCommitVersion,optional"`
}

// Txn is the txn action: the last version an application committed.
type Txn struct {
	AppID       string `json:"appId" parquet:"appId,optional"`
	Version     int64  `json:"version" parquet:"version,optional"`
	LastUpdated *int64 `json:"lastUpdated,omitempty" parquet:"lastUpdated,optional"`
}

// Sidecar is the sidecar action of a V2 checkpoint: a file in
// _delta_log/_sidecars/ that holds some of the checkpoint's file actions.
type Sidecar struct {
	Path             string `json:"path" parquet:"path,optional"`
	SizeInBytes      int64  `json:"sizeInBytes" parquet:"sizeInBytes,optional"`
	ModificationTime int64  `json:"modificationTime" parquet:"modificationTime,optional"`
}

// CheckpointMetadata is the checkpointMetadata action of a V2 checkpoint.
type CheckpointMetadata struct {
	Version int64 `json:"version" parquet:"version,optional"`
}

// DomainMetadata is the domainMetadata action.
type DomainMetadata struct {
	Domain        string `json:"domain" parquet:"domain,optional"`
	Configuration string `json:"configuration" parquet:"configuration,optional"`
	Removed       bool   `json:"removed" parquet:"removed,optional"`
}

// Action is one line of a commit, or one row of a checkpoint: exactly one
// of its fields is set. CommitInfo is kept as JSON, as writers put what
// they like in it.
type Action struct {
	Txn                *Txn                `json:"txn,omitempty" parquet:"txn,optional"`
	Add                *Add                `json:"add,omitempty" parquet:"add,optional"`
	Remove             *Remove             `json:"remove,omitempty" parquet:"remove,optional"`
	Metadata           *Metadata           `json:"metaData,omitempty" parquet:"metaData,optional"`
	Protocol           *Protocol           `json:"protocol,omitempty" parquet:"protocol,optional"`
	DomainMetadata     *DomainMetadata     `json:"domainMetadata,omitempty" parquet:"domainMetadata,optional"`
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty" parquet:"checkpointMetadata,optional"`
	Sidecar            *Sidecar            `json:"sidecar,omitempty" parquet:"sidecar,optional"`
	CommitInfo         json.RawMessage     `json:"commitInfo,omitempty" parquet:"-"`
}

// parseActions parses a commit file or a JSON checkpoint: one action a
// line; blank lines are skipped, and a line is named by its number when it
// does not parse.
func parseActions(name string, data []byte) ([]Action, error) {
	var out []Action
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var a Action
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w: %v", name, i+1, ErrCorruptLog, err)
		}
		out = append(out, a)
	}
	return out, nil
}
