package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"looprig/host"
	"looprig/internal/termrender"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage/memstore"
)

// The emulator's answers to a program's queries must never block: its
// input pipe is synchronous and nobody reads it.
func TestScreenQueriesDoNotBlock(t *testing.T) {
	s := newTurnScreen("t", 80, 24)
	if s == nil {
		t.Fatal("newTurnScreen: nil")
	}
	queries := []string{
		"\x1b[?1049h",
		"\x1b[c", "\x1b[>c", "\x1b[0c", // device attributes
		"\x1b[5n", "\x1b[6n", "\x1b[?6n", // status and cursor position reports
		"\x1b[?1$p", "\x1b[4$p", // mode reports
		"\x1b]10;?\x07", "\x1b]11;?\x07", "\x1b]12;?\x1b\\", // colour queries
		"\x1b[?2048h", // in-band resize reports, then a resize
		"\x1b[?1004h", // focus reports
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, q := range queries {
			feed(s, q)
		}
		s.resize(100, 30)
		feed(s, "still here")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the emulator blocked on a query's answer")
	}
	if got := strings.Join(s.lines(termrender.NoColor, false), "\n"); !strings.Contains(got, "still here") {
		t.Fatalf("screen after the queries:\n%s", got)
	}
}

// A screen's rows hold printable text and looprig's SGR only, whatever the
// program writes: no OSC (52, 8, titles), no DCS, no cursor movement or
// mode switch, no C1 or bidi controls.
func TestScreenRowsAreSafe(t *testing.T) {
	hostile := "\x1b[?1049h\x1b[2J\x1b[H" +
		"\x1b]52;c;SGVsbG8=\x07\x1b]0;title\x07\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ " +
		"\x1b]0;✳ Claude Code\x07" + // U+2733 is E2 9C B3: 0x9C is C1 ST to the emulator

		"\x1bP1$qm\x1b\\\x1b[5;5H\x1b[31;1mred\x1b[0m \u202eevil\u202c \u009b31m c1 " +
		"\x1b[10;1H\x1b[38;2;1;2;3;48;5;200m" + strings.Repeat("日本", 50) + "\x1b[0m" +
		"\x1b[?25l\x1b[?1000h\x1b[12;1H\x1b[4:3mcurly\x1b[0m\x1b[?2004h"
	for _, p := range []termrender.Profile{termrender.NoColor, termrender.ANSI, termrender.ANSI256, termrender.TrueColor} {
		s := newTurnScreen("t", 60, 14)
		feed(s, hostile)
		if !s.active() {
			t.Fatal("not on the alternate screen")
		}
		for _, cursor := range []bool{false, true} {
			rows := s.lines(p, cursor)
			if len(rows) != 14 {
				t.Fatalf("%d rows, want 14", len(rows))
			}
			all := strings.Join(rows, "\n")
			for _, want := range []string{"link", "red", "evil", "curly", "日本"} {
				if !strings.Contains(all, want) {
					t.Errorf("profile %d: %q not drawn:\n%s", p, want, all)
				}
			}
			for _, bad := range []string{"\u202e", "\u009b", "SGVsbG8", "title", "http://evil", "Claude"} {
				if strings.Contains(all, bad) {
					t.Errorf("profile %d: %q drawn:\n%q", p, bad, all)
				}
			}
			for i, r := range rows {
				if err := onlySGR(r); err != nil {
					t.Errorf("profile %d, row %d: %v: %q", p, i, err, r)
				}
				if w := ansi.StringWidth(r); w != 60 {
					t.Errorf("profile %d, row %d is %d cells wide, want the screen's 60: %q", p, i, w, r)
				}
				if p == termrender.NoColor && strings.ContainsRune(r, '\x1b') {
					t.Errorf("plain profile, row %d has escapes: %q", i, r)
				}
			}
		}
	}
}

// The screen keeps a program's colours (mapped to the profile) and draws
// the cursor in reverse video only when asked (the program has the keys).
func TestScreenColoursAndCursor(t *testing.T) {
	s := newTurnScreen("t", 20, 4)
	feed(s, "\x1b[?1049h\x1b[H\x1b[31mred\x1b[0m plain\x1b[2;3H")
	rows := s.lines(termrender.ANSI, false)
	if !strings.Contains(rows[0], "\x1b[31mred") || !strings.Contains(rows[0], " plain") {
		t.Fatalf("row 0: %q", rows[0])
	}
	if strings.Contains(rows[1], "\x1b[7m") {
		t.Fatalf("cursor drawn without the keys: %q", rows[1])
	}
	rows = s.lines(termrender.ANSI, true)
	if !strings.HasPrefix(rows[1], "  \x1b[7m \x1b[") {
		t.Fatalf("cursor not at row 1, column 2 in reverse video: %q", rows[1])
	}
	feed(s, "\x1b[?25l") // the program hides it
	if rows = s.lines(termrender.ANSI, true); strings.Contains(rows[1], "\x1b[7m") {
		t.Fatalf("hidden cursor drawn: %q", rows[1])
	}
	feed(s, "\x1b[?1049l")
	if s.active() {
		t.Fatal("still on the alternate screen after 1049l")
	}
}

