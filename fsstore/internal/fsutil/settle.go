package fsutil

import "time"

// Stamps from file times. The kernel stamps a file's times from a clock
// that ticks in steps of a few milliseconds, and some file systems keep
// whole seconds, so two changes may leave the same time. A time is
// trusted as a stamp (a later change will leave another) only once it is
// older than several ticks (ChangeSettle), or, when it has no
// nanoseconds, than two seconds (CoarseChangeSettle): as git treats a
// file modified in the second its index was written. The store's change
// and durable stamps, the lease watchdog's look at an epoch file and
// dnotify's watch of a directory's entries all go by it.
const (
	ChangeSettle       = 100 * time.Millisecond
	CoarseChangeSettle = 2100 * time.Millisecond
)

// Settled reports whether a change at t is old enough, at now, that the
// next change will leave another time.
func Settled(t, now time.Time) bool {
	if t.Nanosecond() == 0 {
		return now.Sub(t) >= CoarseChangeSettle
	}
	return now.Sub(t) >= ChangeSettle
}
