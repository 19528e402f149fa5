// Package procstart tells a process from one that got its pid later: the
// kernel's start time of a process, in clock ticks since boot
// (/proc/PID/stat, field 22), and the boot it counts from (the kernel's
// boot_id). A pid and these two name one process for the life of the
// machine, whatever its wall clock does: a lease's holder record carries
// them (storage.Holder.Started, Boot), and a listing that finds the pid
// running with another start knows the holder is gone
// (host.HolderLiveness). Where there is no /proc (not Linux) they are
// unknown: zero.
package procstart

// Stamp is a process's start and the boot it counts from; the zero Stamp
// is unknown.
type Stamp struct {
	Ticks uint64 // clock ticks (USER_HZ) since boot
	Boot  string // the kernel's boot_id
}