func TestKeyBytes(t *testing.T) {
	cases := []struct {
		k         tea.KeyMsg
		appCursor bool
		want      string
	}{
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}, false, "q"},
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("é/")}, false, "é/"},
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x"), Alt: true}, false, "\x1bx"},
		{tea.KeyMsg{Type: tea.KeySpace}, false, " "},
		{tea.KeyMsg{Type: tea.KeyEnter}, false, "\r"},
		{tea.KeyMsg{Type: tea.KeyTab}, false, "\t"},
		{tea.KeyMsg{Type: tea.KeyBackspace}, false, "\x7f"},
		{tea.KeyMsg{Type: tea.KeyEsc}, false, "\x1b"},
		{tea.KeyMsg{Type: tea.KeyCtrlC}, false, "\x03"},
		{tea.KeyMsg{Type: tea.KeyCtrlD}, false, "\x04"},
		{tea.KeyMsg{Type: tea.KeyUp}, false, "\x1b[A"},
		{tea.KeyMsg{Type: tea.KeyUp}, true, "\x1bOA"},
		{tea.KeyMsg{Type: tea.KeyLeft}, true, "\x1bOD"},
		{tea.KeyMsg{Type: tea.KeyHome}, false, "\x1b[H"},
		{tea.KeyMsg{Type: tea.KeyPgDown}, true, "\x1b[6~"},
		{tea.KeyMsg{Type: tea.KeyShiftTab}, false, "\x1b[Z"},
		{tea.KeyMsg{Type: tea.KeyCtrlRight}, false, "\x1b[1;5C"},
		{tea.KeyMsg{Type: tea.KeyF1}, false, "\x1bOP"},
		{tea.KeyMsg{Type: tea.KeyF12}, false, "\x1b[24~"},
		{tea.KeyMsg{Type: tea.KeyF20}, false, ""},
	}
	for _, c := range cases {
		if got := string(keyBytes(c.k, c.appCursor)); got != c.want {
			t.Errorf("keyBytes(%v, app %v) = %q, want %q", c.k, c.appCursor, got, c.want)
		}
	}
}

// withFullScreen is a live session whose running turn shows a full-screen
// program (a colour golden shows its screen in the events pane).
func withFullScreen(t *testing.T, m Model) Model {
	m = withMixedList(t, m)
	v := m.sessions[fakeID(1)]
	at := fixedNow.Add(-5e9)
	screen := "\x1b[?1049h\x1b[2J\x1b[H\x1b[7m top - 10:00:00 up 3 days, load average: 0.42 \x1b[0m\r\n" +
		"\r\n\x1b[1m  PID USER      %CPU COMMAND\x1b[0m\r\n" +
		"  101 dev       \x1b[31m98.0\x1b[0m make\r\n" +
		"  202 dev        1.5 \x1b]52;c;SGVsbG8=\x07go\r\n" +
		"\x1b[12;1H\x1b[32m-- q quits --\x1b[0m"
	m.send(streamMsg{id: v.id, gen: v.live.gen, envs: []event.Envelope{
		{Seq: 11, At: at, LoopID: "l00p", Event: event.TurnStarted{TurnID: "fs", Index: 2, Input: "top"}},
		{At: at, LoopID: "l00p", Event: event.OutputDelta{TurnID: "fs", Stream: event.StreamStdout, Text: screen}},
	}})
	return m
}

func TestGoldenScreenColour(t *testing.T) {
	colourGolden(t, withFullScreen, func(t *testing.T, view string, w, h int) {
		if h >= 30 && (!strings.Contains(view, "\x1b[31m98.0") || !strings.Contains(view, "q quits")) {
			t.Errorf("the program's screen is not drawn:\n%s", view)
		}
		if strings.Contains(view, "SGVsbG8") || strings.Contains(view, "full-screen program:") {
			t.Errorf("OSC payload or the transcript's notice drawn:\n%s", view)
		}
	})
}

