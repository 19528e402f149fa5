package tui

import (
	"fmt"
	"io"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"

	"looprig/internal/termrender"
	"looprig/rig/event"
)

// ansiRenderer renders with the 16 ANSI colours: turn output's colours
// come out as written ("\x1b[31m…").
func ansiRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	r.SetHasDarkBackground(true)
	return r
}

// colourTurn is the output of a turn run under a pty: colours, a "\r"
// progress bar, a multi-line progress redrawn in place (cursor up, erase
// line), an OSC 52 + clear-screen attack between two words (the clear keeps the text above it) and a
// coloured line too long for any pane. Split in the middle of sequences
// on purpose.
var colourTurn = []string{
	"\x1b[31mred\x1b[0m plain\n",
	"progress 10%\rprogress 5", "0%\rprogress 100%\n",
	"pull a: waiting\npull b: waiting\n",
	"\x1b[2A\x1b[2Kpull a: 70%\n\x1b[2Kpull b: 20%\n\x1b[",
	"2A\x1b[2Kpull a: done\n\x1b[2Kpull b: done\n",
	"before \x1b]52;c;SGVsbG8=\x07\x1b[H\x1b[2Jafter\n",
	"\x1b[1;32m" + strings.Repeat("0123456789", 20) + "\x1b[0m\n",
}

// withTurnOutput: the live session of withMixedList approves its gate,
// ends turn 1, runs turn 2 (colourTurn, delivered live) to its end and
// has turn 3 running, its multi-line progress still pending.
func withTurnOutput(t *testing.T, m Model) Model {
	m = withMixedList(t, m)
	id := fakeID(1)
	v := m.sessions[id]
	at := fixedNow.Add(-10e9)
	envs := []event.Envelope{
		{Seq: 11, At: at, LoopID: "l00p", Event: event.GateResolved{GateID: "g1", Action: event.ActionApprove, Reason: "user"}},
		{Seq: 12, At: at, LoopID: "l00p", Event: event.TurnDone{TurnID: "t1", Duration: 1e9}},
		{Seq: 13, At: at, LoopID: "l00p", Event: event.TurnStarted{TurnID: "t2", Index: 2, Input: "./build.sh"}},
	}
	off := int64(0)
	for _, d := range colourTurn {
		envs = append(envs, event.Envelope{At: at, LoopID: "l00p", Event: event.OutputDelta{TurnID: "t2", Stream: event.StreamStdout, Offset: off, Text: d}})
		off += int64(len(d))
	}
	envs = append(envs,
		event.Envelope{Seq: 14, At: at, LoopID: "l00p", Event: event.TurnOutput{TurnID: "t2", Text: strings.Join(colourTurn, "")}},
		event.Envelope{Seq: 15, At: at, LoopID: "l00p", Event: event.TurnDone{TurnID: "t2", Duration: 3e9}},
		event.Envelope{Seq: 16, At: at, LoopID: "l00p", Event: event.TurnStarted{TurnID: "t3", Index: 3, Input: "docker pull x"}},
		event.Envelope{At: at, LoopID: "l00p", Event: event.OutputDelta{TurnID: "t3", Stream: event.StreamStdout,
			Text: "layer 1: \x1b[33mwaiting\x1b[0m\nlayer 2: \x1b[33mwaiting\x1b[0m\n"}},
		event.Envelope{At: at, LoopID: "l00p", Event: event.OutputDelta{TurnID: "t3", Stream: event.StreamStdout,
			Offset: int64(len("layer 1: \x1b[33mwaiting\x1b[0m\nlayer 2: \x1b[33mwaiting\x1b[0m\n")),
			Text:   "\x1b[2A\x1b[2Klayer 1: \x1b[32mdone\x1b[0m\n\x1b[2Klayer 2: 42%\n"}},
	)
	m.send(streamMsg{id: id, gen: v.live.gen, envs: envs})
	return m
}

// TestGoldenColour: the turn output scenario drawn with colours. Its
// goldens keep the escape sequences, one quoted line per row.
func TestGoldenColour(t *testing.T) {
	colourGolden(t, withTurnOutput, func(t *testing.T, view string, w, h int) {
		if w >= 160 && !strings.Contains(view, "\x1b[31mred\x1b[0m plain") {
			t.Errorf("no red %q followed by %q:\n%q", "red", " plain", view)
		}
	})
}

