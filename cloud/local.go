package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// tmpPrefix starts the name of every file a local Put writes before it
// publishes it. List skips such files and keys may not use the prefix.
const tmpPrefix = ".tmp-"

// ErrOutsideRoot: a local key's path reaches, through a symbolic link, a
// place outside the store's root folder. The local store never reads,
// writes, lists or deletes there: what a store holds stays under its root.
var ErrOutsideRoot = errors.New("path leaves the root folder through a symbolic link")

// localStore keeps objects as files under root.
//
// Put writes a temp file beside the target, fsyncs it, then publishes it in
// one atomic step — rename(2) to overwrite, link(2) to create only — and
// fsyncs the folder, so a crash leaves the old object or the new one. A
// compare-and-swap holds an exclusive lock on the parent folder (flock(2);
// see local_windows.go for Windows) across its check and its rename; every
// other write to that folder holds it shared, so no write slips between
// the check and the swap.
//
// Every path is resolved inside root by os.Root, one component at a time,
// so no operation leaves root through a symbolic link, even one that
// appears while it runs. A relative link whose target stays inside root is
// followed by Get, Stat, Put and Delete; an absolute link, or one whose
// target leaves root, fails with ErrOutsideRoot. List does not descend
// into links (a target inside root is listed under its own name, and a
// link back up would loop) and fails with ErrOutsideRoot on one that
// leaves root, rather than pass over files silently.
type localStore struct {
	root string
}

func newLocalStore(root string) *localStore { return &localStore{root: root} }

func (s *localStore) URL(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

func (s *localStore) Close() error { return nil }

// openRoot opens the root folder, for one operation: a handle kept across
// operations would go on naming a root folder that was removed and made
// again. create makes it first when it is missing.
func (s *localStore) openRoot(create bool) (*os.Root, error) {
	if create {
		if err := os.MkdirAll(s.root, dirPerm); err != nil {
			return nil, err
		}
	}
	return os.OpenRoot(s.root)
}

// rel is key's path relative to the root.
func rel(key string) string { return filepath.FromSlash(key) }

// escapes reports whether err is os.Root's refusal of a path that leaves
// the root. os does not export that error, so its text is matched;
// TestLocalSymlinks fails if a Go release changes it.
func escapes(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// outside is the error for key, which os.Root refused because a link on
// its way leaves the root. It names the first link that does, found by a
// second look (which a link changed since can only make vaguer: it words
// the message and grants no access).
func (s *localStore) outside(key, op string, cause error) error {
	detail := "a symbolic link on the way leads outside " + s.root
	if r, err := os.OpenRoot(s.root); err == nil {
		defer r.Close()
		prefix := ""
		for _, seg := range strings.Split(strings.TrimSuffix(key, "/"), "/") {
			prefix = path.Join(prefix, seg)
			fi, err := r.Lstat(rel(prefix))
			if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			if _, err := r.Stat(rel(prefix)); !escapes(err) {
				continue // a link that stays inside
			}
			p := filepath.Join(s.root, rel(prefix))
			if target, err := os.Readlink(p); err == nil {
				detail = fmt.Sprintf("%s links to %s, outside %s", p, target, s.root)
			}
			break
		}
	}
	return &opError{url: s.URL(key), op: op, detail: detail, kind: ErrOutsideRoot, cause: cause}
}

// localErr maps an OS error onto our sentinels.
func (s *localStore) err(key, op string, err error) error {
	if escapes(err) {
		return s.outside(key, op, err)
	}
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
	return fmt.Sprintf("%x-%x-%x", fileID(fi), fi.ModTime().UnixNano(), fi.Size())
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
	r, err := s.openRoot(false)
	if err != nil {
		return nil, ObjectInfo{}, s.err(key, op, err)
	}
	f, err := r.Open(rel(key))
	r.Close()
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
	r, err := s.openRoot(false)
	if err != nil {
		return ObjectInfo{}, s.err(key, "stat", err)
	}
	defer r.Close()
	fi, err := r.Stat(rel(key))
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
	r, err := s.openRoot(false)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return s.err(key, "delete", err)
	}
	defer r.Close()
	d, err := openFolder(r, path.Dir(key))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return s.err(key, "delete", err)
	}
	defer d.close()
	unlock, err := d.lock(false)
	if err != nil {
		return s.err(key, "delete", err)
	}
	defer unlock()
	fi, err := r.Lstat(rel(key))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return s.err(key, "delete", err)
	}
	if fi.IsDir() {
		return nil // a folder is no object; there is nothing to delete
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// Removing a link never touches its target, but a link out of
		// the root is refused as everywhere else, not quietly dropped.
		if _, err := r.Stat(rel(key)); escapes(err) {
			return s.outside(key, "delete", err)
		}
	}
	if err := r.Remove(rel(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.err(key, "delete", err)
	}
	return nil
}

