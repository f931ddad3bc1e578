package jobs

import (
	"context"
	"errors"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/ingest"
	"github.com/sluice-data/sluice/rollup"
	"github.com/sluice-data/sluice/scheduler"
	"github.com/sluice-data/sluice/warehouse"
)

// permanent are the errors retrying a run cannot fix, each with why.
var permanent = []error{
	ErrBadOption,                 // the options are wrong: fix the file
	catalog.ErrTableNotFound,     // create the table first
	catalog.ErrTableExists,       // a create that found one
	catalog.ErrVersionNotFound,   // a version that is not there
	catalog.ErrMissingFile,       // a file a version needs is gone: a person must look
	catalog.ErrTableLog,          // a Delta/Iceberg/Spark log folder: never globbed
	delta.ErrUnsupportedFeature,  // a Delta feature sluice does not read or write
	delta.ErrNotDelta,            // --format delta on a folder without a Delta log
	delta.ErrCorruptLog,          // a Delta log entry that does not parse: a person must look
	delta.ErrS3Writers,           // the user's word is needed, not a retry
	catalog.ErrRetentionTooShort, // vacuum's retention, an option
	catalog.ErrNegativeRetention, // likewise
	compact.ErrVerify,            // a rewrite that does not verify: never retried blindly
	rollup.ErrOverflow,           // the data does not fit: it will not on a retry
	ingest.ErrNestedColumn,       // a CSV file for a nested table
	ingest.ErrFilesFailed,        // files that cannot be read whole: the next run retries them
	ingest.ErrNoSuchSource,       // a landing prefix or topic that is not there
	ingest.ErrKafkaGap,           // retention deleted records: --on-gap decides, not a retry
	warehouse.ErrInvalidName,     // --as
	warehouse.ErrUnsupportedType, // a column the warehouse cannot take
	warehouse.ErrNotATable,       // NAME is a view or the like
	warehouse.ErrRowCount,        // the load lost or made rows: a person must look
	warehouse.ErrDependents,      // what cannot follow NAME: --drop-dependents decides
	warehouse.ErrTaken,           // NAME_new or NAME_old is someone else's
	warehouse.ErrNotOnS3,         // Redshift reads only S3
	iceberg.ErrCatalogURL,        // a catalog URL sluice cannot use
	iceberg.ErrPasswordInURL,     // a password where it must not be
	iceberg.ErrSchemaChanged,     // the mirror cannot follow this schema change
	iceberg.ErrTableURL,          // an iceberg+ location that does not parse
	iceberg.ErrNoSuchTable,       // an Iceberg table its catalog does not have
	iceberg.ErrRESTAuth,          // credentials a REST catalog refused
	ingest.ErrKafkaAuth,          // credentials the broker refused: fix them, not retry
	ingest.ErrKafkaTLS,           // a certificate either side refused
	ingest.ErrKafkaOption,        // a CA, key or secret file, or a credential, that cannot be used
	iceberg.ErrNotBuilt,          // what sluice does not do with an Iceberg table yet
	iceberg.ErrUnsupportedType,   // a column sluice does not rewrite
	iceberg.ErrEqualityDeletes,   // deletes sluice does not apply yet
	ErrCatalogTable,              // a job that does not take an Iceberg table in its catalog
	cloud.ErrUnsupportedURL,      // a location sluice cannot open
	cloud.ErrBucketNotFound,      // a bucket that is not there
	cloud.ErrPermission,          // credentials that lack a right
	cloud.ErrOutsideRoot,         // a path that leaves the table
	cloud.ErrInvalidKey,          // a name no store takes
}

// classify marks a job's error for the scheduler: permanent when
// retrying cannot change it (the list above), else transient (a
// throttled or timed-out store, a commit that lost its race too often, a
// lock not granted in time, a dropped connection, an outcome nobody could
// tell: a run read afresh either finds it landed or does it again). A
// cancelled run stays as it is: the scheduler records it cancelled.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, cloud.ErrOutcomeUnknown):
		return scheduler.Transient(err)
	}
	for _, p := range permanent {
		if errors.Is(err, p) {
			return scheduler.Permanent(err)
		}
	}
	return scheduler.Transient(err)
}
