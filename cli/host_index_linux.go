package cli

import "syscall"

// indexProcAttr makes a host's indexing process die with the host: a host
// killed (SIGKILL) leaves no process writing the store's index.
func indexProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