// colourGolden draws scenario at each golden size with colours, lets check
// look at the view, checks that every line holds only SGR sequences, and
// compares the view with its golden: one quoted line per row, escape
// sequences kept.
func colourGolden(t *testing.T, scenario func(*testing.T, Model) Model, check func(t *testing.T, view string, w, h int)) {
	for _, sz := range goldenSizes {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := fakeModel(t, sz[0], sz[1], ansiRenderer())
			m = scenario(t, m)
			view := m.View()
			checkFrame(t, view, sz[0], sz[1])
			check(t, view, sz[0], sz[1])
			var b strings.Builder
			for _, l := range strings.Split(view, "\n") {
				if err := onlySGR(l); err != nil {
					t.Errorf("%v: %q", err, l)
				}
				b.WriteString(strconv.Quote(l))
				b.WriteByte('\n')
			}
			golden.RequireEqual(t, []byte(b.String()))
		})
	}
}

// A coloured turn folded live (deltas split anywhere, checkpoints that
// add nothing) and replayed (checkpoints only) reads the same, while it
// runs and after it ends.
func TestFoldColourLiveAndReplayAgree(t *testing.T) {
	raw := strings.Join(colourTurn, "") + "tail \x1b[35mwithout\x1b[0m newline\rTAIL"
	rnd := rand.New(rand.NewSource(1))
	for _, prof := range []termrender.Profile{termrender.NoColor, termrender.ANSI, termrender.ANSI256, termrender.TrueColor} {
		for trial := 0; trial < 20; trial++ {
			start := event.Envelope{Seq: 1, Event: event.TurnStarted{TurnID: "t", Index: 0, Input: "x"}}
			live, replay := newSessView("live"), newSessView("replay")
			live.transcript.prof, replay.transcript.prof = prof, prof
			live.transcript.apply(start)
			replay.transcript.apply(start)
			// cut raw into deltas; every few deltas a checkpoint of what
			// came since the last one
			seq, ck := uint64(2), 0
			for i := 0; i < len(raw); {
				n := min(len(raw)-i, 1+rnd.Intn(12))
				live.transcript.apply(event.Envelope{Event: event.OutputDelta{TurnID: "t", Stream: event.StreamStdout, Offset: int64(i), Text: raw[i : i+n]}})
				i += n
				if rnd.Intn(4) == 0 || i == len(raw) {
					cp := event.Envelope{Seq: seq, Event: event.TurnOutput{TurnID: "t", Offset: int64(ck), Text: raw[ck:i]}}
					live.transcript.apply(cp)
					replay.transcript.apply(cp)
					seq++
					ck = i
				}
			}
			if l, r := outputLines(live), outputLines(replay); strings.Join(l, "\n") != strings.Join(r, "\n") {
				t.Fatalf("profile %d, running: live %q\nreplay %q", prof, l, r)
			}
			end := event.Envelope{Seq: seq, Event: event.TurnDone{TurnID: "t"}}
			live.transcript.apply(end)
			replay.transcript.apply(end)
			l, r := ringText(live), ringText(replay)
			if strings.Join(l, "\n") != strings.Join(r, "\n") {
				t.Fatalf("profile %d, done: live %q\nreplay %q", prof, l, r)
			}
			want := "  " + termrender.String("\x1b[31mred\x1b[0m plain", prof)
			if l[1] != want || (prof != termrender.NoColor) != strings.Contains(l[1], "\x1b[31m") {
				t.Fatalf("profile %d: first line %q, want %q", prof, l[1], want)
			}
		}
	}
}

