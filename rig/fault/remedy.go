package fault

import "strconv"

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
	// RemedyResolveDivergence: the workspace directory has changes no
	// checkpoint has; keep it or take the checkpoint (it is moved aside).
	RemedyResolveDivergence
	// RemedyTakeWithoutWorkspace: the session's workspace does not travel
	// (its holder does not checkpoint it); take it anyway, knowing its
	// files stay behind, or make its profile checkpoint (not a shared
	// workspace's).
	RemedyTakeWithoutWorkspace
	// RemedyAnswerAsAPerson: a gate's answer or input came from inside the
	// session's own turns; a person answers, from a client outside them
	// (the TUI, looprig gate or send in their own terminal).
	RemedyAnswerAsAPerson
	// RemedyBreakLease: the process that holds the session does not
	// answer (stopped, wedged): take its lease by force (a lease break
	// fences it off and stops its turn here).
	RemedyBreakLease
	// RemedyFixSocketDir: the directory hosts' sockets live in cannot be
	// used; fix it as the failure says, or point XDG_RUNTIME_DIR at a
	// directory of one's own.
	RemedyFixSocketDir
	// RemedyChooseProjectRoot: the workspace root is "/" or the home
	// directory itself; choose a project directory.
	RemedyChooseProjectRoot
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
	RemedyResolveDivergence:  "resolve_divergence",
	RemedyRestoreIt:          "restore_it",
	RemedyRestoreWhenStopped: "restore_when_stopped",
	RemedyStopEarlierTurn:    "stop_earlier_turn",

	RemedyTakeWithoutWorkspace: "take_without_workspace",
	RemedyAnswerAsAPerson:      "answer_as_a_person",
	RemedyBreakLease:           "break_lease",
	RemedyFixSocketDir:         "fix_socket_dir",
	RemedyChooseProjectRoot:    "choose_project_root",
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
