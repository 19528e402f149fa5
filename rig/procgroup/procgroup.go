// Package procgroup finds and stops a turn's process group on this
// machine, as someone other than the process that started it: a lease
// break that takes a session from a holder that cannot stop its turn
// itself (stopped, hung), and a restore that must not start while such a
// turn still runs.
//
// A process group is known by its id and by marks, entries of the
// environment ("LOOPRIG_TURN=…") that the turn's processes inherited: a
// group is the turn's only while one of its live processes carries every
// mark. Nothing is signalled otherwise, so a group id that the system
// reused for an unrelated group is never touched. A machine is known by its
// host name and its boot (Linux: /proc/sys/kernel/random/boot_id; Darwin:
// the boot time), so that a group id recorded on another machine, or
// before a reboot, is never looked for here.
//
// Linux reads /proc (a process's group and state in stat, its environment
// in environ); Darwin asks sysctl (kern.proc.pgrp, kern.procargs2). On
// other systems nothing is ever found or signalled: Inspect reports
// ErrUnsupported and This's boot is UnknownBoot.
//
// Limits: a process that left the group (setsid, setpgid, job control) is
// not found; the environment of a process of another user, or one that
// changed credentials, cannot be read, so such a group is never marked; a
// process that cleared its environment does not carry the marks.
package procgroup

import (
	"context"
	"errors"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// UnknownBoot is the Boot of a machine whose boot cannot be told apart
// from another: nothing recorded on it is ever looked for (Machine.Here).
const UnknownBoot = "unknown"

// Machine is where a process runs: the host name and an id of the boot.
type Machine struct {
	Host string
	Boot string
}

// This returns this machine now.
func This() Machine {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	return Machine{Host: host, Boot: bootID()}
}

// Here reports whether m is this machine in its current boot. A machine
// whose host or boot is unknown is never here.
func (m Machine) Here() bool {
	if m.Host == "" || m.Boot == "" || m.Boot == UnknownBoot {
		return false
	}
	return m == This()
}

// ErrUnsupported: this system offers no way to inspect process groups.
var ErrUnsupported = errors.New("procgroup: process groups cannot be inspected on this system")

// Group is a process group and the environment entries ("NAME=value")
// every one of which a process of the group must carry for the group to be
// the one meant.
type Group struct {
	PGID  int
	Marks []string
}

// Status is what Inspect found of a group.
type Status int

const (
	// Gone: no live (non-zombie) process is in the group.
	Gone Status = iota
	// Marked: a live process of the group carries every mark: it is the
	// group meant.
	Marked
	// Unmarked: the group has live processes, none carrying every mark (or
	// none whose environment can be read): another group that reuses the
	// id, or processes that are not the turn's to stop. Never signalled.
	Unmarked
)

func (s Status) String() string {
	switch s {
	case Gone:
		return "gone"
	case Marked:
		return "marked"
	case Unmarked:
		return "unmarked"
	}
	return "status(?)"
}

// unmarkedLooks and unmarkedWait bound how long Inspect keeps looking at
// a group it finds Unmarked before it believes it. A process in the middle
// of an execve (a turn's shell starting its command) shows the kernel's
// view of its environment empty, or cut short, for a moment, and one look
// then would leave the turn's group running as Unmarked. A group that is
// really another's (its id reused) costs those few looks.
const (
	unmarkedLooks = 10
	unmarkedWait  = 5 * time.Millisecond
)

// Inspect reports whether g has live processes and whether one of them
// carries g's marks. A group with no marks is never Marked.
func Inspect(g Group) (Status, error) {
	if g.PGID <= 1 {
		return Gone, nil
	}
	for try := 1; ; try++ {
		if err := unix.Kill(-g.PGID, 0); err == unix.ESRCH {
			return Gone, nil
		}
		st, err := inspect(g)
		if err != nil || st != Unmarked || len(g.Marks) == 0 || try == unmarkedLooks {
			return st, err
		}
		time.Sleep(unmarkedWait)
	}
}

// Dead reports whether process pid on this machine is dead or dying:
// there is no such process, it is a zombie (dead, not yet reaped by its
// parent), its exit has begun, or a SIGKILL is pending for it (sent, not
// yet acted on). A dying process still holds its files until its last
// thread is gone, and a zombie's pid looks alive to kill(pid, 0): this
// tells them apart from a live process. False when it cannot be told
// (ErrUnsupported; Darwin sees zombies and gone processes only) or pid is
// not a process id.
func Dead(pid int) (bool, error) {
	if pid <= 0 {
		return false, nil
	}
	return dead(pid)
}

// carries reports whether env, an environment ("NAME=value" entries),
// holds every mark.
func carries(env []string, marks []string) bool {
	if len(marks) == 0 {
		return false
	}
	for _, m := range marks {
		if !slices.Contains(env, m) {
			return false
		}
	}
	return true
}

// Stopped is what Stop did.
type Stopped struct {
	// Found is what the first look found: only a Marked group is
	// signalled.
	Found Status
	// Terminated and Killed report that SIGTERM and SIGKILL were sent.
	Terminated, Killed bool
	// Gone reports that no live process was left in the group when Stop
	// returned (true too when the group was gone already).
	Gone bool
}

// pollEvery is how often Stop looks whether the group is gone.
const pollEvery = 20 * time.Millisecond

// killWait bounds the wait for a SIGKILLed group to be gone: a process in
// uninterruptible sleep outlives SIGKILL until its I/O completes.
const killWait = 5 * time.Second

// Stop ends group g if it is Marked: SIGTERM to the group (and SIGCONT, so
// that a stopped process gets it), then, when a live process is still in
// it after grace, SIGKILL; each signal is sent only after a look found the
// group Marked. It waits until no live process is left, at most killWait
// after the SIGKILL, and no longer than ctx. An Unmarked group is left
// alone. The error is ctx's, or one of inspecting the group.
func Stop(ctx context.Context, g Group, grace time.Duration) (Stopped, error) {
	var out Stopped
	st, err := Inspect(g)
	out.Found = st
	switch {
	case err != nil:
		return out, err
	case st == Gone:
		out.Gone = true
		return out, nil
	case st == Unmarked:
		return out, nil
	}
	_ = unix.Kill(-g.PGID, unix.SIGTERM)
	_ = unix.Kill(-g.PGID, unix.SIGCONT)
	out.Terminated = true
	if out.Gone, err = WaitGone(ctx, g, grace); out.Gone || err != nil {
		return out, err
	}
	st, err = Inspect(g)
	switch {
	case err != nil:
		return out, err
	case st == Gone:
		out.Gone = true
		return out, nil
	case st == Unmarked:
		return out, nil // what is left is not known to be the turn's
	}
	_ = unix.Kill(-g.PGID, unix.SIGKILL)
	out.Killed = true
	out.Gone, err = WaitGone(ctx, g, killWait)
	return out, err
}

// WaitGone waits up to d (and no longer than ctx) until g has no live
// process; it reports whether it has none. It signals nothing.
func WaitGone(ctx context.Context, g Group, d time.Duration) (bool, error) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if st, err := Inspect(g); err == nil && st == Gone {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline.C:
			return false, nil
		case <-tick.C:
		}
	}
}
