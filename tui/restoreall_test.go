package tui

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/storage"
)

// R (restore every crashed session) fed messages directly: the dialog's
// goldens, its keys, the outcomes and the status bar's offer. The flows
// through real hosts are in restoreall_flow_test.go.

// crashedList is mixedList with five more crashed sessions: one crashed
// between turns, one whose last turn failed, one with no turn, one
// untitled, one with a hostile title.
func crashedList() []rig.SessionInfo {
	at := func(min int) time.Time { return fixedNow.Add(-time.Duration(min) * time.Minute) }
	infos := mixedList()
	return append(infos,
		rig.SessionInfo{ID: fakeID(6), State: rig.StateCrashed, Title: "nightly backup to the offsite bucket", Profile: "default", Engine: "shell", Epoch: 2,
			LastSeq: 88, Turns: 4, Created: at(900), Updated: at(42),
			LastEnd: &rig.TurnEnd{TurnID: "t3", Index: 3, Outcome: rig.TurnOutcomeDone, ExitCode: 0}},
		rig.SessionInfo{ID: fakeID(7), State: rig.StateCrashed, Title: "lint", Profile: "default", Engine: "shell", Epoch: 1,
			LastSeq: 20, Turns: 2, Created: at(100), Updated: at(90),
			LastEnd: &rig.TurnEnd{TurnID: "t1", Index: 1, Outcome: rig.TurnOutcomeFailed}},
		rig.SessionInfo{ID: fakeID(8), State: rig.StateCrashed, Title: "", Profile: "demo", Engine: "demo", Epoch: 1,
			LastSeq: 5, Created: at(3000), Updated: at(2990)},
		rig.SessionInfo{ID: fakeID(9), State: rig.StateCrashed, Title: "evil\x1b[2J\u202etitle", Profile: "default", Engine: "shell", Epoch: 5,
			OpenTurn: "t7", Turn: 7, LastSeq: 400, Turns: 8, Created: at(600), Updated: at(3)},
	)
}

// withCrashedList lists crashedList, the live session attached, and
// clears the flashes (the offer goes with them).
func withCrashedList(t *testing.T, m Model) Model {
	m = withMixedList(t, m)
	m.send(listMsg{infos: crashedList()})
	m.send(flashOffMsg{gen: m.status.gen})
	return m
}

// raRun is the R run of the dialog shown.
func raRun(t *testing.T, m Model) *restoreRun {
	t.Helper()
	r, ok := m.dialog.(*restoreRun)
	if !ok {
		t.Fatalf("the dialog is %T, want the R dialog", m.dialog)
	}
	return r
}

// raIndex is the row of session id in run r.
func raIndex(t *testing.T, r *restoreRun, id string) int {
	t.Helper()
	for i, row := range r.rows {
		if row.id == id {
			return i
		}
	}
	t.Fatalf("%s is not in the run", id)
	return -1
}

// raStarted answers the start of session id's host: it serves it.
func raStarted(t *testing.T, m Model, id string, pid int, epoch uint64) Model {
	r := m.status.run
	return m.send(restoreAllMsg{run: r, i: raIndex(t, r, id), rd: host.Ready{Session: id, PID: pid, Epoch: epoch}})
}

func raFailedWith(t *testing.T, m Model, id string, err error) Model {
	r := m.status.run
	return m.send(restoreAllMsg{run: r, i: raIndex(t, r, id), err: err})
}

// leaseHeldRemote is the host's refusal when another process holds the
// session's lease.
func leaseHeldRemote(id string) error {
	name := storage.SessionName(id)
	return remoteErr(&rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: uuid.MustParse(id),
		Cause: &storage.LeaseHeldError{Name: name, HolderEpoch: 3, Holder: storage.Holder{PID: 5150, Host: "laptop"}}})
}

func notCrashedRemote(id string) error {
	return remoteErr(&rig.NotCrashedError{Session: uuid.MustParse(id)})
}

