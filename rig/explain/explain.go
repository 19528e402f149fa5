// Package explain classifies the runtime's errors for people: what kind of
// failure an error is (a Kind, which decides its Type; a staged
// operation's kind is its stage), with which typed facts, and what to do
// about it (a Remedy). Every presenter (the CLI, the TUI, a host process)
// words and renders the same classification its own way, switching on
// these typed values; none of them decides on its own what an error of
// package rig, rig/hub, rig/storage, rig/journal or rig/engine means, nor
// whether a failure is a lost lease.
//
// Explain looks through the whole chain with errors.As, in a fixed order
// of precedence: an error that carries its own classification (an
// Explainer: a host's failure, reported to its client) first, then the
// most specific classification (a restore refused because its workspace
// root is busy is about the root, not about the LeaseHeldError that
// caused it), and a bare timeout or cancellation last.
package explain

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// Remedy is what a person can do about a failure.
type Remedy int

// The remedies. Presenters word them; the set is closed.
const (
	// RemedyNone: nothing specific (see the message).
	RemedyNone Remedy = iota
	// RemedyListSessions: the id names no session here; list the sessions
	// (and check it is the right store).
	RemedyListSessions
	// RemedyLongerPrefix: the id prefix matches several sessions; give
	// more of it.
	RemedyLongerPrefix
	// RemedyChooseProfile: the profile the session recorded is gone;
	// restore it with another one.
	RemedyChooseProfile
	// RemedyMoveStoreOrRoot: a workspace root overlaps the store; move one.
	RemedyMoveStoreOrRoot
	// RemedyReviewDrift: the configuration drifted; restore with the
	// original profile, or review the changes and accept them.
	RemedyReviewDrift
	// RemedyOriginalProfile: the session records only a fingerprint;
	// restore it with exactly the profile it was created with.
	RemedyOriginalProfile
	// RemedyShutDownRootHolder: another session works in that workspace
	// root; shut it down first, or use another root.
	RemedyShutDownRootHolder
	// RemedyWaitOrBreakLease: another process holds the session; wait for
	// it or stop it, or break the lease if it is wedged.
	RemedyWaitOrBreakLease
	// RemedySeeHolder: another process took the lease (a break); see who
	// holds it now.
	RemedySeeHolder
	// RemedyInspectJournal: stored data is damaged; nothing was repaired;
	// read what is intact (looprig log).
	RemedyInspectJournal
	// RemedyRepairEpochFile: a lease's epoch file is unreadable; repair it
	// by hand above the highest fence epoch.
	RemedyRepairEpochFile
	// RemedyRetry: a transient stage failed; nothing was kept; try again.
	RemedyRetry
	// RemedyCheckWorkspace: the workspace could not be placed; check the
	// profile's root (or the one given) and the disk.
	RemedyCheckWorkspace
	// RemedyFixProfile: the profile cannot run; fix it in the
	// configuration.
	RemedyFixProfile
	// RemedyFixSeed: the seed snapshot is refused; fix it or go without.
	RemedyFixSeed
	// RemedyDefineEngine: the engine is unknown here; define it.
	RemedyDefineEngine
	// RemedyRestoreIt: the session stopped uncleanly and is listed as
	// crashed; restore it.
	RemedyRestoreIt
	// RemedyRestoreWhenStopped: the session is shutting down; restore it
	// once it has stopped to go on with it.
	RemedyRestoreWhenStopped
	// RemedyStopEarlierTurn: a turn of the session's earlier holder still
	// runs on this machine; a lease break stops it (or wait for it to end).
	RemedyStopEarlierTurn
	remedyCount
)

var remedyNames = [remedyCount]string{
	RemedyNone:               "none",
	RemedyListSessions:       "list_sessions",
	RemedyLongerPrefix:       "longer_prefix",
	RemedyChooseProfile:      "choose_profile",
	RemedyMoveStoreOrRoot:    "move_store_or_root",
	RemedyReviewDrift:        "review_drift",
	RemedyOriginalProfile:    "original_profile",
	RemedyShutDownRootHolder: "shut_down_root_holder",
	RemedyWaitOrBreakLease:   "wait_or_break_lease",
	RemedySeeHolder:          "see_holder",
	RemedyInspectJournal:     "inspect_journal",
	RemedyRepairEpochFile:    "repair_epoch_file",
	RemedyRetry:              "retry",
	RemedyCheckWorkspace:     "check_workspace",
	RemedyFixProfile:         "fix_profile",
	RemedyFixSeed:            "fix_seed",
	RemedyDefineEngine:       "define_engine",
	RemedyRestoreIt:          "restore_it",
	RemedyRestoreWhenStopped: "restore_when_stopped",
	RemedyStopEarlierTurn:    "stop_earlier_turn",
}

