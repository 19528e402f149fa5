package tui

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage/memstore"
)

// Input to a running turn (turninput.go), through the real program, the
// test hosts and the shell engine's terminal.

// lockedBuffer is a log destination read while the program writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newLiveSession creates a session with n (the default profile) and waits
// until it is live and selected.
func (f *flow) newLiveSession() string {
	f.t.Helper()
	f.typeText("n")
	f.waitView("New session")
	f.key("enter")
	return f.selectedLive()
}

// submit submits input as a new turn and waits until that turn started.
func (f *flow) submit(id, input string) {
	f.t.Helper()
	turns := 0
	f.inspect(func(m Model) { turns = m.sessions[id].transcript.fold.Turns })
	f.typeText("i")
	f.waitView("enter submit")
	f.typeText(input)
	f.key("enter")
	f.waitModel("the turn to start", func(m Model) bool {
		v := m.sessions[id]
		return v.transcript.fold.Turns > turns
	})
}

// openTurnInput opens the input line to the running turn (i) and waits
// until its echo state is known.
func (f *flow) openTurnInput(index int) {
	f.t.Helper()
	f.typeText("i")
	f.waitView("to turn " + strconv.Itoa(index))
	f.waitModel("the echo state", func(m Model) bool { return m.input != nil && m.input.turn != nil && m.input.turn.known })
}

func TestFlowTurnInputLine(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	f.submit(id, `read name; echo "got $name"`)
	f.openTurnInput(0)
	f.typeText("world")
	f.waitView("to turn 0 › world")
	f.key("enter")
	f.waitView("got world", "turn 0 done: exit 0")
	f.waitModel("the line to close with the turn", func(m Model) bool { return m.input == nil })
	var hasInput, hasText bool
	for _, r := range records(t, st, id) {
		if c := r.Command; r.Kind == journal.KindCommand && c != nil && c.Name == journal.CommandInput {
			hasInput = c.Bytes == len("world\n") && c.From == "tui" && !c.Hidden
		}
		if c := r.Command; r.Kind == journal.KindCommand && c != nil && c.Name == journal.CommandInputWritten {
			hasText = c.Input == "world\n" && !c.Hidden
		}
	}
	if !hasInput || !hasText {
		t.Errorf("no input command from the tui in the journal:%s", describeRecords(records(t, st, id)))
	}
	// With no turn running, i submits a new turn again.
	f.typeText("i")
	f.waitView("enter submit")
	f.typeText("echo new-turn-again")
	f.key("enter")
	f.waitView("new-turn-again", "turn 1 done: exit 0")
	f.quit()
}