func replayFailedRemote(id string) error {
	name := storage.SessionName(id)
	return remoteErr(&rig.RestoreError{Kind: rig.RestoreReplayFailed, Session: uuid.MustParse(id),
		Cause: fmt.Errorf("journal %q: %w", name, &storage.CorruptError{Name: name, Path: "/home/dev/.local/state/looprig/ledgers/sessions/" + id + ".log",
			Offset: 4096, Reason: "bad frame followed by a valid frame"})})
}

func restoreAllScenarios() []scenario {
	return []scenario{
		// The first listing finds crashed sessions: the bar says how many.
		{"offer", func(t *testing.T, m Model) Model {
			m = withMixedList(t, m)
			return m.send(listMsg{infos: crashedList()})
		}},
		{"asking", func(t *testing.T, m Model) Model { return withCrashedList(t, m).keys("R") }},
		{"asking_restore", func(t *testing.T, m Model) Model { return withCrashedList(t, m).keys("R", "right") }},
		// Four hosts starting, one restored, one lost to another process.
		{"running", func(t *testing.T, m Model) Model {
			m = withCrashedList(t, m).keys("R", "right", "enter")
			m = raStarted(t, m, fakeID(4), 4301, 2)
			m = raFailedWith(t, m, fakeID(6), leaseHeldRemote(fakeID(6)))
			return m.send(flashOffMsg{gen: m.status.gen})
		}},
		{"done_mixed", func(t *testing.T, m Model) Model {
			m = withCrashedList(t, m).keys("R", "right", "enter")
			m = raStarted(t, m, fakeID(4), 4301, 2)
			m = raFailedWith(t, m, fakeID(6), leaseHeldRemote(fakeID(6)))
			m = raFailedWith(t, m, fakeID(7), replayFailedRemote(fakeID(7)))
			m = raFailedWith(t, m, fakeID(8), notCrashedRemote(fakeID(8)))
			m = raStarted(t, m, fakeID(9), 4302, 6)
			return m.send(flashOffMsg{gen: m.status.gen})
		}},
		// More crashed sessions than fit: the table scrolls.
		{"asking_many", func(t *testing.T, m Model) Model {
			m = withManySessions(m, 60)
			m.send(flashOffMsg{gen: m.status.gen})
			return m.keys("R", "down")
		}},
		// Hidden while it runs: the bar counts the restores.
		{"hidden", func(t *testing.T, m Model) Model {
			m = withCrashedList(t, m).keys("R", "right", "enter")
			m = raStarted(t, m, fakeID(4), 4301, 2)
			m = m.keys("esc")
			return m.send(flashOffMsg{gen: m.status.gen})
		}},
	}
}

// update is the -update flag of the golden package.
func updateGoldens() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// restoreAllFrame is the window as View draws it, but with the panes
// blank: what R draws (the dialog, the status bar) without what the panes
// draw, which their own goldens cover.
func restoreAllFrame(m Model) string {
	w := m.width
	body := make([]string, m.geometry().bodyH)
	for i := range body {
		body[i] = spaces(w)
	}
	c := m.common()
	if m.dialog != nil {
		overlay(c, m.dialog, m.dialogArea(), body, w)
	}
	lines := append(body, m.stripLines()...)
	if m.input != nil {
		lines = append(lines, m.input.view(c, m.sessions[m.input.id], w))
	}
	lines = append(lines, m.status.view(c, m.barState(), w))
	return strings.Join(lines, "\n")
}

