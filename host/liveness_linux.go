//go:build linux

package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"looprig/internal/procstart"
	"looprig/rig"
	"looprig/rig/storage"
)

// userHZ is the unit of the times in /proc/PID/stat: USER_HZ, which the
// kernel fixes at 100 for user space on every architecture Go supports on
// Linux (CONFIG_HZ may differ; the ABI does not).
const userHZ = 100

// clockSlack is how far apart two wall-clock readings of this machine may
// be taken to agree: a process's start time (10 ms steps) against its
// lease's Acquired, and a socket file's change time (the kernel's coarse
// clock) against it.
const clockSlack = 2 * time.Second

// procReadable says whether this process can read the process table
// (/proc mounted, and its own entry readable).
var procReadable = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
})

// HolderLiveness says whether h, the holder of session id's lease on this
// machine, serves the session from socket directory dir, without a
// connection to it: a listing of a thousand held sessions wakes no host.
// It reads the holder's /proc/PID/stat and stats its socket:
//
//   - No such process is LivenessGone: its lease's lock went with it (the
//     store lists the lease free without reading its lock table:
//     storage.VouchGone). A zombie (Z) or dead (X) one is
//     LivenessUnknown, not gone: /proc/PID/stat is the thread group's
//     leader, which is a zombie as soon as it has exited while the
//     group's other threads may still be exiting, holding the descriptor
//     table and so the lock; the store's lock table says.
//   - pid reuse: the lease's record names its holder's start (Started,
//     Boot: clock ticks since boot, and the boot; internal/procstart), so
//     a process with the pid and another start, or on another boot, is
//     not the holder but one that got its pid after the holder died:
//     LivenessGone as well. A record without them (a grant by a looprig
//     from before them) is judged by the wall clock: a process that
//     started after the lease was granted (Acquired, plus clockSlack) is
//     LivenessUnknown, and the lock table says. Not gone: the start is
//     made a wall time with the wall clock's current distance from
//     CLOCK_BOOTTIME, so a wall clock stepped forward since the grant
//     (NTP, a virtual machine resumed) makes a live holder look younger
//     than its lease.
//   - Stopped (T, t: SIGSTOP, a debugger): LivenessStopped. It holds the
//     lease and answers nobody.
//   - The socket: a host makes its socket after it took the lease
//     (Run), so the session's socket file must be a socket changed no
//     earlier than Acquired (less clockSlack); one left by an earlier
//     holder that was killed is older than the lease. Without it (a host
//     still restoring the session, a process holding the lease without
//     serving it) the answer is LivenessUnknown: held, not attachable.
//
// Where the process table cannot be read it connects as listings did
// (probeLiveness).
func HolderLiveness(ctx context.Context, dir, id string, h storage.Holder, opts ...DialOption) rig.Liveness {
	if h.PID <= 0 {
		return rig.LivenessUnknown
	}
	if !procReadable() {
		return probeLiveness(ctx, dir, id, h, opts...)
	}
	state, ticks, err := procstart.Of(h.PID)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return rig.LivenessGone
		}
		return probeLiveness(ctx, dir, id, h, opts...)
	}
	switch {
	case state == 'Z' || state == 'X' || state == 'x':
		return rig.LivenessUnknown // maybe not all its threads yet
	case h.Started != 0:
		if boot := procstart.Boot(); h.Started != ticks || h.Boot != "" && boot != "" && h.Boot != boot {
			return rig.LivenessGone // the pid is another process's now
		}
	case !h.Acquired.IsZero() && wallStart(ticks).After(h.Acquired.Add(clockSlack)):
		return rig.LivenessUnknown // another process's pid now, or the wall clock moved: the lock table says
	}
	if state == 'T' || state == 't' {
		return rig.LivenessStopped
	}
	path, err := SocketPath(dir, id)
	if err != nil {
		return rig.LivenessUnknown
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return rig.LivenessUnknown
	}
	if ctime := time.Unix(st.Ctim.Unix()); !h.Acquired.IsZero() && ctime.Before(h.Acquired.Add(-clockSlack)) {
		return rig.LivenessUnknown // a socket an earlier holder left
	}
	return rig.LivenessServing
}

// wallStart makes a start in clock ticks since boot a wall time, with the
// wall clock's current distance from CLOCK_BOOTTIME (10 ms steps, where
// /proc/stat's btime has whole seconds); the zero time if that clock
// cannot be read.
func wallStart(ticks uint64) time.Time {
	var boot unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return time.Time{}
	}
	sinceStart := time.Duration(boot.Nano()) - time.Duration(ticks)*(time.Second/userHZ)
	return time.Now().Add(-sinceStart)
}
