package tui

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// Flows through the real program (teatest) with a real memstore store and
// the shell and demo engines; sessions live in hosts this process serves
// on real unix sockets (testHosts), which the TUI attaches to as it does
// to `looprig host` processes. The harness reads the model only inside
// Update (a probe message), so nothing races the program.

type probeMsg struct{ fn func(m Model) }

type harness struct{ Model }

// Init is the model's but for the window title: bubbletea (v1.3.10)
// writes a title to the output from its event loop outside the renderer's
// lock, which races with the renderer's flush (the race detector reports
// it under load, with or without this package's changes).
func (h harness) Init() tea.Cmd { return h.Model.refreshList() }

func (h harness) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if p, ok := msg.(probeMsg); ok {
		p.fn(h.Model)
		return h, nil
	}
	m, cmd := h.Model.Update(msg)
	return harness{m.(Model)}, cmd
}

type flow struct {
	t     *testing.T
	m     Model // read only inside Update (inspect), or once the program ended
	tm    *teatest.TestModel
	store *memstore.Store
	opts  Options
}

// flowOptions are the options of a flow on st, its hosts served by this
// process (flowEnv).
func flowOptions(t testing.TB, st storage.Store) Options {
	opts, _ := flowEnv(t, st)
	return opts
}

// flowEnv returns the options of a flow on st and the hosts that serve its
// sessions (stopped at cleanup, after the programs).
func flowEnv(t testing.TB, st storage.Store) (Options, *testHosts) {
	gated := rig.DefaultProfile()
	gated.Name, gated.GatePolicy = "gated", []string{"touch"}
	opts := Options{
		Store: st, StoreDir: "memstore", Workspaces: t.TempDir(),
		Profiles: map[string]rig.Profile{
			"default": rig.DefaultProfile(), "demo": rig.DemoProfile(), "gated": gated,
		},
		DefaultProfile: "default",
		ConfigDir:      t.TempDir(),
	}
	th := newTestHosts(t, st, &opts)
	return opts, th
}

