package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tmpPrefix starts the name of every file a local Put writes before it
// publishes it. List skips such files and keys may not use the prefix.
const tmpPrefix = ".tmp-"

// localStore keeps objects as files under root.
//
// Put writes a temp file beside the target, fsyncs it, then publishes it in
// one atomic step — rename(2) to overwrite, link(2) to create only — and
// fsyncs the folder, so a crash leaves the old object or the new one. A
// compare-and-swap holds an exclusive flock(2) on the parent folder across
// its check and its rename; every other write to that folder holds it
// shared, so no write slips between the check and the swap.
type localStore struct {
	root string
}

func newLocalStore(root string) *localStore { return &localStore{root: root} }

func (s *localStore) URL(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

func (s *localStore) Close() error { return nil }

func (s *localStore) path(key string) string { return s.URL(key) }

// localErr maps an OS error onto our sentinels.
func (s *localStore) err(key, op string, err error) error {
	e := &opError{url: s.URL(key), op: op, cause: err}
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
		e.kind = ErrNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		e.kind = ErrPermission
		e.detail = errText(err)
	default:
		e.detail = errText(err)
	}
	return e
}

// errText is an OS error's text without the path, which the URL already
// names.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Op + ": " + le.Err.Error()
	}
	return err.Error()
}

// etagOf changes on every Put: every Put publishes a new inode, and the
// modification time and size pin it further should an inode be reused.
func etagOf(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%x-%x-%x", ino, fi.ModTime().UnixNano(), fi.Size())
}

func infoOf(key string, fi fs.FileInfo) ObjectInfo {
	return ObjectInfo{Key: key, Size: fi.Size(), ETag: etagOf(fi), ModTime: fi.ModTime()}
}

func (s *localStore) open(ctx context.Context, key, op string) (*os.File, ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return nil, ObjectInfo{}, invalidKey(s.URL(key), op, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, ObjectInfo{}, &opError{url: s.URL(key), op: op, cause: err, detail: err.Error()}
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, ObjectInfo{}, s.err(key, op, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ObjectInfo{}, s.err(key, op, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, ObjectInfo{}, s.err(key, op, syscall.EISDIR)
	}
	return f, infoOf(key, fi), nil
}

func (s *localStore) Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	return s.open(ctx, key, "get")
}

func (s *localStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, invalidKey(s.URL(key), "get range", fmt.Errorf("negative offset %d", off))
	}
	f, _, err := s.open(ctx, key, "get range")
	if err != nil {
		return nil, err
	}
	if length < 0 {
		return &sectionCloser{Reader: io.NewSectionReader(f, off, 1<<62), c: f}, nil
	}
	return &sectionCloser{Reader: io.NewSectionReader(f, off, length), c: f}, nil
}

type sectionCloser struct {
	io.Reader
	c io.Closer
}

func (s *sectionCloser) Close() error { return s.c.Close() }

func (s *localStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, invalidKey(s.URL(key), "stat", err)
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, &opError{url: s.URL(key), op: "stat", cause: err, detail: err.Error()}
	}
	fi, err := os.Stat(s.path(key))
	if err == nil && fi.IsDir() {
		err = syscall.EISDIR
	}
	if err != nil {
		return ObjectInfo{}, s.err(key, "stat", err)
	}
	return infoOf(key, fi), nil
}

func (s *localStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return invalidKey(s.URL(key), "delete", err)
	}
	if err := ctx.Err(); err != nil {
		return &opError{url: s.URL(key), op: "delete", cause: err, detail: err.Error()}
	}
	p := s.path(key)
	unlock, err := lockDir(filepath.Dir(p), unix.LOCK_SH)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return s.err(key, "delete", err)
	}
	defer unlock()
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err == nil && fi.IsDir() {
		return nil // a folder is no object; there is nothing to delete
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.err(key, "delete", err)
	}
	return nil
}

