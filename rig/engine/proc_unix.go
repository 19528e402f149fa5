//go:build linux || darwin

package engine

// Process handling of the shell engine.
//
// Each turn is two processes:
//
//   - the turn: /bin/sh -c turnScript looprig-turn SHELL INPUT, started with
//     setsid, so its pid is the id of a new session and process group
//     (pgid). On a pty (the default) it is started with Setctty too: the
//     slave, its fds 0, 1 and 2, becomes its controlling terminal and its
//     group the terminal's foreground group. With NoTTY it has no
//     controlling terminal, stdin /dev/null and stdout, stderr on pipes.
//     It waits for a go-ahead line on fd 3, then execs SHELL -c INPUT
//     (same pid; SHELL is Config.Shell): from then on it is exactly
//     "SHELL -c INPUT", with default signal dispositions.
//   - the watcher: /bin/sh -c watchScript looprig-watch PGID, in a session
//     of its own, with stdin on a pipe whose only writer is this process
//     (close-on-exec, so no other child holds it). It reads one line. "done"
//     means the turn ended normally. EOF means this process died (any
//     death, SIGKILL included: the kernel closes its descriptors): the
//     watcher SIGKILLs the turn's process group.
//
// Order in Run: open the pty and attach it to the turn's Console (which
// sets its size), start the turn (blocked on the go-ahead), close this
// process's copies of the child's ends (the slave, or the pipes' write
// ends), start the reader(s) of the master or the pipes, start the watcher
// with the turn's pgid, call Turn.Started with it (an error: no go-ahead),
// then write the go-ahead. If this process dies
// before the go-ahead, the turn reads EOF on fd 3 and exits without running
// anything; after it, the watcher is armed.
//
// End of a turn: wait for the leader to exit without reaping it (Linux:
// waitid WNOWAIT; Darwin: kqueue NOTE_EXIT; the unreaped leader keeps its
// pid, hence the pgid, from being reused while we signal the group), SIGKILL the group (whatever the shell
// left in the background), detach the Console (its Interrupt may signal the
// group up to here, while the pgid cannot be reused), tell the watcher
// "done", reap the leader, wait until no live process is left in the group,
// then drain the master (until EIO: no slave descriptor left) or the pipes
// (until EOF), and close the master.
//
// Interrupt: SIGTERM to the group; once the leader exited and no live
// (non-zombie) member is left, the interrupt is over; when ShellGrace passes
// first, SIGKILL to the group.
//
// Limits: a process that leaves the group (setsid, setpgid, job control) is
// not followed; only cgroups could. If it keeps the slave or the output
// pipes open, Run stops reading after a short drain period instead of
// hanging. Watching costs one extra short-lived /bin/sh per turn. A process
// stuck in uninterruptible sleep outlives SIGKILL until its I/O completes
// (Run waits up to reapTimeout for it).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// turnScript: $1 is the shell, $2 the input. The go-ahead arrives on
	// fd 3.
	turnScript = `read -r go <&3 || exit 125; exec 3<&-; exec "$1" -c "$2"`
	// turnScriptInteractive is turnScript for Config.ShellInteractive:
	// "SHELL -i -c INPUT".
	turnScriptInteractive = `read -r go <&3 || exit 125; exec 3<&-; exec "$1" -i -c "$2"`
	// watchScript: $1 is the turn's process group id; stdin is the pipe
	// from this process.
	watchScript = `trap '' HUP INT QUIT TERM PIPE; read -r l; [ "$l" = done ] || kill -s KILL -- "-$1" 2>/dev/null; exit 0`

	readSize     = 32 << 10              // bytes per read, hence per Output chunk (plus inserted newlines)
	pollInterval = 20 * time.Millisecond // group liveness polling
	reapTimeout  = 5 * time.Second       // wait for a SIGKILLed group / the watcher
	drainMin     = 200 * time.Millisecond
	drainMax     = 5 * time.Second
)

