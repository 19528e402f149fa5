package rig

import "looprig/rig/storage"

// sessionsPrefix begins the lease, journal and keys of every session.
var sessionsPrefix = storage.SessionName("")
