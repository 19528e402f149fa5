package rig

import (
	"strings"

	"looprig/rig/storage"
)

// sessionsPrefix begins the lease, journal and keys of every session.
var sessionsPrefix = storage.SessionName("")

// SessionOfLease returns the session id a lease or journal name belongs to
// (the name a *storage.LeaseHeldError or a *journal.JournalLeaseLostError
// carries); ok is false for a name that is not a session's, such as a
// workspace root's lease.
func SessionOfLease(name string) (id string, ok bool) {
	id, ok = strings.CutPrefix(name, sessionsPrefix)
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}