// TestEventsPaneOnlySGR: whatever the output (hostile sequences, colours,
// lines cut by the pane), the only escape sequences drawn are complete
// SGR sequences, and a line that sets attributes resets them before its
// end.
func TestEventsPaneOnlySGR(t *testing.T) {
	hostile := []string{
		"\x1b]52;c;SGVsbG8=\x07\x1b[2J\x1b[H\x1b[?2004h\x1b[31mred\x1b[0m \x1bP1$qm\x1b\\dcs\n",
		"\x1b[?1049h\x1b[2J\x1b[Hfull-screen \x1b[7mSECRET\x1b[0m\r\n\x1b[?1049l",
		"\x1b[38;2;255;0;0;48;5;21m" + strings.Repeat("wide 日本語 ", 40) + "\n",
		"\x1b[>4;2m\x1b[?25l\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\x1b[0m\n",
		"\x1b[1m\x1b[4munterminated bold underline " + strings.Repeat("x", 300),
	}
	for _, r := range []*lipgloss.Renderer{ansiRenderer(), colorRenderer()} {
		for _, w := range []int{60, 100, 160, 240} {
			m := fakeModel(t, w, 50, r)
			m = withMixedList(t, m)
			v := m.sessions[fakeID(1)]
			envs := []event.Envelope{{Seq: 11, At: fixedNow, Event: event.TurnStarted{TurnID: "h", Index: 2, Input: "evil"}}}
			off := int64(0)
			for _, h := range hostile {
				envs = append(envs, event.Envelope{Event: event.OutputDelta{TurnID: "h", Stream: event.StreamStdout, Offset: off, Text: h}})
				off += int64(len(h))
			}
			m.send(streamMsg{id: v.id, gen: v.live.gen, envs: envs})
			for _, keys := range [][]string{nil, {"tab"}} {
				m.keys(keys...)
				view := m.View()
				checkFrame(t, view, w, 50)
				if !strings.Contains(view, "red") || !strings.Contains(view, "link") || strings.Contains(view, "SECRET") {
					t.Fatalf("%d wide: output not drawn:\n%s", w, view)
				}
				for i, l := range strings.Split(view, "\n") {
					if err := onlySGR(l); err != nil {
						t.Fatalf("%d wide, line %d: %v:\n%q", w, i, err, l)
					}
				}
			}
		}
	}
}

// onlySGR checks that every ESC of l starts "ESC [ params m" (params:
// digits, ';' and ':') and that no attributes leak: an SGR that does not
// begin with a reset (0) is met only with no attributes set (every paint
// of the TUI and every output line start from none), and the line ends
// with none set.
func onlySGR(l string) error {
	active := false
	for i := 0; i < len(l); i++ {
		if l[i] != '\x1b' {
			continue
		}
		if i+1 >= len(l) || l[i+1] != '[' {
			return fmt.Errorf("escape at byte %d is not a CSI: %q", i, l[i:min(len(l), i+8)])
		}
		j := i + 2
		for j < len(l) && (l[j] >= '0' && l[j] <= '9' || l[j] == ';' || l[j] == ':') {
			j++
		}
		if j >= len(l) || l[j] != 'm' {
			return fmt.Errorf("escape at byte %d is not an SGR: %q", i, l[i:min(len(l), j+1)])
		}
		switch p := l[i+2 : j]; {
		case p == "" || p == "0":
			active = false
		case strings.HasPrefix(p, "0;"):
			active = true
		default:
			if active {
				return fmt.Errorf("SGR %q at byte %d over attributes left set", p, i)
			}
			active = true
		}
		i = j
	}
	if active {
		return fmt.Errorf("the line ends with attributes set")
	}
	return nil
}

// A scrolled-back events pane stays still while the running turn's
// pending lines grow, become final and are flushed at its end.
func TestScrolledBackStaysStillOverPendingLines(t *testing.T) {
	m := fakeModel(t, 100, 40, asciiRenderer())
	m = withMixedList(t, m)
	v := m.sessions[fakeID(1)]
	off := int64(0)
	delta := func(text string) event.Envelope {
		env := event.Envelope{At: fixedNow, Event: event.OutputDelta{TurnID: "t2", Stream: event.StreamStdout, Offset: off, Text: text}}
		off += int64(len(text))
		return env
	}
	var b strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	m.send(streamMsg{id: v.id, gen: v.live.gen, envs: []event.Envelope{
		{Seq: 11, At: fixedNow, Event: event.TurnStarted{TurnID: "t2", Index: 2, Input: "x"}}, delta(b.String())}})
	for m.focus != paneEvents {
		m.keys("tab")
	}
	m.keys("up", "up", "up")
	events := func() string {
		view := m.View()
		i := strings.Index(view, "Events")
		return view[i:]
	}
	before := events()
	if !strings.Contains(before, "line 26") || strings.Contains(before, "line 29") {
		t.Fatalf("not scrolled back:\n%s", before)
	}
	steps := [][]event.Envelope{
		{delta("progress 1%\rprogress 2%")},
		{delta("\n" + strings.Repeat("more\n", 300))}, // past the renderer's window: lines become final
		{delta("\x1b[2A\x1b[2Kredrawn\n")},
		{{Seq: 12, At: fixedNow, Event: event.TurnDone{TurnID: "t2"}}},
	}
	for i, envs := range steps {
		m.send(streamMsg{id: v.id, gen: v.live.gen, envs: envs})
		after := events()
		after = after[strings.IndexByte(after, '\n'):]
		if want := before[strings.IndexByte(before, '\n'):]; after != want {
			t.Fatalf("step %d: the scrolled-back view moved:\n%s\nwas:\n%s", i, after, want)
		}
	}
}

