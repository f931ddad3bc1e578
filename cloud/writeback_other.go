//go:build !linux

package cloud

import "os"

// StartWriteback asks the system to start writing f's dirty pages to
// disk without waiting. This system has no such call, so it does
// nothing; PutFile's sync still makes f durable.
func StartWriteback(f *os.File) {}
