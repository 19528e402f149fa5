package fault

import "strconv"

// Type is the family of a failure: the error type people and JSON see
// ("RestoreError", "LeaseHeldError", ...). Its String is that name, which
// the CLI's JSON errors and the host protocol carry as "type". The zero
// Type is TypeError, an error the runtime does not classify.
type Type uint8

// The types. A failure's Kind decides its Type (Kind.Type).
const (
	TypeError Type = iota
	TypeBadIDError
	TypeAmbiguousIDError
	TypeProfileGoneError
	TypePersistenceOverlapError
	TypeRestoreRejectedError
	TypeConfigMismatchError
	TypeRestoreError
	TypeLifecycleError
	TypeEngineUnresponsiveError
	TypeUnknownSessionError
	TypeNotCrashedError
	TypeLeaseHeldError
	TypeLeaseLostError
	TypeRecordDecodeError
	TypeCorruptError
	TypeInvalidProfileError
	TypeUnknownEngineError
	TypeBusyError
	TypeNoTurnError
	TypeNoTerminalError
	TypeInputTimeoutError
	TypeNoGateError
	TypeSessionClosedError
	TypePersistenceFaultError
	TypeTimeoutError
	TypeCanceledError
	TypeSocketPathTooLongError
	TypeHostLostError
	TypeBadRequestError
	TypeUnknownTypeError
	TypeLineTooLongError
	TypeProtocolMismatchError
	TypePeerRefusedError
	TypeEventTooLargeError
	TypeTooManyClientsError
	TypeHandOffWithoutWorkspaceError
	TypeFromTurnError
	TypeHandOffTimeoutError
	TypeHostUnresponsiveError
	TypeUnsafeSocketDirError
	TypeSocketDirError
	TypeUnsafeRootError
	TypeNoCheckpointBeforeError
	TypeForkError
	typeCount
)

var typeNames = [typeCount]string{
	TypeError:                   "Error",
	TypeBadIDError:              "BadIDError",
	TypeAmbiguousIDError:        "AmbiguousIDError",
	TypeProfileGoneError:        "ProfileGoneError",
	TypePersistenceOverlapError: "PersistenceOverlapError",
	TypeRestoreRejectedError:    "RestoreRejectedError",
	TypeConfigMismatchError:     "ConfigMismatchError",
	TypeRestoreError:            "RestoreError",
	TypeLifecycleError:          "LifecycleError",
	TypeEngineUnresponsiveError: "EngineUnresponsiveError",
	TypeUnknownSessionError:     "UnknownSessionError",
	TypeNotCrashedError:         "NotCrashedError",
	TypeLeaseHeldError:          "LeaseHeldError",
	TypeLeaseLostError:          "LeaseLostError",
	TypeRecordDecodeError:       "RecordDecodeError",
	TypeCorruptError:            "CorruptError",
	TypeInvalidProfileError:     "InvalidProfileError",
	TypeUnknownEngineError:      "UnknownEngineError",
	TypeBusyError:               "BusyError",
	TypeNoTurnError:             "NoTurnError",
	TypeNoTerminalError:         "NoTerminalError",
	TypeInputTimeoutError:       "InputTimeoutError",
	TypeNoGateError:             "NoGateError",
	TypeSessionClosedError:      "SessionClosedError",
	TypePersistenceFaultError:   "PersistenceFaultError",
	TypeTimeoutError:            "TimeoutError",
	TypeCanceledError:           "CanceledError",
	TypeSocketPathTooLongError:  "SocketPathTooLongError",
	TypeHostLostError:           "HostLostError",
	TypeBadRequestError:         "BadRequestError",
	TypeUnknownTypeError:        "UnknownTypeError",
	TypeLineTooLongError:        "LineTooLongError",
	TypeProtocolMismatchError:   "ProtocolMismatchError",
	TypePeerRefusedError:        "PeerRefusedError",
	TypeEventTooLargeError:      "EventTooLargeError",
	TypeTooManyClientsError:     "TooManyClientsError",

	TypeHandOffWithoutWorkspaceError: "HandOffWithoutWorkspaceError",
	TypeFromTurnError:                "FromTurnError",
	TypeHandOffTimeoutError:          "HandOffTimeoutError",
	TypeHostUnresponsiveError:        "HostUnresponsiveError",
	TypeUnsafeSocketDirError:         "UnsafeSocketDirError",
	TypeSocketDirError:               "SocketDirError",
	TypeUnsafeRootError:              "UnsafeRootError",
	TypeNoCheckpointBeforeError:      "NoCheckpointBeforeError",
	TypeForkError:                    "ForkError",
}