// TestRestoreAllGolden: the R dialog asking, running and done with mixed
// outcomes, the offer and the hidden run's progress in the status bar, at
// the golden sizes, over blank panes (restoreAllFrame). Goldens:
// testdata/restoreall/<scenario>_<w>x<h>.golden; update with
// go test ./tui -run TestRestoreAllGolden -update.
func TestRestoreAllGolden(t *testing.T) {
	for _, sc := range restoreAllScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			for _, sz := range goldenSizes {
				t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
					m := fakeModel(t, sz[0], sz[1], asciiRenderer())
					m = sc.setup(t, m)
					checkFrame(t, m.View(), sz[0], sz[1])
					view := restoreAllFrame(m)
					checkFrame(t, view, sz[0], sz[1])
					got := []byte(ansi.Strip(view) + "\n")
					path := filepath.Join("testdata", "restoreall", fmt.Sprintf("%s_%dx%d.golden", sc.name, sz[0], sz[1]))
					if updateGoldens() {
						if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(path, got, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					want, err := os.ReadFile(path)
					if err != nil {
						t.Fatalf("%v (go test ./tui -run TestRestoreAllGolden -update writes it)", err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s differs; got:\n%s\nwant:\n%s", path, got, want)
					}
				})
			}
		})
	}
}

// TestRestoreAllLayout: every scenario draws exactly the window at sizes
// from tiny to huge, with many crashed sessions too.
func TestRestoreAllLayout(t *testing.T) {
	sc := restoreAllScenarios()
	sc = append(sc, scenario{"many", func(t *testing.T, m Model) Model {
		m = withManySessions(m, 200)
		m.send(flashOffMsg{gen: m.status.gen})
		return m.keys("R", "down", "down", "right", "enter")
	}})
	for _, s := range sc {
		for _, sz := range [][2]int{{40, 10}, {59, 20}, {80, 24}, {119, 30}, {240, 70}} {
			m := fakeModel(t, sz[0], sz[1], colorRenderer())
			m = s.setup(t, m)
			checkFrame(t, m.View(), sz[0], sz[1])
		}
	}
}

func TestRestoreAllNoCrashed(t *testing.T) {
	m := fakeModel(t, 100, 30, asciiRenderer())
	m.send(listMsg{infos: mixedList()[:3]})
	m = m.keys("R")
	if m.dialog != nil {
		t.Fatalf("a dialog opened with no crashed session: %T", m.dialog)
	}
	if view := m.View(); !strings.Contains(view, "R: no crashed sessions") {
		t.Fatalf("no flash:\n%s", view)
	}
}

// TestRestoreAllCancelDefault: enter alone cancels; esc too; nothing
// starts.
func TestRestoreAllCancelDefault(t *testing.T) {
	for _, keys := range [][]string{{"R", "enter"}, {"R", "right", "esc"}, {"R", "right", "left", "enter"}} {
		m := withCrashedList(t, fakeModel(t, 100, 30, asciiRenderer()))
		m = m.keys(keys...)
		if m.dialog != nil {
			t.Errorf("%v: the dialog is still open", keys)
		}
		for _, v := range m.sessions {
			if v.busy != notBusy {
				t.Errorf("%v: %s is %s", keys, v.short, v.busy)
			}
		}
		if m.status.run != nil {
			t.Errorf("%v: a run started", keys)
		}
	}
}

