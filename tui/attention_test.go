package tui

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// attentionList lists a session in every attention state: a gate waiting
// (the oldest need), a failed turn and a finished one not looked at, a
// running turn, a crash, and an end already seen. The first listing
// primes the seen state (a first run counts what it finds as seen), the
// second brings the news.
func attentionList(m Model) Model {
	at := func(min int) time.Time { return fixedNow.Add(-time.Duration(min) * time.Minute) }
	h := &storage.Holder{PID: 4242, Host: "devbox"}
	end := func(turn string, idx int, outcome rig.TurnOutcome, code int, reason string, ended int) *rig.TurnEnd {
		return &rig.TurnEnd{TurnID: turn, Index: idx, Outcome: outcome, ExitCode: code, Reason: reason, Started: at(ended + 2), Ended: at(ended)}
	}
	base := []rig.SessionInfo{
		{ID: fakeID(1), State: rig.StateHeld, Holder: h, Title: "deploy", Epoch: 2, OpenTurn: "g1", Turn: 3, OpenGate: "gate1", TurnSince: at(50), GateSince: at(45), Created: at(300), Updated: at(45)},
		{ID: fakeID(2), State: rig.StateHeld, Holder: h, Title: "lint", Epoch: 1, Created: at(200), Updated: at(30)},
		{ID: fakeID(3), State: rig.StateIdle, Title: "docs", Epoch: 1, Created: at(190), Updated: at(20)},
		{ID: fakeID(4), State: rig.StateHeld, Holder: h, Title: "build", Epoch: 1, OpenTurn: "r4", Turn: 0, TurnSince: at(3), Created: at(180), Updated: at(3)},
		{ID: fakeID(5), State: rig.StateCrashed, Title: "import", Epoch: 1, OpenTurn: "c5", Turn: 2, Created: at(170), Updated: at(40)},
		{ID: fakeID(6), State: rig.StateIdle, Title: "old news", Epoch: 1, LastEnd: end("s6", 1, rig.TurnOutcomeDone, 1, "", 100), Created: at(160), Updated: at(100)},
	}
	m.send(listMsg{infos: slices.Clone(base)})
	news := slices.Clone(base)
	news[1].LastEnd = end("f2", 4, rig.TurnOutcomeDone, 2, "", 30)
	news[2].LastEnd = end("d3", 0, rig.TurnOutcomeDone, 0, "", 20)
	return m.send(listMsg{infos: news})
}

func TestTurnMarks(t *testing.T) {
	m := attentionList(fakeModel(t, 160, 45, asciiRenderer()))
	m.list.selectID(fakeID(6), m.listSpace())
	now := fixedNow
	want := map[int]string{1: "? gate 45m", 2: "✗ exit 2", 3: "✓ done", 4: "▶ 3m", 5: "", 6: ""}
	for n, w := range want {
		if got, _ := turnMark(m.attn.seen, m.sessions[fakeID(n)], now); got != w {
			t.Errorf("session %d: mark %q, want %q", n, got, w)
		}
	}
	// the marks are in the rows, without colour too
	view := m.View()
	for _, w := range []string{"? gate 45m", "✗ exit 2", "✓ done", "▶ 3m"} {
		if !strings.Contains(view, w) {
			t.Errorf("the sessions pane lacks %q:\n%s", w, view)
		}
	}
	// interruptions and failures say which
	for e, w := range map[rig.TurnEnd]string{
		{Outcome: rig.TurnOutcomeInterrupted, Reason: "crash"}:               "⏹ crash",
		{Outcome: rig.TurnOutcomeInterrupted, Reason: "user"}:                "⏹ stopped",
		{Outcome: rig.TurnOutcomeFailed, Reason: "no shell"}:                 "✗ failed",
		{Outcome: rig.TurnOutcomeInterrupted, Reason: event.ReasonLeaseLost}: "⏹ lost",
	} {
		if got, _ := endMark(e); got != w {
			t.Errorf("endMark(%+v) = %q, want %q", e, got, w)
		}
	}
	// an end whose start the fold never saw has no index to name
	if got := endText(rig.TurnEnd{Index: -1, Outcome: rig.TurnOutcomeDone, ExitCode: 1}); got != "turn ? done: exit 1" {
		t.Errorf("endText of an unknown turn = %q", got)
	}
}

