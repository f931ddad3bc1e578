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

// userAttr is attr (nil for none) running the child as uid:gid when as is
// set. Go sets the parent-death signal after the credentials, so it holds.
func userAttr(attr *syscall.SysProcAttr, uid, gid int, as bool) *syscall.SysProcAttr {
	if !as {
		return attr
	}
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return attr
}
