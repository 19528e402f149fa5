package rig

import (
	"errors"
	"strconv"

	"looprig/rig/checkpoint"
)

// CheckpointMode says when a session's workspace is checkpointed into the
// store (event.WorkspaceCheckpointed), so that it travels with the session
// to another machine.
type CheckpointMode string

const (
	// CheckpointTurn: at the end of each turn and at shutdown. The
	// default for session and exclusive placement: every turn is a point
	// the workspace can travel from and go back to.
	CheckpointTurn CheckpointMode = "turn"
	// CheckpointStop: at shutdown (and handover) only.
	CheckpointStop CheckpointMode = "stop"
	// CheckpointOff: never. The only mode of shared placement (a directory other sessions write at
	// the same time has no state of one session's).
	CheckpointOff CheckpointMode = "off"
)

// DefaultCheckpointMax bounds a checkpoint when the profile does not: a
// workspace over it is not checkpointed (event.WorkspaceCheckpointSkipped).
const DefaultCheckpointMax = 1 << 30

// MaxCheckpointPattern bounds a checkpoint_exclude or checkpoint_include
// pattern's bytes.
const MaxCheckpointPattern = 4096

// checkpointMode is the mode p's sessions use: Checkpoint, else the
// default of p's placement.
func (p Profile) checkpointMode() CheckpointMode {
	if p.Checkpoint != "" {
		return p.Checkpoint
	}
	if p.Placement == PlacementShared {
		return CheckpointOff
	}
	return CheckpointTurn
}

// checkpointMax is p.CheckpointMax or DefaultCheckpointMax.
func (p Profile) checkpointMax() int64 {
	if p.CheckpointMax > 0 {
		return p.CheckpointMax
	}
	return DefaultCheckpointMax
}

// validateCheckpoint checks the checkpoint fields of p.
func (p Profile) validateCheckpoint() error {
	bad := func(field, reason string) error {
		return &InvalidProfileError{Profile: p.Name, Field: field, Reason: reason}
	}
	switch p.Checkpoint {
	case "", CheckpointTurn, CheckpointStop, CheckpointOff:
	default:
		return bad("checkpoint", "must be turn, stop or off, not "+strconv.Quote(string(p.Checkpoint)))
	}
	if p.Placement == PlacementShared && p.Checkpoint != "" && p.Checkpoint != CheckpointOff {
		return bad("checkpoint", "a shared workspace is never checkpointed: other sessions write it at the same time; use exclusive placement")
	}
	if p.CheckpointMax < 0 {
		return bad("checkpoint_max", "must be 0 (the default, 1 GiB) or more bytes")
	}
	for _, f := range []struct {
		name     string
		patterns []string
	}{{"checkpoint_exclude", p.CheckpointExclude}, {"checkpoint_include", p.CheckpointInclude}} {
		for _, pat := range f.patterns {
			if pat == "" || len(pat) > MaxCheckpointPattern {
				return bad(f.name, "patterns must be 1 to 4096 bytes")
			}
		}
		if _, err := checkpoint.ParseIgnore(f.patterns); err != nil {
			if inner := errors.Unwrap(err); inner != nil {
				err = inner
			}
			return bad(f.name, "a pattern is not in gitignore syntax: "+err.Error())
		}
	}
	return nil
}