// String returns the type's name.
func (t Type) String() string {
	if t < typeCount {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// ParseType returns the type String names; false for a name it does not
// know.
func ParseType(name string) (Type, bool) {
	for t, n := range typeNames {
		if n == name {
			return Type(t), true
		}
	}
	return TypeError, false
}

// Types lists every type, TypeError first.
func Types() []Type {
	ts := make([]Type, typeCount)
	for i := range ts {
		ts[i] = Type(i)
	}
	return ts
}

// Kind is what a failure is. Its String is the snake_case name the CLI's
// JSON errors and the host protocol carry as "kind". A failed restore's
// kind is its stage (rig.RestoreErrorKind), a failed creation's its
// stage (rig.LifecycleStage). The zero Kind is KindError, an error the
// runtime does not classify.
type Kind uint8

// The kinds.
const (
	// KindError: none the runtime classifies.
	KindError Kind = iota

	// What the caller asked for is not there or is ambiguous.
	KindBadID
	KindAmbiguousID
	KindUnknownSession
	KindUnknownProfile // the profile a session recorded is gone

	// The configuration refuses it.
	KindPersistenceOverlap
	KindConfigRejected
	KindConfigMismatch
	KindInvalidProfile
	KindUnknownEngine

	// The stages of a restore (rig.RestoreErrorKind).
	KindDiscoveryFailed
	KindLeaseFailed
	KindJournalFailed
	KindTurnRunning
	KindReplayFailed
	KindMaterializeFailed
	KindWorkspaceDiverged
	KindAppendFailed
	KindLoopFailed
	KindRuntimeFailed
	KindContextDone

	// The stages of a creation (rig.LifecycleStage).
	KindCreateValidate
	KindCreateMint
	KindCreateLease
	KindCreateJournal
	KindCreatePlacement
	KindCreateSeed
	KindCreateLoop
	KindCreateCommit

	// Leases and stored data.
	KindLeaseHeld
	KindLeaseLost
	KindBrokenJournal
	KindCorrupt
	KindNotCrashed
	// A hand-over would leave the workspace behind (its holder does not
	// checkpoint it).
	KindWorkspaceNotCheckpointed
	// The holder did not hand the session over in time (take).
	KindHandOffTimeout

	// A live session's calls.
	KindBusy
	KindNoTurn
	KindNoTerminal
	KindInputTimeout
	KindNoGate
	// A gate's answer or input from inside the session's own turns.
	KindFromTurn
	KindSessionClosed
	KindEngineUnresponsive
	KindPersistenceFault
	KindTimeout
	KindCanceled

	// Hosts and their protocol.
	KindSocketPathTooLong
	KindHostLost
	KindBadRequest       // a malformed line or request
	KindUnknownType      // a request type the host does not know
	KindLineTooLong      // a request line over the host's limit
	KindProtocolMismatch // client and host speak different protocols
	KindPeerRefused      // the peer runs as another uid
	KindEventTooLarge    // an event does not fit in a server line
	KindTooManyClients   // the host serves as many clients as it may
	KindHostUnresponsive // the host says nothing (stopped, wedged)
	KindUnsafeSocketDir  // a level of the socket directory is not safe to use
	KindSocketDirFailed  // the socket directory cannot be made or looked at

	// A workspace root that is not a project directory ("/", the home
	// directory itself).
	KindUnsafeRoot

	// A revert whose turn's workspace before it is not known exactly.
	KindNoCheckpointBefore
	// A session cannot be forked at the turn asked for (no such turn, it
	// has not ended, no checkpoint of the workspace followed it, the
	// fork's directory is not empty).
	KindNotForkable
	kindCount
)

// kindInfo is what a kind implies: its name, its type, and the remedy of
// a failure of that kind when its cause says nothing more specific.
type kindInfo struct {
	name   string
	typ    Type
	remedy Remedy
}

var kinds = [kindCount]kindInfo{
	KindError: {"error", TypeError, RemedyNone},

	KindBadID:          {"bad_id", TypeBadIDError, RemedyListSessions},
	KindAmbiguousID:    {"ambiguous_id", TypeAmbiguousIDError, RemedyLongerPrefix},
	KindUnknownSession: {"unknown_session", TypeUnknownSessionError, RemedyListSessions},
	KindUnknownProfile: {"unknown_profile", TypeProfileGoneError, RemedyChooseProfile},

	KindPersistenceOverlap: {"persistence_overlap", TypePersistenceOverlapError, RemedyMoveStoreOrRoot},
	KindConfigRejected:     {"config_rejected", TypeRestoreRejectedError, RemedyReviewDrift},
	KindConfigMismatch:     {"config_mismatch", TypeConfigMismatchError, RemedyOriginalProfile},
	KindInvalidProfile:     {"invalid_profile", TypeInvalidProfileError, RemedyFixProfile},
	KindUnknownEngine:      {"unknown_engine", TypeUnknownEngineError, RemedyDefineEngine},

	KindDiscoveryFailed:   {"discovery_failed", TypeRestoreError, RemedyListSessions},
	KindLeaseFailed:       {"lease_failed", TypeRestoreError, RemedyRetry},
	KindJournalFailed:     {"journal_failed", TypeRestoreError, RemedyRetry},
	KindTurnRunning:       {"turn_running", TypeRestoreError, RemedyStopEarlierTurn},
	KindReplayFailed:      {"replay_failed", TypeRestoreError, RemedyInspectJournal},
	KindMaterializeFailed: {"materialize_failed", TypeRestoreError, RemedyCheckWorkspace},
	KindWorkspaceDiverged: {"workspace_diverged", TypeRestoreError, RemedyResolveDivergence},
	KindAppendFailed:      {"append_failed", TypeRestoreError, RemedyRetry},
	KindLoopFailed:        {"loop_failed", TypeRestoreError, RemedyRetry},
	KindRuntimeFailed:     {"runtime_failed", TypeRestoreError, RemedyRetry},
	KindContextDone:       {"context_done", TypeRestoreError, RemedyRetry},

	KindCreateValidate:  {"validate", TypeLifecycleError, RemedyNone},
	KindCreateMint:      {"mint", TypeLifecycleError, RemedyNone},
	KindCreateLease:     {"lease", TypeLifecycleError, RemedyNone},
	KindCreateJournal:   {"journal", TypeLifecycleError, RemedyNone},
	KindCreatePlacement: {"placement", TypeLifecycleError, RemedyNone},
	KindCreateSeed:      {"seed", TypeLifecycleError, RemedyNone},
	KindCreateLoop:      {"loop", TypeLifecycleError, RemedyNone},
	KindCreateCommit:    {"commit", TypeLifecycleError, RemedyNone},

	KindLeaseHeld:     {"lease_held", TypeLeaseHeldError, RemedyWaitOrBreakLease},
	KindLeaseLost:     {"lease_lost", TypeLeaseLostError, RemedySeeHolder},
	KindBrokenJournal: {"broken_journal", TypeRecordDecodeError, RemedyInspectJournal},
	KindCorrupt:       {"corrupt", TypeCorruptError, RemedyInspectJournal},
	KindNotCrashed:    {"not_crashed", TypeNotCrashedError, RemedyNone},

	KindWorkspaceNotCheckpointed: {"workspace_not_checkpointed", TypeHandOffWithoutWorkspaceError, RemedyTakeWithoutWorkspace},
	KindHandOffTimeout:           {"handoff_timeout", TypeHandOffTimeoutError, RemedyBreakLease},

	KindBusy:               {"busy", TypeBusyError, RemedyNone},
	KindNoTurn:             {"no_turn", TypeNoTurnError, RemedyNone},
	KindNoTerminal:         {"no_terminal", TypeNoTerminalError, RemedyNone},
	KindInputTimeout:       {"input_timeout", TypeInputTimeoutError, RemedyNone},
	KindNoGate:             {"no_gate", TypeNoGateError, RemedyNone},
	KindFromTurn:           {"from_turn", TypeFromTurnError, RemedyAnswerAsAPerson},
	KindSessionClosed:      {"session_closed", TypeSessionClosedError, RemedyRestoreWhenStopped},
	KindEngineUnresponsive: {"engine_unresponsive", TypeEngineUnresponsiveError, RemedyRestoreIt},
	KindPersistenceFault:   {"persistence_fault", TypePersistenceFaultError, RemedyNone},
	KindTimeout:            {"timeout", TypeTimeoutError, RemedyNone},
	KindCanceled:           {"canceled", TypeCanceledError, RemedyNone},

	KindSocketPathTooLong: {"socket_path_too_long", TypeSocketPathTooLongError, RemedyNone},
	KindHostLost:          {"host_lost", TypeHostLostError, RemedyNone},
	KindBadRequest:        {"bad_request", TypeBadRequestError, RemedyNone},
	KindUnknownType:       {"unknown_type", TypeUnknownTypeError, RemedyNone},
	KindLineTooLong:       {"line_too_long", TypeLineTooLongError, RemedyNone},
	KindProtocolMismatch:  {"protocol_mismatch", TypeProtocolMismatchError, RemedyNone},
	KindPeerRefused:       {"peer_refused", TypePeerRefusedError, RemedyNone},
	KindEventTooLarge:     {"event_too_large", TypeEventTooLargeError, RemedyNone},
	KindTooManyClients:    {"too_many_clients", TypeTooManyClientsError, RemedyNone},
	KindHostUnresponsive:  {"host_unresponsive", TypeHostUnresponsiveError, RemedyBreakLease},
	KindUnsafeSocketDir:   {"unsafe_socket_dir", TypeUnsafeSocketDirError, RemedyFixSocketDir},
	KindSocketDirFailed:   {"socket_dir_failed", TypeSocketDirError, RemedyFixSocketDir},

	KindUnsafeRoot: {"unsafe_root", TypeUnsafeRootError, RemedyChooseProjectRoot},

	KindNoCheckpointBefore: {"no_checkpoint_before", TypeNoCheckpointBeforeError, RemedyNone},
	KindNotForkable:        {"not_forkable", TypeForkError, RemedyNone},
}

// String returns the kind's snake_case name.
func (k Kind) String() string {
	if k < kindCount {
		return kinds[k].name
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Type returns the type of every failure of kind k.
func (k Kind) Type() Type {
	if k < kindCount {
		return kinds[k].typ
	}
	return TypeError
}

// Remedy returns the remedy of a failure of kind k whose cause says
// nothing more specific (an error's Explanation may choose another by its cause).
func (k Kind) Remedy() Remedy {
	if k < kindCount {
		return kinds[k].remedy
	}
	return RemedyNone
}

// ParseKind returns the kind String names; false for a name it does not
// know.
func ParseKind(name string) (Kind, bool) {
	for k, info := range kinds {
		if info.name == name {
			return Kind(k), true
		}
	}
	return KindError, false
}

// Kinds lists every kind, KindError first.
func Kinds() []Kind {
	ks := make([]Kind, kindCount)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}
