//go:build !linux

package cli

import "syscall"

// indexProcAttr: without Linux's parent-death signal, a host's indexing
// process ends on its own (its slices are bounded) when its host is
// killed.
func indexProcAttr() *syscall.SysProcAttr { return nil }