// lockDir opens dir and flocks it (LOCK_SH or LOCK_EX); unlock releases it.
func lockDir(dir string, how int) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(d.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		d.Close()
		return nil, &fs.PathError{Op: "flock", Path: dir, Err: err}
	}
	return func() {
		_ = unix.Flock(int(d.Fd()), unix.LOCK_UN)
		d.Close()
	}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *localStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error) {
	return s.put(ctx, key, opts, func(dir string) (string, fs.FileInfo, error) { return stageCopy(ctx, dir, r, size) })
}

// putFile is PutFile on local disk: f's data becomes the object through a
// hard link, not a copy, when f is on the store's file system; else it is
// copied as Put does.
func (s *localStore) putFile(ctx context.Context, key string, f *os.File, size int64, opts PutOptions) (ObjectInfo, error) {
	return s.put(ctx, key, opts, func(dir string) (string, fs.FileInfo, error) {
		tmpName, fi, err := stageLink(dir, f, size)
		if err == nil || !errors.Is(err, errNoLink) {
			return tmpName, fi, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", nil, err
		}
		return stageCopy(ctx, dir, f, size)
	})
}

// stageCopy writes r's size bytes (size < 0: all) to a fresh temp file in
// dir, fsynced, and returns its name and stat.
func stageCopy(ctx context.Context, dir string, r io.Reader, size int64) (tmpName string, fi fs.FileInfo, err error) {
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	n, err := copyCtx(ctx, tmp, r)
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("body has %d bytes, want %d", n, size)
	}
	if err == nil {
		err = tmp.Sync()
	}
	// The temp file's stat is the object's: rename and link keep the
	// inode, size and mtime. Taken now, it cannot be another Put's.
	if err == nil {
		fi, err = tmp.Stat()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	return tmp.Name(), fi, err
}

// errNoLink is stageLink's: f cannot be linked into the folder (another
// file system, a file system without hard links, a name already gone).
var errNoLink = errors.New("cannot hard-link the file")

// stageLink gives f's data, fsynced, a fresh temp name in dir by a hard
// link, and returns that name and f's stat.
func stageLink(dir string, f *os.File, size int64) (string, fs.FileInfo, error) {
	if err := f.Sync(); err != nil {
		return "", nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	if !fi.Mode().IsRegular() || (size >= 0 && fi.Size() != size) {
		return "", nil, errNoLink
	}
	for range 100 {
		name := filepath.Join(dir, fmt.Sprintf("%s%016x", tmpPrefix, rand.Uint64()))
		err := os.Link(f.Name(), name)
		if err == nil {
			return name, fi, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("%w: %w", errNoLink, err)
		}
	}
	return "", nil, fmt.Errorf("%w: no free temp name in %s", errNoLink, dir)
}

// put publishes under key the temp file that stage makes in the key's
// folder (see localStore).
func (s *localStore) put(ctx context.Context, key string, opts PutOptions, stage func(dir string) (string, fs.FileInfo, error)) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, invalidKey(s.URL(key), "put", err)
	}
	if opts.IfAbsent && opts.IfMatch != "" {
		return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "IfAbsent and IfMatch together can never hold", kind: ErrPreconditionFailed}
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, &opError{url: s.URL(key), op: "put", cause: err, detail: err.Error()}
	}
	p := s.path(key)
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ObjectInfo{}, s.putErr(key, err)
	}

	// Data first: the whole body, fsynced, under a temp name nobody lists.
	tmpName, fi, err := stage(dir)
	if err != nil {
		return ObjectInfo{}, s.putErr(key, err)
	}
	published := false
	defer func() {
		if !published {
			os.Remove(tmpName)
		}
	}()

	// Pointer last: one atomic step publishes it.
	how := unix.LOCK_SH
	if opts.IfMatch != "" {
		how = unix.LOCK_EX
	}
	unlock, err := lockDir(dir, how)
	if err != nil {
		return ObjectInfo{}, s.putErr(key, err)
	}
	defer unlock()
	switch {
	case opts.IfAbsent:
		if err := os.Link(tmpName, p); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "create-only: object exists", kind: ErrPreconditionFailed}
			}
			return ObjectInfo{}, s.putErr(key, err)
		}
		published = true
		if err := os.Remove(tmpName); err != nil {
			return ObjectInfo{}, s.putErr(key, err)
		}
	case opts.IfMatch != "":
		cur, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "if-match: object does not exist", kind: ErrPreconditionFailed}
		}
		if err != nil {
			return ObjectInfo{}, s.putErr(key, err)
		}
		if got := etagOf(cur); got != opts.IfMatch {
			return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: fmt.Sprintf("if-match: etag is %s, not %s", got, opts.IfMatch), kind: ErrPreconditionFailed}
		}
		fallthrough
	default:
		if err := os.Rename(tmpName, p); err != nil {
			return ObjectInfo{}, s.putErr(key, err)
		}
		published = true
	}
	if err := syncDir(dir); err != nil {
		return ObjectInfo{}, s.putErr(key, err)
	}
	return infoOf(key, fi), nil
}

