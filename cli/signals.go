package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// interrupts turns SIGINT and SIGTERM into a context (the first signal)
// and a force channel (the second): commands wind down cleanly on the
// first and give up waiting on the second.
type interrupts struct {
	ctx    context.Context
	force  <-chan struct{}
	cancel context.CancelFunc
	stopCh chan struct{}
	done   chan struct{}
	ch     chan os.Signal
}

func notifyInterrupts() *interrupts {
	ctx, cancel := context.WithCancel(context.Background())
	force := make(chan struct{})
	in := &interrupts{ctx: ctx, force: force, cancel: cancel,
		stopCh: make(chan struct{}), done: make(chan struct{}), ch: make(chan os.Signal, 2)}
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer close(in.done)
		n := 0
		for {
			select {
			case <-in.ch:
				n++
				if n == 1 {
					cancel()
				} else if n == 2 {
					close(force)
				}
			case <-in.stopCh:
				return
			}
		}
	}()
	return in
}

// stop stops listening for signals; it waits for the listener to end.
func (in *interrupts) stop() {
	signal.Stop(in.ch)
	close(in.stopCh)
	<-in.done
	in.cancel()
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), termiosGet)
	return err == nil
}

// waitReadable waits until f has data (or EOF) to read, polling so that
// ctx can stop it.
func waitReadable(ctx context.Context, f *os.File) error {
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := unix.Poll(fds, 100)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// readLine reads one line from f (a terminal in canonical mode delivers a
// line per read), stopping early when ctx ends.
func readLine(ctx context.Context, f *os.File) (string, error) { return readLineTo(ctx, f, "") }

// readLineTo is readLine where each byte of keys ends a line too (a
// terminal's VEOL, VEOL2: attach's keys); such a line is returned with
// the key at its end.
func readLineTo(ctx context.Context, f *os.File, keys string) (string, error) {
	var line []byte
	buf := make([]byte, 256)
	for {
		if err := waitReadable(ctx, f); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		line = append(line, buf[:n]...)
		for i, c := range line {
			if c == '\n' {
				return string(line[:i]), nil
			}
			if strings.IndexByte(keys, c) >= 0 {
				return string(line[:i+1]), nil
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return string(line), io.EOF
			}
			return "", err
		}
		if n == 0 {
			return string(line), io.EOF
		}
		if len(line) > 4096 {
			return string(line), nil
		}
	}
}

// waitEOF returns when f reaches end of file or ctx ends, reading and
// discarding what comes.
func waitEOF(ctx context.Context, f *os.File) error {
	buf := make([]byte, 512)
	for {
		if err := waitReadable(ctx, f); err != nil {
			return err
		}
		n, err := f.Read(buf)
		if err != nil || n == 0 {
			return nil
		}
	}
}