// The real program: a turn that takes the alternate screen, draws, and
// reads keys; f gives it the keys, ctrl+] takes them back, and when the
// program leaves the alternate screen the transcript is back with its
// notices, and the next key only returns the keys to looprig.
func TestFlowFullScreenProgram(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	script := filepath.Join(t.TempDir(), "program.sh")
	// Echo off before it draws, as a full-screen program puts its
	// terminal in raw mode first: the keys sent after "screen-ready" are
	// then hidden, whenever its read starts.
	program := `stty -echo; printf '\033[?1049h\033[2J\033[Hscreen-ready'
IFS= read -rsn1 a; printf '\033[3;1Hgot-%s' "$a"
IFS= read -rsn3 b; [ "$b" = "$(printf '\033[A')" ] && printf '\033[4;1Hgot-up'
IFS= read -rsn1 c; printf '\033[?1049l'; echo "after-screen $c"
`
	if err := os.WriteFile(script, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	f.submit(id, "bash "+script)
	f.waitView("screen-ready", "turn 0's screen")
	f.typeText("f")
	f.waitView("keys go to the full-screen program")
	f.typeText("x")
	f.waitView("got-x")
	f.key("up")
	f.waitView("got-up")
	// ctrl+] gives the keys back: j moves in looprig, it is not sent.
	f.key("ctrl+]")
	f.waitModel("the keys back", func(m Model) bool { return m.screenFocus == nil })
	f.typeText("f")
	f.waitView("keys go to the full-screen program")
	f.typeText("q")
	f.waitView("after-screen q", "[full-screen program ended]", "turn 0 done: exit 0")
	// The program ended: the next key (a q, as if typed to quit it once
	// more) only gives the keys back; looprig does not quit.
	f.typeText("q")
	f.waitView("keys go to looprig again")
	f.inspect(func(m Model) {
		if m.screenFocus != nil || m.quitting != "" {
			t.Errorf("after the program: focus %v, quitting %q", m.screenFocus, m.quitting)
		}
	})
	var inputs int
	for _, r := range records(t, st, id) {
		if c := r.Command; r.Kind == journal.KindCommand && c != nil && c.Name == journal.CommandInput {
			inputs++
			if !c.Hidden || c.Input != "" {
				t.Errorf("a key to the program was journaled as visible input: %+v", c)
			}
		}
		if c := r.Command; r.Kind == journal.KindCommand && c != nil && c.Name == journal.CommandInputWritten && (!c.Hidden || c.Input != "") {
			t.Errorf("a key to the program was journaled as visible input: %+v", c)
		}
	}
	if inputs < 3 {
		t.Errorf("%d input commands journaled, want at least 3 (x, up, q):%s", inputs, describeRecords(records(t, st, id)))
	}
	f.quit()
}

// A program that draws on the main screen with plain lines (as top does)
// gets a screen from f: it is made to redraw (SIGWINCH), its "\n" return
// the carriage as on a terminal with ONLCR, and ctrl+] closes the screen.
func TestFlowScreenOpenedWithF(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	script := filepath.Join(t.TempDir(), "main-screen.sh")
	program := `trap 'printf "\033[H\033[2Jredrawn\n"' WINCH
printf 'line-one\nline-two\n'
while :; do
  IFS= read -rsn1 -t 0.2 k || continue
  printf 'key-%s\nsecond-%s\n' "$k" "$k"
  [ "$k" = q ] && break
done
echo main-screen-done
`
	if err := os.WriteFile(script, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	f.submit(id, "bash "+script)
	f.waitView("line-two")
	f.inspect(func(m Model) {
		if m.sessions[id].transcript.screen != nil {
			t.Error("a screen before f, with no alternate screen")
		}
	})
	// f while a resize is in flight: the redraw waits for its answer.
	var c *host.Client
	f.inspect(func(m Model) {
		v := m.sessions[id]
		v.live.resizing, c = true, v.live.c
	})
	f.typeText("f")
	f.waitView("turn 0's screen")
	f.inspect(func(m Model) {
		if !m.sessions[id].live.redraw {
			t.Error("no redraw waits for the resize in flight")
		}
	})
	f.tm.Send(resizedMsg{id: id, c: c})
	f.waitView("turn 0's screen", "redrawn")
	f.typeText("a")
	f.waitModel("second-a at the start of a row", func(m Model) bool {
		v := m.sessions[id]
		if v.transcript.screen == nil {
			return false
		}
		for _, r := range v.transcript.screen.lines(termrender.NoColor, false) {
			if strings.HasPrefix(r, "second-a") {
				return true
			}
		}
		return false
	})
	f.key("ctrl+]")
	f.waitModel("the screen closed", func(m Model) bool { return m.sessions[id].transcript.screen == nil && m.screenFocus == nil })
	f.waitView("Events · live", "key-a")
	f.typeText("f")
	f.waitView("keys go to the full-screen program")
	f.typeText("q")
	f.waitView("main-screen-done", "turn 0 done: exit 0", "the next key returns to looprig")
	f.key("ctrl+]")
	f.waitView("keys go to looprig again")
	f.quit()
}

// A chunk that scrolls the screen many times is cut to its last
// screenful (the emulator moves the whole screen per line scrolled off),
// keeping the alternate-screen switch of the part dropped.
func TestScreenScrollFlood(t *testing.T) {
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "%d\n", i)
	}
	flood := b.String()

	s := newTurnScreen("t", 20, 10)
	s.opened = true
	feed(s, flood)
	rows := s.lines(termrender.NoColor, false)
	if got := strings.TrimSpace(rows[8]); got != "9999" {
		t.Fatalf("row 8 = %q, want the last line 9999; rows:\n%s", got, strings.Join(rows, "\n"))
	}
	if got := strings.TrimSpace(rows[0]); got != "9991" {
		t.Fatalf("row 0 = %q, want 9991", got)
	}

	alt := newTurnScreen("t", 20, 10)
	feed(alt, "\x1b[?1049h"+flood)
	if !alt.active() {
		t.Fatal("the alternate screen was lost with the lines dropped")
	}
	feed(alt, flood+"\x1b[?1049l"+flood)
	if alt.active() {
		t.Fatal("the switch back was lost with the lines dropped")
	}
}

