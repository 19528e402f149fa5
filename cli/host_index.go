package cli

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/uuid"

	"looprig/search"
)

// indexBetweenTurns is a host's work between turns: it indexes what its
// session journaled, so that the next search finds the index up to date
// instead of reading what the turn printed. It runs `looprig search
// --update --session ID` in a process of its own, niced, whose memory
// goes with it (the host stays small between turns) and whose failure
// is not the host's; it is stopped (SIGTERM) when the next turn begins,
// what it committed kept, the rest left to the next spell or search.
func (c *call) indexBetweenTurns(id uuid.UUID, log *slog.Logger) func(context.Context) {
	argv := c.env.commandArgv(c.st, "search", "--update", "--session", id.String())
	return func(ctx context.Context) {
		unlock, ok := c.lockIndexing()
		if !ok {
			return // another host indexes now: this session is the next search's, or the next spell's
		}
		defer unlock()
		exe, err := os.Executable()
		if err != nil {
			log.Warn("host: cannot index the session for search", "err", err)
			return
		}
		cmd := exec.CommandContext(ctx, exe, argv...)
		cmd.Stderr = os.Stderr // the host's log
		cmd.SysProcAttr = indexProcAttr()
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = indexStopDelay
		start := time.Now()
		if err := cmd.Start(); err != nil {
			log.Warn("host: cannot index the session for search", "err", err)
			return
		}
		// Below the session's own turns and the user's work.
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, indexNice)
		err = cmd.Wait()
		switch {
		case err == nil:
			log.Debug("host: indexed for search", "took", time.Since(start))
		case ctx.Err() != nil:
			// A turn began, or the host stops: the rest is for later.
		default:
			log.Info("host: indexing for search failed (the next search indexes the session)", "err", err)
		}
	}
}

// indexNice is the niceness of a host's indexing process.
const indexNice = 10

// indexStopDelay is how long a host's indexing process has to stop
// after SIGTERM (it ends its slice) before it is killed.
const indexStopDelay = 5 * time.Second

// lockIndexing takes the store's indexing lock (indexingLock beside the
// search index) without waiting: one host of a store indexes at a time,
// so that turns ending together in many sessions (a command sent to a
// hundred) start one indexing process, not a hundred that wait for the
// index's lock. ok is false when another host has it, or when there is
// no index directory to lock in.
func (c *call) lockIndexing() (unlock func(), ok bool) {
	path, err := search.Path(c.st, search.Options{})
	if err != nil {
		return nil, false
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(dir, indexingLock), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true // closing releases the lock
}

// indexingLock is the file beside the search index whose flock a host
// holds while its indexing process runs.
const indexingLock = "indexing.lock"
