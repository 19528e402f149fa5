package explain

import (
	"looprig/rig/fault"
	"looprig/rig/storage"
)

// Skip is why a restore of a session believed crashed did nothing
// without failing (restore --all-crashed, the TUI's R): somebody else was
// first.
type Skip int

const (
	// NotSkipped: the restore succeeded, or failed for real.
	NotSkipped Skip = iota
	// SkipNotCrashed: the session is no longer crashed (another process
	// restored it, rig.OnlyIfCrashed found it so under the lease).
	SkipNotCrashed
	// SkipHeld: another process holds the session's lease right now
	// (restoring it or running it). An exclusive workspace root held by
	// another session is a failure, not this: its remedy differs.
	SkipHeld
)

// RestoreSkipped classifies the error of a restore of a session believed
// crashed: whether it was skipped because somebody else was first, and
// for SkipHeld the holder when the error names one. It works on errors
// that crossed a process boundary too (a fault.Explainer, as a host's
// start returns).
func RestoreSkipped(err error) (skip Skip, holder storage.Holder) {
	if err == nil {
		return NotSkipped, storage.Holder{}
	}
	x := Explain(err)
	switch {
	case x.Kind == fault.KindNotCrashed:
		return SkipNotCrashed, storage.Holder{}
	case x.Remedy == fault.RemedyWaitOrBreakLease:
		return SkipHeld, FactsOf(x).Holder
	}
	return NotSkipped, storage.Holder{}
}
