package rig

import (
	"io"
	"os"

	"looprig/rig/event"
)

// A restore that adopts a change of placement or root (accepted drift:
// --accept-drift, the TUI's confirm) moves the session's workspace: the
// directory its turns run in from now on was never its own. Nothing this
// machine knows of the directory the session worked in before (its stat
// index, the rule that changes since a checkpoint taken here are this
// machine's work) says anything about the new one, so the restore treats
// it as a directory it meets for the first time:
//
//	the new directory                        the restore
//	missing, or empty, with a checkpoint     brings the last checkpoint back into it
//	missing, session placement, none         makes it, empty (WorkspaceFound.New)
//	holding files, with a checkpoint         compares it with the checkpoints, without
//	                                         this machine's index: used when it is one,
//	                                         else refused as diverged (OnDiverged)
//	anything else                            uses it as it is (an exclusive or shared
//	                                         root must exist, as at creation)
//
// The files in the directory it worked in before stay where they are.

// workspaceMoved reports whether the live profile places the session's
// workspace elsewhere than base, its recorded configuration, did: another
// placement or another (canonical) root. was is the root the session
// worked in before ("" when that was its own per-session directory).
// A session recorded with a fingerprint only cannot move: it restores
// only under the very profile it was made with.
func (r *Rig) workspaceMoved(base baseline) (was string, moved bool) {
	if base.manifest == nil {
		return "", false
	}
	placement, root := base.manifest["placement"], base.manifest["root"]
	if placement == "" {
		return "", false
	}
	live := r.profile.manifest(r.liveRoot())
	if placement == live["placement"] && root == live["root"] {
		return "", false
	}
	return root, true
}

// forgetIndex drops the session's stat index: it describes a directory
// the session no longer works in. The next checkpoint reads every file.
func (s *Session) forgetIndex() {
	s.ckpt.loaded, s.ckpt.index, s.ckpt.saved = true, nil, false
}

// isEmptyDir reports whether dir is a directory holding nothing.
func isEmptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return err == io.EOF && len(names) == 0
}

// removeIfEmpty removes dir when it is an empty directory (never a link,
// never a directory holding anything: rmdir refuses those) and reports
// whether it did.
func removeIfEmpty(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	names, err := f.Readdirnames(1)
	f.Close()
	if err == nil || len(names) > 0 {
		return false
	}
	return os.Remove(dir) == nil
}

// PlacementBefore reads, from the configuration drift of a refused
// restore (RestoreRejectedError's changes), where the session was made
// to work: its recorded placement ("" when the drift does not change it)
// and root ("" when unchanged, or for session placement). ok reports
// whether the drift moves the workspace at all. Presenters turn it into
// the --placement/--root a restore "where it was made" takes.
func PlacementBefore(changes []event.Change) (placement Placement, root string, ok bool) {
	for _, c := range changes {
		switch c.Field {
		case "placement":
			placement, ok = Placement(c.Persisted), true
		case "root":
			root, ok = c.Persisted, true
		}
	}
	return placement, root, ok
}
