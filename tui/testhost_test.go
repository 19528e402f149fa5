package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/storage"
)

// testHosts is the StartHost of the tests: it creates or restores a
// session with rig on the test's store (the one the TUI reads) and serves
// it with host.Serve on a real unix socket in the socket directory of its
// store key, from a goroutine it owns, in this process. It stands for
// `looprig host ID`: what it reports and how it fails (a *host.RemoteError
// carrying rig/explain's classification, decoded from JSON as a client
// gets it) are the real host's.
type testHosts struct {
	store    storage.Store
	storeKey string
	opts     Options // profiles (read at each start: tests change them) and workspaces
	rigOpts  []rig.Option

	ctx    context.Context // ends every host at cleanup
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	hosts map[string]*testHost
}

// testHost is one session served.
type testHost struct {
	s      *rig.Session
	socket string
	stop   context.CancelFunc // tells the host to stop, as a signal does
	done   chan struct{}      // closed once Serve returned and the session shut down
	err    error              // what Serve returned
}

var storeKeys atomic.Int64

// testRigOptions tune the engines for tests.
func testRigOptions() []rig.Option {
	return []rig.Option{
		rig.WithEngineConfig(engine.Config{DemoInterval: 20 * time.Millisecond, DemoSteps: 5, ShellGrace: 300 * time.Millisecond}),
		rig.WithCheckpoints(20*time.Millisecond, 64<<10),
	}
}

// newTestHosts makes the hosts of a test on st and wires them into opts
// (StoreKey, StartHost); they are stopped at cleanup.
func newTestHosts(t testing.TB, st storage.Store, opts *Options) *testHosts {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	th := &testHosts{store: st, storeKey: fmt.Sprintf("test-store-%d-%s", storeKeys.Add(1), uuid.NewString()),
		opts: *opts, rigOpts: testRigOptions(), ctx: ctx, cancel: cancel, hosts: map[string]*testHost{}}
	opts.StoreKey, opts.StartHost = th.storeKey, th.start
	t.Cleanup(th.stop)
	return th
}

// stop ends every host: each shuts its session down.
func (th *testHosts) stop() {
	th.cancel()
	done := make(chan struct{})
	go func() { th.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		panic("test hosts did not stop within 30s")
	}
}

// host returns the host of session id (the last one started).
func (th *testHosts) host(id string) *testHost {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.hosts[id]
}

func (th *testHosts) define(p rig.Profile, accept bool) (*rig.Rig, error) {
	opts := []rig.Option{rig.WithStore(th.store), rig.WithProfile(p)}
	if th.opts.Workspaces != "" {
		opts = append(opts, rig.WithWorkspaces(th.opts.Workspaces))
	}
	opts = append(opts, th.rigOpts...)
	if accept {
		opts = append(opts, rig.WithDecider(rig.AcceptAll("tui confirm")))
	}
	return rig.Define(opts...)
}

// start is Options.StartHost.
func (th *testHosts) start(ctx context.Context, req HostRequest) (host.Ready, error) {
	s, err := th.open(ctx, req)
	if err != nil {
		return host.Ready{}, remoteErr(err)
	}
	id := s.SessionID().String()
	dir, err := host.SocketDir(th.storeKey)
	if err != nil {
		s.Shutdown(context.Background())
		return host.Ready{}, remoteErr(err)
	}
	path, err := host.SocketPath(dir, id)
	if err != nil {
		s.Shutdown(context.Background())
		return host.Ready{}, remoteErr(err)
	}
	ln, err := host.Listen(path, true) // we hold the lease: a socket there is stale
	if err != nil {
		s.Shutdown(context.Background())
		return host.Ready{}, remoteErr(err)
	}
	hctx, stop := context.WithCancel(th.ctx)
	h := &testHost{s: s, socket: path, stop: stop, done: make(chan struct{})}
	th.mu.Lock()
	th.hosts[id] = h
	th.mu.Unlock()
	th.wg.Add(1)
	go func() {
		defer th.wg.Done()
		defer close(h.done)
		defer stop()
		h.err = host.Serve(hctx, s, ln)
		// As `looprig host` does: whatever ended serving, the session
		// ends cleanly (a no-op once it shut down; releases what a fault
		// left).
		s.Shutdown(context.Background())
	}()
	return host.Ready{Session: id, PID: os.Getpid(), Epoch: s.Epoch(), Socket: path,
		Created: req.Session == "", Restored: s.Restored()}, nil
}

