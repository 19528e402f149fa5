// Package rigtest is the test suite of the session runtime (package rig),
// in the style of rig/storage/storetest: every store backend runs it from
// its own tests with
//
//	func TestMain(m *testing.M) {
//		rigtest.HelperMain(backend())
//		os.Exit(m.Run())
//	}
//
//	func TestRuntime(t *testing.T) { rigtest.Run(t, backend()) }
//
//	func BenchmarkRestore(b *testing.B) { rigtest.BenchmarkRestore(b, backend()) }
//
// Run checks NewSession (journal shape, seeds, every failure stage and its
// cleanup), shell turns (workspace, streaming, checkpoints, exit codes,
// interrupts that kill the whole process group), gates, the restore
// transaction (clean, after a crash — in a helper process that is
// SIGKILLed when the backend is CrossProcess —, while held, unknown ids,
// configuration drift and every RestoreErrorKind), exclusive placement,
// lease loss, shutdown and the catalog. Errors are classified with
// errors.As only; nothing asserts on wall-clock time.
//
// The suite runs shell turns with /bin/sh and looks for their processes in
// /proc; the process checks are skipped where /proc is missing.
package rigtest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// Backend describes the store the suite runs against.
type Backend struct {
	// Name names the backend in messages.
	Name string
	// NewStore returns a fresh, empty store and a string that identifies it
	// for Reopen (a directory for a file backend). It may use t.TempDir and
	// t.Cleanup.
	NewStore func(t testing.TB) (store storage.Store, dir string)
	// Reopen returns the store identified by dir again: a second, independent
	// open of the same data where the backend can (fsstore: a second Open of
	// dir), else the same instance (memstore). In a helper process it is
	// called with the helper's *testing.T.
	Reopen func(t testing.TB, dir string) storage.Store
	// CrossProcess reports that a helper process can open the store by dir
	// (Reopen in another process sees the same data and leases). The crash
	// tests then SIGKILL a helper process that owns a session.
	CrossProcess bool
}

// WaitTimeout bounds every wait of the suite. It is generous: the suite
// runs on loaded two-core machines, and it never measures time.
const WaitTimeout = 60 * time.Second

type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

// Run runs the suite against b, one named subtest per rule.
func Run(t *testing.T, b Backend) {
	t.Helper()
	if b.NewStore == nil || b.Reopen == nil {
		t.Fatal("rigtest: Backend needs NewStore and Reopen")
	}
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(t, newEnv(t, b))
				})
			}
		})
	}
}

func groups() []struct {
	name  string
	cases []testCase
} {
	return []struct {
		name  string
		cases []testCase
	}{
		{"NewSession", createCases},
		{"Placement", placementCases},
		{"Turn", turnCases},
		{"Terminal", terminalCases},
		{"Gate", gateCases},
		{"Restore", restoreCases},
		{"RestoreCrash", crashCases},
		{"Drift", driftCases},
		{"DriftBaseline", baselineCases},
		{"RestoreErrors", restoreErrorCases},
		{"LeaseLoss", leaseLossCases},
		{"Shutdown", shutdownCases},
		{"Catalog", catalogCases},
		{"Delete", deleteCases},
		{"Bounds", boundsCases},
		{"Order", orderCases},
		{"Operations", opsCases},
	}
}

// ---- environment ---------------------------------------------------------------

// env is one subtest's world: a fresh store behind a fault-injecting
// wrapper, and a workspaces directory.
type env struct {
	t   *testing.T
	b   Backend
	raw storage.Store // the backend's store, unwrapped
	dir string
	fs  *faultStore // wraps raw; rigs use it
	ws  string      // workspaces directory of session placement
}

func newEnv(t *testing.T, b Backend) *env {
	raw, dir := b.NewStore(t)
	return &env{t: t, b: b, raw: raw, dir: dir, fs: newFaultStore(raw), ws: t.TempDir()}
}

