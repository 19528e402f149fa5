package event

// The workspace events: checkpoints of a session's workspace (session
// scope). Their types are registered in registry.go and their Event
// methods are in event.go; rig/checkpoint takes the checkpoints.

// Checkpoint triggers: what took a checkpoint.
const (
	TriggerTurn    = "turn"    // a turn ended
	TriggerStop    = "stop"    // the session shut down
	TriggerHandoff = "handoff" // the session was handed over to another machine
	TriggerRestore = "restore" // a restore kept a workspace that had diverged (WorkspaceReconciled{adopted})
	TriggerRevert  = "revert"  // a revert kept the workspace as it was before it (WorkspaceReverted.From)
	// TriggerTurnStart: a turn is about to start and the workspace changed
	// since the last checkpoint (edits by hand between turns), so that
	// the turn's diff and a revert of it start from what it found.
	TriggerTurnStart = "turn_start"
	TriggerFork      = "fork" // a fork began with another session's checkpoint (SessionStarted.ForkedFrom)
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
	// Trigger is TriggerTurn, TriggerStop, TriggerHandoff, TriggerRestore,
	// TriggerRevert, TriggerTurnStart or TriggerFork.
	Trigger string `json:"trigger"`
	// Host is the machine that took it ("" in records of older versions).
	Host string `json:"host,omitempty"`
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
	// To names the taker that asked, "pid@host" of the looprig take
	// command. The process that then holds the session (the host take
	// starts) is named by the RestoreDone that follows (its Holder): the
	// holder handing over cannot know it, it does not exist yet.
	To string `json:"to"`
}

// What a restore did with a workspace directory it found that was not the
// session's last checkpoint (WorkspaceReconciled.Action).
const (
	// ReconcileUpdated: the directory was an older checkpoint of the
	// session, with no changes of its own: the entries that differ were
	// written from the last checkpoint.
	ReconcileUpdated = "updated"
	// ReconcileAdopted: the directory had changes no checkpoint has, and
	// the user chose to keep it as it is (a checkpoint follows).
	ReconcileAdopted = "adopted"
	// ReconcileMovedAside: the directory had changes no checkpoint has,
	// and the user chose the checkpoint: the directory was moved to
	// MovedTo, never deleted, and the checkpoint brought back.
	ReconcileMovedAside = "moved_aside"
)

// WorkspaceReconciled: a restore found the workspace directory on its
// machine other than the session's last checkpoint, and did Action.
type WorkspaceReconciled struct {
	Action string `json:"action"`
	// Manifest is the last checkpoint's (64 hex characters); From, the
	// checkpoint the directory last matched, "" when unknown.
	Manifest string `json:"manifest"`
	From     string `json:"from"`
	// Differs counts the entries that differed from the last checkpoint;
	// Paths names the first few.
	Differs int      `json:"differs"`
	Paths   []string `json:"paths"`
	// Host is the machine whose directory it was.
	Host string `json:"host"`
	// MovedTo is where the directory went (ReconcileMovedAside).
	MovedTo string `json:"moved_to,omitempty"`
}

// WorkspaceReverted: the workspace was put back as it was before a turn
// (rig.Session.Revert): the entries that differed from checkpoint
// Manifest were written from it, and it is the workspace pointer from
// then on. From is the checkpoint of the workspace just before the revert
// (journaled before this record, TriggerRevert, when it was not the
// pointer already): reverting the revert brings it back.
type WorkspaceReverted struct {
	// TurnID and TurnIndex name the turn the workspace was put back to
	// before; Undo: this revert undid the revert before it (the workspace
	// is From of that one), and TurnID and TurnIndex are that one's.
	TurnID    string `json:"turn_id"`
	TurnIndex int    `json:"turn_index"`
	Undo      bool   `json:"undo,omitempty"`
	// Manifest is the checkpoint restored, From the one the workspace
	// was (64 hex characters each).
	Manifest string `json:"manifest"`
	From     string `json:"from"`
	// Files and Bytes: the regular files of Manifest and their total size.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Changed counts the entries written or changed (added, modified,
	// mode or type changed), Removed the ones removed; Paths names the
	// first few.
	Changed int      `json:"changed"`
	Removed int      `json:"removed"`
	Paths   []string `json:"paths"`
	// Host is the machine whose workspace directory it was.
	Host string `json:"host"`
}

// WorktreeAdded: the session's workspace is a git worktree looprig added
// for it (looprig new --worktree) on a branch of its own, so that
// deleting the session removes them when they hold nothing that would be
// lost (docs/ARCHITECTURE.md, "A worktree per session"). It follows the
// root LoopStarted.
type WorktreeAdded struct {
	// Repo is the repository's main work tree; Path the worktree's (the
	// session's exclusive root); Branch the branch made for it.
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Path   string `json:"path"`
}
