package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	ice "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/parquet-go/parquet-go"
)

// ErrEqualityDeletes is returned for a data file that has equality delete
// files: sluice applies position deletes (and v3 deletion vectors) only,
// so such a file is not rewritten.
var ErrEqualityDeletes = errors.New("equality deletes are not supported")

// deletedPositions returns the sorted, distinct positions (0-based, in file
// order) of dataFile's rows that the delete files delete; nil when none is.
// deletes are the delete files that apply to dataFile, as a scan plans
// them (a table.FileScanTask's DeleteFiles, DeletionVectorFiles and
// EqualityDeleteFiles together):
//
//   - a position delete file in Parquet (columns file_path and pos, as
//     Iceberg's spec has them) holds rows for any number of data files:
//     its rows whose file_path is dataFile's path count;
//   - a deletion vector (v3, a blob of a Puffin file) holds one data
//     file's positions, read by iceberg-go's table/dv;
//   - an equality delete file is refused with ErrEqualityDeletes.
//
// A delete file that names another data file as its only one
// (ReferencedDataFile) is skipped without being read. A position at or
// past dataFile's record count is an error, never ignored.
func deletedPositions(ctx context.Context, fs iceio.IO, dataFile ice.DataFile, deletes []ice.DataFile) ([]int64, error) {
	return (&deleteFiles{}).positions(ctx, fs, dataFile, deletes)
}

// deleteFiles holds the Parquet position delete files read so far, each
// read once and whole, its positions grouped by data file: one delete
// file commonly applies to many data files of a partition, and each of
// them asks for its positions. It is safe for concurrent use.
type deleteFiles struct {
	mu sync.Mutex
	by map[string]*deleteFile
}

// deleteFile is one position delete file's positions, by data file path,
// loaded once.
type deleteFile struct {
	once  sync.Once
	byRef map[string][]int64
	err   error
}

// of returns the positions that Parquet position delete file d holds,
// by data file path, reading it on the first ask.
func (c *deleteFiles) of(ctx context.Context, fs iceio.IO, d ice.DataFile) (map[string][]int64, error) {
	c.mu.Lock()
	if c.by == nil {
		c.by = map[string]*deleteFile{}
	}
	e := c.by[d.FilePath()]
	if e == nil {
		e = &deleteFile{}
		c.by[d.FilePath()] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.byRef, e.err = filePositions(ctx, fs, d) })
	return e.byRef, e.err
}

// positions is deletedPositions, with the Parquet delete files read
// through c.
func (c *deleteFiles) positions(ctx context.Context, fs iceio.IO, dataFile ice.DataFile, deletes []ice.DataFile) ([]int64, error) {
	path := dataFile.FilePath()
	var pos []int64
	for _, d := range deletes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		switch d.ContentType() {
		case ice.EntryContentPosDeletes:
		case ice.EntryContentEqDeletes:
			return nil, fmt.Errorf("deleted rows of %s: delete file %s: %w", path, d.FilePath(), ErrEqualityDeletes)
		default:
			return nil, fmt.Errorf("deleted rows of %s: %s holds %s, not deletes", path, d.FilePath(), d.ContentType())
		}
		if ref := d.ReferencedDataFile(); ref != nil && *ref != "" && *ref != path {
			continue
		}
		var err error
		switch d.FileFormat() {
		case ice.PuffinFile:
			pos, err = appendVectorPositions(fs, d, pos)
		case ice.ParquetFile:
			var byRef map[string][]int64
			if byRef, err = c.of(ctx, fs, d); err == nil {
				pos = append(pos, byRef[path]...)
			}
		default:
			err = fmt.Errorf("position delete file %s: %s files are not supported", d.FilePath(), d.FileFormat())
		}
		if err != nil {
			return nil, fmt.Errorf("deleted rows of %s: %w", path, err)
		}
	}
	if len(pos) == 0 {
		return nil, nil
	}
	slices.Sort(pos)
	pos = slices.Compact(pos)
	if n := dataFile.Count(); pos[0] < 0 || pos[len(pos)-1] >= n {
		bad := pos[0]
		if bad >= 0 {
			bad = pos[len(pos)-1]
		}
		return nil, fmt.Errorf("deleted rows of %s: position %d deleted of a file of %d rows", path, bad, n)
	}
	return pos, nil
}