// TestRestoreAllBounded: Restore starts restoreAllWorkers hosts, one more
// as each ends, every crashed session once, and nothing else.
func TestRestoreAllBounded(t *testing.T) {
	m := fakeModel(t, 100, 30, asciiRenderer())
	m = withManySessions(m, 40) // 8 crashed
	m = m.keys("R")
	r := raRun(t, m)
	if len(r.rows) != 8 {
		t.Fatalf("%d rows, want the 8 crashed sessions", len(r.rows))
	}
	m = m.keys("right", "enter")
	started := map[string]int{}
	busy := func() []string {
		var ids []string
		for _, v := range m.sessions {
			if v.busy == busyRestoring {
				ids = append(ids, v.id)
			}
		}
		return ids
	}
	for round := 0; ; round++ {
		ids := busy()
		if len(ids) > restoreAllWorkers {
			t.Fatalf("round %d: %d restoring at once, want at most %d", round, len(ids), restoreAllWorkers)
		}
		if len(ids) == 0 {
			break
		}
		if round == 0 && len(ids) != restoreAllWorkers {
			t.Fatalf("%d started, want %d", len(ids), restoreAllWorkers)
		}
		id := ids[0]
		if v := m.sessions[id]; v.state() != rig.StateCrashed {
			t.Fatalf("started %s, which is %s", v.short, v.state())
		}
		started[id]++
		m = raStarted(t, m, id, 7000+round, 2)
		if m.sessions[id].busy != notBusy {
			t.Fatalf("%s still busy after its outcome", id)
		}
	}
	if len(started) != 8 {
		t.Fatalf("%d sessions started, want 8", len(started))
	}
	for id, n := range started {
		if n != 1 {
			t.Errorf("%s started %d times", id, n)
		}
	}
	if r.phase != raDone || r.done != 8 {
		t.Fatalf("phase %d, %d done", r.phase, r.done)
	}
	if view := m.View(); !strings.Contains(view, "done: 8 restored · 0 restored elsewhere · 0 failed") {
		t.Fatalf("no summary:\n%s", view)
	}
	// A message for a row that has its outcome already changes nothing.
	m = raStarted(t, m, r.rows[0].id, 1, 1)
	if r.done != 8 {
		t.Fatalf("an outcome was counted twice: %d done", r.done)
	}
}

// TestRestoreAllOutcomes: a failure is the session's failed restore (the
// strip shows its kind and remedy, as for r); another process's restore
// (the lease held, the session no longer crashed) is said calmly and
// leaves no failure.
func TestRestoreAllOutcomes(t *testing.T) {
	m := withCrashedList(t, fakeModel(t, 120, 40, asciiRenderer()))
	m = m.keys("R", "right", "enter")
	m = raFailedWith(t, m, fakeID(4), leaseHeldRemote(fakeID(4)))
	if v := m.sessions[fakeID(4)]; v.failed != nil || v.busy != notBusy {
		t.Fatalf("lease held elsewhere: failed %v, busy %s", v.failed, v.busy)
	}
	if got := m.status.msg; !strings.Contains(got, "restored by another process (pid 5150@laptop)") || m.status.cls != clsMuted {
		t.Errorf("lease held elsewhere: flash %q (class %d), want it muted", got, m.status.cls)
	}
	m = raFailedWith(t, m, fakeID(6), notCrashedRemote(fakeID(6)))
	if v := m.sessions[fakeID(6)]; v.failed != nil || v.busy != notBusy {
		t.Fatalf("not crashed: failed %v, busy %s", v.failed, v.busy)
	}
	if got := m.status.msg; !strings.Contains(got, "no longer crashed") || m.status.cls != clsMuted {
		t.Errorf("not crashed: flash %q (class %d), want it muted", got, m.status.cls)
	}
	m = raFailedWith(t, m, fakeID(7), replayFailedRemote(fakeID(7)))
	v := m.sessions[fakeID(7)]
	if v.failed == nil || v.failed.op != opRestore || v.busy != notBusy {
		t.Fatalf("replay failed: failed %v, busy %s", v.failed, v.busy)
	}
	if got := m.status.msg; !strings.Contains(got, "restore of a0000007 failed: replay_failed") || m.status.cls != clsError {
		t.Errorf("replay failed: flash %q (class %d)", got, m.status.cls)
	}
	// The failure is r's: the strip explains it once the session is
	// selected (the dialog closed).
	m = m.keys("esc")
	m.list.selectID(fakeID(7), m.listSpace())
	view := m.View()
	for _, want := range []string{"replay_failed", "the journal is corrupt at", "nothing was modified"} {
		if !strings.Contains(view, want) {
			t.Errorf("strip without %q:\n%s", want, view)
		}
	}
	// A genuine lease failure of an exclusive root is a failure, not
	// another process's restore.
	if o, _ := classifyRestoreAll(remoteErr(&rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: uuid.MustParse(fakeID(9)),
		Cause: &rig.WorkspaceRootBusyError{Root: "/srv/p", HolderEpoch: 2,
			Cause: &storage.LeaseHeldError{Name: "workspace-roots/5f0c", HolderEpoch: 2, Holder: storage.Holder{PID: 1, Host: "h"}}}})); o != raFailed {
		t.Errorf("root busy: outcome %d, want failed", o)
	}
	// In-process errors classify as the remote ones do.
	if o, _ := classifyRestoreAll(&rig.NotCrashedError{}); o != raNotCrashed {
		t.Errorf("NotCrashedError: outcome %d", o)
	}
	if o, _ := classifyRestoreAll(&rig.RestoreError{Kind: rig.RestoreLeaseFailed, Cause: &storage.LeaseHeldError{Name: storage.SessionName(fakeID(1))}}); o != raTaken {
		t.Errorf("lease held: outcome %d", o)
	}
	if o, _ := classifyRestoreAll(errors.New("boom")); o != raFailed {
		t.Errorf("unclassified: outcome %d", o)
	}
}