// String returns the remedy's snake_case name.
func (r Remedy) String() string {
	if r >= 0 && r < remedyCount {
		return remedyNames[r]
	}
	return "remedy(" + strconv.Itoa(int(r)) + ")"
}

// Remedies lists every remedy, RemedyNone first.
func Remedies() []Remedy {
	rs := make([]Remedy, remedyCount)
	for i := range rs {
		rs[i] = Remedy(i)
	}
	return rs
}

// ParseRemedy returns the remedy String names; false (and RemedyNone)
// for a name it does not know.
func ParseRemedy(name string) (Remedy, bool) {
	for r, n := range remedyNames {
		if n == name {
			return Remedy(r), true
		}
	}
	return RemedyNone, false
}

// Explainer is an error that carries its own classification: one
// classified in another process (a host's failure, reported to the client
// that started it), or an error of a presenter's own that is one of the
// kinds. Explain returns what it says, unless it is unclassified.
type Explainer interface {
	error
	Explanation() Explanation
}

// Field is one typed fact about a failure. Name is snake_case. Value is
// a string, a number, a bool, nil, a []string, a storage.Holder
// ("holder") or the []event.Change of a drift ("changes").
type Field struct {
	Name  string
	Value any
}

// Explanation is the classification of an error.
type Explanation struct {
	// Type is the error type people and JSON see; TypeError when the
	// error is none the runtime classifies. It is Kind.Type().
	Type Type
	// Kind is what the failure is: a restore's or a creation's stage, or
	// the failure's own kind; KindError when unclassified.
	Kind Kind
	// Fields are the typed facts, in a stable order.
	Fields []Field
	// Remedy is what to do about it.
	Remedy Remedy
}

// Of returns the classification of a failure of kind k with these
// fields: the kind's type and its remedy (Kind.Remedy).
func Of(k Kind, fields ...Field) Explanation {
	return Explanation{Type: k.Type(), Kind: k, Fields: fields, Remedy: k.Remedy()}
}

// Field returns the value of the field called name.
func (x Explanation) Field(name string) (any, bool) {
	for _, f := range x.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Number returns the field called name as an integer; false when it is
// absent or not an integer.
func (x Explanation) Number(name string) (int64, bool) {
	v, _ := x.Field(name)
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case uint64:
		return int64(n), true
	}
	return 0, false
}

// Classified reports whether Explain recognised the error.
func (x Explanation) Classified() bool { return x.Kind != KindError }

func (x *Explanation) add(name string, value any) { x.Fields = append(x.Fields, Field{name, value}) }

