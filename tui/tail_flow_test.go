package tui

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// TestFlowAttachReplaysTail: attaching to a session with a long journal
// replays its last records only (rig.ReplayStart); the host's status
// stands in for the records skipped (the running turn, started before
// them), a line says what was skipped, and the turn's latest output and
// its end show as they would after a full replay.
func TestFlowAttachReplaysTail(t *testing.T) {
	st := memstore.New()
	opts, th := flowEnv(t, st)
	f := startFlow(t, st, opts)
	id := f.createSession("long")
	f.quit()

	s := th.host(id).s
	ctx := context.Background()
	for i := range 6 {
		if _, err := s.Submit(ctx, "echo early-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		waitIdleSession(t, s)
	}
	gate := filepath.Join(t.TempDir(), "go-on")
	if _, err := s.Submit(ctx, "while read l; do echo got-$l; done; until [ -e "+gate+" ]; do sleep 0.05; done; echo finished"); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		in := rig.Input{Text: "in-" + strconv.Itoa(i) + "\n", From: rig.ThisProcess("test")}
		deadline := time.Now().Add(10 * time.Second)
		_, err := s.SendInput(ctx, in)
		for ; err != nil && time.Now().Before(deadline); _, err = s.SendInput(ctx, in) {
			time.Sleep(10 * time.Millisecond) // the turn's terminal opens as it starts
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	waitOutput(t, st, id, "got-in-39")

	m := newModelLog(opts, asciiRenderer(), nil)
	m.h.chunk, m.h.tail = 8, 20
	g := startFlowModel(t, st, opts, m)
	g.waitView("got-in-39", "#6 running")
	g.inspect(func(m Model) {
		v := m.sessions[id]
		var lines []string
		for i := range v.transcript.ring.len() {
			lines = append(lines, v.transcript.ring.at(i).text)
		}
		all := strings.Join(lines, "\n")
		if !strings.Contains(all, "not replayed here: looprig log "+rig.ShortID(id)+" shows them") {
			t.Errorf("no line says what was skipped:\n%s", all)
		}
		if strings.Contains(all, "early-5") || strings.Contains(all, "▶ turn 6") {
			t.Errorf("the skipped records were replayed:\n%s", all)
		}
		if v.transcript.fold.Turn() == nil || v.transcript.fold.Turn().Index != 6 || v.transcript.fold.Turns != 7 {
			t.Errorf("the host's status did not stand in for the skipped records: open turn %+v, %d turns", v.transcript.fold.Turn(), v.transcript.fold.Turns)
		}
	})
	if _, err := s.SendInput(ctx, rig.Input{EOF: true, From: rig.ThisProcess("test")}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	g.waitView("finished", "turn 6 done: exit 0")
	g.waitModel("no running turn", func(m Model) bool { v := m.list.selected(); return v != nil && v.transcript.fold.Turn() == nil })
	g.quit()
}

// waitOutput waits until session id's journal holds text in a turn's
// output.
func waitOutput(t *testing.T, st *memstore.Store, id, text string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !journalHas(t, st, id, text) {
		if time.Now().After(deadline) {
			t.Fatalf("the journal never held %q", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
