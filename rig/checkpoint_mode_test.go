package rig

import (
	"errors"
	"testing"
)

// The checkpoint mode's defaults follow the placement (every turn, but
// never for a shared root); Define refuses a
// mode it does not know, a checkpointed shared workspace and a negative
// bound, naming the field.
func TestCheckpointMode(t *testing.T) {
	session := DefaultProfile()
	excl := Profile{Name: "x", Engine: "shell", Placement: PlacementExclusive, Root: "/r"}
	shared := Profile{Name: "s", Engine: "shell", Placement: PlacementShared, Root: "/r"}
	if session.checkpointMode() != CheckpointTurn || excl.checkpointMode() != CheckpointTurn || shared.checkpointMode() != CheckpointOff {
		t.Fatalf("defaults: session %q, exclusive %q, shared %q; want turn, turn, off", session.checkpointMode(), excl.checkpointMode(), shared.checkpointMode())
	}
	excl.Checkpoint = CheckpointStop
	if excl.checkpointMode() != CheckpointStop || excl.validate() != nil {
		t.Fatalf("an exclusive profile that opts in: %q, %v", excl.checkpointMode(), excl.validate())
	}
	if session.checkpointMax() != DefaultCheckpointMax {
		t.Fatalf("default max %d", session.checkpointMax())
	}
	for _, c := range []struct {
		p     Profile
		field string
	}{
		{Profile{Name: "a", Engine: "shell", Placement: PlacementSession, Checkpoint: "always"}, "checkpoint"},
		{Profile{Name: "b", Engine: "shell", Placement: PlacementShared, Root: "/r", Checkpoint: CheckpointTurn}, "checkpoint"},
		{Profile{Name: "c", Engine: "shell", Placement: PlacementSession, CheckpointMax: -1}, "checkpoint_max"},
		{Profile{Name: "d", Engine: "shell", Placement: PlacementSession, CheckpointExclude: []string{""}}, "checkpoint_exclude"},
		{Profile{Name: "e", Engine: "shell", Placement: PlacementSession, CheckpointExclude: []string{"[x"}}, "checkpoint_exclude"},
		{Profile{Name: "f", Engine: "shell", Placement: PlacementSession, CheckpointInclude: []string{".env", ""}}, "checkpoint_include"},
		{Profile{Name: "g", Engine: "shell", Placement: PlacementSession, CheckpointInclude: []string{"[[:nope:]]"}}, "checkpoint_include"},
	} {
		var ip *InvalidProfileError
		if err := c.p.validate(); !errors.As(err, &ip) || ip.Field != c.field {
			t.Errorf("%s: %v; want *InvalidProfileError on %s", c.p.Name, err, c.field)
		}
	}
	ok := Profile{Name: "h", Engine: "shell", Placement: PlacementSession, CheckpointExclude: []string{"*.o"}, CheckpointInclude: []string{".env.local", ".ssh/"}}
	if err := ok.validate(); err != nil {
		t.Fatalf("valid patterns: %v", err)
	}
	shared = Profile{Name: "s", Engine: "shell", Placement: PlacementShared, Root: "/r", Checkpoint: CheckpointOff}
	if err := shared.validate(); err != nil || shared.checkpointMode() != CheckpointOff {
		t.Fatalf("shared with checkpoints off: %v", err)
	}
}
