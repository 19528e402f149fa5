// Package explain classifies the runtime's errors for people: what kind of
// failure an error is, at which stage, with which typed facts, and what to
// do about it. Every presenter (the CLI, the TUI, a host process) words
// and renders the same classification its own way; none of them decides
// on its own what an error of package rig, rig/storage, rig/journal or
// rig/engine means.
//
// Explain looks through the whole chain with errors.As, in a fixed order
// of precedence: the most specific classification wins (a restore refused
// because its workspace root is busy is about the root, not about the
// LeaseHeldError that caused it).
package explain

import (
	"errors"
	"strconv"
	"strings"

	"looprig/rig"
	"looprig/rig/engine"
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
)

var remedyNames = [...]string{
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
}

// String returns the remedy's snake_case name.
func (r Remedy) String() string {
	if r >= 0 && int(r) < len(remedyNames) {
		return remedyNames[r]
	}
	return "remedy(" + strconv.Itoa(int(r)) + ")"
}

// ParseRemedy returns the remedy String names, RemedyNone for a name it
// does not know.
func ParseRemedy(name string) Remedy {
	for r, n := range remedyNames {
		if n == name {
			return Remedy(r)
		}
	}
	return RemedyNone
}

// Explainer is an error that carries its own classification: one
// classified in another process (a host's failure, reported to the client
// that started it). Explain returns what it says.
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
	// Type is the error type people and JSON see: "RestoreError",
	// "LeaseHeldError", "WorkspaceRootBusyError" ...; "Error" when the
	// error is none the runtime classifies.
	Type string
	// Kind is the snake_case kind: a restore's RestoreErrorKind, a
	// creation's LifecycleStage, or the failure's own ("lease_held",
	// "config_rejected", ...); "error" when unclassified.
	Kind string
	// Stage is a restore's RestoreErrorKind or a creation's
	// LifecycleStage, "" when the failure is not one of a staged
	// operation.
	Stage string
	// Fields are the typed facts, in a stable order.
	Fields []Field
	// Remedy is what to do about it.
	Remedy Remedy
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

// Classified reports whether Explain recognised the error.
func (x Explanation) Classified() bool { return x.Type != unclassified }

const unclassified = "Error"

func (x *Explanation) add(name string, value any) { x.Fields = append(x.Fields, Field{name, value}) }

