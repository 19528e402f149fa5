//go:build !linux

package procstart

import "errors"

// Self is this process's Stamp: unknown here.
func Self() Stamp { return Stamp{} }

// Boot is the kernel's boot id: unknown here.
func Boot() string { return "" }

// ErrMalformed is a /proc/PID/stat this package cannot read.
var ErrMalformed = errors.New("procstart: malformed /proc/PID/stat")

// Of is unsupported where there is no /proc.
func Of(pid int) (state byte, ticks uint64, err error) {
	return 0, 0, errors.ErrUnsupported
}
