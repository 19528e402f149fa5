package tui

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
)

// A restore refused because the session was made with another placement
// and root (--placement/--root) says, in the errors strip and in the
// drift dialog, that accepting moves the workspace and leaves the files
// where they were, and names the CLI restore where it was made (which
// cli's TestDriftHintsForAPlacementOverride runs with the real binary);
// drift that does not move the workspace keeps its words.
func TestDriftThatMovesTheWorkspace(t *testing.T) {
	id := uuid.MustParse("0d3a5c1e-0000-4000-8000-000000000001")
	moved := []event.Change{
		{Field: "placement", Persisted: "exclusive", Live: "session", Level: event.LevelWarn},
		{Field: "root", Persisted: "/srv/my project", Live: "", Level: event.LevelWarn},
	}
	d := diagnose(&rig.RestoreRejectedError{Session: id, Source: "default", Assessment: rig.Assessment{Changes: moved},
		Cause: errors.New("warn-level configuration drift needs an explicit accept")})
	want := "looprig restore 0d3a5c1e --placement exclusive --root '/srv/my project'"
	if !strings.Contains(d.remedy, want) || !strings.Contains(d.remedy, "files where it worked stay there") {
		t.Errorf("remedy %q, want it to name %q and say the files stay", d.remedy, want)
	}
	v := &sessView{id: id.String(), short: "0d3a5c1e"}
	body := strings.Join(newDriftDialog(v, moved).(*confirmDialog).body, "\n")
	if !strings.Contains(body, want) || !strings.Contains(body, "workspace moves") {
		t.Errorf("drift dialog body:\n%s\nwant it to name %q", body, want)
	}

	engine := []event.Change{{Field: "engine", Persisted: "shell", Live: "demo", Level: event.LevelWarn}}
	d = diagnose(&rig.RestoreRejectedError{Session: id, Source: "default", Assessment: rig.Assessment{Changes: engine}})
	if d.remedy != "r reviews the changes and can accept them (restore under the current profile)" {
		t.Errorf("remedy for drift that moves nothing: %q", d.remedy)
	}
	if got := madeWhere([]event.Change{{Field: "root", Persisted: "/a", Live: "/b", Level: event.LevelWarn}}); got != " --root /a" {
		t.Errorf("madeWhere of a root change alone: %q", got)
	}
	if got := madeWhere([]event.Change{{Field: "placement", Persisted: "session", Live: "exclusive", Level: event.LevelWarn},
		{Field: "root", Persisted: "", Live: "/b", Level: event.LevelWarn}}); got != " --placement session" {
		t.Errorf("madeWhere of a session made in its own directory: %q", got)
	}
}