// testRig defines a rig on st as the flows' hosts do, for sessions a test
// makes itself (held by the test, not by a host).
func testRig(t testing.TB, st storage.Store, opts Options, more ...rig.Option) *rig.Rig {
	t.Helper()
	r, err := rig.Define(append(append([]rig.Option{rig.WithStore(st), rig.WithWorkspaces(opts.Workspaces)}, testRigOptions()...), more...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func startFlow(t *testing.T, st *memstore.Store, opts Options) *flow {
	t.Helper()
	return startFlowLog(t, st, opts, nil)
}

// startFlowLog is startFlow with the TUI's log going to log (nil: none).
func startFlowLog(t *testing.T, st *memstore.Store, opts Options, log *slog.Logger) *flow {
	t.Helper()
	return startFlowModel(t, st, opts, newModelLog(opts, asciiRenderer(), log))
}

// startFlowModel runs m (made for opts) as startFlow does.
func startFlowModel(t *testing.T, st *memstore.Store, opts Options, m Model) *flow {
	t.Helper()
	tm := teatest.NewTestModel(t, harness{m}, teatest.WithInitialTermSize(140, 45))
	f := &flow{t: t, m: m, tm: tm, store: st, opts: opts}
	t.Cleanup(func() {
		// Whatever happened, end the program and detach: the hosts end at
		// their own cleanup.
		tm.Send(tea.QuitMsg{})
		m.finish()
	})
	f.waitModel("the first listing", func(m Model) bool { return m.list.listed })
	return f
}

// inspect runs fn inside the program's Update.
func (f *flow) inspect(fn func(m Model)) {
	done := make(chan struct{})
	f.tm.Send(probeMsg{fn: func(m Model) { fn(m); close(done) }})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		f.t.Fatal("the program did not answer a probe")
	}
}

func (f *flow) view() string {
	var v string
	f.inspect(func(m Model) { v = m.View() })
	return v
}

func (f *flow) waitModel(what string, cond func(m Model) bool) {
	f.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ok := false
		f.inspect(func(m Model) { ok = cond(m) })
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.t.Fatalf("timed out waiting for %s; screen:\n%s", what, f.view())
}

func (f *flow) waitView(subs ...string) string {
	f.t.Helper()
	var last string
	f.waitModel(strings.Join(subs, " & "), func(m Model) bool {
		last = m.View()
		for _, s := range subs {
			if !strings.Contains(last, s) {
				return false
			}
		}
		return true
	})
	return last
}

func (f *flow) typeText(s string) { f.tm.Type(s) }

func (f *flow) key(k string) { f.tm.Send(keyMsg(k)) }

// quit quits with q and does what Run does after the program: detach.
func (f *flow) quit() {
	f.t.Helper()
	f.typeText("q")
	f.finished()
}

// finished waits for the program to end, then detaches as Run does.
func (f *flow) finished() {
	f.t.Helper()
	f.tm.WaitFinished(f.t, teatest.WithFinalTimeout(15*time.Second))
	f.m.finish()
}

// selectedLive waits until the selected session is attached, its history
// replay is over and its stream is open.
func (f *flow) selectedLive() (id string) {
	f.t.Helper()
	f.waitModel("a live selected session", func(m Model) bool {
		v := m.list.selected()
		if v != nil && v.attached() && !v.replaying() && v.busy == notBusy && v.live.follower != nil {
			id = v.id
			return true
		}
		return false
	})
	return id
}

func TestFlowCreateSubmitShutdown(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	f.waitView("no sessions yet")
	f.typeText("n")
	f.waitView("New session", "profile")
	f.typeText("first one")
	f.key("tab") // to the seed field: empty is fine
	f.key("enter")
	id := f.selectedLive()
	f.waitView("first one", "live", "session started")

	f.typeText("i")
	f.typeText("echo hello-from-tui; echo second-line >&2; exit 3")
	f.key("enter")
	f.waitView("hello-from-tui", "second-line", "turn 0 done: exit 3")

	// X opens a dialog whose default is Cancel: enter alone changes nothing.
	f.typeText("X")
	f.waitView("Shut down session")
	f.key("enter")
	f.waitModel("the dialog to close", func(m Model) bool { return m.dialog == nil })
	f.inspect(func(m Model) {
		if !m.sessions[id].attached() {
			t.Error("Cancel shut the session down")
		}
	})
	f.typeText("X")
	f.waitView("Shut down session")
	f.key("right")
	f.key("enter")
	f.waitModel("the shutdown", func(m Model) bool { v := m.sessions[id]; return !v.attached() })
	f.waitView("idle", "session stopped cleanly")
	f.waitModel("the spinner to stop", func(m Model) bool { return !m.busy() })
	infos, err := rig.ListSessions(context.Background(), st)
	if err != nil || len(infos) != 1 || infos[0].State != rig.StateIdle {
		t.Fatalf("listing after shutdown: %+v %v", infos, err)
	}
	f.quit()
	if a, r := st.LeaseStats(storage.SessionName(id)); a != r {
		t.Fatalf("lease acquired %d times, released %d", a, r)
	}
}

// crashSession makes a session whose holder "crashed" mid-turn: its lease
// is broken and released without a shutdown, after its output was
// checkpointed.
func crashSession(t *testing.T, st *memstore.Store, opts Options, title, input, wantOut string) string {
	t.Helper()
	ctx := context.Background()
	r := testRig(t, st, opts)
	s, err := r.NewSession(ctx, rig.WithTitle(title))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, input); err != nil {
		t.Fatal(err)
	}
	id := s.SessionID().String()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if journalHas(t, st, id, wantOut) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("output never reached the journal")
		}
		time.Sleep(20 * time.Millisecond)
	}
	l, err := st.Break(ctx, storage.SessionName(id))
	if err != nil {
		t.Fatal(err)
	}
	<-s.Done() // the old holder noticed and stopped
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	s.Shutdown(ctx) // releases what is left; records nothing (faulted)
	return id
}

