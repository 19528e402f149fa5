package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/themes"
)

func ringText(v *sessView) []string {
	out := make([]string, 0, v.transcript.ring.len())
	for i := 0; i < v.transcript.ring.len(); i++ {
		out = append(out, v.transcript.ring.at(i).text)
	}
	return out
}

// outputLines are the output lines of the events pane: the ring's, then
// the pending ones.
func outputLines(v *sessView) []string {
	var out []string
	for _, l := range ringText(v) {
		if s, ok := strings.CutPrefix(l, "  "); ok {
			out = append(out, s)
		}
	}
	return append(out, v.transcript.pending()...)
}

// Live: deltas show the output, the checkpoints that follow add nothing.
// Replay: only checkpoints exist and show everything. Both read the same.
func TestFoldLiveAndReplayAgree(t *testing.T) {
	start := event.Envelope{Seq: 1, Event: event.TurnStarted{TurnID: "t", Index: 0, Input: "x"}}
	deltas := []string{"al", "pha\nbe", "ta\n", "gam", "ma\n"}
	live := newSessView("a")
	live.transcript.apply(start)
	seq, off := uint64(2), int64(0)
	for i, d := range deltas {
		live.transcript.apply(event.Envelope{Event: event.OutputDelta{TurnID: "t", Stream: "stdout", Offset: off, Text: d}})
		off += int64(len(d))
		if i == 2 { // a checkpoint of what came so far
			live.transcript.apply(event.Envelope{Seq: seq, Event: event.TurnOutput{TurnID: "t", Text: "alpha\nbeta\n"}})
			seq++
		}
	}
	live.transcript.apply(event.Envelope{Seq: seq, Event: event.TurnOutput{TurnID: "t", Offset: 11, Text: "gamma\n"}})
	live.transcript.apply(event.Envelope{Seq: seq + 1, Event: event.TurnDone{TurnID: "t"}})

	replay := newSessView("b")
	replay.transcript.apply(start)
	replay.transcript.apply(event.Envelope{Seq: 2, Event: event.TurnOutput{TurnID: "t", Text: "alpha\nbeta\n"}})
	replay.transcript.apply(event.Envelope{Seq: 3, Event: event.TurnOutput{TurnID: "t", Offset: 11, Text: "gamma\n"}})
	replay.transcript.apply(event.Envelope{Seq: 4, Event: event.TurnDone{TurnID: "t"}})

	// A journal written before offsets: its checkpoints follow each other.
	legacy := newSessView("c")
	legacy.transcript.apply(start)
	legacy.transcript.apply(event.Envelope{Seq: 2, Event: event.TurnOutput{TurnID: "t", Text: "alpha\nbeta\n"}})
	legacy.transcript.apply(event.Envelope{Seq: 3, Event: event.TurnOutput{TurnID: "t", Text: "gamma\n"}})
	legacy.transcript.apply(event.Envelope{Seq: 4, Event: event.TurnDone{TurnID: "t"}})

	want := []string{"alpha", "beta", "gamma"}
	for _, v := range []*sessView{live, replay, legacy} {
		if got := outputLines(v); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: output %q, want %q", v.id, got, want)
		}
	}
}

// A checkpoint covering output whose deltas were dropped fills the gap.
func TestFoldCheckpointFillsDroppedDeltas(t *testing.T) {
	v := newSessView("a")
	v.transcript.apply(event.Envelope{Seq: 1, Event: event.TurnStarted{TurnID: "t"}})
	v.transcript.apply(event.Envelope{Event: event.OutputDelta{TurnID: "t", Text: "one\n"}})
	// "two\n" was dropped for this subscriber
	v.transcript.apply(event.Envelope{Seq: 2, Event: event.TurnOutput{TurnID: "t", Text: "one\ntwo\n"}})
	if got := outputLines(v); strings.Join(got, "|") != "one|two" {
		t.Fatalf("output %q", got)
	}
}