// Explain classifies err. A nil err, or one none of the runtime's types
// is in the chain of, is TypeError, KindError, RemedyNone.
func Explain(err error) Explanation {
	if err == nil {
		return Of(KindError)
	}
	var explained Explainer
	if errors.As(err, &explained) {
		if x := explained.Explanation(); x.Classified() {
			return x
		}
	}
	if x, ok := explainCall(err); ok {
		return x
	}
	var (
		badID     *rig.BadIDError
		ambiguous *rig.AmbiguousIDError
		gone      *rig.ProfileGoneError
		overlap   *rig.PersistenceOverlapError
		rejected  *rig.RestoreRejectedError
		mismatch  *rig.ConfigMismatchError
		restore   *rig.RestoreError
		stuck     *rig.EngineUnresponsiveError
		unknownS  *rig.UnknownSessionError
		lifecycle *rig.LifecycleError
		held      *storage.LeaseHeldError
		notCrash  *rig.NotCrashedError
	)
	switch {
	case errors.As(err, &badID):
		return Of(KindBadID, Field{"input", badID.Input})
	case errors.As(err, &ambiguous):
		return Of(KindAmbiguousID, Field{"input", ambiguous.Input}, Field{"matches", ambiguous.Matches})
	case errors.As(err, &gone):
		return Of(KindUnknownProfile, Field{"session", gone.Session}, Field{"profile", gone.Profile}, Field{"known", gone.Known})
	case errors.As(err, &overlap):
		x := Of(KindPersistenceOverlap)
		x.add("profile", overlap.Profile)
		x.add("placement", string(overlap.Placement))
		x.add("relation", overlap.Relation)
		x.add("root", overlap.Root)
		x.add("store", overlap.Store)
		x.add("root_given", overlap.RootGiven)
		x.add("store_given", overlap.StoreGiven)
		return x
	case errors.As(err, &rejected):
		x := Of(KindConfigRejected, Field{"session", rejected.Session.String()}, Field{"source", rejected.Source},
			Field{"changes", rejected.Assessment.Changes})
		if rejected.Cause != nil {
			x.add("cause", rejected.Cause.Error())
		}
		return x
	case errors.As(err, &mismatch):
		return Of(KindConfigMismatch, Field{"session", mismatch.Session.String()}, Field{"persisted", mismatch.Persisted},
			Field{"live", mismatch.Live})
	case errors.As(err, &restore):
		if x, ok := explainRestore(err, restore); ok {
			return x
		}
	case errors.As(err, &stuck):
		return Of(KindEngineUnresponsive, Field{"session", stuck.Session.String()}, Field{"turn_id", stuck.Turn},
			Field{"waited_ms", stuck.Waited.Milliseconds()})
	case errors.As(err, &unknownS):
		return Of(KindUnknownSession)
	case errors.As(err, &notCrash):
		return Of(KindNotCrashed, Field{"session", notCrash.Session.String()})
	case errors.As(err, &lifecycle):
		if x, ok := explainLifecycle(err, lifecycle); ok {
			return x
		}
	case errors.As(err, &held):
		x := Of(KindLeaseHeld, Field{"holder_epoch", held.HolderEpoch}, Field{"holder", held.Holder})
		if id, ok := rig.SessionOfLease(held.Name); ok {
			x.add("session", id)
		} else if strings.HasPrefix(held.Name, storage.RootLeaseName("")) {
			x.Remedy = RemedyShutDownRootHolder
		}
		return x
	}
	if x, ok := explainLost(err); ok {
		return x
	}
	var (
		fault    *hub.FaultError
		decode   *journal.RecordDecodeError
		corrupt  *storage.CorruptError
		invalidP *rig.InvalidProfileError
		unknownE *engine.UnknownEngineError
	)
	switch {
	case errors.As(err, &fault): // before its cause: the session stopped for it
		return Of(KindPersistenceFault, Field{"event_type", string(fault.Type)})
	case errors.As(err, &decode):
		return Of(KindBrokenJournal, Field{"seq", decode.Seq}, Field{"reason", decode.Reason})
	case errors.As(err, &corrupt):
		x := Of(KindCorrupt, Field{"name", corrupt.Name}, Field{"path", corrupt.Path}, Field{"offset", corrupt.Offset})
		if IsEpochFile(corrupt.Path) {
			x.Remedy = RemedyRepairEpochFile
		}
		return x
	case errors.As(err, &invalidP):
		return Of(KindInvalidProfile, Field{"profile", invalidP.Profile}, Field{"field", invalidP.Field})
	case errors.As(err, &unknownE):
		return Of(KindUnknownEngine, Field{"engine", unknownE.Name}, Field{"known", unknownE.Known})
	case errors.Is(err, context.DeadlineExceeded):
		return Of(KindTimeout)
	case errors.Is(err, context.Canceled):
		return Of(KindCanceled)
	}
	return Of(KindError)
}

// explainCall classifies the refusals of a live session's calls (submit,
// input, respond_gate, ...): they stand alone, never the cause of another
// failure.
func explainCall(err error) (Explanation, bool) {
	var (
		busy    *rig.BusyError
		noTurn  *rig.NoTurnError
		noTerm  *rig.NoTerminalError
		timeout *rig.InputTimeoutError
		noGate  *rig.NoGateError
	)
	switch {
	case errors.As(err, &busy):
		return Of(KindBusy, Field{"turn_id", busy.TurnID}, Field{"index", busy.Index}), true
	case errors.As(err, &noTurn):
		return Of(KindNoTurn), true
	case errors.As(err, &noTerm):
		return Of(KindNoTerminal, Field{"turn_id", noTerm.TurnID}), true
	case errors.As(err, &timeout):
		return Of(KindInputTimeout, Field{"turn_id", timeout.TurnID}, Field{"written", timeout.Written}, Field{"len", timeout.Len}), true
	case errors.As(err, &noGate):
		return Of(KindNoGate, Field{"gate_id", noGate.GateID}, Field{"open", noGate.Open}), true
	case errors.Is(err, rig.ErrSessionClosed):
		return Of(KindSessionClosed), true
	}
	return Explanation{}, false
}