func (s *shell) run(ctx context.Context, turn Turn, sink Sink) (Result, error) {
	none := Result{ExitCode: NoExitCode}
	var files openFiles
	defer files.close()
	goR, goW, err := files.pipe()
	if err != nil {
		return none, fmt.Errorf("engine shell: %w", err)
	}
	watchR, watchW, err := files.pipe()
	if err != nil {
		return none, fmt.Errorf("engine shell: %w", err)
	}

	tio, err := s.command(turn, &files, goR)
	if err != nil {
		return none, err
	}
	cmd, console, master, outputs := tio.cmd, tio.console, tio.master, tio.outputs
	if console != nil {
		defer console.detach(master) // early returns; normally detached below
	}
	err = cmd.Start()
	for _, f := range tio.childEnds {
		_ = f.Close()
	}
	if err != nil {
		return none, fmt.Errorf("engine shell: start: %w", err)
	}
	pgid := cmd.Process.Pid
	if console != nil {
		console.started(pgid)
	}

	out := &output{sink: sink}
	maxLine := s.maxLine
	if console != nil {
		maxLine = 0 // a terminal's bytes are passed exactly: see Run's doc (engine.go)
	}
	for i, f := range outputs { // pty: one output, stdout and stderr merged
		out.read(f, []Stream{Stdout, Stderr}[i], maxLine)
	}

	exited := make(chan struct{})
	go func() {
		waitExit(pgid)
		close(exited)
	}()

	watcher, watchErr := startWatcher(pgid, watchR)

	interruptedTurn := false
	var startedErr error // Turn.Started refused the turn
	if watchErr == nil && ctx.Err() == nil && turn.Started != nil {
		startedErr = turn.Started(pgid)
	}
	ran := watchErr == nil && ctx.Err() == nil && startedErr == nil
	if ran {
		_, _ = goW.Write([]byte("go\n"))
		_ = goW.Close()
		select {
		case <-exited:
		case <-ctx.Done():
			interruptedTurn = true
			s.terminate(pgid, exited)
		}
	} else {
		// No go-ahead: the turn exits 125 without running the input.
		_ = goW.Close()
		interruptedTurn = watchErr == nil && startedErr == nil
	}
	<-exited
	// The leader is a zombie we have not reaped: its pgid cannot be reused.
	_ = unix.Kill(-pgid, unix.SIGKILL) // whatever the shell left behind
	if console != nil {
		console.detach(master) // before the reap: Interrupt may signal the group until now
	}
	if watchErr == nil {
		disarm(watcher, watchW)
	}
	_ = cmd.Wait() // reap; the status is in cmd.ProcessState
	waitGone(pgid)
	out.drain()

	if watchErr != nil {
		return none, fmt.Errorf("engine shell: start watcher: %w", watchErr)
	}
	if startedErr != nil {
		return none, fmt.Errorf("engine shell: %w", startedErr)
	}
	res := none
	if ran {
		res.ExitCode = exitCode(cmd.ProcessState)
	}
	if interruptedTurn {
		return res, interrupted(ctx, "shell")
	}
	return res, nil
}

// openFiles are the descriptors a turn's run opened: all closed when the
// run returns.
type openFiles []*os.File

// pipe opens a pipe whose ends are closed with the others.
func (fs *openFiles) pipe() (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err == nil {
		*fs = append(*fs, r, w)
	}
	return r, w, err
}

// close closes every descriptor opened.
func (fs *openFiles) close() {
	for _, f := range *fs {
		_ = f.Close()
	}
}

// turnIO is a turn's process wired, not started yet: its command, the
// descriptors only the child keeps (closed here once it started, so that
// EOF, or EIO for a pty, marks the end of its output), what the engine
// reads (the master, or the stdout and stderr pipes), and on a pty the
// console attached to the master.
type turnIO struct {
	cmd       *exec.Cmd
	childEnds []*os.File
	outputs   []*os.File
	console   *Console // attached (pty mode only)
	master    *os.File
}

