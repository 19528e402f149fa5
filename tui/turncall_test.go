package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// hostileCall is a notification text a turn's program could make the
// catalog hold (a journal is not trusted): escapes, a bidi override.
const hostileCall = "tests \x1b]52;c;aGk=\x07 passed \u202eevil"

// callsList is attentionList and three sessions whose turn called for the
// user: a bell 10 minutes ago, a notification 5 minutes ago (hostile
// text), and a crashed one whose call nobody can answer.
func callsList(m Model) Model {
	m = attentionList(m)
	at := func(min int) time.Time { return fixedNow.Add(-time.Duration(min) * time.Minute) }
	h := &storage.Holder{PID: 4242, Host: "devbox"}
	var infos []rig.SessionInfo
	for _, v := range m.list.rows {
		infos = append(infos, v.listing.info)
	}
	infos = append(infos,
		rig.SessionInfo{ID: fakeID(7), State: rig.StateHeld, Holder: h, Title: "agent", Epoch: 1, OpenTurn: "b7", Turn: 0, TurnSince: at(12),
			Attention: &rig.Attention{TurnID: "b7", Reason: event.AttentionBell, Since: at(10), At: at(10), Seq: 5}, Created: at(150), Updated: at(10)},
		rig.SessionInfo{ID: fakeID(8), State: rig.StateHeld, Holder: h, Title: "ci", Epoch: 1, OpenTurn: "n8", Turn: 2, TurnSince: at(9),
			Attention: &rig.Attention{TurnID: "n8", Reason: event.AttentionOSC9, Text: hostileCall, Since: at(5), At: at(5), Seq: 9}, Created: at(140), Updated: at(5)},
		rig.SessionInfo{ID: fakeID(9), State: rig.StateCrashed, Title: "gone", Epoch: 1, OpenTurn: "c9", Turn: 0,
			Attention: &rig.Attention{TurnID: "c9", Reason: event.AttentionBell, Since: at(60), At: at(60), Seq: 4}, Created: at(130), Updated: at(60)},
	)
	return m.send(listMsg{infos: infos})
}

// A turn's call marks its row ("! bell", "! note", before the running
// turn's mark), puts it among those that need the user (w, needs:me) by
// its time, and shows in the detail pane, sanitized; a crashed session's
// call asks nobody.
func TestTurnCallMarks(t *testing.T) {
	m := callsList(fakeModel(t, 160, 45, asciiRenderer()))
	for n, want := range map[int]string{7: "! bell 10m", 8: "! note 5m", 9: ""} {
		if got, cls := turnMark(m.attn.seen, m.sessions[fakeID(n)], fixedNow); got != want || want != "" && cls != clsGate {
			t.Errorf("session %d: mark %q (%v), want %q", n, got, cls, want)
		}
	}
	var needing []string
	for _, v := range m.attn.needing(m.list.rows) {
		needing = append(needing, v.short)
	}
	// gate 45m, crash 40m (a0000005), failed 30m, done 20m, bell 10m, note
	// 5m, and the crashed a0000009 (its crash, not its call, an hour ago)
	want := []string{"a0000009", "a0000001", "a0000005", "a0000002", "a0000003", "a0000007", "a0000008"}
	if !slices.Equal(needing, want) {
		t.Errorf("needing %v, want %v", needing, want)
	}
	m.list.selectID(fakeID(7), m.listSpace())
	m.keys("w")
	if got := m.list.selected().short; got != "a0000008" {
		t.Errorf("w after the bell went to %s, want the note (a0000008)", got)
	}
	view := m.View()
	for _, bad := range []string{"\x1b]52", "\x07", "\u202e"} {
		if strings.Contains(view, bad) {
			t.Errorf("the view draws %q of the call's text", bad)
		}
	}
	if !strings.Contains(view, "! its turn says: tests") || !strings.Contains(view, "! note 5m") {
		t.Errorf("the call is not in the view:\n%s", view)
	}
}

// A call is announced once, with its text, unless the session is in
// front of the user; a later call is news again.
func TestTurnCallAnnounced(t *testing.T) {
	m := fakeModel(t, 160, 45, asciiRenderer())
	id := fakeID(1)
	info := rig.SessionInfo{ID: id, State: rig.StateHeld, Holder: &storage.Holder{PID: 1, Host: "h"}, Title: "bg", OpenTurn: "t", Created: fixedNow.Add(-time.Hour)}
	m.send(listMsg{infos: []rig.SessionInfo{info, {ID: fakeID(2), State: rig.StateIdle, Title: "front", Created: fixedNow}}})
	if m.list.selected().id == id {
		t.Fatal("the background session is selected")
	}
	v := m.sessions[id]
	v.news(false, time.Hour) // primed: what it shows now is not news
	info.Attention = &rig.Attention{TurnID: "t", Reason: event.AttentionOSC9, Text: "build done", Since: fixedNow, Seq: 7}
	v.listing.setInfo(info)
	if got := v.news(false, time.Hour); !slices.Equal(got, []string{"its turn says: build done"}) {
		t.Errorf("news %q", got)
	}
	if got := v.news(false, time.Hour); got != nil {
		t.Errorf("announced twice: %q", got)
	}
	info.Attention = &rig.Attention{TurnID: "t", Reason: event.AttentionBell, Since: fixedNow, Seq: 9}
	v.listing.setInfo(info)
	if got := v.news(true, time.Hour); got != nil {
		t.Errorf("a call in front of the user announced: %q", got)
	}
	info.Attention = &rig.Attention{TurnID: "t", Reason: event.AttentionBell, Since: fixedNow, Seq: 12}
	v.listing.setInfo(info)
	if got := v.news(false, time.Hour); !slices.Equal(got, []string{"its turn rang the bell"}) {
		t.Errorf("news %q", got)
	}
}