// explainRestore classifies a failed restore by its cause; false for a
// stage it does not know.
func explainRestore(err error, re *rig.RestoreError) (Explanation, bool) {
	kind, ok := restoreKinds[re.Kind]
	if !ok {
		return Explanation{}, false
	}
	x := Of(kind, Field{"session", re.Session.String()})
	var (
		held     *storage.LeaseHeldError
		busy     *rig.WorkspaceRootBusyError
		unknownS *rig.UnknownSessionError
		unknownE *engine.UnknownEngineError
		corrupt  *storage.CorruptError
		decode   *journal.RecordDecodeError
		running  *rig.TurnRunningError
	)
	switch {
	case errors.As(err, &running):
		x.add("turn_id", running.Turn)
		x.add("index", running.Index)
		x.add("epoch", running.Epoch)
		x.add("pgid", running.PGID)
		x.add("host", running.Host)
	case errors.As(err, &busy): // before held: the root's LeaseHeldError is its cause
		x.Remedy = RemedyShutDownRootHolder
		x.add("cause_type", "WorkspaceRootBusyError")
		x.add("root", busy.Root)
		x.add("holder_epoch", busy.HolderEpoch)
		if errors.As(err, &held) {
			x.add("holder", held.Holder)
		}
	case errors.As(err, &corrupt) && IsEpochFile(corrupt.Path):
		x.Remedy = RemedyRepairEpochFile
		x.add("cause_type", "CorruptError")
		x.add("path", corrupt.Path)
	case errors.As(err, &corrupt), errors.As(err, &decode):
		x.Remedy = RemedyInspectJournal
		if corrupt != nil {
			x.add("cause_type", "CorruptError")
			x.add("name", corrupt.Name)
			x.add("path", corrupt.Path)
			x.add("offset", corrupt.Offset)
		} else {
			x.add("cause_type", "RecordDecodeError")
			x.add("seq", decode.Seq)
			x.add("reason", decode.Reason)
		}
	case errors.As(err, &held):
		x.Remedy = RemedyWaitOrBreakLease
		x.add("holder_epoch", held.HolderEpoch)
		x.add("holder", held.Holder)
	case errors.As(err, &unknownE):
		x.Remedy = RemedyDefineEngine
		x.add("cause_type", "UnknownEngineError")
		x.add("engine", unknownE.Name)
		x.add("known", unknownE.Known)
	case errors.As(err, &unknownS):
		x.Remedy = RemedyListSessions
		x.Fields[0].Value = nil // there is no session to name
		x.add("input", unknownS.Input)
	}
	if re.Cause != nil {
		// What went wrong, in words: a presenter says it the same way
		// whether the restore ran in its process or in a host.
		x.add("cause", re.Cause.Error())
	}
	return x, true
}

// explainLifecycle classifies a failed creation by its cause; false for a
// stage it does not know.
func explainLifecycle(err error, lc *rig.LifecycleError) (Explanation, bool) {
	kind, ok := creationKinds[lc.Stage]
	if !ok {
		return Explanation{}, false
	}
	x := Of(kind, Field{"stage", string(lc.Stage)})
	var (
		busy     *rig.WorkspaceRootBusyError
		seed     *rig.SeedError
		invalidP *rig.InvalidProfileError
		unknownE *engine.UnknownEngineError
	)
	switch {
	case errors.As(err, &busy):
		x.Remedy = RemedyShutDownRootHolder
		x.add("root", busy.Root)
		x.add("holder_epoch", busy.HolderEpoch)
	case errors.As(err, &seed):
		x.Remedy = RemedyFixSeed
		x.add("seed_path", seed.Path)
	case errors.As(err, &invalidP):
		x.Remedy = RemedyFixProfile
	case errors.As(err, &unknownE):
		x.Remedy = RemedyDefineEngine
		x.add("engine", unknownE.Name)
		x.add("known", unknownE.Known)
	}
	return x, true
}

// explainLost classifies a lost lease: a session journal's, a workspace
// root's, a bare one, or a journal writer fenced off by a successor. It
// is the one place that decides whether a failure is a lost lease
// (KindLeaseLost).
func explainLost(err error) (Explanation, bool) {
	var (
		jl     *journal.JournalLeaseLostError
		rl     *rig.WorkspaceRootLeaseLostError
		ll     *storage.LeaseLostError
		fenced *journal.FencedError
	)
	var session any
	var epoch uint64
	root := ""
	switch {
	case errors.As(err, &jl):
		session, epoch = sessionOf(jl.Name), jl.Epoch
	case errors.As(err, &rl):
		epoch, root = rl.Epoch, rl.Root // a root lease does not name its session
	case errors.As(err, &ll):
		session, epoch = sessionOf(ll.Name), ll.Epoch
	case errors.As(err, &fenced):
		session, epoch = sessionOf(fenced.Name), fenced.Epoch
	default:
		return Explanation{}, false
	}
	var newEpoch uint64
	var reason string
	if errors.As(err, &ll) {
		newEpoch, reason = ll.NewEpoch, string(ll.Reason)
	}
	x := Of(KindLeaseLost, Field{"session", session}, Field{"epoch", epoch}, Field{"new_epoch", newEpoch}, Field{"reason", reason})
	if root != "" {
		x.add("root", root)
	}
	return x, true
}

// sessionOf is the session id a lease name belongs to, nil for none.
func sessionOf(name string) any {
	if id, ok := rig.SessionOfLease(name); ok {
		return id
	}
	return nil
}

// IsEpochFile reports whether path (a *storage.CorruptError's) is a
// lease's epoch file, which looprig never resets on its own: a lower epoch
// could let a stale holder's writes through.
func IsEpochFile(path string) bool { return strings.HasSuffix(path, ".epoch") }