// TestRestoreAllSkipsWhatChanged: a session listed otherwise by the time
// its turn comes is not started: held elsewhere, or not crashed any more.
func TestRestoreAllSkipsWhatChanged(t *testing.T) {
	m := withCrashedList(t, fakeModel(t, 120, 40, asciiRenderer()))
	m = m.keys("R", "right")
	infos := crashedList()
	for i := range infos {
		switch infos[i].ID {
		case fakeID(4):
			infos[i].State, infos[i].Holder = rig.StateHeld, &storage.Holder{PID: 77, Host: "laptop"}
		case fakeID(6):
			infos[i].State = rig.StateIdle
		}
	}
	m.send(listMsg{infos: infos})
	m = m.keys("enter")
	r := m.status.run
	for id, want := range map[string]raOutcome{fakeID(4): raTaken, fakeID(6): raNotCrashed, fakeID(7): raRunning, fakeID(8): raRunning, fakeID(9): raRunning} {
		if got := r.rows[raIndex(t, r, id)].outcome; got != want {
			t.Errorf("%s: outcome %d, want %d", id[:8], got, want)
		}
	}
	if v := m.sessions[fakeID(4)]; v.busy != notBusy {
		t.Errorf("a session held elsewhere was started")
	}
}

// TestRestoreAllHiddenAndShownAgain: esc hides the running dialog; the
// bar counts the restores; R shows the same run again; outcomes go on
// being folded while it is hidden.
func TestRestoreAllHiddenAndShownAgain(t *testing.T) {
	m := withCrashedList(t, fakeModel(t, 120, 40, asciiRenderer()))
	m = m.keys("R", "right", "enter", "esc")
	if m.dialog != nil {
		t.Fatal("esc did not hide the dialog")
	}
	r := m.status.run
	m = raStarted(t, m, fakeID(4), 4301, 2)
	m.send(flashOffMsg{gen: m.status.gen})
	if view := m.View(); !strings.Contains(view, "restoring 1/5… · R shows them") {
		t.Fatalf("no progress in the status bar:\n%s", view)
	}
	m = m.keys("R")
	if m.dialog != dialog(r) {
		t.Fatalf("R did not show the run again: %T", m.dialog)
	}
	if view := m.View(); !strings.Contains(view, "✓ live · pid 4301") {
		t.Fatalf("the outcome folded while hidden is not shown:\n%s", view)
	}
}

