package procgroup

import (
	"errors"
	"fmt"
)

// ErrNoProcess: the process is gone (or is a zombie: it runs nothing any
// more).
var ErrNoProcess = errors.New("procgroup: no such process")

// Process is what this machine says of one process.
type Process struct {
	PID, PPID, PGID int
	// Start is when it started, in the system's own unit (Linux: clock
	// ticks after boot; Darwin: microseconds after the epoch): a process
	// that got a pid the system gave before to another one has another.
	Start uint64
	// Terminal reports that it has a controlling terminal.
	Terminal bool
}

// Look returns what this machine says of process pid now: *ErrNoProcess
// (wrapped) when it is gone or a zombie, ErrUnsupported on systems whose
// processes cannot be inspected.
func Look(pid int) (Process, error) {
	if pid <= 0 {
		return Process{}, fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	}
	return look(pid)
}

// maxAncestors bounds the walk from a process up to init.
const maxAncestors = 256

// Where says how Inside found a process inside the turn.
type Where int

const (
	// Outside: neither the process nor any of its ancestors is the
	// turn's.
	Outside Where = iota
	// Carries: the process, or the ancestor Inside names, carries every
	// mark of the group (it inherited the turn's environment).
	Carries
	// InGroup: the process, or that ancestor, is in the group while the
	// group is Marked (Inspect): its environment was cleared, but it did
	// not leave the turn's process group.
	InGroup
)

func (w Where) String() string {
	switch w {
	case Outside:
		return "outside"
	case Carries:
		return "carries"
	case InGroup:
		return "in_group"
	}
	return "where(?)"
}

// Inside reports whether process pid runs inside the turn of group g, by
// the rule by which Inspect recognises the turn's processes: the process
// or one of its ancestors carries every mark of g, or is in group g.PGID
// while a live process of the group carries them (g.PGID 0: the turn has
// no group, only the marks count). It returns how, and the pid of the
// process found (pid itself or an ancestor). A process whose parent is
// gone was re-parented (to init or a subreaper) and is judged by what it
// is and what its new ancestors are. *ErrNoProcess when pid is gone;
// ErrUnsupported on systems whose processes cannot be inspected.
//
// Not found inside: a process that left the turn's group (setsid) and
// cleared its environment, once every ancestor that carried the marks
// has exited; and anything another process (not a descendant of the
// turn) does on its behalf. See the package's limits.
func Inside(pid int, g Group) (Where, int, error) {
	p, err := Look(pid)
	if err != nil {
		return Outside, 0, err
	}
	groupMarked := -1 // not looked at yet; then 0 or 1
	for range maxAncestors {
		if env, ok := processEnviron(p.PID); ok && carries(env, g.Marks) {
			return Carries, p.PID, nil
		}
		if g.PGID > 1 && p.PGID == g.PGID {
			if groupMarked < 0 {
				st, err := Inspect(g)
				if err != nil {
					return Outside, 0, err
				}
				groupMarked = 0
				if st == Marked {
					groupMarked = 1
				}
			}
			if groupMarked == 1 {
				return InGroup, p.PID, nil
			}
		}
		if p.PPID <= 1 {
			return Outside, 0, nil
		}
		if p, err = Look(p.PPID); err != nil {
			if errors.Is(err, ErrNoProcess) {
				return Outside, 0, nil // the parent went meanwhile: nothing above it to judge
			}
			return Outside, 0, err
		}
	}
	return Outside, 0, nil
}