// A huge chunk keeps only what the ring holds, counts everything, and the
// lines the renderer still holds (the unterminated one last) wait for the
// turn's end.
func TestFoldHugeOutputIsBounded(t *testing.T) {
	v := newSessView("a")
	v.transcript.apply(event.Envelope{Seq: 1, Event: event.TurnStarted{TurnID: "t"}})
	var b strings.Builder
	n := 3*ringCapacity + 17
	for i := 0; i < n; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	b.WriteString("partial")
	v.transcript.apply(event.Envelope{Event: event.OutputDelta{TurnID: "t", Stream: event.StreamStdout, Text: b.String()}})
	if v.transcript.ring.len() != ringCapacity {
		t.Fatalf("ring holds %d", v.transcript.ring.len())
	}
	pend := v.transcript.pending()
	if got := v.transcript.outLines + uint64(len(pend)); got != uint64(n)+1 {
		t.Fatalf("counted %d lines, want %d", got, n+1)
	}
	if len(pend) == 0 || pend[len(pend)-1] != "partial" || pend[0] != strconv.Itoa(n+1-len(pend)) {
		t.Fatalf("pending %q", pend)
	}
	if last := v.transcript.ring.at(v.transcript.ring.len() - 1).text; last != "  "+strconv.Itoa(n-len(pend)) {
		t.Fatalf("last final line %q", last)
	}
	v.transcript.apply(event.Envelope{Event: event.OutputDelta{TurnID: "t", Stream: event.StreamStdout, Offset: int64(b.Len()), Text: " done\n"}})
	v.transcript.apply(event.Envelope{Seq: 2, Event: event.TurnDone{TurnID: "t"}})
	if got := v.transcript.ring.at(v.transcript.ring.len() - 2).text; got != "  partial done" {
		t.Fatalf("joined line %q", got)
	}
	if v.transcript.outLines != uint64(n)+1 || v.transcript.out != nil || len(v.transcript.pending()) != 0 {
		t.Fatalf("after the turn: %d lines, renderer %v, pending %q", v.transcript.outLines, v.transcript.out != nil, v.transcript.pending())
	}
}

func TestOutputLines(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"plain", []string{"plain"}},
		{"crlf\r\n", []string{"crlf"}},
		{"10%\r50%\r100%", []string{"100%"}},
		{"a\tb", []string{"a       b"}},
		{"\x1b[2Jx", []string{"x"}},
		{"a\x1b]52;c;QQ==\x07b", []string{"ab"}},
		{"r\u202eev", []string{"r<U+202E>ev"}},
		{"bell\a!", []string{"bell!"}},
		{"nul\x00", []string{"nul^@"}},
		{strings.Repeat("x", 5000), []string{strings.Repeat("x", maxLineCells), strings.Repeat("x", maxLineCells), strings.Repeat("x", 5000-2*maxLineCells)}},
	}
	for _, c := range cases {
		v := newSessView("a")
		v.transcript.apply(event.Envelope{Seq: 1, Event: event.TurnStarted{TurnID: "t"}})
		v.transcript.apply(event.Envelope{Event: event.OutputDelta{TurnID: "t", Text: c.in}})
		v.transcript.apply(event.Envelope{Seq: 2, Event: event.TurnDone{TurnID: "t"}})
		if got := outputLines(v); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("output of %q = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFitAndWidths(t *testing.T) {
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"abc", 5, "abc  "},
		{"abcdef", 4, "abc…"},
		{"日本語テキスト", 7, "日本語…"},
		{"", 3, "   "},
		{"x", 0, ""},
	} {
		got := fit(c.in, c.w)
		if got != c.want || width(got) != c.w {
			t.Errorf("fit(%q,%d) = %q (width %d), want %q", c.in, c.w, got, width(got), c.want)
		}
	}
	if got := truncLeft("/very/long/path/to/store", 10); got != "…/to/store" {
		t.Errorf("truncLeft = %q", got)
	}
}

func TestCauseChain(t *testing.T) {
	inner := errors.New("disk on fire")
	mid := &rig.LifecycleError{Stage: rig.StageJournal, Cause: inner}
	got := causeChain(mid)
	if len(got) != 2 || got[0] != "new session: journal" || got[1] != "disk on fire" {
		t.Fatalf("chain %q", got)
	}
	hostile := errors.New("bad \x1b[2J thing")
	if got := causeChain(hostile); got[0] != "bad ^[[2J thing" {
		t.Fatalf("chain not sanitized: %q", got)
	}
}