// baseOptions are the rig options every rig of the suite uses: fast
// checkpoints and a fast demo engine.
func baseOptions(store storage.Store, workspaces string) []rig.Option {
	return []rig.Option{
		rig.WithStore(store),
		rig.WithWorkspaces(workspaces),
		rig.WithCheckpoints(20*time.Millisecond, 64<<10),
		rig.WithEngineConfig(engine.Config{DemoSteps: 3, DemoInterval: 20 * time.Millisecond, ShellGrace: 5 * time.Second}),
	}
}

// define returns a rig over the wrapped store; opts come after the
// defaults and may override them.
func (e *env) define(opts ...rig.Option) *rig.Rig {
	e.t.Helper()
	return defineOn(e.t, e.fs, e.ws, opts...)
}

func defineOn(t testing.TB, store storage.Store, ws string, opts ...rig.Option) *rig.Rig {
	t.Helper()
	r, err := rig.Define(append(baseOptions(store, ws), opts...)...)
	if err != nil {
		t.Fatalf("rig.Define: %v", err)
	}
	return r
}

// gateProfile is a shell profile whose gate policy is "touch gated".
func gateProfile() rig.Profile {
	return rig.Profile{Name: "rigtest", Engine: "shell", Placement: rig.PlacementSession, GatePolicy: []string{"touch gated"}}
}

func exclusiveProfile(root string) rig.Profile {
	return rig.Profile{Name: "exclusive", Engine: "shell", Placement: rig.PlacementExclusive, Root: root}
}

func (e *env) newSession(r *rig.Rig, opts ...rig.SessionOption) *rig.Session {
	e.t.Helper()
	s, err := r.NewSession(e.t.Context(), opts...)
	if err != nil {
		e.t.Fatalf("NewSession: %v", err)
	}
	shutdownAtCleanup(e.t, s)
	return s
}

func (e *env) restore(r *rig.Rig, id uuid.UUID) *rig.Session {
	e.t.Helper()
	s, err := r.RestoreSession(e.t.Context(), id)
	if err != nil {
		e.t.Fatalf("RestoreSession(%s): %v", id, err)
	}
	shutdownAtCleanup(e.t, s)
	return s
}

// shutdownAtCleanup shuts s down when the test ends (Shutdown is
// idempotent), so no turn outlives its test.
func shutdownAtCleanup(t testing.TB, s *rig.Session) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
}

