//go:build !linux

package testenv

import (
	"os"
	"syscall"
)

// childAttr is nil: only Linux kills a child on its parent's death, and
// the tests run on Linux; elsewhere this package only has to build.
func childAttr() *syscall.SysProcAttr { return nil }

// killChild kills the child alone.
func killChild(p *os.Process) { _ = p.Kill() }

// userAttr is attr: the tests run as another user only on Linux.
func userAttr(attr *syscall.SysProcAttr, _, _ int, _ bool) *syscall.SysProcAttr { return attr }
