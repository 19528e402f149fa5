package tui

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/storage"
)

// shared is what commands share with Update: the options, the store, the
// host clients this TUI is attached by (so that Run closes them whatever
// happens) and the context that ends every reader at quit. Its fields are
// safe for concurrent use.
//
// The TUI hosts no session: a session is live in a host process
// (Options.StartHost starts one), and the TUI is one of its clients.
type shared struct {
	opts     Options
	store    storage.Store
	lister   *rig.Lister // lists store again only when it changed
	log      *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	hostname string // this machine: a holder on it may be a host to attach to
	pid      int    // this process's: a holder it is serves from here (tests)
	// readTimeout bounds each read of a journal (historyTimeout; tests
	// shorten it).
	readTimeout time.Duration
	// chunk is how many events a journal read folds at a time
	// (historyChunk) and tail how many of the last records of a long
	// journal an attach replays (tailReplay, rig.ReplayStart); tests
	// shrink both.
	chunk int
	tail  uint64
	// dialOpts are passed to every host.Connect (tests shrink the stream
	// buffer).
	dialOpts []host.DialOption

	mu      sync.Mutex
	clients map[*host.Client]string // open clients, by the session they attach to
	closed  bool                    // closeAll ran: no client is kept any more
}

// dialOptions are the options of every connection to a host: the TUI's
// version for the hello, then dialOpts.
func (h *shared) dialOptions() []host.DialOption {
	if h.opts.Version == "" {
		return h.dialOpts
	}
	return append([]host.DialOption{host.WithClientVersion(h.opts.Version)}, h.dialOpts...)
}

// errNoStartHost: the TUI was given no way to start hosts.
var errNoStartHost = errors.New("tui: no way to start a host (Options.StartHost is not set)")

// profileFor checks that session id can be restored here: the profile it
// recorded is configured (rig.ProfileFor: a *rig.ProfileGoneError when it
// is not any more). The host resolves it again when it restores.
func (h *shared) profileFor(ctx context.Context, id uuid.UUID) error {
	lookup := func(name string) (rig.Profile, bool) {
		p, ok := h.opts.Profiles[name]
		return p, ok
	}
	_, err := rig.ProfileFor(ctx, h.store, id, lookup, h.profileNames())
	return err
}

// profileNames are the configured profiles: the default first, then by
// name.
func (h *shared) profileNames() []string {
	names := make([]string, 0, len(h.opts.Profiles))
	for n := range h.opts.Profiles {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == h.opts.DefaultProfile) != (names[j] == h.opts.DefaultProfile) {
			return names[i] == h.opts.DefaultProfile
		}
		return names[i] < names[j]
	})
	return names
}

// keep registers an open client of session id; false (and the client is
// closed) when the TUI is quitting.
func (h *shared) keep(id string, c *host.Client) bool {
	h.mu.Lock()
	if h.closed || h.ctx.Err() != nil {
		h.mu.Unlock()
		c.Close()
		return false
	}
	h.clients[c] = id
	h.mu.Unlock()
	return true
}

// release closes client c (a detach: the host goes on) and forgets it.
func (h *shared) release(c *host.Client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
	c.Close()
}

// closeAll closes every client (detaches from every session: the hosts go
// on), waiting at most bound, and keeps none from now on. It returns how
// many there were.
func (h *shared) closeAll(bound time.Duration) int {
	h.mu.Lock()
	h.closed = true
	cs := make([]*host.Client, 0, len(h.clients))
	for c := range h.clients {
		cs = append(cs, c)
	}
	h.clients = map[*host.Client]string{}
	h.mu.Unlock()
	if len(cs) == 0 {
		return 0
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.Close() }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
		h.log.Warn("detaching took longer than the bound", "bound", bound)
	}
	return len(cs)
}

// startHost starts a host for req (Options.StartHost), bounded by
// timeout. The host is not killed when the TUI quits meanwhile: a session
// asked for keeps running in the background, as every other does.
func (h *shared) startHost(req HostRequest, timeout time.Duration) (host.Ready, error) {
	if h.opts.StartHost == nil {
		return host.Ready{}, errNoStartHost
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return h.opts.StartHost(ctx, req)
}

// attach connects to the host of session id and reads its status: what
// an attachedMsg needs but the restore's outcome and the break.
func (h *shared) attach(id string) (attachedMsg, error) {
	ctx, cancel := context.WithTimeout(h.ctx, attachTimeout)
	defer cancel()
	c, err := host.Connect(ctx, h.opts.StoreKey, id, h.dialOptions()...)
	if err != nil {
		return attachedMsg{}, err
	}
	st, err := c.Status(ctx)
	if err != nil {
		c.Close()
		return attachedMsg{}, err
	}
	if !h.keep(id, c) {
		return attachedMsg{}, context.Canceled
	}
	return attachedMsg{id: id, c: c, pid: c.Hello().PID, status: st}, nil
}

// startAndAttach starts a host for req and attaches to it. A host that
// started but could not be attached to is an opAttach failure of its
// session: it runs in the background, and the listing shows it.
func (h *shared) startAndAttach(req HostRequest, timeout time.Duration) (attachedMsg, *failedMsg) {
	op := opRestore
	if req.Session == "" {
		op = opCreate
	}
	rd, err := h.startHost(req, timeout)
	if err != nil {
		return attachedMsg{}, &failedMsg{id: req.Session, op: op, err: err}
	}
	h.log.Info("host started", "session", rd.Session, "pid", rd.PID, "epoch", rd.Epoch, "created", rd.Created, "log", rd.Log)
	if h.ctx.Err() != nil {
		return attachedMsg{}, nil // quitting: the session runs in the background
	}
	msg, err := h.attach(rd.Session)
	if err != nil {
		if h.ctx.Err() != nil {
			return attachedMsg{}, nil
		}
		return attachedMsg{}, &failedMsg{id: rd.Session, op: opAttach, err: err, created: rd.Created}
	}
	msg.created, msg.outcome = rd.Created, rd.Restored
	if msg.pid == 0 {
		msg.pid = rd.PID
	}
	return msg, nil
}
