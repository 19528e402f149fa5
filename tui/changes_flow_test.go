package tui

import (
	"testing"

	"looprig/rig/storage/memstore"
)

// c shows what the selected session's last turn changed in its workspace,
// from its checkpoints: the edit as a unified diff, coloured lines safe to
// draw (a file name's escape sequence shown, not interpreted); [ goes to
// the turn before (the file added), ] back; esc closes; a turn that runs
// says its changes are not known yet.
func TestFlowChanges(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	f.waitView("no sessions yet")
	f.typeText("n")
	f.waitView("New session")
	f.key("enter")
	f.selectedLive()
	f.typeText("i")
	f.typeText(`printf 'one\ntwo\n' > notes.txt; touch "$(printf 'x\033[2Jy')"`)
	f.key("enter")
	f.waitView("turn 0 done: exit 0")
	f.typeText("i")
	f.typeText(`printf 'one\nTWO\n' > notes.txt`)
	f.key("enter")
	f.waitView("turn 1 done: exit 0")
	f.waitView("2 files, 8 bytes · checkpointed") // the detail pane's workspace line

	f.typeText("c")
	f.waitView("Changes of", "turn 1", "diff notes.txt (modified)", "-two", "+TWO")
	f.typeText("[")
	f.waitView("turn 0", "diff notes.txt (added, mode 0644)", "+one", "diff x^[[2Jy (added")
	f.typeText("]")
	f.waitView("turn 1", "+TWO")
	f.key("esc")
	f.waitModel("the changes view to close", func(m Model) bool { return m.changes == nil })

	f.typeText("i")
	f.typeText(`sleep 30`)
	f.key("enter")
	f.waitView("turn 2:")
	f.typeText("c")
	f.waitView("turn 2 of session", "has not ended")
	f.key("esc")
	f.typeText("I")
	f.waitView("turn 2 interrupted")
	f.quit()
}