func TestFlowTurnInputHidden(t *testing.T) {
	const secret = "s3cr3t-hunter2"
	st := memstore.New()
	opts := flowOptions(t, st)
	logs := &lockedBuffer{}
	f := startFlowLog(t, st, opts, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	noSecret := func(view string) {
		t.Helper()
		if strings.Contains(view, secret) || strings.Contains(view, secret[:4]) {
			t.Fatalf("the secret is drawn:\n%s", view)
		}
	}
	id := f.newLiveSession()
	f.submit(id, `stty -echo; echo ready; read pw; stty echo; echo "len ${#pw}"`)
	f.waitView("ready")
	f.typeText("i")
	f.waitView("password to turn 0")
	for _, r := range secret {
		f.typeText(string(r))
		noSecret(f.view())
	}
	f.waitView("password to turn 0", strings.Repeat("•", len(secret)))
	f.key("enter")
	f.waitModel("the length and the hidden note", func(m Model) bool {
		view := m.View()
		noSecret(view)
		return strings.Contains(view, "len "+strconv.Itoa(len(secret))) &&
			strings.Contains(view, "sent hidden input ("+strconv.Itoa(len(secret)+1)+" bytes)")
	})
	f.waitView("turn 0 done: exit 0")
	noSecret(f.view())
	if journalHas(t, st, id, secret[:4]) {
		t.Errorf("the journal holds the secret")
	}
	var hidden bool
	for _, r := range records(t, st, id) {
		if c := r.Command; r.Kind == journal.KindCommand && c != nil && c.Name == journal.CommandInput {
			hidden = c.Hidden && c.Input == "" && c.Bytes == len(secret)+1
		}
		if c := r.Command; r.Kind == journal.KindCommand && c != nil && c.Name == journal.CommandInputWritten && !c.Hidden {
			t.Errorf("an input_written that is not hidden: %+v", c)
		}
	}
	if !hidden {
		t.Errorf("no hidden input command of %d bytes in the journal:%s", len(secret)+1, describeRecords(records(t, st, id)))
	}
	f.quit()
	if l := logs.String(); strings.Contains(l, secret[:4]) || !strings.Contains(l, "hidden=true") {
		t.Errorf("the TUI's log holds the secret, or not that input was sent hidden:\n%s", l)
	}
}

func TestFlowTurnInputEOF(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	f.submit(id, `cat; echo cat-ended`)
	f.openTurnInput(0)
	f.typeText("line-one")
	f.key("enter")
	f.waitView("sent 9 bytes to turn 0")
	f.waitModel("cat's echo of line-one", func(m Model) bool {
		return strings.Count(m.View(), "line-one") >= 2 // the terminal's echo, then cat's
	})
	// ^D after text delivers the text without a newline; ^D again is the
	// end of file.
	f.typeText("part")
	f.key("ctrl+d")
	f.waitView("sent 4 bytes and end of file to turn 0")
	f.waitView("partpart")
	f.inspect(func(m Model) {
		if m.input == nil || m.sessions[id].transcript.fold.Turn() == nil {
			t.Error("cat ended on ^D after text")
		}
	})
	f.key("ctrl+d")
	f.waitView("cat-ended", "turn 0 done: exit 0")
	f.quit()
}

func TestFlowInterruptKey(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	f.submit(id, `trap 'echo got-int; exit 9' INT; echo trap-set; while :; do sleep 0.05; done`)
	f.waitView("trap-set")
	f.typeText("I")
	f.waitView("got-int", "turn 0 interrupted (user)")
	var reason string
	for _, r := range records(t, st, id) {
		if r.Kind == journal.KindEvent {
			if ev, ok := r.Event.(event.TurnInterrupted); ok {
				reason = ev.Reason
			}
		}
	}
	if reason != "user" {
		t.Errorf("TurnInterrupted reason %q, want user:%s", reason, describeRecords(records(t, st, id)))
	}
	f.quit()
}

func TestFlowTurnResize(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	settled := func() (cols, rows int) {
		f.t.Helper()
		f.waitModel("the resize to settle", func(m Model) bool {
			v := m.sessions[id]
			cols, rows = m.turnSize()
			return !v.live.resizing && v.live.sentSize == [2]int{cols, rows}
		})
		return cols, rows
	}
	cols, rows := settled()
	f.submit(id, "stty size")
	f.waitView(strconv.Itoa(rows)+" "+strconv.Itoa(cols), "turn 0 done: exit 0")

	f.tm.Send(tea.WindowSizeMsg{Width: 126, Height: 38})
	f.tm.Send(tea.WindowSizeMsg{Width: 130, Height: 40})
	cols2, rows2 := settled()
	if cols2 == cols && rows2 == rows {
		t.Fatalf("the events pane did not change size: %dx%d", cols, rows)
	}
	f.submit(id, "stty size")
	f.waitView(strconv.Itoa(rows2)+" "+strconv.Itoa(cols2), "turn 1 done: exit 0")
	f.quit()
}

func TestFlowTurnInputNoTerminal(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	p := rig.DefaultProfile()
	p.NoTTY = true
	opts.Profiles["default"] = p // the hosts read the profiles at each start
	f := startFlow(t, st, opts)
	id := f.newLiveSession()
	f.submit(id, "sleep 30")
	f.openTurnInput(0)
	f.waitView("to turn 0 (no terminal)")
	f.typeText("hello")
	f.key("enter")
	f.waitView("input not sent: the turn has no terminal (profile tty = false)")
	f.key("esc")
	f.typeText("I")
	f.waitView("turn 0 interrupted (user)")
	f.quit()
}

// A turn that ends while its hidden answer is being typed: the line stays
// and keeps the keys (typed on, the secret reaches neither the key
// bindings nor a new turn), and enter discards it with a message; nothing
// runs and nothing of it is journaled.
func TestFlowTurnEndsWhileTypingHidden(t *testing.T) {
	const secret, more = "hunter2-abc", "ixq-i-enter"
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	f.submit(id, `stty -echo; echo ready; sleep 1.5; echo gone`)
	f.waitView("ready")
	f.typeText("i")
	f.waitView("password to turn 0")
	f.typeText(secret)
	f.waitView("turn 0 done: exit 0")
	f.waitView("turn 0 ended · not sent")
	f.typeText(more)
	f.waitView("turn 0 ended · not sent", strings.Repeat("•", len(secret+more)))
	f.key("enter")
	f.waitView("turn 0 ended before enter: hidden input (" + strconv.Itoa(len(secret+more)) + " characters) discarded")
	f.inspect(func(m Model) {
		if m.input != nil {
			t.Errorf("the line is still open after enter")
		}
		if n := m.sessions[id].transcript.fold.Turns; n != 1 {
			t.Errorf("%d turns, want 1: the discarded text ran", n)
		}
		if v := m.View(); strings.Contains(v, secret[:4]) {
			t.Errorf("the secret is drawn:\n%s", v)
		}
	})
	if journalHas(t, st, id, secret[:4]) || journalHas(t, st, id, more) {
		t.Errorf("the journal holds what was typed:%s", describeRecords(records(t, st, id)))
	}
	// The new turn's line says so.
	f.typeText("i")
	f.waitView("new turn in ")
	f.key("esc")
	f.quit()
}

// A program that draws frames on the main screen without f (top does)
// leaves its last frame in the events pane, not every frame it drew.
func TestFlowFramesOnTheMainScreen(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	f.submit(id, `printf '\033[H\033[2J'; for i in $(seq 100); do printf '\033[H'; for r in 1 2 3 4 5; do printf 'frame %s row %s\033[K\r\n' $i $r; done; printf '\033[J'; done`)
	f.waitView("turn 0 done: exit 0")
	var lines []string
	f.inspect(func(m Model) { lines = outputLines(m.sessions[id]) })
	var frames []string
	for _, l := range lines {
		if strings.Contains(l, "frame") {
			frames = append(frames, l)
		}
	}
	want := []string{"frame 100 row 1", "frame 100 row 2", "frame 100 row 3", "frame 100 row 4", "frame 100 row 5"}
	if strings.Join(frames, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d frame lines in the events pane, want the last frame's 5:\n%s", len(frames), strings.Join(frames, "\n"))
	}
	f.quit()
}
