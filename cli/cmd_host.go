package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"looprig/host"
	"looprig/rig"
)

var cmdHost = &command{
	name: "host", brief: "serve a session in this process until it stops (started by the TUI, --detach)", help: helpHost,
	args: hostArgs, needs: needsStore,
	flags: func(fs *flag.FlagSet, o *opts) {
		restoreFlags(fs, o)
		fs.BoolVar(&o.create, "new", false, "create a new session instead of restoring ID")
		fs.BoolVar(&o.profile.scratch, "scratch", false, "a new session's workspace is a private directory in the store")
		fs.Var(&o.profile.worktree, "worktree", "a new session gets a git worktree of its own (--worktree=BRANCH names its branch)")
		fs.StringVar(&o.profile.dir, "dir", "", "the directory a new session lives in when nothing else places it (new ran there)")
		fs.BoolVar(&o.onlyCrashed, "only-crashed", false, "restore ID only if it is still crashed once its lease is held (restore --all-crashed)")
		fs.StringVar(&o.title, "title", "", "title of a new session")
		fs.StringVar(&o.seed, "seed", "", "directory copied into a new session's workspace")
		fs.StringVar(&o.acceptedBy, "accepted-by", acceptDriftSource, "who accepted drift, as the journal records it")
	},
	run: runHost,
}

// hostArgs: ID to restore, or none with --new.
func hostArgs(c *call) error {
	if c.create {
		return noArgs(c)
	}
	return oneID(c)
}

// runHost restores (or, with --new, creates) the session and serves it on
// its socket until it shuts down (a client's stop, X in the TUI), faults
// or loses its lease, or this process gets SIGINT or SIGTERM (then it
// shuts the session down). SIGHUP is ignored: a host outlives the
// terminal that started it. Started by host.Start, it reports on its
// ready descriptor; run by hand, it says where it serves on stdout.
func runHost(c *call) int {
	host.LimitMemory()
	rep, err := host.OpenReporter()
	if err != nil {
		return c.fail(usageErr(c.cmd, err.Error()))
	}
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c.ctx = ctx
	c.rep = rep // a restore's progress goes to the client waiting for it

	// Before the session is created or restored: a host that cannot serve
	// it must leave nothing behind (no new session, no restore).
	if err := checkSocketDir(c.st); err != nil {
		rep.Fail(err)
		return c.fail(err)
	}
	s, err := c.hostedSession()
	if err != nil {
		rep.Fail(err)
		return c.fail(err)
	}
	id := s.SessionID().String()
	key, logPath, err := c.hostLog(id, rep != nil)
	if err != nil {
		// Could not serve: give the session back.
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(sctx)
		rep.Fail(err)
		return c.fail(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("session", id, "pid", os.Getpid())
	if rep == nil {
		fmt.Fprintf(c.stdout, "hosting session %s (pid %d); stop it with: looprig %sstop %s\n",
			rig.ShortID(id), os.Getpid(), c.globalArgs(), rig.ShortID(id))
	}
	log.Info("host: serving", "epoch", s.Epoch())
	if logindKillsHosts("/") {
		log.Warn("host: " + lingerHint)
	}
	rd := host.Ready{Created: c.create, Log: logPath, Restored: s.Restored()}
	opts := []host.Option{host.WithVersion(Version), host.WithLogger(log), host.WithOwnProcess(),
		host.WithBetweenTurns(c.indexBetweenTurns(s.SessionID(), log))}
	if testHostOptions != nil {
		opts = append(opts, testHostOptions()...)
	}
	err = host.Run(ctx, s, key, rep, rd, opts...)
	log.Info("host: done", "err", err)
	if err != nil {
		return c.fail(err)
	}
	return exitOK
}

// hostLog returns the store's socket key and the host log's path of
// session id; detached (started by host.Start, whose stderr is /dev/null),
// this process's standard error goes to that log from now on.
func (c *call) hostLog(id string, detached bool) (key, logPath string, err error) {
	if key, err = storeKey(c.st); err != nil {
		return "", "", err
	}
	if logPath, err = host.LogPath(key, id); err != nil {
		return "", "", err
	}
	if detached {
		err = host.RedirectStderr(logPath)
	}
	return key, logPath, err
}

// hostedSession creates (--new) or restores the session the host serves.
func (c *call) hostedSession() (*rig.Session, error) {
	if !c.create {
		return c.restoreSession(c.args[0])
	}
	p, err := c.cfg.Profile(c.profile.rig)
	if err != nil {
		return nil, err
	}
	if p, err = c.profile.placeNew(c.cmd, p, c.profile.dir); err != nil {
		return nil, err
	}
	_, s, err := c.createSession(p)
	return s, err
}
