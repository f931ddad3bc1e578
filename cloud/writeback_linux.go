package cloud

import (
	"os"

	"golang.org/x/sys/unix"
)

// StartWriteback asks the kernel to start writing f's dirty pages to
// disk, and returns without waiting for them. A PutFile of f that comes
// later, after other work, then finds little left to sync: the disk
// writes while the CPU does that work, where a sync alone would leave the
// CPU idle for the time the disk takes. It is only a hint; durability is
// still PutFile's sync. Errors are ignored for the same reason.
func StartWriteback(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		// Offset 0 and length 0: the whole file, to its end.
		_ = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	})
}
