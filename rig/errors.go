package rig

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// RestoreErrorKind names the stage of a restore that failed.
type RestoreErrorKind string

// Restore stages, in the order RestoreSession reaches them (see
// docs/ARCHITECTURE.md, "Restore"): discovery (a journal exists), the
// session lease, the fence, a turn of an earlier holder still running on
// this machine, the replay, discovery of SessionStarted and the
// root LoopStarted, the configuration check (RestoreRejectedError,
// ConfigMismatchError), the workspace, then the restore records, the root
// loop and its engine, and RestoreDone. A journal the store refuses as
// corrupt is replay_failed before the fence; context_done replaces any
// kind once the caller's context has ended.
const (
	RestoreDiscoveryFailed   RestoreErrorKind = "discovery_failed"   // no journal, or no SessionStarted / root LoopStarted in it
	RestoreLeaseFailed       RestoreErrorKind = "lease_failed"       // the session lease could not be taken, or an exclusive root is held (*WorkspaceRootBusyError)
	RestoreJournalFailed     RestoreErrorKind = "journal_failed"     // the opening fence could not be appended
	RestoreTurnRunning       RestoreErrorKind = "turn_running"       // a turn of an earlier holder still runs on this machine (*TurnRunningError)
	RestoreReplayFailed      RestoreErrorKind = "replay_failed"      // the journal could not be read back
	RestoreMaterializeFailed RestoreErrorKind = "materialize_failed" // the workspace could not be materialized
	RestoreWorkspaceDiverged RestoreErrorKind = "workspace_diverged" // the workspace directory has changes no checkpoint has (*WorkspaceDivergedError)
	RestoreAppendFailed      RestoreErrorKind = "append_failed"      // a restore record could not be journaled
	RestoreLoopFailed        RestoreErrorKind = "loop_failed"        // a loop could not be rebuilt (unknown engine)
	RestoreRuntimeFailed     RestoreErrorKind = "runtime_failed"     // the engine or session runtime could not be built
	RestoreContextDone       RestoreErrorKind = "context_done"       // the caller's context ended
)

// RestoreErrorKinds lists every kind, in stage order.
var RestoreErrorKinds = []RestoreErrorKind{
	RestoreDiscoveryFailed, RestoreLeaseFailed, RestoreJournalFailed, RestoreTurnRunning, RestoreReplayFailed,
	RestoreMaterializeFailed, RestoreWorkspaceDiverged, RestoreAppendFailed, RestoreLoopFailed, RestoreRuntimeFailed, RestoreContextDone,
}

// RestoreError is a failed restore: Kind is the stage, Cause what went
// wrong there (inspect it with errors.As through Unwrap). A failed restore
// returns no session; the lease is released.
type RestoreError struct {
	Kind    RestoreErrorKind
	Session uuid.UUID
	Cause   error
	// Journaled says whether the failed restore appended anything to the
	// session's journal: its fence and RestoreErrored (past
	// RestoreStarted, what it had journaled too). False: it wrote nothing
	// there (it was refused before its fence and the journal's last record
	// is this very refusal, or the journal could not be written).
	Journaled bool
}

func (e *RestoreError) Error() string {
	return fmt.Sprintf("restore session %s: %s: %v", e.Session, e.Kind, e.Cause)
}

func (e *RestoreError) Unwrap() error { return e.Cause }

// ConfigMismatchError refuses to restore a session recorded without a
// manifest (fingerprint only) under a rig whose fingerprint differs.
type ConfigMismatchError struct {
	Session   uuid.UUID
	Persisted string
	Live      string
	// Journaled: as RestoreError.Journaled.
	Journaled bool
}

func (e *ConfigMismatchError) Error() string {
	return fmt.Sprintf("restore session %s: configuration fingerprint changed from %s to %s; restore it with the rig it was created with",
		e.Session, short(e.Persisted), short(e.Live))
}