func journalHas(t *testing.T, st *memstore.Store, id, text string) bool {
	t.Helper()
	var b strings.Builder
	cur, err := st.Read(context.Background(), storage.SessionName(id), 0)
	if err != nil {
		return false
	}
	defer cur.Close()
	for cur.Next() {
		b.Write(cur.Record().Payload)
	}
	return strings.Contains(b.String(), text)
}

func TestFlowRestoreCrashed(t *testing.T) {
	st := memstore.New()
	opts, th := flowEnv(t, st)
	id := crashSession(t, st, opts, "counting", "echo before-crash-1; echo before-crash-2; sleep 30", "before-crash-2")
	f := startFlow(t, st, opts)
	f.waitView("crashed", "counting")
	f.waitView("before-crash-2", "journal ends here")
	f.typeText("r")
	f.selectedLive()
	screen := f.waitView("before-crash-1", "before-crash-2", "interrupted (crash)", "restore done at epoch 3", "restored here at epoch 3")
	if !strings.Contains(screen, "1 turn interrupted") {
		t.Errorf("restore outcome missing:\n%s", screen)
	}
	f.typeText("i")
	f.typeText("echo after-restore")
	f.key("enter")
	f.waitView("after-restore", "turn 1 done: exit 0")
	f.quit()
	// Quitting detached: the session is still held by its host.
	infos, _ := rig.ListSessions(context.Background(), st)
	if len(infos) != 1 || infos[0].ID != id || infos[0].State != rig.StateLive || infos[0].Epoch != 3 {
		t.Fatalf("after quit: %+v", infos)
	}
	th.stop() // the host is told to stop: it shuts the session down
	infos, _ = rig.ListSessions(context.Background(), st)
	if len(infos) != 1 || infos[0].State != rig.StateIdle || infos[0].Epoch != 3 {
		t.Fatalf("after the host stopped: %+v", infos)
	}
}

func TestFlowGates(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	f.typeText("n")
	f.waitView("New session")
	f.key("up")    // title → profile
	f.key("right") // default → demo
	f.key("right") // demo → gated
	f.waitModel("the gated profile", func(m Model) bool {
		d, ok := m.dialog.(*createDialog)
		return ok && d.profiles[d.prof].name == "gated"
	})
	f.key("enter")
	id := f.selectedLive()
	var ws string
	f.inspect(func(m Model) { ws = m.sessions[id].live.status.Workspace })

	f.typeText("i")
	f.typeText("touch approved.txt")
	f.key("enter")
	f.waitView("? gate: run command", "touch approved.txt")
	f.typeText("a")
	f.waitView("gate approved by tui pid", "turn 0 done: exit 0")
	if _, err := os.Stat(filepath.Join(ws, "approved.txt")); err != nil {
		t.Fatalf("approved command did not run: %v", err)
	}

	f.typeText("i")
	f.typeText("touch denied.txt")
	f.key("enter")
	// (the first gate's line is still shown: wait for this one's)
	f.waitModel("the second gate", func(m Model) bool {
		g := m.sessions[id].transcript.fold.Gate()
		return g != nil && strings.Contains(g.Prompt, "denied.txt")
	})
	f.typeText("d")
	f.waitView("gate denied by tui pid", "turn 1 failed: denied at gate")
	if _, err := os.Stat(filepath.Join(ws, "denied.txt")); err == nil {
		t.Fatal("denied command ran")
	}
	// No gate open now: a and d say so and do nothing.
	f.typeText("a")
	f.waitView("no gate is open")
	f.quit()
}

