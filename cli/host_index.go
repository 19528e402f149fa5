package cli

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/google/uuid"
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