// appendVectorPositions appends the positions of deletion vector d to pos.
func appendVectorPositions(fs iceio.IO, d ice.DataFile, pos []int64) ([]int64, error) {
	bm, err := dv.ReadDV(fs, d)
	if err != nil {
		return nil, fmt.Errorf("deletion vector %s: %w", d.FilePath(), err)
	}
	for p := range bm.Positions() {
		pos = append(pos, int64(p))
	}
	return pos, nil
}

// filePositions reads Parquet position delete file d whole: its
// positions by the data file path each row names.
func filePositions(ctx context.Context, fs iceio.IO, d ice.DataFile) (_ map[string][]int64, err error) {
	name := d.FilePath()
	r, err := fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", name, err)
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("position delete file %s: %w", name, cerr)
		}
	}()
	info, err := r.Stat()
	if err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", name, err)
	}
	f, err := parquet.OpenFile(r, info.Size())
	if err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", name, err)
	}
	fileCol, posCol, err := positionColumns(f)
	if err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", name, err)
	}
	byRef := map[string][]int64{}
	for g, rg := range f.RowGroups() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunks := rg.ColumnChunks()
		if err := groupPositions(chunks[fileCol], chunks[posCol], byRef); err != nil {
			return nil, fmt.Errorf("position delete file %s: row group %d: %w", name, g, err)
		}
	}
	return byRef, nil
}

// positionColumns returns the leaf indexes of a position delete file's
// file_path (a string) and pos (a long) columns.
func positionColumns(f *parquet.File) (fileCol, posCol int, err error) {
	leaf := func(name string, kind parquet.Kind) (int, error) {
		c := f.Root().Column(name)
		if c == nil || !c.Leaf() || c.Type().Kind() != kind || c.MaxRepetitionLevel() != 0 {
			return 0, fmt.Errorf("no %s column of %s values", name, kind)
		}
		return c.Index(), nil
	}
	if fileCol, err = leaf("file_path", parquet.ByteArray); err != nil {
		return 0, 0, err
	}
	if posCol, err = leaf("pos", parquet.Int64); err != nil {
		return 0, 0, err
	}
	return fileCol, posCol, nil
}

// groupPositions adds to byRef the positions of one row group of a
// position delete file (its file_path and pos column chunks, read in
// step), by the path each names.
func groupPositions(fileChunk, posChunk parquet.ColumnChunk, byRef map[string][]int64) error {
	files, positions := newChunkValues(fileChunk), newChunkValues(posChunk)
	defer files.close()
	defer positions.close()
	fbuf, pbuf := make([]parquet.Value, 1024), make([]parquet.Value, 1024)
	cur := "" // the previous row's path: rows are sorted by path, so it is copied when it changes
	for {
		// The paths are compared before the next page is read: a page's
		// byte arrays may not outlive the read of the next one.
		n, err := files.read(fbuf)
		if errors.Is(err, io.EOF) {
			if k, err := positions.read(pbuf[:1]); k != 0 || !errors.Is(err, io.EOF) {
				return fmt.Errorf("more positions than file paths (%v)", err)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if m, err := positions.readFull(pbuf[:n]); m != n {
			return fmt.Errorf("fewer positions than file paths (%v)", err)
		}
		for i, v := range fbuf[:n] {
			p := pbuf[i]
			if v.IsNull() || p.IsNull() {
				return errors.New("a NULL file path or position")
			}
			if string(v.ByteArray()) != cur {
				cur = string(v.ByteArray())
			}
			byRef[cur] = append(byRef[cur], p.Int64())
		}
	}
}

// chunkValues reads the values of one column chunk, page after page.
type chunkValues struct {
	pages parquet.Pages
	r     parquet.ValueReader // the current page's; nil: none
}

func newChunkValues(c parquet.ColumnChunk) *chunkValues { return &chunkValues{pages: c.Pages()} }

// read reads up to len(buf) of the chunk's next values, all of one page;
// at the chunk's end it returns io.EOF and no value.
func (c *chunkValues) read(buf []parquet.Value) (int, error) {
	for {
		if c.r == nil {
			p, err := c.pages.ReadPage()
			if err != nil {
				return 0, err
			}
			c.r = p.Values()
		}
		n, err := c.r.ReadValues(buf)
		switch {
		case errors.Is(err, io.EOF):
			c.r = nil
			if n == 0 {
				continue
			}
		case err != nil:
			return n, err
		case n == 0:
			return 0, io.ErrNoProgress
		}
		return n, nil
	}
}

// readFull reads the chunk's next len(buf) values, or as many as are
// left, with the error that ended it.
func (c *chunkValues) readFull(buf []parquet.Value) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := c.read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *chunkValues) close() { _ = c.pages.Close() }