// RestoreRejectedError refuses to restore a session whose configuration
// drifted in a way the rig's decider did not accept.
type RestoreRejectedError struct {
	Session    uuid.UUID
	Assessment Assessment
	Source     string
	Cause      error
	// Journaled: as RestoreError.Journaled.
	Journaled bool
}

func (e *RestoreRejectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "restore session %s: configuration drift rejected by %s", e.Session, e.Source)
	for _, c := range e.Assessment.Changes {
		fmt.Fprintf(&b, "; %s %q -> %q (%s)", c.Field, c.Persisted, c.Live, c.Level)
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, ": %v", e.Cause)
	}
	return b.String()
}

func (e *RestoreRejectedError) Unwrap() error { return e.Cause }

// WorkspaceRootBusyError refuses an exclusive placement whose root another
// session holds. Root is canonical; HolderEpoch identifies the holder's
// grant.
type WorkspaceRootBusyError struct {
	Root        string
	HolderEpoch uint64
	Cause       error
}

func (e *WorkspaceRootBusyError) Error() string {
	return fmt.Sprintf("workspace root %s is busy: another session holds it at epoch %d", e.Root, e.HolderEpoch)
}

func (e *WorkspaceRootBusyError) Unwrap() error { return e.Cause }

// WorkspaceRootLeaseLostError is latched when an exclusive session loses
// its root lease: the session refuses every later mutation.
type WorkspaceRootLeaseLostError struct {
	Root  string
	Epoch uint64
	Cause error
}

func (e *WorkspaceRootLeaseLostError) Error() string {
	return fmt.Sprintf("workspace root %s: lease at epoch %d lost: %v", e.Root, e.Epoch, e.Cause)
}

func (e *WorkspaceRootLeaseLostError) Unwrap() error { return e.Cause }

// LifecycleStage names the NewSession stage that failed.
type LifecycleStage string

// NewSession stages, in order.
const (
	StageValidate  LifecycleStage = "validate"  // context or rig requirements
	StageMint      LifecycleStage = "mint"      // session id
	StageLease     LifecycleStage = "lease"     // session lease
	StageJournal   LifecycleStage = "journal"   // catalog entry (creating) and opening fence
	StagePlacement LifecycleStage = "placement" // workspace and root lease
	StageSeed      LifecycleStage = "seed"      // seed snapshot
	StageLoop      LifecycleStage = "loop"      // root loop and engine
	StageCommit    LifecycleStage = "commit"    // SessionStarted and LoopStarted
)

// LifecycleError is a failed NewSession: Stage says where, Cause what.
// Everything taken before the failure has been released.
type LifecycleError struct {
	Stage LifecycleStage
	Cause error
}

func (e *LifecycleError) Error() string {
	return fmt.Sprintf("new session: %s: %v", e.Stage, e.Cause)
}

func (e *LifecycleError) Unwrap() error { return e.Cause }

// ErrSessionClosed is returned by mutations after Shutdown began (kind
// session_closed: sessionClosed).
var ErrSessionClosed error = sessionClosed{}

// BusyError refuses a Submit while a turn is running (and a Revert while
// a turn runs or a checkpoint is taken, a Submit while a revert runs).
type BusyError struct {
	TurnID string
	Index  int
	// Checkpointing: the turn has ended, and the checkpoint of the
	// workspace that follows its end is still being taken.
	Checkpointing bool
	// Reverting: no turn runs; the workspace is being reverted
	// (Session.Revert).
	Reverting bool
}

func (e *BusyError) Error() string {
	switch {
	case e.Reverting:
		return "the workspace is being reverted; wait for it"
	case e.Checkpointing && e.TurnID == "":
		return "a checkpoint of the workspace is being taken; wait for it"
	}
	if e.Checkpointing {
		return fmt.Sprintf("turn %d (%s) has ended, and the checkpoint of the workspace that follows it is still being taken; wait for it", e.Index, e.TurnID)
	}
	return fmt.Sprintf("turn %d (%s) is still running; interrupt it or wait for it", e.Index, e.TurnID)
}