// The output's profile is the lipgloss renderer's; NO_COLOR (Ascii)
// gives plain text.
func TestOutProfile(t *testing.T) {
	for p, want := range map[termenv.Profile]termrender.Profile{
		termenv.Ascii: termrender.NoColor, termenv.ANSI: termrender.ANSI,
		termenv.ANSI256: termrender.ANSI256, termenv.TrueColor: termrender.TrueColor,
	} {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(p)
		if got := outProfile(r); got != want {
			t.Errorf("profile %v: %v, want %v", p, got, want)
		}
	}
	t.Setenv("NO_COLOR", "1")
	if got := outProfile(defaultRenderer()); got != termrender.NoColor {
		t.Errorf("NO_COLOR: %v", got)
	}
}

// A turn that ends on a full-screen program's screen (it never left it)
// leaves the text of that screen in the transcript, as the program last
// showed it; a program that left its screen leaves only the notices.
func TestTurnEndingOnAScreenKeepsItsText(t *testing.T) {
	for _, c := range []struct {
		name, out string
		kept      bool
	}{
		{"ends on the screen", "\x1b[?1049h\x1b[2J\x1b[H\x1b[31mstatus\x1b[0m\x1b[4;5Hdrawn on screen\x1b]52;c;c2VjcmV0\x07", true},
		{"left the screen", "\x1b[?1049h\x1b[2J\x1b[Hdrawn on screen\x1b[?1049lafter\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newSessView("a")
			v.transcript.screenSize = [2]int{60, 10}
			v.transcript.apply(event.Envelope{Seq: 1, Event: event.TurnStarted{TurnID: "t", Index: 0, Input: "vim"}})
			v.transcript.apply(event.Envelope{Event: event.OutputDelta{TurnID: "t", Stream: event.StreamStdout, Text: c.out}})
			v.transcript.flushScreen()
			v.transcript.apply(event.Envelope{Seq: 2, Event: event.TurnOutput{TurnID: "t", Text: c.out}})
			v.transcript.apply(event.Envelope{Seq: 3, Event: event.TurnDone{TurnID: "t"}})
			text := strings.Join(ringText(v), "\n")
			if kept := strings.Contains(text, "    drawn on screen") && strings.Contains(text, termrender.AltSnapshot) && strings.Contains(text, "status"); kept != c.kept {
				t.Errorf("screen kept %v, want %v:\n%s", kept, c.kept, text)
			}
			if strings.Contains(text, "c2VjcmV0") || strings.ContainsAny(text, "\x07") {
				t.Errorf("an escape reached the transcript:\n%q", text)
			}
		})
	}
}

// g goes to the top of the events pane while a turn runs: above the
// lines its renderer still holds (a progress bar may still change them)
// and the ring; more output keeps the view there.
func TestTopWhileTurnRuns(t *testing.T) {
	m := fakeModel(t, 120, 40, asciiRenderer())
	m = withMixedList(t, m)
	v := m.sessions[fakeID(1)]
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "out line %d\n", i)
	}
	b.WriteString("partial")
	m.send(streamMsg{id: v.id, gen: v.live.gen, envs: []event.Envelope{
		{Seq: 11, At: fixedNow, Event: event.GateResolved{GateID: "g1", Action: event.ActionApprove, Reason: "user"}},
		{At: fixedNow, Event: event.OutputDelta{TurnID: "t1", Stream: event.StreamStdout, Text: b.String()}}}})
	for m.focus != paneEvents {
		m.keys("tab")
	}
	m.keys("g")
	view := m.View()
	if !strings.Contains(view, "session started") {
		t.Errorf("g did not reach the top")
	}
	m.send(streamMsg{id: v.id, gen: v.live.gen, envs: []event.Envelope{
		{At: fixedNow, Event: event.OutputDelta{TurnID: "t1", Stream: event.StreamStdout, Offset: int64(b.Len()), Text: " more\nand more\n"}}}})
	view = m.View()
	if !strings.Contains(view, "session started") {
		t.Errorf("after more output, no longer at the top:\n%s", view)
	}
}