// command wires the turn's process: turnScript in a session of its own,
// waiting for the go-ahead on goR, its output on pipes (NoTTY) or on a
// pty whose slave is its controlling terminal (the turn's Console
// attached to the master before the start). Its errors are the engine's.
func (s *shell) command(turn Turn, files *openFiles, goR *os.File) (*turnIO, error) {
	script := turnScript
	if s.interactive {
		script = turnScriptInteractive
	}
	cmd := exec.Command("/bin/sh", "-c", script, "looprig-turn", s.path, turn.Input)
	cmd.Dir = turn.Dir
	cmd.Env = os.Environ()
	cmd.ExtraFiles = []*os.File{goR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	tio := &turnIO{cmd: cmd, childEnds: []*os.File{goR}}
	if s.noTTY {
		outR, outW, err := files.pipe()
		if err != nil {
			return nil, fmt.Errorf("engine shell: %w", err)
		}
		errR, errW, err := files.pipe()
		if err != nil {
			return nil, fmt.Errorf("engine shell: %w", err)
		}
		cmd.Stdout = outW // *os.File: handed to the child as is, no copying goroutine
		cmd.Stderr = errW
		tio.childEnds = append(tio.childEnds, outW, errW)
		tio.outputs = []*os.File{outR, errR}
	} else {
		m, slave, err := openPTY()
		if err != nil {
			return nil, fmt.Errorf("engine shell: %w", err)
		}
		master := m
		*files = append(*files, master, slave)
		console := turn.Console
		if console == nil {
			console = NewConsole(0, 0)
		}
		// Before the start: the turn starts with the console's size, and
		// input written from now on waits in the pty for the turn to read.
		if err := console.attach(master); err != nil {
			return nil, fmt.Errorf("engine shell: %w", err)
		}
		tio.console, tio.master = console, master
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		// Setsid + Setctty: a session leader whose controlling terminal is
		// the slave (fd 0 in the child), its group the foreground group.
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
		cmd.Env = append(cmd.Env, "TERM="+s.term)
		tio.childEnds = append(tio.childEnds, slave)
		tio.outputs = []*os.File{master}
	}
	cmd.Env = append(cmd.Env, turn.Env...)
	return tio, nil
}

// startWatcher starts the watcher of process group pgid, reading watchR
// (closed here once it started).
func startWatcher(pgid int, watchR *os.File) (*exec.Cmd, error) {
	watcher := exec.Command("/bin/sh", "-c", watchScript, "looprig-watch", strconv.Itoa(pgid))
	watcher.Dir = "/" // pin no directory
	watcher.Stdin = watchR
	watcher.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	watchErr := watcher.Start()
	_ = watchR.Close()
	return watcher, watchErr
}

// terminate interrupts the group: SIGTERM, then SIGKILL if the group is not
// gone after the grace period.
func (s *shell) terminate(pgid int, exited <-chan struct{}) {
	_ = unix.Kill(-pgid, unix.SIGTERM)
	grace := time.NewTimer(s.grace)
	defer grace.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	leaderGone := false
	for {
		select {
		case <-exited:
			leaderGone, exited = true, nil
			if !groupAlive(pgid) {
				return
			}
		case <-tick.C:
			if leaderGone && !groupAlive(pgid) {
				return
			}
		case <-grace.C:
			_ = unix.Kill(-pgid, unix.SIGKILL)
			return
		}
	}
}

// disarm tells the watcher the turn ended normally and reaps it.
func disarm(watcher *exec.Cmd, w *os.File) {
	_, _ = w.Write([]byte("done\n"))
	_ = w.Close()
	done := make(chan struct{})
	go func() {
		_ = watcher.Wait()
		close(done)
	}()
	t := time.NewTimer(reapTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = watcher.Process.Kill()
		<-done
	}
}

// waitGone waits (bounded by reapTimeout) until no live process is left in
// the process group.
func waitGone(pgid int) {
	deadline := time.Now().Add(reapTimeout)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return NoExitCode
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// output reads a turn's pipes and delivers to the sink, one call at a time.
type output struct {
	mu      sync.Mutex
	sink    Sink
	readers []*reader
}

// reader is one of a turn's outputs being read: done closes once its
// goroutine returned (EOF, EIO, an error or a read deadline).
type reader struct {
	f    *os.File
	done chan struct{}
}

func (r *reader) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (o *output) deliver(stream Stream, b []byte) {
	if len(b) == 0 {
		return
	}
	text := string(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sink.Output(stream, text)
}

// read starts a goroutine delivering what f yields until EOF, an error or a
// read deadline, its lines bounded to maxLine bytes (≤ 0: not bounded).
func (o *output) read(f *os.File, stream Stream, maxLine int) {
	r := &reader{f: f, done: make(chan struct{})}
	o.readers = append(o.readers, r)
	go func() {
		defer close(r.done)
		sp := splitter{max: maxLine}
		buf := make([]byte, readSize)
		held := 0 // bytes of an incomplete UTF-8 sequence kept at buf[0:]
		for {
			n, err := f.Read(buf[held:])
			data := buf[:held+n]
			if err != nil {
				o.deliver(stream, sp.split(data))
				return
			}
			keep := incompleteTail(data)
			o.deliver(stream, sp.split(data[:len(data)-keep]))
			held = copy(buf, data[len(data)-keep:])
		}
	}()
}

// drain waits for the readers to reach their end. The group is gone by
// now, so an output's end comes once the kernel handed over what the group
// wrote, unless a process that left the group still holds it: such an
// output, once nothing is waiting in it, stops being read. After drainMax
// every output stops being read.
func (o *output) drain() {
	first := time.NewTimer(drainMin)
	defer first.Stop()
	if o.wait(first.C) {
		return
	}
	deadline := time.Now().Add(drainMax)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for !o.wait(tick.C) {
		late := !time.Now().Before(deadline)
		for _, r := range o.readers {
			if !r.finished() && (late || !pending(r.f)) {
				_ = r.f.SetReadDeadline(time.Now())
			}
		}
	}
}

// wait returns true once every reader finished, false when tick fires
// first.
func (o *output) wait(tick <-chan time.Time) bool {
	for _, r := range o.readers {
		select {
		case <-r.done:
		case <-tick:
			return false
		}
	}
	return true
}

// pending reports whether more is to come from f: bytes waiting in it, or
// no writer left (its EOF, or a pty master's EIO, is still to be read).
// Poll answers both, and on Linux it also counts a pty's output still in
// the kernel's flip buffer, which FIONREAD alone misses: on a loaded
// machine that cut the last bytes of a turn's output. FIONREAD remains for
// a descriptor poll cannot answer.
func pending(f *os.File) bool {
	rc, err := f.SyscallConn() // unlike Fd, keeps the file non-blocking
	if err != nil {
		return false
	}
	more := false
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0 {
			more = true
			return
		}
		n, _ := unix.IoctlGetInt(int(fd), ioctlInQueue)
		more = n > 0
	})
	return more
}
