package explain

import (
	"strconv"

	"looprig/rig"
)

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

	// A live session's calls.
	KindBusy
	KindNoTurn
	KindNoTerminal
	KindInputTimeout
	KindNoGate
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

	KindDiscoveryFailed:   {string(rig.RestoreDiscoveryFailed), TypeRestoreError, RemedyListSessions},
	KindLeaseFailed:       {string(rig.RestoreLeaseFailed), TypeRestoreError, RemedyRetry},
	KindJournalFailed:     {string(rig.RestoreJournalFailed), TypeRestoreError, RemedyRetry},
	KindTurnRunning:       {string(rig.RestoreTurnRunning), TypeRestoreError, RemedyStopEarlierTurn},
	KindReplayFailed:      {string(rig.RestoreReplayFailed), TypeRestoreError, RemedyInspectJournal},
	KindMaterializeFailed: {string(rig.RestoreMaterializeFailed), TypeRestoreError, RemedyCheckWorkspace},
	KindAppendFailed:      {string(rig.RestoreAppendFailed), TypeRestoreError, RemedyRetry},
	KindLoopFailed:        {string(rig.RestoreLoopFailed), TypeRestoreError, RemedyRetry},
	KindRuntimeFailed:     {string(rig.RestoreRuntimeFailed), TypeRestoreError, RemedyRetry},
	KindContextDone:       {string(rig.RestoreContextDone), TypeRestoreError, RemedyRetry},

	KindCreateValidate:  {string(rig.StageValidate), TypeLifecycleError, RemedyNone},
	KindCreateMint:      {string(rig.StageMint), TypeLifecycleError, RemedyNone},
	KindCreateLease:     {string(rig.StageLease), TypeLifecycleError, RemedyNone},
	KindCreateJournal:   {string(rig.StageJournal), TypeLifecycleError, RemedyNone},
	KindCreatePlacement: {string(rig.StagePlacement), TypeLifecycleError, RemedyNone},
	KindCreateSeed:      {string(rig.StageSeed), TypeLifecycleError, RemedyNone},
	KindCreateLoop:      {string(rig.StageLoop), TypeLifecycleError, RemedyNone},
	KindCreateCommit:    {string(rig.StageCommit), TypeLifecycleError, RemedyNone},

	KindLeaseHeld:     {"lease_held", TypeLeaseHeldError, RemedyWaitOrBreakLease},
	KindLeaseLost:     {"lease_lost", TypeLeaseLostError, RemedySeeHolder},
	KindBrokenJournal: {"broken_journal", TypeRecordDecodeError, RemedyInspectJournal},
	KindCorrupt:       {"corrupt", TypeCorruptError, RemedyInspectJournal},
	KindNotCrashed:    {"not_crashed", TypeNotCrashedError, RemedyNone},

	KindBusy:               {"busy", TypeBusyError, RemedyNone},
	KindNoTurn:             {"no_turn", TypeNoTurnError, RemedyNone},
	KindNoTerminal:         {"no_terminal", TypeNoTerminalError, RemedyNone},
	KindInputTimeout:       {"input_timeout", TypeInputTimeoutError, RemedyNone},
	KindNoGate:             {"no_gate", TypeNoGateError, RemedyNone},
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
// nothing more specific (Explain may choose another one by the cause).
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

// restoreKinds are the kinds of a restore's stages.
var restoreKinds = map[rig.RestoreErrorKind]Kind{
	rig.RestoreDiscoveryFailed:   KindDiscoveryFailed,
	rig.RestoreLeaseFailed:       KindLeaseFailed,
	rig.RestoreJournalFailed:     KindJournalFailed,
	rig.RestoreTurnRunning:       KindTurnRunning,
	rig.RestoreReplayFailed:      KindReplayFailed,
	rig.RestoreMaterializeFailed: KindMaterializeFailed,
	rig.RestoreAppendFailed:      KindAppendFailed,
	rig.RestoreLoopFailed:        KindLoopFailed,
	rig.RestoreRuntimeFailed:     KindRuntimeFailed,
	rig.RestoreContextDone:       KindContextDone,
}

// creationKinds are the kinds of a creation's stages.
var creationKinds = map[rig.LifecycleStage]Kind{
	rig.StageValidate:  KindCreateValidate,
	rig.StageMint:      KindCreateMint,
	rig.StageLease:     KindCreateLease,
	rig.StageJournal:   KindCreateJournal,
	rig.StagePlacement: KindCreatePlacement,
	rig.StageSeed:      KindCreateSeed,
	rig.StageLoop:      KindCreateLoop,
	rig.StageCommit:    KindCreateCommit,
}
