//go:build linux

package host

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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
//   - pid reuse: the holder took the lease while it ran, so a process that
//     started after the lease was granted (Acquired, plus clockSlack) is
//     not the holder but another that got its pid after the holder died:
//     LivenessGone as well. The
//     start time is the kernel's (field 22, clock ticks since boot on
//     CLOCK_BOOTTIME), made a wall time with the wall clock's current
//     distance from CLOCK_BOOTTIME: 10 ms steps, where /proc/stat's btime
//     has whole seconds. A pid reused within clockSlack of the grant
//     would pass: that needs the pid space to wrap within two seconds.
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
	state, start, err := procStat(h.PID)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return rig.LivenessGone
		}
		return probeLiveness(ctx, dir, id, h, opts...)
	}
	switch {
	case state == 'Z' || state == 'X' || state == 'x':
		return rig.LivenessUnknown // maybe not all its threads yet
	case !h.Acquired.IsZero() && start.After(h.Acquired.Add(clockSlack)):
		return rig.LivenessGone // the pid is another process's now
	case state == 'T' || state == 't':
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

// procStat reads process pid's state letter and start time (wall clock)
// from /proc/PID/stat.
func procStat(pid int) (state byte, start time.Time, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, time.Time{}, err
	}
	// "pid (comm) S ppid ...": comm may hold spaces and parentheses, so
	// the fields are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, time.Time{}, errors.New("proc stat: malformed")
	}
	fields := bytes.Fields(b[i+2:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, time.Time{}, errors.New("proc stat: malformed")
	}
	ticks, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, time.Time{}, errors.New("proc stat: malformed start time")
	}
	var boot unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return 0, time.Time{}, os.NewSyscallError("clock_gettime", err)
	}
	sinceStart := time.Duration(boot.Nano()) - time.Duration(ticks)*(time.Second/userHZ)
	return fields[0][0], time.Now().Add(-sinceStart), nil
}
