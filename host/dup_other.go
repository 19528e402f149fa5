//go:build !linux

package host

import "golang.org/x/sys/unix"

// dupOnto makes descriptor to a copy of from.
func dupOnto(from, to int) error { return unix.Dup2(from, to) }
