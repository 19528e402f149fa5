package rig

import (
	"errors"

	"looprig/rig/engine"
	"looprig/rig/fault"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// The explanations of rig's errors (fault.Explainer): each error type's
// kind, typed facts and remedy, for rig/explain to find in a chain and
// for presenters to render (docs/ARCHITECTURE.md, "Errors").

// outranking are the kinds of the failures that are about the request or
// the configuration, not about the stage of a restore or a creation that
// met them: a staged operation (or a rejected drift) that failed of one
// is explained by it (a profile gone is about the profile, not about the
// restore it failed).
var outranking = []fault.Kind{
	fault.KindBusy, fault.KindNoCheckpointBefore, fault.KindNoTurn, fault.KindNoTerminal, fault.KindInputTimeout, fault.KindNoGate, fault.KindFromTurn,
	fault.KindSessionClosed,
	fault.KindBadID, fault.KindAmbiguousID, fault.KindUnknownProfile, fault.KindPersistenceOverlap, fault.KindUnsafeRoot,
	fault.KindConfigRejected, fault.KindConfigMismatch, fault.KindNotForkable,
}

// Explanation explains it: kind busy.
func (e *BusyError) Explanation() fault.Explanation {
	x := fault.Of(fault.KindBusy, fault.Fact("turn_id", e.TurnID), fault.Fact("index", e.Index))
	if e.Checkpointing {
		x.Add("checkpointing", true)
	}
	if e.Reverting {
		x.Add("reverting", true)
	}
	return x
}

// Explanation explains it: kind no_checkpoint_before.
func (e *NoCheckpointBeforeError) Explanation() fault.Explanation {
	return fault.Of(fault.KindNoCheckpointBefore, fault.Fact("session", e.Session), fault.Fact("index", e.Index), fault.Fact("reason", e.Reason))
}

// Explanation explains it: kind no_turn.
func (e *NoTurnError) Explanation() fault.Explanation { return fault.Of(fault.KindNoTurn) }

// Explanation explains it: kind no_terminal.
func (e *NoTerminalError) Explanation() fault.Explanation {
	return fault.Of(fault.KindNoTerminal, fault.Fact("turn_id", e.TurnID))
}

// Explanation explains it: kind input_timeout.
func (e *InputTimeoutError) Explanation() fault.Explanation {
	return fault.Of(fault.KindInputTimeout, fault.Fact("turn_id", e.TurnID), fault.Fact("written", e.Written), fault.Fact("len", e.Len))
}

// Explanation explains it: kind no_gate.
func (e *NoGateError) Explanation() fault.Explanation {
	return fault.Of(fault.KindNoGate, fault.Fact("gate_id", e.GateID), fault.Fact("open", e.Open))
}

// Explanation explains it: kind from_turn.
func (e *FromTurnError) Explanation() fault.Explanation {
	return fault.Of(fault.KindFromTurn, fault.Fact("session", e.Session), fault.Fact("turn_id", e.TurnID),
		fault.Fact("request", e.Request), fault.Fact("gate_id", e.GateID), fault.Fact("client", e.Client.Kind),
		fault.Fact("pid", e.Client.PID), fault.Fact("reason", e.Reason), fault.Fact("via", e.Via))
}

// sessionClosed is ErrSessionClosed's type.
type sessionClosed struct{}

func (sessionClosed) Error() string { return "session is shut down" }

// Explanation explains it: kind session_closed.
func (sessionClosed) Explanation() fault.Explanation { return fault.Of(fault.KindSessionClosed) }

// Explanation explains it: kind bad_id.
func (e *BadIDError) Explanation() fault.Explanation {
	return fault.Of(fault.KindBadID, fault.Fact("input", e.Input))
}

// Explanation explains it: kind ambiguous_id.
func (e *AmbiguousIDError) Explanation() fault.Explanation {
	return fault.Of(fault.KindAmbiguousID, fault.Fact("input", e.Input), fault.Fact("matches", e.Matches))
}

// Explanation explains it: kind unknown_profile.
func (e *ProfileGoneError) Explanation() fault.Explanation {
	return fault.Of(fault.KindUnknownProfile, fault.Fact("session", e.Session), fault.Fact("profile", e.Profile), fault.Fact("known", e.Known))
}

// Explanation explains it: kind persistence_overlap.
func (e *PersistenceOverlapError) Explanation() fault.Explanation {
	return fault.Of(fault.KindPersistenceOverlap, fault.Fact("profile", e.Profile), fault.Fact("placement", string(e.Placement)),
		fault.Fact("relation", e.Relation), fault.Fact("root", e.Root), fault.Fact("store", e.Store),
		fault.Fact("root_given", e.RootGiven), fault.Fact("store_given", e.StoreGiven))
}

// Explanation explains it: kind unsafe_root.
func (e *UnsafeRootError) Explanation() fault.Explanation {
	return fault.Of(fault.KindUnsafeRoot, fault.Fact("profile", e.Profile), fault.Fact("placement", string(e.Placement)),
		fault.Fact("reason", e.Reason), fault.Fact("root", e.Root), fault.Fact("root_given", e.RootGiven))
}

// Explanation explains it: kind config_rejected, unless its cause is one
// of the outranking.
func (e *RestoreRejectedError) Explanation() fault.Explanation {
	if x, ok := fault.Yield(e.Cause, outranking...); ok {
		return x
	}
	x := fault.Of(fault.KindConfigRejected, fault.Fact("session", e.Session.String()), fault.Fact("source", e.Source),
		fault.Fact("changes", e.Assessment.Changes), fault.Fact("journaled", e.Journaled))
	if e.Cause != nil {
		x.Add("cause", e.Cause.Error())
	}
	return x
}

// Explanation explains it: kind config_mismatch.
func (e *ConfigMismatchError) Explanation() fault.Explanation {
	return fault.Of(fault.KindConfigMismatch, fault.Fact("session", e.Session.String()), fault.Fact("persisted", e.Persisted),
		fault.Fact("live", e.Live), fault.Fact("journaled", e.Journaled))
}

// Explanation explains it: kind engine_unresponsive.
func (e *EngineUnresponsiveError) Explanation() fault.Explanation {
	return fault.Of(fault.KindEngineUnresponsive, fault.Fact("session", e.Session.String()), fault.Fact("turn_id", e.Turn),
		fault.Fact("waited_ms", e.Waited.Milliseconds()))
}

// Explanation explains it: kind unknown_session.
func (e *UnknownSessionError) Explanation() fault.Explanation {
	return fault.Of(fault.KindUnknownSession)
}

// Explanation explains it: kind not_crashed.
func (e *NotCrashedError) Explanation() fault.Explanation {
	return fault.Of(fault.KindNotCrashed, fault.Fact("session", e.Session.String()))
}

// Explanation explains it: kind workspace_not_checkpointed.
func (e *HandOffWithoutWorkspaceError) Explanation() fault.Explanation {
	return fault.Of(fault.KindWorkspaceNotCheckpointed, fault.Fact("session", e.Session), fault.Fact("profile", e.Profile),
		fault.Fact("placement", string(e.Placement)))
}

// Explanation explains it: kind handoff_timeout.
func (e *HandOffTimeoutError) Explanation() fault.Explanation {
	return fault.Of(fault.KindHandOffTimeout, fault.Fact("session", e.Session), fault.Fact("holder", e.Holder),
		fault.Fact("waited_ms", e.Waited.Milliseconds()))
}

// Explanation explains it: kind invalid_profile.
func (e *InvalidProfileError) Explanation() fault.Explanation {
	return fault.Of(fault.KindInvalidProfile, fault.Fact("profile", e.Profile), fault.Fact("field", e.Field))
}

// Explanation explains it: kind lease_lost, of no session (a root lease
// does not name its session), with the root.
func (e *WorkspaceRootLeaseLostError) Explanation() fault.Explanation {
	x := storage.LostLease("", e.Epoch, e.Cause)
	x.Add("root", e.Root)
	return x
}

// restoreKinds are the kinds of a restore's stages.
var restoreKinds = map[RestoreErrorKind]fault.Kind{
	RestoreDiscoveryFailed:   fault.KindDiscoveryFailed,
	RestoreLeaseFailed:       fault.KindLeaseFailed,
	RestoreJournalFailed:     fault.KindJournalFailed,
	RestoreTurnRunning:       fault.KindTurnRunning,
	RestoreReplayFailed:      fault.KindReplayFailed,
	RestoreMaterializeFailed: fault.KindMaterializeFailed,
	RestoreWorkspaceDiverged: fault.KindWorkspaceDiverged,
	RestoreAppendFailed:      fault.KindAppendFailed,
	RestoreLoopFailed:        fault.KindLoopFailed,
	RestoreRuntimeFailed:     fault.KindRuntimeFailed,
	RestoreContextDone:       fault.KindContextDone,
}

// Explanation explains a failed restore: its cause's explanation when
// that is one of the outranking, else the stage's kind with the facts and
// remedy its cause says (KindError for a stage it does not know).
func (e *RestoreError) Explanation() fault.Explanation {
	if x, ok := fault.Yield(e.Cause, outranking...); ok {
		return x
	}
	kind, ok := restoreKinds[e.Kind]
	if !ok {
		return fault.Of(fault.KindError)
	}
	x := fault.Of(kind, fault.Fact("session", e.Session.String()))
	restoreCause(&x, e.Cause)
	// Whether the failed restore wrote to the journal (its fence and
	// RestoreErrored), so that a presenter says what it left.
	x.Add("journaled", e.Journaled)
	if e.Cause != nil {
		// What went wrong, in words: a presenter says it the same way
		// whether the restore ran in its process or in a host.
		x.Add("cause", e.Cause.Error())
	}
	return x
}

// restoreCause adds to x the facts a failed restore's cause says, and
// the remedy they call for.
func restoreCause(x *fault.Explanation, cause error) {
	var (
		held     *storage.LeaseHeldError
		busy     *WorkspaceRootBusyError
		unknownS *UnknownSessionError
		unknownE *engine.UnknownEngineError
		corrupt  *storage.CorruptError
		decode   *journal.RecordDecodeError
		running  *TurnRunningError
		diverged *WorkspaceDivergedError
	)
	switch {
	case errors.As(cause, &running):
		x.Add("turn_id", running.Turn)
		x.Add("index", running.Index)
		x.Add("epoch", running.Epoch)
		x.Add("pgid", running.PGID)
		x.Add("host", running.Host)
	case errors.As(cause, &diverged):
		x.Add("cause_type", "WorkspaceDivergedError")
		x.Add("dir", diverged.Dir)
		x.Add("differs", diverged.Differs)
		x.Add("paths", diverged.Paths)
		x.Add("last", diverged.Last.String())
		if diverged.Lineage != nil {
			x.Add("lineage", diverged.Lineage.String())
		}
	case errors.As(cause, &busy): // before held: the root's LeaseHeldError is its cause
		x.Remedy = fault.RemedyShutDownRootHolder
		x.Add("cause_type", "WorkspaceRootBusyError")
		x.Add("root", busy.Root)
		x.Add("holder_epoch", busy.HolderEpoch)
		if errors.As(cause, &held) {
			x.Add("holder", held.Holder)
		}
	case errors.As(cause, &corrupt) && corrupt.EpochFile:
		x.Remedy = fault.RemedyRepairEpochFile
		x.Add("cause_type", "CorruptError")
		x.Add("path", corrupt.Path)
	case errors.As(cause, &corrupt), errors.As(cause, &decode):
		x.Remedy = fault.RemedyInspectJournal
		if corrupt != nil {
			x.Add("cause_type", "CorruptError")
			x.Add("name", corrupt.Name)
			x.Add("path", corrupt.Path)
			x.Add("offset", corrupt.Offset)
		} else {
			x.Add("cause_type", "RecordDecodeError")
			x.Add("seq", decode.Seq)
			x.Add("reason", decode.Reason)
		}
	case errors.As(cause, &held):
		x.Remedy = fault.RemedyWaitOrBreakLease
		x.Add("holder_epoch", held.HolderEpoch)
		x.Add("holder", held.Holder)
	case errors.As(cause, &unknownE):
		x.Remedy = fault.RemedyDefineEngine
		x.Add("cause_type", "UnknownEngineError")
		x.Add("engine", unknownE.Name)
		x.Add("known", unknownE.Known)
	case errors.As(cause, &unknownS):
		x.Remedy = fault.RemedyListSessions
		x.Fields[0].Value = nil // there is no session to name
		x.Add("input", unknownS.Input)
	}
}

// creationKinds are the kinds of a creation's stages.
var creationKinds = map[LifecycleStage]fault.Kind{
	StageValidate:  fault.KindCreateValidate,
	StageMint:      fault.KindCreateMint,
	StageLease:     fault.KindCreateLease,
	StageJournal:   fault.KindCreateJournal,
	StagePlacement: fault.KindCreatePlacement,
	StageSeed:      fault.KindCreateSeed,
	StageLoop:      fault.KindCreateLoop,
	StageCommit:    fault.KindCreateCommit,
}

// Explanation explains a failed creation: its cause's explanation when
// that is one of the outranking, else the stage's kind with the facts and
// remedy its cause says (KindError for a stage it does not know).
func (e *LifecycleError) Explanation() fault.Explanation {
	if x, ok := fault.Yield(e.Cause, outranking...); ok {
		return x
	}
	kind, ok := creationKinds[e.Stage]
	if !ok {
		return fault.Of(fault.KindError)
	}
	x := fault.Of(kind, fault.Fact("stage", string(e.Stage)))
	var (
		held     *storage.LeaseHeldError
		busy     *WorkspaceRootBusyError
		seed     *SeedError
		invalidP *InvalidProfileError
		unknownE *engine.UnknownEngineError
	)
	switch {
	case errors.As(e.Cause, &busy):
		x.Remedy = fault.RemedyShutDownRootHolder
		x.Add("root", busy.Root)
		x.Add("holder_epoch", busy.HolderEpoch)
		if errors.As(e.Cause, &held) { // as a restore's: who holds the root
			x.Add("holder", held.Holder)
		}
	case errors.As(e.Cause, &seed):
		x.Remedy = fault.RemedyFixSeed
		x.Add("seed_path", seed.Path)
	case errors.As(e.Cause, &invalidP):
		x.Remedy = fault.RemedyFixProfile
	case errors.As(e.Cause, &unknownE):
		x.Remedy = fault.RemedyDefineEngine
		x.Add("engine", unknownE.Name)
		x.Add("known", unknownE.Known)
	}
	return x
}

// Explanation explains it: kind not_forkable.
func (e *ForkError) Explanation() fault.Explanation {
	return fault.Of(fault.KindNotForkable, fault.Fact("session", e.Session), fault.Fact("turn", e.Turn),
		fault.Fact("index", e.Index), fault.Fact("reason", e.Reason))
}
