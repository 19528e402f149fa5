package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"looprig/config"
	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/tui"

	"github.com/google/uuid"
)

// startTimeout bounds how long a client waits for a host it started to
// serve: a restore replays the journal first.
const startTimeout = 2 * time.Minute

// storeKey names the store's socket directory (host.SocketDir): its
// canonical local directory, the same for every process on this machine
// that opens the store, however --store spells it.
func storeKey(st *openedStore) (string, error) {
	dir, err := filepath.EvalSymlinks(st.LocalDir())
	if err != nil {
		return "", fmt.Errorf("store %s: %w", textsafe.Line(st.Dir()), err)
	}
	return dir, nil
}

// checkSocketDir checks that a host of this store could serve a session
// (host.CheckSocketDir), before anything is created or restored for one.
func checkSocketDir(st *openedStore) error {
	key, err := storeKey(st)
	if err != nil {
		return err
	}
	_, err = host.CheckSocketDir(key)
	return err
}

// hostArgv is the command line of a host for the store this invocation
// opened: "host", the store and configuration as given (made absolute: a
// host runs in /), then args.
func (e *env) hostArgv(st *openedStore, args ...string) []string {
	return e.commandArgv(st, "host", args...)
}

// commandArgv is the arguments of a looprig process this one starts to
// run command name on the same store with the same configuration.
func (e *env) commandArgv(st *openedStore, name string, args ...string) []string {
	argv := []string{name, "--store", st.Dir()}
	if e.configSet {
		cfg := e.configPath
		if abs, err := filepath.Abs(cfg); err == nil {
			cfg = abs
		}
		argv = append(argv, "--config", cfg)
	}
	return append(argv, args...)
}

// startHost starts a detached host (looprig host ...args) and waits until
// it serves its session. It warns first (not in --json) when logind will
// kill the host at logout. A restore that brings the workspace back from
// its checkpoint draws its progress on the terminal, as this process's
// own restore would.
func (c *call) startHost(ctx context.Context, st *openedStore, args ...string) (host.Ready, error) {
	c.warnIfLogindKillsHosts()
	bar := newProgressBar(c.stderr, materializeWhat)
	defer bar.finish()
	return c.env.startDetachedHost(ctx, st, hostProgress(bar), args...)
}

// startDetachedHost starts a detached host (looprig host ...args) and
// waits until it serves its session; progress (may be nil) is told what
// the host reports of its restore meanwhile. An unusable socket directory
// fails it before the host starts: nothing is created, restored or taken.
func (e *env) startDetachedHost(ctx context.Context, st *openedStore, progress func(host.Progress), args ...string) (host.Ready, error) {
	if err := checkSocketDir(st); err != nil {
		return host.Ready{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return host.Start(ctx, host.StartSpec{Args: e.hostArgv(st, args...), Progress: progress})
}

// tuiStartHost is the TUI's way to start hosts.
func (e *env) tuiStartHost(st *openedStore, cfg *config.Config) func(ctx context.Context, req tui.HostRequest) (host.Ready, error) {
	return func(ctx context.Context, req tui.HostRequest) (host.Ready, error) {
		if req.Fork != "" {
			return e.tuiFork(ctx, st, cfg, req)
		}
		var args []string
		if req.Session == "" {
			args = append(args, "--new", "--title", req.Title)
			if req.Profile != "" {
				args = append(args, "--rig", req.Profile)
			}
			if req.Seed != "" {
				args = append(args, "--seed", req.Seed)
			}
			switch {
			case req.Scratch:
				args = append(args, "--scratch")
			case req.Dir != "":
				args = append(args, "--dir", req.Dir)
			}
			if req.Worktree {
				args = append(args, "--worktree")
			}
		} else {
			if req.AcceptDrift {
				args = append(args, "--accept-drift", "--accepted-by", tuiAcceptSource)
			}
			if req.OnlyIfCrashed {
				args = append(args, "--only-crashed")
			}
			switch req.Workspace {
			case rig.WorkspaceKeep:
				args = append(args, "--keep-workspace")
			case rig.WorkspaceUseCheckpoint:
				args = append(args, "--use-checkpoint")
			}
			args = append(args, req.Session)
		}
		return e.startDetachedHost(ctx, st, req.Progress, args...)
	}
}

// tuiFork makes the fork req asks for here (forkIt, as `looprig fork`
// does), then starts a host that serves it; the TUI attaches to it as to
// a session it created.
func (e *env) tuiFork(ctx context.Context, st *openedStore, cfg *config.Config, req tui.HostRequest) (host.Ready, error) {
	id, err := uuid.Parse(req.Fork)
	if err != nil {
		return host.Ready{}, err
	}
	fk, err := e.forkIt(ctx, cfg, st, id, req.ForkTurn, req.Title, "")
	if err != nil {
		return host.Ready{}, err
	}
	rd, err := e.startDetachedHost(ctx, st, req.Progress, append(placeArgs(fk.p), fk.id)...)
	if err != nil {
		return rd, fmt.Errorf("fork %s was created, but its host did not start (r restores it): %w", rig.ShortID(fk.id), err)
	}
	rd.Created = true
	return rd, nil
}

// tuiAcceptSource is who accepted drift in the TUI's confirm dialog, as the
// journal records it.
const tuiAcceptSource = "tui confirm"

// NotHostedError: no host serves the session on this machine.
type NotHostedError struct {
	Session string
}

func (e *NotHostedError) Error() string {
	return fmt.Sprintf("session %s is not live on this machine (no host serves it)", rig.ShortID(e.Session))
}

func (e *NotHostedError) Unwrap() error { return host.ErrNotHosted }

// connectArg finds the session the command's first argument names (an id
// or a prefix) and attaches to its host (see connect).
func (c *call) connectArg() (uuid.UUID, *host.Client, error) { return c.connectArgCtx(c.ctx) }

// connectArgCtx is connectArg bounded by ctx.
func (c *call) connectArgCtx(ctx context.Context) (uuid.UUID, *host.Client, error) {
	id, err := rig.FindSession(ctx, c.st, c.args[0])
	if err != nil {
		return uuid.UUID{}, nil, err
	}
	cl, err := c.connect(ctx, id.String())
	return id, cl, err
}

// connect attaches to the host of session id, *NotHostedError when none
// serves it here.
func (c *call) connect(ctx context.Context, id string) (*host.Client, error) {
	key, err := storeKey(c.st)
	if err != nil {
		return nil, err
	}
	cl, err := host.Connect(ctx, key, id, host.WithClientVersion(Version))
	if errors.Is(err, host.ErrNotHosted) {
		return nil, &NotHostedError{Session: id}
	}
	return cl, err
}