func TestNeedsOldestFirstAndSeen(t *testing.T) {
	m := attentionList(fakeModel(t, 160, 45, asciiRenderer()))
	ids := func() []string {
		var out []string
		for _, v := range m.attn.needing(m.list.rows) {
			out = append(out, v.short)
		}
		return out
	}
	// gate 45m, crash 40m, failed 30m, done 20m; running and seen do not need
	want := []string{"a0000001", "a0000005", "a0000002", "a0000003"}
	if got := ids(); !slices.Equal(got, want) {
		t.Fatalf("needing %v, want %v", got, want)
	}
	// w goes to the oldest, then on; a session looked at is seen
	m.list.selectID(fakeID(6), m.listSpace())
	m.keys("w")
	if got := m.list.selected().short; got != "a0000001" {
		t.Fatalf("w selected %s, want the gate (a0000001)", got)
	}
	m.keys("w", "w")
	if got := m.list.selected().short; got != "a0000002" {
		t.Fatalf("w w selected %s, want the failed turn (a0000002)", got)
	}
	if got := ids(); slices.Contains(got, "a0000002") {
		t.Errorf("a session in front of the user still needs them for its seen end: %v", got)
	}
	if mark, _ := turnMark(m.attn.seen, m.sessions[fakeID(2)], fixedNow); mark != "" {
		t.Errorf("seen end still marked %q", mark)
	}
	// the filter word lists them oldest first
	m.keys("/")
	m.typeKeys(needsFilter)
	m.keys("enter")
	var vis []string
	for _, v := range m.list.vis {
		vis = append(vis, v.short)
	}
	if want := []string{"a0000001", "a0000005", "a0000003"}; !slices.Equal(vis, want) {
		t.Errorf("filter %s shows %v, want %v", needsFilter, vis, want)
	}
}

func (m Model) typeKeys(s string) Model {
	for _, r := range s {
		m.Update(keyMsg(string(r)))
	}
	return m
}

// The seen state survives a restart, in a 0600 file; a first run counts
// what it finds as seen.
func TestSeenStatePersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seen.json")
	newM := func() Model {
		m := newModel(Options{Store: memstoreNew(), Now: fixedClock, SeenFile: path}, asciiRenderer())
		m.send(tea.WindowSizeMsg{Width: 160, Height: 45})
		return m
	}
	m := newM()
	if !m.attn.seen.fresh {
		t.Fatal("no file yet, but the seen state is not fresh")
	}
	m = attentionList(m)
	saveAll(t, m)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("seen state not written: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("seen state mode %v, want 0600", fi.Mode().Perm())
	}
	m.list.selectID(fakeID(2), m.listSpace())
	saveAll(t, m)

	m2 := newM()
	if m2.attn.seen.fresh {
		t.Fatal("the file exists, but the seen state is fresh")
	}
	m2 = attentionList(m2)
	if mark, _ := turnMark(m2.attn.seen, m2.sessions[fakeID(2)], fixedNow); mark != "" {
		t.Errorf("after a restart, the end looked at is marked %q", mark)
	}
	if mark, _ := turnMark(m2.attn.seen, m2.sessions[fakeID(3)], fixedNow); mark != "✓ done" {
		t.Errorf("after a restart, the end not looked at is marked %q, want ✓ done", mark)
	}
}

// saveAll writes the seen state as it stands (the fake model drops the
// save commands Update returns).
func saveAll(t *testing.T, m Model) {
	t.Helper()
	m.Update(settleMsg{gen: -1}) // any message: the selected session is seen
	m.attn.seen.saving, m.attn.seen.dirty = false, true
	msg := m.attn.seen.save()().(seenSavedMsg)
	if msg.err != nil {
		t.Fatal(msg.err)
	}
	m.attn.seen.saved(msg)
}

func TestNotifySequence(t *testing.T) {
	evil := "deploy\x07\x1b]52;c;aGk=\x1b\\\u009b31m;done\xff"
	tests := []struct {
		mode   string
		tmux   bool
		want   string
		absent []string
	}{
		{"bell", false, "\a", nil},
		{"", true, "\a", nil},
		{"osc9", false, "\x1b]9;looprig: deploy  ]52,c,aGk= \\ 31m,done?: waits\x07", nil},
		{"osc777", false, "\x1b]777;notify;looprig: deploy  ]52,c,aGk= \\ 31m,done?;waits\x07", nil},
		{"osc9", true, "\x1bPtmux;\x1b\x1b]9;looprig: deploy  ]52,c,aGk= \\ 31m,done?: waits\x07\x1b\\", nil},
	}
	for _, tt := range tests {
		got := notifySequence(tt.mode, tt.tmux, "looprig: "+evil, "waits")
		want := tt.want
		if tt.mode == "osc9" {
			// OSC 9 keeps ';' (its text is one field)
			want = strings.ReplaceAll(want, ",", ";")
		}
		if got != want {
			t.Errorf("notifySequence(%q, tmux %v) = %q, want %q", tt.mode, tt.tmux, got, want)
		}
	}
	// nothing but looprig's own introducer and terminator: no ESC, BEL or
	// C1 from the session's text
	inner := notifyText(evil, 100)
	if strings.ContainsAny(inner, "\x07\x1b\u009b") {
		t.Errorf("notifyText kept a control: %q", inner)
	}
	if got := notifyText(strings.Repeat("x", 300), 10); got != strings.Repeat("x", 10)+"…" {
		t.Errorf("notifyText does not cut at 10: %q", got)
	}
}