// TestFlowHostileText: a title and output full of escape sequences (OSC 52
// clipboard, CSI clear screen, colours, bidi override, C1 CSI, BEL) are drawn
// without a single raw control byte: the title shown inertly, the output
// rendered.
func TestFlowHostileText(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	hostile := "evil\x1b]52;c;SGVsbG8=\x07\x1b[2J\u202etitle\u009b31m"
	r := testRig(t, st, opts)
	s, err := r.NewSession(context.Background(), rig.WithTitle(hostile))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := startFlow(t, st, opts)
	f.waitView("evil^[]52;c;SGVsbG8=^G^[[2J<U+202E>title<U+009B>31m")
	f.typeText("r")
	f.selectedLive()
	f.typeText("i")
	f.typeText(`printf '\033]52;c;SGVsbG8=\007\033[2J\033[31mred\342\200\256rev\033[0m\r\nbell\007 tab\tend\n'`)
	f.key("enter")
	f.waitView("turn 0 done")
	for _, focus := range []string{"", "tab", "tab"} {
		if focus != "" {
			f.key(focus)
		}
		screen := f.view()
		for i := 0; i < len(screen); {
			r, n := utf8.DecodeRuneInString(screen[i:])
			switch {
			case r == '\n':
			case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
				t.Fatalf("raw control %U at byte %d:\n%q", r, i, screen)
			case r == utf8.RuneError && n == 1:
				t.Fatalf("invalid UTF-8 at byte %d", i)
			case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f:
				t.Fatalf("bidi control %U at byte %d", r, i)
			}
			i += n
		}
	}
	screen := f.view()
	// The output is rendered (internal/termrender): OSC 52 and the clear
	// are dropped, colours too (this view has none), BEL is dropped and
	// the tab expanded; the bidi override is shown inertly.
	for _, want := range []string{"  red<U+202E>rev   ", "  bell tab        end   "} {
		if !strings.Contains(screen, want) {
			t.Errorf("hostile output not rendered as %q:\n%s", want, screen)
		}
	}
	f.quit()
}

// TestFlowLeaseLost: another holder breaks the lease of a session this TUI
// hosts; the TUI shows LEASE LOST with both epochs, turns the session
// read-only, and keeps the banner until it is dismissed.
func TestFlowLeaseLost(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	f.typeText("n")
	f.waitView("New session")
	f.key("enter")
	id := f.selectedLive()
	start := time.Now()
	l, err := st.Break(context.Background(), storage.SessionName(id))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	f.waitView("LEASE LOST", "epoch 1 → 2")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("LEASE LOST took %s", d)
	}
	f.typeText("i") // the line opens and keeps the keys, but runs nothing
	f.waitView("read-only: lease lost to epoch 2", "enter: nothing runs")
	f.key("esc")
	f.typeText("?")
	f.typeText("input") // the help filtered to i, which may be below the fold
	f.waitView("(disabled: read-only: lease lost to epoch 2")
	f.key("esc") // clears the help's filter
	f.key("esc") // closes the help
	f.waitModel("the help to close", func(m Model) bool { return m.help == nil })
	f.key("esc") // dismiss the banner
	f.waitModel("the banner to go", func(m Model) bool { return !strings.Contains(m.View(), "LEASE LOST ") })
	f.inspect(func(m Model) {
		if why := m.sessions[id].notMutable(); !strings.Contains(why, "lease lost") {
			t.Errorf("after dismissing, the session is mutable again: %q", why)
		}
	})
	f.quit()
}