func shutdown(t testing.TB, s *rig.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func waitIdle(t testing.TB, s *rig.Session) {
	t.Helper()
	if err := s.WaitIdle(waitCtx(t)); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

// submit submits input and fails the test on error.
func submit(t testing.TB, s *rig.Session, input string) rig.TurnInfo {
	t.Helper()
	ti, err := s.Submit(waitCtx(t), input)
	if err != nil {
		t.Fatalf("Submit(%q): %v", input, err)
	}
	return ti
}

// runTurn submits input and waits for its turn to end.
func runTurn(t testing.TB, s *rig.Session, input string) rig.TurnInfo {
	t.Helper()
	ti := submit(t, s, input)
	waitIdle(t, s)
	return ti
}

// eventually polls cond until it holds or WaitTimeout passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ---- markers and processes ---------------------------------------------------------

func randUint() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

// newMarker returns a unique sleep duration such as "1000.123456789": a
// `sleep MARKER` process is findable in /proc by it, and nothing else on
// the machine carries it.
func newMarker() string {
	return fmt.Sprintf("%d.%09d", 1000+randUint()%1000, randUint()%1_000_000_000)
}

func procAvailable() bool {
	_, err := os.Stat("/proc/self/cmdline")
	return err == nil
}

// procsWith lists the live processes whose command line contains marker, as
// "pid: cmdline". Zombies have an empty command line and are not listed.
func procsWith(marker string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range ents {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if strings.Contains(cmd, marker) {
			out = append(out, d.Name()+": "+cmd)
		}
	}
	return out
}

// sleepProcs lists live `sleep MARKER` processes.
func sleepProcs(marker string) []string {
	var out []string
	for _, p := range procsWith(marker) {
		if _, cmd, _ := strings.Cut(p, ": "); strings.HasPrefix(filepath.Base(strings.Fields(cmd)[0]), "sleep") {
			out = append(out, p)
		}
	}
	return out
}

func waitSleepRunning(t testing.TB, marker string) {
	t.Helper()
	if !procAvailable() {
		return
	}
	eventually(t, "sleep "+marker+" to run", func() bool { return len(sleepProcs(marker)) > 0 })
}

// noProcs fails the test when a process carrying marker is alive.
func noProcs(t testing.TB, marker, when string) {
	t.Helper()
	if !procAvailable() {
		return
	}
	if ps := procsWith(marker); len(ps) > 0 {
		t.Errorf("%s: processes of the turn are still alive: %q", when, ps)
	}
}

// waitNoProcs waits until no process carries marker (for processes whose
// reaper runs elsewhere, e.g. after a helper's death).
func waitNoProcs(t testing.TB, marker, when string) {
	t.Helper()
	if !procAvailable() {
		return
	}
	eventually(t, when+": processes carrying "+marker+" to be gone", func() bool { return len(procsWith(marker)) == 0 })
}

// canonical returns the symlink-free absolute form of path.
func canonical(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := filepath.EvalSymlinks(abs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ---- journal helpers ---------------------------------------------------------------

// readJournal replays the whole journal of id, read-only.
func readJournal(t testing.TB, ledger storage.Ledger, id uuid.UUID) []journal.Record {
	t.Helper()
	recs, err := tryReadJournal(ledger, id)
	if err != nil {
		t.Fatalf("replay journal of %s: %v", id, err)
	}
	return recs
}

func tryReadJournal(ledger storage.Ledger, id uuid.UUID) ([]journal.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	rp, err := journal.NewReplayer(ctx, ledger, storage.SessionName(id.String()), 0)
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	var out []journal.Record
	for rp.Next() {
		out = append(out, rp.Record())
	}
	return out, rp.Err()
}

func tip(t testing.TB, ledger storage.Ledger, id uuid.UUID) uint64 {
	t.Helper()
	n, err := ledger.Tip(context.Background(), storage.SessionName(id.String()))
	if err != nil {
		t.Fatalf("Tip: %v", err)
	}
	return n
}

// waitJournal polls the journal of id (read-only) until some record
// satisfies pred, and returns it.
func waitJournal(t testing.TB, ledger storage.Ledger, id uuid.UUID, what string, pred func(journal.Record) bool) journal.Record {
	t.Helper()
	var found journal.Record
	eventually(t, what+" in the journal", func() bool {
		recs, err := tryReadJournal(ledger, id)
		if err != nil {
			t.Fatalf("replay journal of %s: %v", id, err)
		}
		for _, r := range recs {
			if pred(r) {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

// describe renders records for failure messages.
func describe(recs []journal.Record) string {
	var b strings.Builder
	for _, r := range recs {
		switch r.Kind {
		case journal.KindFence:
			fmt.Fprintf(&b, "\n  %d fence epoch=%d", r.Seq, r.Epoch)
		case journal.KindCommand:
			fmt.Fprintf(&b, "\n  %d command %s", r.Seq, r.Command.Name)
		default:
			fmt.Fprintf(&b, "\n  %d %s %+v", r.Seq, r.Event.Type(), r.Event)
		}
	}
	return b.String()
}

// lastFenceIndex is the index in recs of the last fence, -1 if none.
func lastFenceIndex(recs []journal.Record) int {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == journal.KindFence {
			return i
		}
	}
	return -1
}

func typesOf(recs []journal.Record) []string {
	var out []string
	for _, r := range recs {
		switch r.Kind {
		case journal.KindEvent:
			out = append(out, string(r.Event.Type()))
		case journal.KindFence:
			out = append(out, "fence")
		default:
			out = append(out, "command:"+r.Command.Name)
		}
	}
	return out
}

// find returns the events of type E in recs, with their records.
func find[E event.Event](recs []journal.Record) ([]E, []journal.Record) {
	var evs []E
	var rs []journal.Record
	for _, r := range recs {
		if r.Kind != journal.KindEvent {
			continue
		}
		if ev, ok := r.Event.(E); ok {
			evs = append(evs, ev)
			rs = append(rs, r)
		}
	}
	return evs, rs
}

// turnOutput concatenates the journaled output of turn (all turns when "").
func turnOutput(recs []journal.Record, turn string) string {
	var b strings.Builder
	outs, _ := find[event.TurnOutput](recs)
	for _, o := range outs {
		if turn == "" || o.TurnID == turn {
			b.WriteString(o.Text)
		}
	}
	return b.String()
}

// ---- subscriptions -------------------------------------------------------------------

// collector drains a subscription into memory, so a slow test never makes
// the hub close it, and lets the test wait for events.
type collector struct {
	mu     sync.Mutex
	envs   []event.Envelope
	change chan struct{} // closed and replaced on every change
	closed bool
	err    error
}

// collect starts draining sub. hook, when not nil, runs in the draining
// goroutine on every envelope, before it is recorded.
func collect(t testing.TB, sub *hub.Subscription, hook func(event.Envelope)) *collector {
	c := &collector{change: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for env := range sub.C() {
			if hook != nil {
				hook(env)
			}
			c.mu.Lock()
			c.envs = append(c.envs, env)
			close(c.change)
			c.change = make(chan struct{})
			c.mu.Unlock()
		}
		c.mu.Lock()
		c.closed, c.err = true, sub.Err()
		close(c.change)
		c.change = make(chan struct{})
		c.mu.Unlock()
	}()
	t.Cleanup(func() { sub.Close(); <-done })
	return c
}

func (c *collector) snapshot() []event.Envelope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.envs)
}

// wait returns the first envelope satisfying pred, waiting for it.
func (c *collector) wait(t testing.TB, what string, pred func(event.Envelope) bool) event.Envelope {
	t.Helper()
	timeout := time.After(WaitTimeout)
	for {
		c.mu.Lock()
		for _, env := range c.envs {
			if pred(env) {
				c.mu.Unlock()
				return env
			}
		}
		closed, err, ch := c.closed, c.err, c.change
		c.mu.Unlock()
		if closed {
			t.Fatalf("subscription ended (err %v) before %s", err, what)
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("timed out waiting for %s on the subscription", what)
		}
	}
}

func isType[E event.Event](env event.Envelope) bool {
	_, ok := env.Event.(E)
	return ok
}

// ---- error helpers ---------------------------------------------------------------------

// as is errors.As that fails the test when err is not a *E.
func as[E error](t testing.TB, err error, what string) E {
	t.Helper()
	var target E
	if err == nil {
		t.Fatalf("%s: got no error, want %T", what, target)
	}
	if !errors.As(err, &target) {
		t.Fatalf("%s: got %T (%v), want an error errors.As finds as %T", what, err, err, target)
	}
	return target
}

var errInjected = errors.New("rigtest: injected fault")

// ---- helper process -----------------------------------------------------------------------

const (
	helperEnv       = "LOOPRIG_RIGTEST_HELPER"
	helperStoreEnv  = "LOOPRIG_RIGTEST_STORE"
	helperWSEnv     = "LOOPRIG_RIGTEST_WORKSPACES"
	helperMarkerEnv = "LOOPRIG_RIGTEST_MARKER"
	helperTestName  = "RigtestHelper"
)

// HelperMain runs a helper-process role of the crash tests when the
// environment names one, and never returns then; otherwise it returns at
// once. Call it first thing in TestMain, before m.Run.
//
// A helper runs inside testing.Main, so the backend's Reopen gets a real
// *testing.T.
func HelperMain(b Backend) {
	role := os.Getenv(helperEnv)
	if role == "" {
		return
	}
	match := func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) }
	testing.Main(match, []testing.InternalTest{{
		Name: helperTestName,
		F:    func(t *testing.T) { runHelper(t, b, role) },
	}}, nil, nil)
}