// open creates, forks or restores the session req asks for.
func (th *testHosts) open(ctx context.Context, req HostRequest) (*rig.Session, error) {
	if req.Fork != "" { // as the CLI's forkIt: the recorded profile, a directory in the store
		src, err := uuid.Parse(req.Fork)
		if err != nil {
			return nil, err
		}
		p, err := rig.ProfileFor(ctx, th.store, src, func(name string) (rig.Profile, bool) { p, ok := th.opts.Profiles[name]; return p, ok }, nil)
		if err != nil {
			return nil, err
		}
		p.Placement, p.Root, p.PlacementPinned = rig.PlacementSession, "", false
		r, err := th.define(p, false)
		if err != nil {
			return nil, err
		}
		s, _, err := r.ForkSession(ctx, src, req.ForkTurn, rig.WithTitle(req.Title))
		return s, err
	}
	if req.Session == "" {
		p, ok := th.opts.Profiles[req.Profile]
		if !ok {
			p, ok = th.opts.Profiles[th.opts.DefaultProfile]
		}
		if !ok {
			p = rig.DefaultProfile()
		}
		if req.Dir != "" || req.Scratch {
			p = rig.PlaceNew(p, req.Dir, req.Scratch) // as the host's --dir and --scratch
		}
		r, err := th.define(p, false)
		if err != nil {
			return nil, err
		}
		sopts := []rig.SessionOption{rig.WithTitle(req.Title)}
		if req.Seed != "" {
			sopts = append(sopts, rig.WithSeedSnapshot(req.Seed))
		}
		return r.NewSession(ctx, sopts...)
	}
	uid, err := uuid.Parse(req.Session)
	if err != nil {
		return nil, err
	}
	lookup := func(name string) (rig.Profile, bool) { p, ok := th.opts.Profiles[name]; return p, ok }
	known := make([]string, 0, len(th.opts.Profiles))
	for n := range th.opts.Profiles {
		known = append(known, n)
	}
	def := th.opts.DefaultProfile
	sort.Slice(known, func(i, j int) bool {
		if (known[i] == def) != (known[j] == def) {
			return known[i] == def
		}
		return known[i] < known[j]
	})
	p, err := rig.ProfileFor(ctx, th.store, uid, lookup, known)
	if err != nil {
		return nil, err
	}
	r, err := th.define(p, req.AcceptDrift)
	if err != nil {
		return nil, err
	}
	ro := []rig.RestoreOption{rig.OnDiverged(req.Workspace)}
	if req.OnlyIfCrashed {
		ro = append(ro, rig.OnlyIfCrashed())
	}
	return r.RestoreSession(ctx, uid, ro...)
}

// remoteErr is err as a client of a host gets it: host.Describe, through
// JSON.
func remoteErr(err error) error {
	b, merr := json.Marshal(host.Describe(err))
	if merr != nil {
		panic(merr)
	}
	var re host.RemoteError
	if uerr := json.Unmarshal(b, &re); uerr != nil {
		panic(uerr)
	}
	return &re
}

// wait waits until the host ended (its session shut down).
func (h *testHost) wait(t testing.TB, within time.Duration) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(within):
		t.Fatalf("the host of %s did not end within %s", h.s.SessionID(), within)
	}
}

// runtimeDir points XDG_RUNTIME_DIR at a short private directory: a socket
// path holds at most host.MaxSocketPath bytes, and t.TempDir() paths are
// too long. It returns a function removing it.
func runtimeDir() (func(), error) {
	dir, err := os.MkdirTemp("", "lr")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Setenv("XDG_RUNTIME_DIR", dir); err != nil {
		return nil, err
	}
	return func() { os.RemoveAll(dir) }, nil
}