// TestFlowHeldRestoreFailsThenBreak: restoring a session another holder
// has fails with lease_failed and names B; B (typing the short id) breaks
// the lease (rig.BreakLease: the journal is fenced at the break's epoch
// before the lease is released) and restores it here.
func TestFlowHeldRestoreFailsThenBreak(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	r := testRig(t, st, opts)
	other, err := r.NewSession(context.Background(), rig.WithTitle("held elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Shutdown(context.Background())
	short := rig.ShortID(other.SessionID().String())
	f := startFlow(t, st, opts)
	f.waitView("held elsewhere")
	f.typeText("r")
	f.waitView("lease_failed", "B breaks the lease")
	f.typeText("B")
	f.waitView("Break lease", "type "+short)
	f.typeText("nope")
	f.key("enter")
	f.waitView("type " + short + " exactly")
	for i := 0; i < 4; i++ {
		f.tm.Send(tea.KeyMsg{Type: tea.KeyBackspace})
	}
	f.typeText(short)
	f.key("enter")
	f.selectedLive()
	f.waitView("lease broken at epoch 2, journal fenced; restored " + short + " at epoch 3")
	f.waitView("restore done at epoch 3", "lease broken at epoch 2: journal fenced before the release")
	select {
	case <-other.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the old holder did not notice the break")
	}
	// The break fenced the journal at its own epoch (2) before it released
	// the lease; the restore then fenced it at 3 and began.
	recs := records(t, st, other.SessionID().String())
	brk, rst, started := -1, -1, -1
	for i, r := range recs {
		switch {
		case r.Kind == journal.KindFence && r.Epoch == 2:
			brk = i
		case r.Kind == journal.KindFence && r.Epoch == 3:
			rst = i
		case r.Kind == journal.KindEvent:
			if _, ok := r.Event.(event.RestoreStarted); ok && started < 0 {
				started = i
			}
		}
	}
	if brk < 0 || rst != brk+1 || started <= rst {
		t.Fatalf("journal after B: want a fence at epoch 2 (the break), then the restore's fence at 3 and RestoreStarted; got%s", describeRecords(recs))
	}
	f.quit()
}

// records reads every record of session id's journal.
func records(t *testing.T, st storage.Store, id string) []journal.Record {
	t.Helper()
	rp, err := journal.NewReplayer(context.Background(), st, storage.SessionName(id), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	var out []journal.Record
	for rp.Next() {
		out = append(out, rp.Record())
	}
	if err := rp.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func describeRecords(recs []journal.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "\n  %d %s", r.Seq, r.Kind)
		switch r.Kind {
		case journal.KindFence:
			fmt.Fprintf(&b, " epoch %d", r.Epoch)
		case journal.KindEvent:
			fmt.Fprintf(&b, " %T", r.Event)
		}
	}
	return b.String()
}

// TestFlowDelete: D on a session held by someone is refused; on an idle
// one it asks for the short id, then deletes the session (journal, catalog
// entry, workspace) and it leaves the list.
func TestFlowDelete(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	r := testRig(t, st, opts)
	ctx := context.Background()
	held, err := r.NewSession(ctx, rig.WithTitle("held one"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Shutdown(ctx)
	doomed, err := r.NewSession(ctx, rig.WithTitle("doomed one"))
	if err != nil {
		t.Fatal(err)
	}
	ws := doomed.Workspace()
	if err := doomed.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	short := rig.ShortID(doomed.SessionID().String())

	f := startFlow(t, st, opts)
	f.waitView("doomed one", "held one")
	f.waitModel("the doomed session selected", func(m Model) bool {
		v := m.list.selected()
		return v != nil && v.id == doomed.SessionID().String()
	})
	f.key("j") // the held one (older, below)
	f.typeText("D")
	f.waitView("cannot be deleted while held")
	f.key("k")
	f.typeText("D")
	f.waitView("Delete session", "doomed one", "type "+short)
	f.typeText("nope")
	f.key("enter")
	f.waitView("type " + short + " exactly")
	for i := 0; i < 4; i++ {
		f.tm.Send(tea.KeyMsg{Type: tea.KeyBackspace})
	}
	f.typeText(short)
	f.key("enter")
	f.waitView("deleted " + short)
	f.waitModel("the doomed session gone from the list", func(m Model) bool {
		_, ok := m.sessions[doomed.SessionID().String()]
		return !ok && !strings.Contains(m.View(), "doomed one")
	})
	infos, err := rig.ListSessions(ctx, st)
	if err != nil || len(infos) != 1 || infos[0].ID != held.SessionID().String() {
		t.Fatalf("sessions after the delete: %+v, %v", infos, err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("workspace after the delete: %v", err)
	}
	if tip, err := st.Tip(ctx, storage.SessionName(doomed.SessionID().String())); err != nil || tip != 0 {
		t.Errorf("journal after the delete: tip %d, %v", tip, err)
	}
	f.quit()
}
