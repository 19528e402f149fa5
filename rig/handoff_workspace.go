package rig

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"looprig/rig/storage"
)

// A hand-over brings the workspace with the session only when its holder
// checkpoints it at the hand-over (HandOff: a checkpoint whatever the
// profile's mode, but off). A session whose holder never checkpoints (its
// profile's checkpoint = "off", the default of exclusive placement; a
// shared workspace) would run on the taker's machine in an empty or
// foreign directory: CheckHandOff refuses it before anything is asked of
// the holder, and the taker goes on only when told to on purpose.

// HandOffWithoutWorkspaceError refuses a hand-over of a session whose
// workspace does not travel with it: its holder does not checkpoint it.
type HandOffWithoutWorkspaceError struct {
	Session   string
	Profile   string    // the profile its holder runs it with
	Placement Placement // shared: it can never be checkpointed
}

func (e *HandOffWithoutWorkspaceError) Error() string {
	why := fmt.Sprintf("checkpoint = \"off\" in profile %q", e.Profile)
	if e.Placement == PlacementShared {
		why = fmt.Sprintf("placement = \"shared\" in profile %q: a shared workspace is never checkpointed", e.Profile)
	}
	return fmt.Sprintf("session %s does not checkpoint its workspace (%s): its files would not come with it", ShortID(e.Session), why)
}

// CheckHandOff says whether session id may be handed over with its
// workspace: nil when its holder checkpoints the workspace at a hand-over
// (checkpoint = "turn" or "stop"), *HandOffWithoutWorkspaceError when it
// does not. The holder's mode and profile are what its catalog entry says
// (every live session writes them); an entry written by a looprig that
// did not record them counts as p's, the profile the taker restores the
// session with.
func CheckHandOff(ctx context.Context, store storage.Store, id uuid.UUID, p Profile) error {
	mode, name, placement := p.checkpointMode(), p.Name, p.Placement
	if c, err := ReadCatalog(ctx, store, id.String()); err == nil && c.CheckpointMode != "" {
		mode, name, placement = c.CheckpointMode, c.Profile, c.Placement
	}
	if mode != CheckpointOff {
		return nil
	}
	return &HandOffWithoutWorkspaceError{Session: id.String(), Profile: name, Placement: placement}
}
