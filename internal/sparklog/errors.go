package sparklog

import "errors"

// The errors a read of the log fails with; match them with errors.Is.
var (
	// ErrNotSink: the folder's _spark_metadata/ holds no batch file.
	ErrNotSink = errors.New("not a Spark streaming sink's output")
	// ErrCorruptLog: a batch file that does not parse: no version header,
	// a line that is not a JSON object of a file, an unknown action.
	ErrCorruptLog = errors.New("corrupt Spark sink log")
	// ErrUnsupportedVersion: a batch file written in a newer version of
	// the log than sluice reads (v1).
	ErrUnsupportedVersion = errors.New("unsupported Spark sink log version")
	// ErrMissingBatch: a batch file the state needs is not there (a
	// writer cleaned it up, or never wrote it), or the batch asked for is
	// newer than the log's newest.
	ErrMissingBatch = errors.New("batch missing from the Spark sink log")
	// ErrOutsideFolder: the log names a file outside the output folder
	// that holds it: import adopts a folder's own files.
	ErrOutsideFolder = errors.New("file outside the sink's folder")
)
