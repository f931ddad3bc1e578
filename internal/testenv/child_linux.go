package testenv

import (
	"os"
	"syscall"
)

// childAttr makes Azurite die with the test binary (SIGKILL on parent
// death), in its own process group so killChild can kill whatever node
// spawned.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killChild kills the child's whole process group.
func killChild(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