// TestSubscriptionLossRecovers drives a real session whose stream falls
// behind (the client's queue, shrunk, overflows while nobody reads): the
// follower reads it again from the journal, the TUI says so in a line and
// ends with the same state as the journal, without duplicates.
func TestSubscriptionLossRecovers(t *testing.T) {
	st := memstoreNew()
	opts, th := flowEnv(t, st)
	m := newModel(opts, asciiRenderer())
	defer func() { m.h.cancel(); m.h.closeAll(5 * time.Second) }()
	m.h.dialOpts = []host.DialOption{host.WithStreamBuffer(16)}
	m.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	msg := m.h.createCmd(HostRequest{Profile: "default", Title: "lossy"})()
	am, ok := msg.(attachedMsg)
	if !ok {
		t.Fatalf("create: %#v", msg)
	}
	m.send(am)
	v := m.sessions[am.id]
	s := th.host(am.id).s
	// Follow it (we run the reads by hand).
	sub, ok := m.h.followHostCmd(v.id, v.live.gen, v.live.c, 0)().(subscribedMsg)
	if !ok || sub.err != nil {
		t.Fatalf("follow: %#v", sub)
	}
	m.Update(sub)
	read := func() {
		next := runCmd(t, func() any {
			return m.h.streamCmd(v.id, v.live.gen, v.live.c, v.live.follower, v.live.status.Epoch, v.streamLimit())()
		}, 10*time.Second)
		m.Update(next.(tea.Msg))
	}
	for v.replaying() {
		read()
	}
	// Overflow the stream with durable events while nobody reads it.
	ctx := context.Background()
	for i := 0; i < 60; i++ {
		if _, err := s.Submit(ctx, "echo turn-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := s.WaitIdle(wctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	tip := s.Status().Tip
	// Drain: the reader gets batches, falls behind, is read again from
	// the journal, and reads on up to the tip.
	for i := 0; i < 1000 && v.transcript.lastSeq < tip; i++ {
		read()
	}
	text := strings.Join(ringText(v), "\n")
	if !strings.Contains(text, "fell behind its host's events; they were read again from the journal") {
		t.Fatalf("no recovery line:\n%s", text)
	}
	if v.transcript.lastSeq != tip {
		t.Fatalf("folded to seq %d, journal tip %d", v.transcript.lastSeq, tip)
	}
	for i := 0; i < 60; i++ {
		if c := strings.Count(text, "turn "+strconv.Itoa(i)+": echo turn-"+strconv.Itoa(i)+"\n"); c != 1 {
			t.Fatalf("turn %d shown %d times:\n%s", i, c, text)
		}
		if c := strings.Count(text, "\n  turn-"+strconv.Itoa(i)+"\n"); c != 1 {
			t.Fatalf("turn %d's output shown %d times:\n%s", i, c, text)
		}
	}
	if v.live.follower == nil || v.live.follower.Recoveries() == 0 {
		t.Fatal("the follower never fell behind; the test proves nothing")
	}
}

func TestNoColorRemovesAllStyling(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	m := New(Options{Store: memstoreNew(), StoreDir: "/s", Now: fixedClock})
	m.send(tea.WindowSizeMsg{Width: 120, Height: 30})
	m = withTurnOutput(t, m) // its turns print colours
	for _, keys := range [][]string{nil, {"?"}, {"esc", "X"}} {
		m.keys(keys...)
		if v := m.View(); strings.Contains(v, "\x1b") {
			t.Fatalf("NO_COLOR view has escape sequences:\n%q", v)
		}
	}
	// The state is still readable: glyph and word.
	v := m.View()
	for _, s := range []string{"● live", "◆ held", "○ idle", "✗ crashed", "⊘ broken"} {
		if !strings.Contains(v, s) {
			t.Errorf("NO_COLOR view lacks %q", s)
		}
	}
}

func TestColourViewIsStyledAndThemesSwitch(t *testing.T) {
	dir := t.TempDir()
	m := newModel(Options{Store: memstoreNew(), Now: fixedClock, ConfigDir: dir}, colorRenderer())
	m.send(tea.WindowSizeMsg{Width: 120, Height: 30})
	m = withMixedList(t, m)
	before := m.View()
	if !strings.Contains(before, "\x1b[") {
		t.Fatal("colour view has no styling")
	}
	seen := map[string]bool{m.st.theme.Name: true}
	for i := 0; i < len(themes.Builtins())-1; i++ {
		_, cmd := m.Update(keyMsg("t"))
		if cmd == nil {
			t.Fatal("no command to save the theme")
		}
		seen[m.st.theme.Name] = true
		checkFrame(t, m.View(), 120, 30)
	}
	if len(seen) != len(themes.Builtins()) {
		t.Fatalf("t cycled through %v", seen)
	}
	// Saving the choice is a command (I/O), run here by hand.
	if err := themes.SaveChoice(dir, m.st.theme.Name); err != nil {
		t.Fatal(err)
	}
	m2 := newModel(Options{Store: memstoreNew(), Now: fixedClock, ConfigDir: dir}, colorRenderer())
	if m2.st.theme.Name != m.st.theme.Name {
		t.Fatalf("persisted %q, restarted with %q", m.st.theme.Name, m2.st.theme.Name)
	}
}

func TestUnknownThemeIsReported(t *testing.T) {
	err := Run(context.Background(), Options{Store: memstoreNew(), Theme: "nope"})
	if err == nil || !strings.Contains(err.Error(), `unknown theme "nope"`) || !strings.Contains(err.Error(), "high-contrast") {
		t.Fatalf("Run with an unknown theme: %v", err)
	}
	m := newModel(Options{Store: memstoreNew(), Theme: "nope", Now: fixedClock}, asciiRenderer())
	if m.st.theme.Name != themes.Default || !strings.Contains(m.status.msg, "unknown theme") {
		t.Fatalf("New with an unknown theme: %s, %q", m.st.theme.Name, m.status.msg)
	}
}

func TestUserThemeFromConfigDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(themes.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	body := "base = \"dark\"\n[colors]\naccent = \"#ff0000 196 9\"\n"
	if err := os.WriteFile(filepath.Join(themes.Dir(dir), "mine.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newModel(Options{Store: memstoreNew(), Theme: "mine", ConfigDir: dir, Now: fixedClock}, colorRenderer())
	if m.st.theme.Name != "mine" {
		t.Fatalf("theme %q", m.st.theme.Name)
	}
}

// TestKeysDisabledForReadOnly: mutating keys on a session not hosted here
// do nothing but say why; i opens a line that keeps the keys, says why,
// and runs nothing (TestFlowInputOnASessionNotLive).
func TestKeysDisabledForReadOnly(t *testing.T) {
	m := fakeModel(t, 120, 30, asciiRenderer())
	m.send(listMsg{infos: mixedList()})
	m.list.selectID(fakeID(2), m.listSpace()) // held elsewhere
	m.Update(keyMsg("i"))
	if m.input == nil || !strings.Contains(m.View(), "held by pid 5150@devbox") || !strings.Contains(m.View(), "enter: nothing runs") {
		t.Fatalf("i on a held session:\n%s", m.View())
	}
	m.Update(keyMsg("X")) // typed into the line, not a binding
	if m.dialog != nil {
		t.Fatal("a key typed into the held line ran as a binding")
	}
	m.Update(keyMsg("enter"))
	if m.input != nil || !strings.Contains(m.status.msg, "the line was not run") {
		t.Fatalf("enter on the held line: input %v, flash %q", m.input != nil, m.status.msg)
	}
	for _, k := range []string{"I", "a", "d", "X"} {
		_, cmd := m.Update(keyMsg(k))
		if m.input != nil || m.dialog != nil {
			t.Fatalf("%s opened something on a held session", k)
		}
		if !strings.Contains(m.status.msg, "held by pid 5150@devbox") && !strings.Contains(m.status.msg, "not live") {
			t.Fatalf("%s: flash %q does not say why", k, m.status.msg)
		}
		_ = cmd
	}
}

// TestQuitAsksWhenATurnRuns: q with a running turn opens a dialog whose
// default is Cancel.
func TestQuitAsksWhenATurnRuns(t *testing.T) {
	m := fakeModel(t, 120, 30, asciiRenderer())
	m = withMixedList(t, m) // the hosted session has turn 1 open
	_, cmd := m.Update(keyMsg("q"))
	if m.dialog == nil {
		t.Fatal("q with a running turn did not ask")
	}
	if cmd != nil {
		t.Fatal("q with a running turn returned a command before confirming")
	}
	m.keys("enter") // Cancel
	if m.dialog != nil || m.quitting != "" {
		t.Fatal("Cancel did not cancel")
	}
}