// NoGateError refuses RespondGate when the named gate is not open.
type NoGateError struct {
	GateID string
	Open   string // the gate that is open, if any
}

func (e *NoGateError) Error() string {
	if e.GateID == "" {
		return "no gate is open"
	}
	if e.Open == "" {
		return fmt.Sprintf("gate %s is not open (no gate is open)", e.GateID)
	}
	return fmt.Sprintf("gate %s is not open (gate %s is)", e.GateID, e.Open)
}

// NoTurnError refuses Interrupt when no turn is running.
type NoTurnError struct{}

func (e *NoTurnError) Error() string { return "no turn is running" }

// InvalidProfileError refuses a profile that cannot be run.
type InvalidProfileError struct {
	Profile string
	Field   string
	Reason  string
	Err     error // the cause, when there is one (*engine.ShellError)
}

func (e *InvalidProfileError) Error() string {
	return fmt.Sprintf("profile %q: %s: %s", e.Profile, e.Field, e.Reason)
}

func (e *InvalidProfileError) Unwrap() error { return e.Err }

// SeedError refuses a seed snapshot entry.
type SeedError struct {
	Path   string
	Reason string
}

func (e *SeedError) Error() string { return fmt.Sprintf("seed %s: %s", e.Path, e.Reason) }

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// PersistenceOverlapError refuses a profile whose exclusive or shared
// workspace root overlaps the directory the store keeps its files in on
// this machine (storage.Store's LocalDir): the two are the same, or one
// contains the other. A turn runs anything in its root, so it could delete
// every session's journal and lease. Root and Store are canonical
// (absolute, symlink-free); RootGiven and StoreGiven are the paths as the
// profile and the store named them. Relation is OverlapSame,
// OverlapRootContains or OverlapStoreContains.
type PersistenceOverlapError struct {
	Profile    string
	Placement  Placement
	Relation   string
	Root       string
	Store      string
	RootGiven  string
	StoreGiven string
}

func (e *PersistenceOverlapError) Error() string {
	root, store := e.Root, e.Store
	if e.RootGiven != "" && e.RootGiven != e.Root {
		root += " (given as " + e.RootGiven + ")"
	}
	if e.StoreGiven != "" && e.StoreGiven != e.Store {
		store += " (given as " + e.StoreGiven + ")"
	}
	var how string
	switch e.Relation {
	case OverlapSame:
		how = fmt.Sprintf("workspace root %s is the store directory %s", root, store)
	case OverlapStoreContains:
		how = fmt.Sprintf("workspace root %s is inside the store directory %s", root, store)
	default:
		how = fmt.Sprintf("workspace root %s contains the store directory %s", root, store)
	}
	return fmt.Sprintf("profile %q: %s placement refused: its %s; a turn there could delete every session's journal and lease",
		e.Profile, e.Placement, how)
}

// UnsafeRootError refuses a profile whose exclusive or shared workspace
// root is not a project directory (CheckSensibleRoot): the filesystem root
// (Reason UnsafeRootFilesystem) or the user's home directory itself
// (UnsafeRootHome). Root is canonical; RootGiven is the path as the
// profile (or --root) named it.
type UnsafeRootError struct {
	Profile   string
	Placement Placement
	Root      string
	RootGiven string
	Reason    string
}

func (e *UnsafeRootError) Error() string {
	root := e.Root
	if e.RootGiven != "" && e.RootGiven != e.Root {
		root += " (given as " + e.RootGiven + ")"
	}
	what := "is not a project directory"
	switch e.Reason {
	case UnsafeRootFilesystem:
		what = "is the filesystem root"
	case UnsafeRootHome:
		what = "is your home directory itself"
	}
	return fmt.Sprintf("profile %q: %s placement refused: workspace root %s %s; a session's turns would run in, and its checkpoints copy, everything there",
		e.Profile, e.Placement, root, what)
}