// One flush feeds a screen at most screenFeedBudget bytes: of more, the
// last ones, after the screen switch the part dropped ended with.
func TestScreenFeedBudget(t *testing.T) {
	s := newTurnScreen("t", 40, 10)
	s.write("\x1b[?1049h\x1b[2J\x1b[Hhead-marker")
	for len(s.pending) <= screenFeedBudget {
		s.write("\x1b[5;5Hframe")
	}
	s.write("\x1b[8;1Htail-marker")
	s.flush()
	got := strings.Join(s.lines(termrender.NoColor, false), "\n")
	if strings.Contains(got, "head-marker") || !strings.Contains(got, "tail-marker") || !s.active() {
		t.Fatalf("fed beyond the budget, or lost its tail or the alternate screen (active %v):\n%s", s.active(), got)
	}
}

// feed writes p to s and flushes it, as one batch of events does.
func feed(s *turnScreen, p string) {
	s.write(p)
	s.flush()
}

// The modes that change what keys send follow the program: application
// cursor keys and bracketed paste, on and off.
func TestScreenKeyModes(t *testing.T) {
	s := newTurnScreen("t", 20, 5)
	feed(s, "\x1b[?1049h\x1b[?1h\x1b[?2004h")
	if !s.appCursor || !s.bracketedPaste {
		t.Fatalf("modes set: app cursor %v, bracketed paste %v", s.appCursor, s.bracketedPaste)
	}
	if got := string(keyBytes(tea.KeyMsg{Type: tea.KeyUp}, s.appCursor)); got != "\x1bOA" {
		t.Fatalf("up with application cursor keys = %q", got)
	}
	feed(s, "\x1b[?1l\x1b[?2004l")
	if s.appCursor || s.bracketedPaste {
		t.Fatalf("modes reset: app cursor %v, bracketed paste %v", s.appCursor, s.bracketedPaste)
	}
}

// A window resize resizes a shown screen with the turn's terminal.
func TestScreenFollowsWindowSize(t *testing.T) {
	m := fakeModel(t, 100, 30, ansiRenderer())
	m = withFullScreen(t, m)
	v := m.sessions[fakeID(1)]
	if v.transcript.screen == nil {
		t.Fatal("no screen")
	}
	for _, sz := range [][2]int{{160, 45}, {60, 20}} {
		m.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		cols, rows := m.turnSize()
		if v.transcript.screen.emu.Width() != cols || v.transcript.screen.emu.Height() != rows {
			t.Fatalf("window %v: screen %dx%d, turn terminal %dx%d", sz, v.transcript.screen.emu.Width(), v.transcript.screen.emu.Height(), cols, rows)
		}
		checkFrame(t, m.View(), sz[0], sz[1])
	}
}