// A crashed session whose journal was read (selected) shows no running
// turn or waiting gate: its open turn and gate wait for a restore.
func TestCrashedOpenTurnIsNotRunning(t *testing.T) {
	m := fakeModel(t, 160, 45, asciiRenderer())
	id := fakeID(9)
	m.send(listMsg{infos: []rig.SessionInfo{{ID: id, State: rig.StateCrashed, Title: "cut", Epoch: 1, OpenTurn: "t0", OpenGate: "g0", Created: fixedNow, Updated: fixedNow}}})
	v := m.sessions[id]
	v.transcript.apply(envAt(1, event.TurnStarted{TurnID: "t0", Index: 0, Input: "sleep 300"}))
	v.transcript.apply(envAt(2, event.GateOpened{GateID: "g0", TurnID: "t0", Prompt: "ok?"}))
	v.journal.state = journalRead
	if mark, _ := turnMark(m.attn.seen, v, fixedNow); mark != "" {
		t.Errorf("crashed session marked %q, want nothing (its state says crashed)", mark)
	}
	if _, ok := needsUser(m.attn.seen, v); !ok {
		t.Errorf("a crashed session does not need the user")
	}
}

func envAt(seq uint64, ev event.Event) event.Envelope {
	return event.Envelope{Seq: seq, At: fixedNow, Event: ev}
}

// A turn end is announced when it ran long, but not the interruption a
// restore records for a turn a crash cut off.
func TestAnnounceSkipsCrashInterruptions(t *testing.T) {
	m := newModel(Options{Store: memstoreNew(), Now: fixedClock, NotifyTo: &strings.Builder{}, Notify: "bell"}, asciiRenderer())
	m.send(tea.WindowSizeMsg{Width: 160, Height: 45})
	id, other := fakeID(1), fakeID(2)
	info := func(end *rig.TurnEnd) []rig.SessionInfo {
		return []rig.SessionInfo{
			{ID: id, State: rig.StateIdle, Title: "bg", LastEnd: end, Created: fixedNow.Add(-time.Hour)},
			{ID: other, State: rig.StateIdle, Title: "front", Created: fixedNow},
		}
	}
	m.send(listMsg{infos: info(nil)})
	v := m.sessions[id]
	long := func(turn string, outcome rig.TurnOutcome, reason string) *rig.TurnEnd {
		return &rig.TurnEnd{TurnID: turn, Outcome: outcome, Reason: reason, Started: fixedNow.Add(-time.Minute), Ended: fixedNow}
	}
	v.listing.setInfo(info(long("t1", rig.TurnOutcomeInterrupted, event.ReasonCrash))[0])
	if cmd := m.attn.announce(m.h, v, m.list.selected()); cmd != nil {
		t.Errorf("a crash's interruption, recorded by a restore, is announced")
	}
	v.listing.setInfo(info(long("t2", rig.TurnOutcomeDone, ""))[0])
	if cmd := m.attn.announce(m.h, v, m.list.selected()); cmd == nil {
		t.Errorf("a minute-long turn's end in the background is not announced")
	}
}

func TestNeedsFilterEmpty(t *testing.T) {
	m := fakeModel(t, 160, 45, asciiRenderer())
	m.send(listMsg{infos: []rig.SessionInfo{{ID: fakeID(1), State: rig.StateIdle, Title: "calm", Created: fixedNow}}})
	m.keys("/").typeKeys(needsFilter).keys("enter")
	if view := m.View(); !strings.Contains(view, "no session is waiting for you — esc clears the filter") {
		t.Errorf("an empty needs:me list does not say so:\n%s", view)
	}
}