// Explain classifies err. A nil err, or one none of the runtime's types
// is in the chain of, is Type "Error", Kind "error", RemedyNone.
func Explain(err error) Explanation {
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
		decode    *journal.RecordDecodeError
		corrupt   *storage.CorruptError
		invalidP  *rig.InvalidProfileError
		unknownE  *engine.UnknownEngineError
		notCrash  *rig.NotCrashedError
	)
	if err == nil {
		return Explanation{Type: unclassified, Kind: "error"}
	}
	var explained Explainer
	if errors.As(err, &explained) {
		return explained.Explanation()
	}
	switch {
	case errors.As(err, &badID):
		x := Explanation{Type: "BadIDError", Kind: "bad_id", Remedy: RemedyListSessions}
		x.add("input", badID.Input)
		return x
	case errors.As(err, &ambiguous):
		x := Explanation{Type: "AmbiguousIDError", Kind: "ambiguous_id", Remedy: RemedyLongerPrefix}
		x.add("input", ambiguous.Input)
		x.add("matches", ambiguous.Matches)
		return x
	case errors.As(err, &gone):
		x := Explanation{Type: "ProfileGoneError", Kind: "unknown_profile", Remedy: RemedyChooseProfile}
		x.add("session", gone.Session)
		x.add("profile", gone.Profile)
		x.add("known", gone.Known)
		return x
	case errors.As(err, &overlap):
		x := Explanation{Type: "PersistenceOverlapError", Kind: "persistence_overlap", Remedy: RemedyMoveStoreOrRoot}
		x.add("profile", overlap.Profile)
		x.add("placement", string(overlap.Placement))
		x.add("relation", overlap.Relation)
		x.add("root", overlap.Root)
		x.add("store", overlap.Store)
		x.add("root_given", overlap.RootGiven)
		x.add("store_given", overlap.StoreGiven)
		return x
	case errors.As(err, &rejected):
		x := Explanation{Type: "RestoreRejectedError", Kind: "config_rejected", Remedy: RemedyReviewDrift}
		x.add("session", rejected.Session.String())
		x.add("source", rejected.Source)
		x.add("changes", rejected.Assessment.Changes)
		return x
	case errors.As(err, &mismatch):
		x := Explanation{Type: "ConfigMismatchError", Kind: "config_mismatch", Remedy: RemedyOriginalProfile}
		x.add("session", mismatch.Session.String())
		x.add("persisted", mismatch.Persisted)
		x.add("live", mismatch.Live)
		return x
	case errors.As(err, &restore):
		return explainRestore(err, restore)
	case errors.As(err, &stuck):
		x := Explanation{Type: "EngineUnresponsiveError", Kind: "engine_unresponsive", Remedy: RemedyRestoreIt}
		x.add("session", stuck.Session.String())
		x.add("turn_id", stuck.Turn)
		x.add("waited_ms", stuck.Waited.Milliseconds())
		return x
	case errors.As(err, &unknownS):
		return Explanation{Type: "UnknownSessionError", Kind: "unknown_session", Remedy: RemedyListSessions}
	case errors.As(err, &notCrash):
		x := Explanation{Type: "NotCrashedError", Kind: "not_crashed"}
		x.add("session", notCrash.Session.String())
		return x
	case errors.As(err, &lifecycle):
		return explainLifecycle(err, lifecycle)
	case errors.As(err, &held):
		x := Explanation{Type: "LeaseHeldError", Kind: "lease_held", Remedy: RemedyWaitOrBreakLease}
		x.add("holder_epoch", held.HolderEpoch)
		x.add("holder", held.Holder)
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
	switch {
	case errors.As(err, &decode):
		x := Explanation{Type: "RecordDecodeError", Kind: "broken_journal", Remedy: RemedyInspectJournal}
		x.add("seq", decode.Seq)
		x.add("reason", decode.Reason)
		return x
	case errors.As(err, &corrupt):
		x := Explanation{Type: "CorruptError", Kind: "corrupt", Remedy: RemedyInspectJournal}
		if IsEpochFile(corrupt.Path) {
			x.Remedy = RemedyRepairEpochFile
		}
		x.add("name", corrupt.Name)
		x.add("path", corrupt.Path)
		x.add("offset", corrupt.Offset)
		return x
	case errors.As(err, &invalidP):
		x := Explanation{Type: "InvalidProfileError", Kind: "invalid_profile", Remedy: RemedyFixProfile}
		x.add("profile", invalidP.Profile)
		x.add("field", invalidP.Field)
		return x
	case errors.As(err, &unknownE):
		x := Explanation{Type: "UnknownEngineError", Kind: "unknown_engine", Remedy: RemedyDefineEngine}
		x.add("engine", unknownE.Name)
		x.add("known", unknownE.Known)
		return x
	}
	return Explanation{Type: unclassified, Kind: "error"}
}

// explainRestore classifies a failed restore by its cause.
func explainRestore(err error, re *rig.RestoreError) Explanation {
	x := Explanation{Type: "RestoreError", Kind: string(re.Kind), Stage: string(re.Kind)}
	x.add("session", re.Session.String())
	var (
		held     *storage.LeaseHeldError
		busy     *rig.WorkspaceRootBusyError
		unknownS *rig.UnknownSessionError
		unknownE *engine.UnknownEngineError
		corrupt  *storage.CorruptError
		decode   *journal.RecordDecodeError
	)
	switch {
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
	default:
		switch re.Kind {
		case rig.RestoreDiscoveryFailed:
			x.Remedy = RemedyListSessions
		case rig.RestoreReplayFailed:
			x.Remedy = RemedyInspectJournal
		case rig.RestoreMaterializeFailed:
			x.Remedy = RemedyCheckWorkspace
		default:
			x.Remedy = RemedyRetry
		}
	}
	return x
}

// explainLifecycle classifies a failed creation by its cause.
func explainLifecycle(err error, lc *rig.LifecycleError) Explanation {
	x := Explanation{Type: "LifecycleError", Kind: string(lc.Stage), Stage: string(lc.Stage)}
	x.add("stage", string(lc.Stage))
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
	return x
}

// explainLost classifies a lost lease: a session journal's, a workspace
// root's, or a bare one.
func explainLost(err error) (Explanation, bool) {
	var (
		jl *journal.JournalLeaseLostError
		rl *rig.WorkspaceRootLeaseLostError
		ll *storage.LeaseLostError
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
	default:
		return Explanation{}, false
	}
	var newEpoch uint64
	var reason string
	if errors.As(err, &ll) {
		newEpoch, reason = ll.NewEpoch, string(ll.Reason)
	}
	x := Explanation{Type: "LeaseLostError", Kind: "lease_lost", Remedy: RemedySeeHolder}
	x.add("session", session)
	x.add("epoch", epoch)
	x.add("new_epoch", newEpoch)
	x.add("reason", reason)
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
