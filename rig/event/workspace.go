package event

// The workspace events: checkpoints of a session's workspace (session
// scope). Their types are registered in registry.go and their Event
// methods are in event.go; rig/checkpoint takes the checkpoints.

// Checkpoint triggers: what took a checkpoint.
const (
	TriggerTurn    = "turn"    // a turn ended
	TriggerStop    = "stop"    // the session shut down
	TriggerHandoff = "handoff" // the session was handed over to another machine
)

// WorkspaceCheckpointed: the workspace was stored as a checkpoint, a
// manifest of its files kept as blobs in the store. The latest one is the
// session's workspace pointer: what a restore on a machine without the
// workspace materializes.
type WorkspaceCheckpointed struct {
	// Manifest is the manifest blob's digest (64 hex characters).
	Manifest string `json:"manifest"`
	// Files and Bytes: the regular files the manifest holds, and their
	// total size.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Read is how many of those bytes were read this time: files the
	// stat index of the checkpoint before did not vouch for.
	Read int64 `json:"read"`
	// Skipped counts entries left out (a symlink leading out of the
	// workspace, a socket, a FIFO, a device).
	Skipped int `json:"skipped"`
	// TurnID is the turn that ended (TriggerTurn), or the session's last
	// turn; "" when there was none.
	TurnID string `json:"turn_id"`
	// Trigger is TriggerTurn, TriggerStop or TriggerHandoff.
	Trigger string `json:"trigger"`
}

// WorkspaceCheckpointSkipped: a checkpoint was due and was not taken, so
// the workspace pointer still names the one before (a visible warning,
// never a silent gap).
type WorkspaceCheckpointSkipped struct {
	TurnID  string `json:"turn_id"`
	Trigger string `json:"trigger"`
	// Reason says why, in a sentence (over the profile's checkpoint_max,
	// the store refused a blob, ...).
	Reason string `json:"reason"`
	// Bytes is the workspace's size when it was over Limit (0 otherwise).
	Bytes int64 `json:"bytes"`
	// Limit is the profile's checkpoint_max, when it was the reason.
	Limit int64 `json:"limit"`
}

// HandedOff: the session was handed over to another process, which asked
// for it (looprig take): its last turn ended, its workspace was
// checkpointed (TriggerHandoff), and it shuts down after this record, so
// that the taker restores it with the workspace.
type HandedOff struct {
	// To names the taker, as it asked ("pid@host").
	To string `json:"to"`
}
