package tui

import (
	"strings"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// A session's activity comes whole from the newer of its listing row and
// its folded journal, by the last record each has seen: a fold ahead of
// the catalog shows the turn's end before the catalog says it; a catalog
// ahead of the fold shows its gate, with the fold's whole prompt when the
// fold knows that gate.
func TestActivityNewestSource(t *testing.T) {
	m := fakeModel(t, 160, 45, asciiRenderer())
	id := fakeID(1)
	h := &storage.Holder{PID: 4242, Host: "devbox"}
	info := rig.SessionInfo{ID: id, State: rig.StateHeld, Holder: h, Title: "t", Epoch: 2, OpenTurn: "t1", Turn: 0,
		TurnSince: fixedNow.Add(-time.Minute), LastSeq: 4, Created: fixedNow.Add(-time.Hour), Updated: fixedNow}
	m.send(listMsg{infos: []rig.SessionInfo{info, {ID: fakeID(2), State: rig.StateIdle, Title: "front", Created: fixedNow, Updated: fixedNow}}})
	m.attn.seen.fresh = false
	v := m.sessions[id]
	at := fixedNow.Add(-time.Minute)
	v.transcript.applyAll([]event.Envelope{
		{Seq: 3, At: at, Event: event.TurnStarted{TurnID: "t1", Index: 0, Input: "make"}},
		{Seq: 4, At: at, Event: event.GateOpened{GateID: "g1", TurnID: "t1", Prompt: "run make?\nall of it"}},
	})
	if a := v.activity(); !a.fromFold || a.gate.id != "g1" || a.turn.input != "make" {
		t.Errorf("fold as new as the listing: %+v", a)
	}
	// The catalog moves on: a later record, the gate still open.
	info.OpenGate, info.GatePrompt, info.LastSeq = "g1", "run make?", 6
	v.listing.setInfo(info)
	if a := v.activity(); a.fromFold || a.gate.prompt != "run make?\nall of it" || a.turn.input != "make" {
		t.Errorf("listing ahead: %+v", a)
	}
	// The fold moves past it: the turn ended.
	v.transcript.applyAll([]event.Envelope{
		{Seq: 5, At: at, Event: event.GateResolved{GateID: "g1", Action: event.ActionApprove}},
		{Seq: 7, At: fixedNow, Event: event.TurnDone{TurnID: "t1"}},
	})
	if mark, _ := turnMark(m.attn.seen, v, fixedNow); mark != "✓ done" {
		t.Errorf("fold ahead: mark %q, want the end before the catalog says it", mark)
	}
	m.list.selectID(id, m.listSpace())
	if view := m.View(); !strings.Contains(view, "none running") || !strings.Contains(view, "none open") {
		t.Errorf("the detail pane does not follow the newest source:\n%s", view)
	}
}
