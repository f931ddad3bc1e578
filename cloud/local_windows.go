//go:build windows

package cloud

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// lockName is the file each folder's lock is taken on. Windows locks byte
// ranges of files, not folders, so a Put or Delete locks this file beside
// the objects. Its name has the temp prefix: List skips it and no key may
// name it. It stays once made.
const lockName = tmpPrefix + "lock"

// lock takes LockFileEx on the folder's lock file, shared or exclusive,
// and returns its release.
func (d *folder) lock(exclusive bool) (unlock func(), err error) {
	p := filepath.Join(d.name, lockName)
	f, err := d.root.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	var flags uint32
	if exclusive {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	h := windows.Handle(f.Fd())
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(h, flags, 0, 1, 0, ol); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
	}
	return func() {
		_ = windows.UnlockFileEx(h, 0, 1, 0, ol)
		f.Close()
	}, nil
}

// link would make a hard link to a file outside the store; os.Root links
// only within one and Windows has no linkat, so PutFile copies instead.
func (d *folder) link(oldpath, name string) error {
	return errors.New("no hard link into a folder opened inside the root on Windows")
}

// sync does nothing: Windows cannot flush a folder handle, and NTFS
// journals the rename and link that publish an object.
func (d *folder) sync() error { return nil }

// fileID is 0: Windows' stat carries no file index, so an etag is the
// modification time (100 ns steps) and the size.
func fileID(fi fs.FileInfo) uint64 { return 0 }
