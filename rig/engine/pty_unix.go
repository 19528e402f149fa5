//go:build linux || darwin

package engine

// Pseudo-terminal plumbing of the shell engine and the Console: opening a
// pty pair, its termios and window size, its foreground process group.

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// vdisable is _POSIX_VDISABLE: a control character slot holding it is off.
const vdisable = 0

// termState is what the Console needs of the terminal's attributes.
type termState struct {
	echo, isig, icanon bool
	vintr, veof        byte
}

// control runs fn on f's descriptor without taking it out of the runtime
// poller (f.Fd would switch it to blocking mode).
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// openPTY opens a pty pair. The master is non-blocking and in the runtime
// poller, so that reads and writes can be bounded by deadlines. The slave,
// for the turn's stdin, stdout and stderr, has output post-processing
// without ONLCR: a "\n" written by the turn arrives as "\n", as through a
// pipe, not as "\r\n".
func openPTY() (master, slave *os.File, err error) {
	m, s, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	// pty.Open's ioctls go through m.Fd(), which puts the master in
	// blocking mode: no deadlines, and a blocked read or write holds a
	// thread. A duplicate of the descriptor, made non-blocking, joins the
	// poller (os.NewFile sees O_NONBLOCK).
	nfd := -1
	err = control(m, func(fd int) error {
		var e error
		nfd, e = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		return e
	})
	_ = m.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("pty: dup master: %w", err)
	}
	if err = unix.SetNonblock(nfd, true); err != nil {
		_ = unix.Close(nfd)
		return nil, nil, fmt.Errorf("pty: non-blocking master: %w", err)
	}
	master = os.NewFile(uintptr(nfd), "/dev/ptmx")
	if err = master.SetReadDeadline(time.Time{}); err != nil {
		_ = master.Close()
		return nil, nil, fmt.Errorf("pty: master not pollable: %w", err)
	}
	err = control(s, func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
		if err != nil {
			return err
		}
		t.Oflag &^= unix.ONLCR
		return unix.IoctlSetTermios(fd, ioctlSetTermios, t)
	})
	if err != nil {
		_ = master.Close()
		return nil, nil, fmt.Errorf("pty: set termios: %w", err)
	}
	return master, s, nil
}

// getTermState reads the terminal's attributes through the master (on Linux
// and macOS the master reports the pair's termios).
func getTermState(f *os.File) (termState, error) {
	var st termState
	err := control(f, func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
		if err != nil {
			return err
		}
		st = termState{
			echo:   t.Lflag&unix.ECHO != 0,
			isig:   t.Lflag&unix.ISIG != 0,
			icanon: t.Lflag&unix.ICANON != 0,
			vintr:  t.Cc[unix.VINTR],
			veof:   t.Cc[unix.VEOF],
		}
		return nil
	})
	return st, err
}

// setWinsize sets the terminal's window size (TIOCSWINSZ on the master: the
// kernel signals SIGWINCH to the foreground process group on a change).
func setWinsize(f *os.File, cols, rows int) error {
	return control(f, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	})
}

// foregroundPgrp returns the terminal's foreground process group (0 when
// the terminal has no session any more).
func foregroundPgrp(f *os.File) (int, error) {
	pg := 0
	err := control(f, func(fd int) error {
		var e error
		pg, e = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		return e
	})
	return pg, err
}

// killGroup sends sig to process group pg, never to this process's own
// group.
func killGroup(pg int, sig syscall.Signal) error {
	if pg <= 1 || pg == unix.Getpgrp() {
		return fmt.Errorf("refusing to signal process group %d", pg)
	}
	return unix.Kill(-pg, sig)
}
