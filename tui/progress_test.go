package tui

import (
	"strings"
	"testing"
	"time"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// A session whose holder checkpoints the workspace after a turn, as its
// catalog entry says, shows it in its row and in the detail pane, with
// how far it is, and not a running turn; once the entry says no more, it
// does not.
func TestCheckpointingShows(t *testing.T) {
	m := fakeModel(t, 160, 45, asciiRenderer())
	h := &storage.Holder{PID: 4242, Host: "devbox"}
	p := &rig.CheckpointProgress{Trigger: event.TriggerTurn, TurnID: "t1", Since: fixedNow.Add(-20 * time.Second),
		Files: 10000, FilesDone: 7421, Bytes: 20 << 20, BytesDone: 15 << 20}
	info := rig.SessionInfo{ID: fakeID(1), State: rig.StateHeld, Holder: h, Title: "big", Epoch: 1, Checkpointing: p,
		Created: fixedNow.Add(-time.Hour), Updated: fixedNow}
	m.send(listMsg{infos: []rig.SessionInfo{info}})
	m.list.selectID(fakeID(1), m.listSpace())
	v := m.sessions[fakeID(1)]
	if mark, _ := turnMark(m.attn.seen, v, fixedNow); mark != "⟳ ckpt 74%" {
		t.Errorf("the row's mark: %q", mark)
	}
	view := m.View()
	for _, w := range []string{"⟳ ckpt 74%", "⟳ checkpointing the last turn: 7,421 of 10,000 files · the next turn waits for it", "none running"} {
		if !strings.Contains(view, w) {
			t.Errorf("the view lacks %q:\n%s", w, view)
		}
	}
	// A crashed holder's entry says nothing any more.
	info.State, info.Holder = rig.StateCrashed, nil
	m.send(listMsg{infos: []rig.SessionInfo{info}})
	if mark, _ := turnMark(m.attn.seen, m.sessions[fakeID(1)], fixedNow); strings.Contains(mark, "ckpt") {
		t.Errorf("a crashed session's mark: %q", mark)
	}
	if strings.Contains(m.View(), "checkpointing") {
		t.Errorf("a crashed session shows a checkpoint in progress:\n%s", m.View())
	}
}

// A restore in a host (r) shows the host's progress in bringing the
// workspace back, in the events pane, while it restores.
func TestRestoreProgressShows(t *testing.T) {
	m := fakeModel(t, 160, 45, asciiRenderer())
	m.send(listMsg{infos: []rig.SessionInfo{{ID: fakeID(1), State: rig.StateCrashed, Title: "big", Epoch: 1,
		Created: fixedNow.Add(-time.Hour), Updated: fixedNow}}})
	m.list.selectID(fakeID(1), m.listSpace())
	v := m.sessions[fakeID(1)]
	v.busy, v.busySince = busyRestoring, fixedNow
	feed := newRestoreFeed()
	defer feed.close()
	m.send(restoreProgressMsg{id: fakeID(1), p: host.Progress{Materialize: &host.MaterializeProgress{Done: 3 << 20, Total: 4 << 20}}, feed: feed})
	if v.restoring == nil || v.restoring.Done != 3<<20 {
		t.Fatalf("restoring = %+v", v.restoring)
	}
	if view := m.View(); !strings.Contains(view, "bringing the workspace back: 75% (3.0 MiB of 4.0 MiB)") {
		t.Errorf("the events pane lacks the restore's progress:\n%s", view)
	}
	// Not restoring any more: a late report changes nothing.
	v.busy, v.restoring = notBusy, nil
	m.send(restoreProgressMsg{id: fakeID(1), p: host.Progress{Materialize: &host.MaterializeProgress{Done: 4, Total: 4}}, feed: feed})
	if v.restoring != nil {
		t.Errorf("a report after the restore was kept: %+v", v.restoring)
	}
}

// put never waits: the latest report stands.
func TestRestoreFeedKeepsTheLatest(t *testing.T) {
	f := newRestoreFeed()
	for i := int64(1); i <= 5; i++ {
		f.put(host.Progress{Materialize: &host.MaterializeProgress{Done: i, Total: 5}})
	}
	if p := <-f.ch; p.Materialize.Done != 5 {
		t.Errorf("the feed holds %+v, want the last report", p.Materialize)
	}
}
