package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"

	"looprig/rig"
)

// MemoryLimit is the soft limit LimitMemory sets on a host process's Go
// memory. What a host holds for its clients is bounded (doc.go, Bounds:
// about 60 MiB with 32 clients that never read), but the runtime lets its
// heap grow to twice what it found live before it collects again, so
// without a limit a host whose clients fill their budget at once peaks
// near twice that; with it, the collector runs sooner as the heap nears
// the limit (a soft one: a host that needs more, a long restore or a large
// checkpoint, gets it, collecting more often).
const MemoryLimit = 112 << 20

// LimitMemory sets the Go runtime's soft memory limit to MemoryLimit,
// unless the environment sets one (GOMEMLIMIT). `looprig host` calls it
// first.
func LimitMemory() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(MemoryLimit)
	}
}

// Run makes s's socket in the socket directory of the store named
// storeKey, reports rd (completed with the socket, pid, session and
// epoch) on rep, and serves s until ctx ends or the session ends (see
// Serve: a faulted session is shut down there). When ctx ends first — the
// host was told to stop by a signal — the session is shut down: bounded by
// the rig's shutdown grace, it journals SessionStopped and releases the
// lease, as a shutdown request does. A failure before the report is
// reported on rep (and returned), after shutting the session down.
func Run(ctx context.Context, s *rig.Session, storeKey string, rep *Reporter, rd Ready, opts ...Option) error {
	id := s.SessionID().String()
	ln, path, err := listenFor(storeKey, id)
	if err != nil {
		shutdownSession(s)
		rep.Fail(err)
		return err
	}
	st := s.Status()
	rd.Session, rd.Socket, rd.PID, rd.Epoch = id, path, os.Getpid(), s.Epoch()
	rd.Title, rd.Profile, rd.Shell, rd.Workspace = st.Title, st.Profile, st.Shell, st.Workspace
	if err := rep.Ready(rd); err != nil {
		// The client that started us is gone; we serve anyway: it was
		// asked for, and any client can attach.
		logger(opts).Warn("host: could not report ready", "err", err)
	}
	err = Serve(ctx, s, ln, opts...)
	if ctx.Err() != nil && !sessionEnded(s) {
		if serr := shutdownSession(s); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

func listenFor(storeKey, id string) (ln *net.UnixListener, path string, err error) {
	dir, err := SocketDir(storeKey)
	if err != nil {
		return nil, "", err
	}
	if path, err = SocketPath(dir, id); err != nil {
		return nil, "", err
	}
	l, err := Listen(path, true)
	if err != nil {
		return nil, "", err
	}
	return l, path, nil
}

// LogPath is where the host of session id of the store named storeKey
// logs: beside its socket, <id>.log (mode 0600).
func LogPath(storeKey, id string) (string, error) {
	dir, err := SocketDir(storeKey)
	if err != nil {
		return "", err
	}
	if _, err := SocketPath(dir, id); err != nil {
		return "", err
	}
	return filepath.Join(dir, id+".log"), nil
}

// RedirectStderr appends this process's standard error (a panic's stack
// included) to the file at path, created 0600.
func RedirectStderr(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("host log: %w", err)
	}
	defer f.Close()
	if err := dupOnto(int(f.Fd()), 2); err != nil {
		return fmt.Errorf("host log: %w", err)
	}
	return nil
}

func sessionEnded(s *rig.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// shutdownSession shuts s down within the rig's shutdown grace.
func shutdownSession(s *rig.Session) error {
	err := s.Shutdown(context.Background())
	if errors.Is(err, rig.ErrSessionClosed) {
		return nil
	}
	return err
}

// logger is the logger opts give Serve.
func logger(opts []Option) *slog.Logger {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.log
}
