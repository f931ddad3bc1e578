//go:build unix

package cloud

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lock takes flock(2) on the folder, shared or exclusive, and returns its
// release.
func (d *folder) lock(exclusive bool) (unlock func(), err error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	fd := int(d.f.Fd())
	for {
		err = unix.Flock(fd, how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "flock", Path: d.f.Name(), Err: err}
	}
	return func() { _ = unix.Flock(fd, unix.LOCK_UN) }, nil
}

// link makes a hard link named name in the folder to oldpath, a file
// outside the store (os.Root links only within one). linkat(2) against the
// folder's own descriptor puts it in the folder opened inside the root,
// whatever links its path holds.
func (d *folder) link(oldpath, name string) error {
	if err := unix.Linkat(unix.AT_FDCWD, oldpath, int(d.f.Fd()), name, 0); err != nil {
		return &os.LinkError{Op: "link", Old: oldpath, New: name, Err: err}
	}
	return nil
}

// sync fsyncs the folder, making the names published in it durable.
func (d *folder) sync() error { return d.f.Sync() }

// fileID is the file's inode number, which every Put changes.
func fileID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