// folder is an open folder of the store, for the lock, the links and the
// fsync of a Put or a Delete. Its per-system half is in local_unix.go and
// local_windows.go.
type folder struct {
	root *os.Root
	name string // relative to the root; "." is the root
	f    *os.File
}

func openFolder(r *os.Root, dir string) (*folder, error) {
	f, err := r.Open(rel(dir))
	if err != nil {
		return nil, err
	}
	return &folder{root: r, name: rel(dir), f: f}, nil
}

func (d *folder) close() { d.f.Close() }

// The modes of what a local store creates, before the umask narrows them:
// objects readable by the owner's group, never by everyone (a table can
// hold anything), folders likewise.
const (
	filePerm fs.FileMode = 0o640
	dirPerm  fs.FileMode = 0o750
)

// tmpName is a fresh temp name for the folder's next staged object.
func tmpName() string { return fmt.Sprintf("%s%016x", tmpPrefix, rand.Uint64()) }

func (s *localStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error) {
	return s.put(ctx, key, opts, func(d *folder) (string, fs.FileInfo, error) { return stageCopy(ctx, d, r, size) })
}

// putFile is PutFile on local disk: f's data becomes the object through a
// hard link, not a copy, when f is on the store's file system; else it is
// copied as Put does.
func (s *localStore) putFile(ctx context.Context, key string, f *os.File, size int64, opts PutOptions) (ObjectInfo, error) {
	return s.put(ctx, key, opts, func(d *folder) (string, fs.FileInfo, error) {
		tmp, fi, err := stageLink(d, f, size)
		if err == nil || !errors.Is(err, errNoLink) {
			return tmp, fi, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", nil, err
		}
		return stageCopy(ctx, d, f, size)
	})
}

// stageCopy writes r's size bytes (size < 0: all) to a fresh temp file in
// d, fsynced, and returns its name (relative to the root) and stat.
func stageCopy(ctx context.Context, d *folder, r io.Reader, size int64) (tmpPath string, fi fs.FileInfo, err error) {
	var tmp *os.File
	for range 100 {
		tmpPath = filepath.Join(d.name, tmpName())
		tmp, err = d.root.OpenFile(tmpPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			d.root.Remove(tmpPath)
		}
	}()
	n, err := copyCtx(ctx, tmp, r, size)
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
	return tmpPath, fi, err
}

// errNoLink is stageLink's: f cannot be linked into the folder (another
// file system, a file system without hard links, a name already gone).
var errNoLink = errors.New("cannot hard-link the file")

// stageLink gives f's data, fsynced, a fresh temp name in d by a hard
// link, and returns that name (relative to the root) and f's stat.
func stageLink(d *folder, f *os.File, size int64) (string, fs.FileInfo, error) {
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
	// The object is f's inode: no wider open than a Put's own file.
	if perm := fi.Mode().Perm(); perm&^filePerm != 0 {
		if err := f.Chmod(perm & filePerm); err != nil {
			return "", nil, fmt.Errorf("%w: %w", errNoLink, err)
		}
	}
	for range 100 {
		name := tmpName()
		err := d.link(f.Name(), name)
		if err == nil {
			return filepath.Join(d.name, name), fi, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("%w: %w", errNoLink, err)
		}
	}
	return "", nil, fmt.Errorf("%w: no free temp name in %s", errNoLink, d.name)
}