// A full-screen program's screen lasts for its whole alternate-screen
// span: a bell, a gate, the agent's conversation or its transcript
// between two chunks of its output do not end it (Claude Code raises
// attention at the end of every answer). The lines said meanwhile are in
// the transcript once the program leaves its screen.
func TestScreenSurvivesEventsBetweenChunks(t *testing.T) {
	interjections := []event.Event{
		event.Attention{TurnID: "t", Reason: event.AttentionBell},
		event.Attention{TurnID: "t", Reason: event.AttentionAgent, Agent: "claude", Text: "done answering"},
		event.GateOpened{GateID: "g", TurnID: "t", Prompt: "Bash(rm -rf build)"},
		event.GateResolved{GateID: "g", Action: event.ActionApprove, Reason: "user"},
		event.AgentConversation{Agent: "claude", ID: "c1"},
		event.AgentTranscript{Agent: "claude", Bytes: 10},
	}
	for _, ev := range interjections {
		t.Run(string(ev.Type()), func(t *testing.T) {
			v := newSessView("s")
			v.transcript.screenSize = [2]int{40, 8}
			seq := uint64(1)
			apply := func(ev event.Event) {
				v.transcript.applyAll([]event.Envelope{{Seq: seq, Event: ev}})
				seq++
			}
			off := int64(0)
			out := func(text string) {
				apply(event.OutputDelta{TurnID: "t", Stream: "stdout", Offset: off, Text: text})
				off += int64(len(text))
			}
			apply(event.TurnStarted{TurnID: "t", Index: 0, Input: "claude"})
			out("before\n\x1b[?1049h\x1b[2J\x1b[1;1Hfirst-frame")
			apply(ev)
			if v.transcript.screen == nil {
				t.Fatal("the screen ended at the event")
			}
			out("\x1b[2;1Hsecond-frame")
			if v.transcript.screen == nil {
				t.Fatal("no screen after the output that followed the event")
			}
			got := strings.Join(v.transcript.screen.lines(termrender.NoColor, false), "\n")
			if !strings.Contains(got, "first-frame") || !strings.Contains(got, "second-frame") {
				t.Fatalf("the screen lost a frame across the event:\n%s", got)
			}
			out("\x1b[?1049lafter\n")
			if v.transcript.screen != nil {
				t.Fatal("the screen outlived the program's alternate screen")
			}
			apply(event.TurnDone{TurnID: "t"})
			all := strings.Join(ringText(v), "\n")
			for _, want := range []string{"before", "after"} {
				if !strings.Contains(all, want) {
					t.Errorf("transcript lacks %q:\n%s", want, all)
				}
			}
		})
	}
}

// Through a real turn: a full-screen program that rings the bell between
// two frames keeps its screen in the events pane, and f still gives it
// the keys.
func TestFlowScreenSurvivesBell(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	script := filepath.Join(t.TempDir(), "bell.sh")
	program := `stty -echo; printf '\033[?1049h\033[2J\033[Hframe-one\a'
sleep 0.3; printf '\033[2;1Hframe-two'
IFS= read -rsn1 a; printf '\033[3;1Hgot-%s' "$a"
IFS= read -rsn1 b; printf '\033[?1049l'; echo "left-screen"
`
	if err := os.WriteFile(script, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	f.submit(id, "bash "+script)
	f.waitView("frame-one", "frame-two", "turn 0's screen")
	f.typeText("f")
	f.waitView("keys go to the full-screen program")
	f.typeText("x")
	f.waitView("got-x", "frame-one")
	f.typeText("q")
	f.waitView("left-screen", "rang the bell", "turn 0 done: exit 0")
	f.typeText("q") // gives the keys back
	f.waitView("keys go to looprig again")
	f.quit()
}

// A program's output that makes the emulator panic must not end the TUI
// (Update runs it): the screen starts blank, on the alternate screen as
// before, and the program's next drawing shows. A raw emulator stands
// for a bug termrender's guards do not know; the known one (margins past
// the screen) is guarded and draws on.
func TestScreenSurvivesEmulatorPanic(t *testing.T) {
	s := newTurnScreen("t", 20, 3)
	feed(s, "\x1b[?1049h\x1b[1;999r\x1bM\x1b[Hguarded")
	if got := s.lines(termrender.NoColor, false)[0]; !strings.HasPrefix(got, "guarded") {
		t.Fatalf("row 0 = %q after margins past the screen, want the text drawn after them", got)
	}
	s.emu = vt.NewEmulator(20, 3)
	s.emu.WriteString("\x1b[?1049h")
	feed(s, "\x1b[1;999r\x1bM")
	if !s.active() {
		t.Fatal("the screen closed when its emulator failed")
	}
	feed(s, "\x1b[Hredrawn")
	if got := s.lines(termrender.NoColor, false)[0]; !strings.HasPrefix(got, "redrawn") {
		t.Fatalf("row 0 = %q, want the program's next drawing", got)
	}
}