// The attached session in front of the user has its call seen: its host
// is told once per call, once the replay is done; the AttentionSeen that
// comes back clears the mark. A session not in front is not told.
func TestTurnCallSeen(t *testing.T) {
	m := withMixedList(t, fakeModel(t, 160, 45, asciiRenderer()))
	id := fakeID(1) // attached, selected, its turn 1 at a gate
	v := m.sessions[id]
	stream := func(envs ...event.Envelope) {
		for i := range envs {
			envs[i].LoopID, envs[i].At = "l00p", fixedNow
		}
		m.send(streamMsg{id: id, gen: v.live.gen, envs: envs})
	}
	stream(event.Envelope{Seq: 11, Event: event.GateResolved{GateID: "g1", Action: event.ActionApprove, Reason: "user"}},
		event.Envelope{Seq: 12, Event: event.Attention{TurnID: "t1", Reason: event.AttentionBell}})
	if v.live.attnSent != 12 {
		t.Fatalf("the host was not told the call at 12 was seen (sent %d)", v.live.attnSent)
	}
	if mark, _ := turnMark(m.attn.seen, v, fixedNow); mark != "! bell 0s" && !strings.HasPrefix(mark, "! bell") {
		t.Errorf("until the host records the look the mark stays: %q", mark)
	}
	stream(event.Envelope{Seq: 13, Event: event.AttentionSeen{Through: 12, From: "tui"}})
	if mark, _ := turnMark(m.attn.seen, v, fixedNow); !strings.HasPrefix(mark, "▶") {
		t.Errorf("after the look: %q, want the running turn", mark)
	}
	// Another session in front: a call here is not seen.
	m.list.selectID(fakeID(2), m.listSpace())
	stream(event.Envelope{Seq: 14, Event: event.Attention{TurnID: "t1", Reason: event.AttentionOSC777, Text: "again"}})
	if v.live.attnSent != 12 {
		t.Errorf("a call of a session not in front was said seen (sent %d)", v.live.attnSent)
	}
	if mark, _ := turnMark(m.attn.seen, v, fixedNow); !strings.HasPrefix(mark, "! note") {
		t.Errorf("the call in the background is not marked: %q", mark)
	}
	m.list.selectID(id, m.listSpace())
	m.send(flashOffMsg{gen: m.status.gen})
	if v.live.attnSent != 14 {
		t.Errorf("back in front, the call at 14 was not said seen (sent %d)", v.live.attnSent)
	}
}

// While an attach replays the history, a call in it is not said seen: a
// later record may say it was; once the replay reaches the host's last
// event, the call still pending is.
func TestTurnCallSeenAfterReplay(t *testing.T) {
	m := fakeModel(t, 160, 45, asciiRenderer())
	id := fakeID(3)
	m.send(listMsg{infos: []rig.SessionInfo{{ID: id, State: rig.StateHeld, Holder: &storage.Holder{PID: 7, Host: "h"}, Title: "agent", Created: fixedNow}}})
	m.send(attachedMsg{id: id, c: &host.Client{}, pid: 7, status: host.Status{Title: "agent", Epoch: 1, Tip: 6, LastEvent: 6}})
	v := m.sessions[id]
	m.send(subscribedMsg{id: id, gen: v.live.gen, c: v.live.c, follower: &rig.Follower{}})
	m.list.selectID(id, m.listSpace())
	env := func(seq uint64, ev event.Event) event.Envelope {
		return event.Envelope{Seq: seq, At: fixedNow, LoopID: "l", Event: ev}
	}
	m.send(streamMsg{id: id, gen: v.live.gen, envs: []event.Envelope{
		env(4, event.TurnStarted{TurnID: "t", Index: 0}), env(5, event.Attention{TurnID: "t", Reason: event.AttentionBell})}})
	if !v.replaying() || v.live.attnSent != 0 {
		t.Fatalf("replaying %v: a call in the replay was said seen (sent %d)", v.replaying(), v.live.attnSent)
	}
	m.send(streamMsg{id: id, gen: v.live.gen, envs: []event.Envelope{env(6, event.TurnOutput{TurnID: "t", Text: "x"})}})
	if v.replaying() || v.live.attnSent != 5 {
		t.Fatalf("replaying %v: the call pending at the end of the replay was not said seen (sent %d)", v.replaying(), v.live.attnSent)
	}
}