// TestRestoreAllOffer: the bar offers R when the listing finds crashed
// sessions, until the next flash ends; not when none crashed; again when
// one more crashes.
func TestRestoreAllOffer(t *testing.T) {
	m := fakeModel(t, 140, 30, asciiRenderer())
	m.send(listMsg{infos: mixedList()[:3]})
	if strings.Contains(m.View(), "crashed — R") {
		t.Fatal("offered with nothing crashed")
	}
	m.send(listMsg{infos: mixedList()})
	if view := m.View(); !strings.Contains(view, "✗ 1 crashed — R restores them") {
		t.Fatalf("no offer:\n%s", view)
	}
	// A flash (an attach's, say) covers it for its few seconds only.
	cmd := m.status.flash("attached to a0000001", clsOK)
	if cmd == nil || strings.Contains(m.View(), "crashed — R") {
		t.Fatal("the offer showed through a flash")
	}
	m.send(flashOffMsg{gen: m.status.gen})
	if !strings.Contains(m.View(), "✗ 1 crashed — R restores them") {
		t.Fatal("the offer went with a flash that covered it")
	}
	// esc dismisses it.
	m = m.keys("esc")
	if strings.Contains(m.View(), "crashed — R") {
		t.Fatal("esc did not dismiss the offer")
	}
	m.send(listMsg{infos: crashedList()})
	if view := m.View(); !strings.Contains(view, "✗ 5 crashed — R restores them") {
		t.Fatalf("no offer for the new crashes:\n%s", view)
	}
	// Sessions being restored are not counted.
	m = m.keys("R", "right", "enter", "esc")
	m.send(listMsg{infos: crashedList()})
	if m.status.crashed != 1 || m.status.offer {
		t.Fatalf("while restoring: %d crashed counted, offer %v", m.status.crashed, m.status.offer)
	}
}

// TestRestoreAllScroll: a table longer than the window scrolls, and while
// the restores run it follows them until the user scrolls.
func TestRestoreAllScroll(t *testing.T) {
	m := fakeModel(t, 80, 24, asciiRenderer())
	m = withManySessions(m, 200) // 40 crashed
	m.send(flashOffMsg{gen: m.status.gen})
	m = m.keys("R")
	r := raRun(t, m)
	page := r.pageRows(m.common(), m.dialogArea())
	if page >= 40 || page < 1 {
		t.Fatalf("page of %d rows", page)
	}
	if view := m.View(); !strings.Contains(view, "1–"+strconv.Itoa(page)+" of 40 · ↑/↓ scroll") {
		t.Fatalf("no scroll line:\n%s", view)
	}
	m = m.keys("down", "down")
	if view := m.View(); !strings.Contains(view, "3–"+strconv.Itoa(page+2)+" of 40") || !strings.Contains(view, r.rows[2].short) || strings.Contains(view, r.rows[1].short) {
		t.Fatalf("not scrolled by 2:\n%s", view)
	}
	m = m.keys("pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown")
	if view := m.View(); !strings.Contains(view, "–40 of 40") {
		t.Fatalf("not at the end:\n%s", view)
	}
	// A new run follows the restores: after 20 outcomes, the rows
	// starting are shown.
	m = m.keys("esc", "R", "right", "enter")
	r = m.status.run
	for i := 0; i < 20; i++ {
		id := ""
		for _, row := range r.rows {
			if row.outcome == raRunning {
				id = row.id
				break
			}
		}
		m = raStarted(t, m, id, 100+i, 2)
	}
	view := m.View()
	for _, row := range r.rows {
		if row.outcome == raRunning && !strings.Contains(view, row.short) {
			t.Fatalf("%s, starting, is not shown:\n%s", row.short, view)
		}
	}
}

// TestRestoreAllRouted: Update passes restoreAllMsg to onRestoreAll
// (update.go's route).
func TestRestoreAllRouted(t *testing.T) {
	m := withCrashedList(t, fakeModel(t, 100, 30, asciiRenderer()))
	m = m.keys("R", "right", "enter")
	r := m.status.run
	i := raIndex(t, r, fakeID(4))
	m.Update(restoreAllMsg{run: r, i: i, rd: host.Ready{Session: fakeID(4), PID: 4301, Epoch: 2}})
	if r.rows[i].outcome != raRestored {
		t.Fatal("Update does not pass restoreAllMsg to onRestoreAll: route (update.go) needs `case restoreAllMsg: return m.onRestoreAll(msg)`")
	}
}