// putErr maps a failed write. Unlike a read, a write's ENOENT or ENOTDIR
// is no missing object: it is a key whose folder is an object ("a" stored,
// "a/b" put) or whose name is a folder ("a/b" stored, "a" put) — keys that
// object stores allow side by side and a file system does not.
func (s *localStore) putErr(key string, err error) error {
	e := &opError{url: s.URL(key), op: "put", detail: errText(err), cause: err}
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		e.kind = ErrPermission
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.EEXIST):
		e.detail += " (on local disk a key cannot be both an object and the folder of others)"
	}
	return e
}

// copyCtx copies r to w, checking ctx between chunks.
func copyCtx(ctx context.Context, w io.Writer, r io.Reader) (int64, error) {
	if r == nil {
		return 0, nil
	}
	buf := make([]byte, 256<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, rerr := r.Read(buf)
		if m > 0 {
			if _, werr := w.Write(buf[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// List walks the folders under root in key order. A folder's entries are
// sorted by name, a subfolder's name with '/' appended, so that "a.txt"
// (0x2E) comes before "a/b" (0x2F) exactly as object stores order keys.
func (s *localStore) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if strings.HasPrefix(prefix, "/") {
		return invalidKey(s.URL(prefix), "list", errors.New("prefix starts with '/'"))
	}
	// Start in the deepest folder the prefix names whole.
	dirKey := ""
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dirKey = prefix[:i+1]
	}
	return s.walk(ctx, dirKey, prefix, fn)
}

// walk lists folder dirKey ("" or ending in '/'), calling fn for the files
// whose key starts with prefix.
func (s *localStore) walk(ctx context.Context, dirKey, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return &opError{url: s.URL(dirKey), op: "list", cause: err, detail: err.Error()}
	}
	ents, err := os.ReadDir(filepath.Join(s.root, filepath.FromSlash(dirKey)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return s.err(dirKey, "list", err)
	}
	type ent struct {
		sortKey string
		e       fs.DirEntry
	}
	list := make([]ent, 0, len(ents))
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			continue
		}
		k := name
		if e.IsDir() {
			k += "/"
		}
		list = append(list, ent{k, e})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].sortKey < list[j].sortKey })
	for _, it := range list {
		key := dirKey + it.sortKey
		if it.e.IsDir() {
			// Descend only where keys below could start with prefix.
			if strings.HasPrefix(key, prefix) || strings.HasPrefix(prefix, key) {
				if err := s.walk(ctx, key, prefix, fn); err != nil {
					return err
				}
			}
			continue
		}
		if !strings.HasPrefix(key, prefix) || !it.e.Type().IsRegular() {
			continue
		}
		fi, err := it.e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted while we listed
		}
		if err != nil {
			return s.err(key, "list", err)
		}
		if err := fn(infoOf(key, fi)); err != nil {
			return err
		}
	}
	return nil
}

var _ Store = (*localStore)(nil)