// put publishes under key the temp file that stage makes in the key's
// folder (see localStore).
func (s *localStore) put(ctx context.Context, key string, opts PutOptions, stage func(d *folder) (string, fs.FileInfo, error)) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, invalidKey(s.URL(key), "put", err)
	}
	if opts.IfAbsent && opts.IfMatch != "" {
		return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "IfAbsent and IfMatch together can never hold", kind: ErrPreconditionFailed}
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, &opError{url: s.URL(key), op: "put", cause: err, detail: err.Error()}
	}
	r, err := s.openRoot(true)
	if err != nil {
		return ObjectInfo{}, s.putErr(key, err)
	}
	defer r.Close()
	dir, p := path.Dir(key), rel(key)
	if dir != "." {
		if err := r.MkdirAll(rel(dir), dirPerm); err != nil {
			return ObjectInfo{}, s.putErr(key, err)
		}
	}
	d, err := openFolder(r, dir)
	if err != nil {
		return ObjectInfo{}, s.putErr(key, err)
	}
	defer d.close()

	// Data first: the whole body, fsynced, under a temp name nobody lists.
	tmp, fi, err := stage(d)
	if err != nil {
		return ObjectInfo{}, s.putErr(key, err)
	}
	published := false
	defer func() {
		if !published {
			r.Remove(tmp)
		}
	}()

	// Pointer last: one atomic step publishes it.
	unlock, err := d.lock(opts.IfMatch != "")
	if err != nil {
		return ObjectInfo{}, s.putErr(key, err)
	}
	defer unlock()
	switch {
	case opts.IfAbsent:
		if err := r.Link(tmp, p); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "create-only: object exists", kind: ErrPreconditionFailed}
			}
			return ObjectInfo{}, s.putErr(key, err)
		}
		published = true
		if err := r.Remove(tmp); err != nil {
			return ObjectInfo{}, s.afterPublish(key, err)
		}
	case opts.IfMatch != "":
		cur, err := r.Stat(p)
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
		if err := r.Rename(tmp, p); err != nil {
			return ObjectInfo{}, s.putErr(key, err)
		}
		published = true
	}
	if err := d.sync(); err != nil {
		return ObjectInfo{}, s.afterPublish(key, err)
	}
	return infoOf(key, fi), nil
}

// afterPublish maps a failure that came after the object was published
// (the link or rename done, its folder not yet synced): readers may see
// it, so it may have landed, and a caller must not take it for a write
// that did not happen (see ErrOutcomeUnknown).
func (s *localStore) afterPublish(key string, err error) error {
	return &opError{url: s.URL(key), op: "put", detail: "published, then " + errText(err), kind: ErrOutcomeUnknown, cause: err}
}

// putErr maps a failed write. Unlike a read, a write's ENOENT or ENOTDIR
// is no missing object: it is a key whose folder is an object ("a" stored,
// "a/b" put) or whose name is a folder ("a/b" stored, "a" put) — keys that
// object stores allow side by side and a file system does not.
func (s *localStore) putErr(key string, err error) error {
	if escapes(err) {
		return s.outside(key, "put", err)
	}
	e := &opError{url: s.URL(key), op: "put", detail: errText(err), cause: err}
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		e.kind = ErrPermission
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.EEXIST):
		e.detail += " (on local disk a key cannot be both an object and the folder of others)"
	}
	return e
}

// copyCtx copies r to w, checking ctx between chunks. size, when known
// (>= 0), bounds the buffer: a small object does not cost a large one.
func copyCtx(ctx context.Context, w io.Writer, r io.Reader, size int64) (int64, error) {
	if r == nil {
		return 0, nil
	}
	bufSize := int64(256 << 10)
	if size >= 0 {
		bufSize = min(bufSize, max(size+1, 512)) // +1: the read that finds the end
	}
	buf := make([]byte, bufSize)
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
	r, err := s.openRoot(false)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return s.err(dirKey, "list", err)
	}
	defer r.Close()
	return s.walk(ctx, r, dirKey, prefix, fn)
}

// walk lists folder dirKey ("" or ending in '/'), calling fn for the files
// whose key starts with prefix.
func (s *localStore) walk(ctx context.Context, r *os.Root, dirKey, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return &opError{url: s.URL(dirKey), op: "list", cause: err, detail: err.Error()}
	}
	ents, err := readDir(r, dirKey)
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
		n := e.Name()
		if strings.HasPrefix(n, tmpPrefix) {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			// Not listed (see localStore), but not passed over in
			// silence when it leads out of the root where keys under
			// the prefix could be.
			key := dirKey + n
			if !strings.HasPrefix(key, prefix) && !strings.HasPrefix(prefix, key+"/") {
				continue
			}
			if _, err := r.Stat(filepath.Join(rel(dirKey), n)); escapes(err) {
				return s.outside(key, "list", err)
			}
			continue
		}
		k := n
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
				if err := s.walk(ctx, r, key, prefix, fn); err != nil {
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

// readDir reads folder dirKey ("" for the root) inside r.
func readDir(r *os.Root, dirKey string) ([]fs.DirEntry, error) {
	dir := "."
	if dirKey != "" {
		dir = rel(strings.TrimSuffix(dirKey, "/"))
	}
	f, err := r.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

var _ Store = (*localStore)(nil)
