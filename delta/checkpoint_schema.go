package delta

// The rows of a checkpoint as sluice writes them: the columns, in the
// order, Spark's checkpoints have (compare the _last_checkpoint
// checkpointSchema of the golden tables). Every leaf is optional, as in
// Spark's; a value that is false or zero but present (dataChange false,
// a size of 0) is a pointer, since parquet-go writes an optional zero
// value as NULL.

type cpRow struct {
	Txn            *cpTxn      `parquet:"txn,optional"`
	Add            *cpAdd      `parquet:"add,optional"`
	Remove         *cpRemove   `parquet:"remove,optional"`
	Metadata       *cpMetadata `parquet:"metaData,optional"`
	Protocol       *cpProtocol `parquet:"protocol,optional"`
	DomainMetadata *cpDomain   `parquet:"domainMetadata,optional"`
}

type cpTxn struct {
	AppID       *string `parquet:"appId,optional"`
	Version     *int64  `parquet:"version,optional"`
	LastUpdated *int64  `parquet:"lastUpdated,optional"`
}

type cpDV struct {
	StorageType    *string `parquet:"storageType,optional"`
	PathOrInlineDv *string `parquet:"pathOrInlineDv,optional"`
	Offset         *int32  `parquet:"offset,optional"`
	SizeInBytes    *int32  `parquet:"sizeInBytes,optional"`
	Cardinality    *int64  `parquet:"cardinality,optional"`
	MaxRowIndex    *int64  `parquet:"maxRowIndex,optional"`
}

type cpAdd struct {
	Path                    *string            `parquet:"path,optional"`
	PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
	Size                    *int64             `parquet:"size,optional"`
	ModificationTime        *int64             `parquet:"modificationTime,optional"`
	DataChange              *bool              `parquet:"dataChange,optional"`
	Tags                    map[string]*string `parquet:"tags,optional"`
	DeletionVector          *cpDV              `parquet:"deletionVector,optional"`
	BaseRowID               *int64             `parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
	Stats                   *string            `parquet:"stats,optional"`
}

type cpRemove struct {
	Path                    *string            `parquet:"path,optional"`
	DeletionTimestamp       *int64             `parquet:"deletionTimestamp,optional"`
	DataChange              *bool              `parquet:"dataChange,optional"`
	ExtendedFileMetadata    *bool              `parquet:"extendedFileMetadata,optional"`
	PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
	Size                    *int64             `parquet:"size,optional"`
	DeletionVector          *cpDV              `parquet:"deletionVector,optional"`
	BaseRowID               *int64             `parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
}

type cpFormat struct {
	Provider *string            `parquet:"provider,optional"`
	Options  map[string]*string `parquet:"options,optional"`
}

type cpMetadata struct {
	ID               *string            `parquet:"id,optional"`
	Name             *string            `parquet:"name,optional"`
	Description      *string            `parquet:"description,optional"`
	Format           *cpFormat          `parquet:"format,optional"`
	SchemaString     *string            `parquet:"schemaString,optional"`
	PartitionColumns []*string          `parquet:"partitionColumns,optional,list"`
	Configuration    map[string]*string `parquet:"configuration,optional"`
	CreatedTime      *int64             `parquet:"createdTime,optional"`
}

type cpProtocol struct {
	MinReaderVersion *int32    `parquet:"minReaderVersion,optional"`
	MinWriterVersion *int32    `parquet:"minWriterVersion,optional"`
	ReaderFeatures   []*string `parquet:"readerFeatures,optional,list"`
	WriterFeatures   []*string `parquet:"writerFeatures,optional,list"`
}

type cpDomain struct {
	Domain        *string `parquet:"domain,optional"`
	Configuration *string `parquet:"configuration,optional"`
	Removed       *bool   `parquet:"removed,optional"`
}

func cpStrings(ss []string) []*string {
	if ss == nil {
		return nil
	}
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = &ss[i]
	}
	return out
}

func cpMap(m map[string]string) map[string]*string {
	if m == nil {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = ptr(v)
	}
	return out
}

func cpText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func cpDVOf(dv *DeletionVector) *cpDV {
	if dv == nil {
		return nil
	}
	return &cpDV{StorageType: &dv.StorageType, PathOrInlineDv: &dv.PathOrInlineDv, Offset: dv.Offset,
		SizeInBytes: &dv.SizeInBytes, Cardinality: &dv.Cardinality, MaxRowIndex: dv.MaxRowIndex}
}

// cpAddOf is a live file's add as a checkpoint holds it: dataChange
// false, as Spark's log replay leaves it.
func cpAddOf(a *Add) *cpAdd {
	vals := a.PartitionValues
	if vals == nil {
		vals = map[string]*string{}
	}
	return &cpAdd{Path: &a.Path, PartitionValues: vals, Size: &a.Size, ModificationTime: &a.ModificationTime,
		DataChange: ptr(false), Tags: cpMap(a.Tags), DeletionVector: cpDVOf(a.DeletionVector), BaseRowID: a.BaseRowID,
		DefaultRowCommitVersion: a.DefaultRowCommitVersion, Stats: cpText(a.Stats)}
}

// cpRemoveOf is a tombstone as a checkpoint holds it.
func cpRemoveOf(r *Remove) *cpRemove {
	return &cpRemove{Path: &r.Path, DeletionTimestamp: r.DeletionTimestamp, DataChange: ptr(false),
		ExtendedFileMetadata: r.ExtendedFileMetadata, PartitionValues: r.PartitionValues, Size: r.Size,
		DeletionVector: cpDVOf(r.DeletionVector), BaseRowID: r.BaseRowID, DefaultRowCommitVersion: r.DefaultRowCommitVersion}
}

func cpMetadataOf(m *Metadata) *cpMetadata {
	return &cpMetadata{ID: &m.ID, Name: m.Name, Description: m.Description,
		Format:       &cpFormat{Provider: ptr(orDefault(m.Format.Provider, "parquet")), Options: cpMap(orEmptyMap(m.Format.Options))},
		SchemaString: cpText(m.SchemaString), PartitionColumns: cpStrings(orEmptySlice(m.PartitionColumns)),
		Configuration: cpMap(orEmptyMap(m.Configuration)), CreatedTime: m.CreatedTime}
}

func cpProtocolOf(p *Protocol) *cpProtocol {
	return &cpProtocol{MinReaderVersion: &p.MinReaderVersion, MinWriterVersion: &p.MinWriterVersion,
		ReaderFeatures: cpStrings(p.ReaderFeatures), WriterFeatures: cpStrings(p.WriterFeatures)}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orEmptyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func orEmptySlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
