package event

// The session-scope events: about the session as a whole (Scope
// SessionScope). Their types are registered in registry.go and their
// Event methods are in event.go.

// SessionStarted is the first event of a session: its identity and the
// configuration it was created with.
type SessionStarted struct {
	Title string `json:"title"`
	// Rig is the profile name.
	Rig         string            `json:"rig"`
	Fingerprint string            `json:"fingerprint"`
	Manifest    map[string]string `json:"manifest"`
	Placement   string            `json:"placement"`
	Root        string            `json:"root"`
}

// SessionActive: a turn started while the session was idle.
type SessionActive struct{}

// SessionIdle: the last running turn finished.
type SessionIdle struct{}

// SessionStopped: the session shut down cleanly. A journal that does not end
// with it belongs to a crashed session.
type SessionStopped struct{}

// RestoreStarted is the first restore mutation after the fence.
type RestoreStarted struct {
	Epoch uint64 `json:"epoch"`
}

// RestoreDone is the commit point of a restore.
type RestoreDone struct {
	Epoch uint64 `json:"epoch"`
	// Interrupted lists the ids of the turns the restore closed.
	Interrupted []string `json:"interrupted"`
	// GatesClosed lists the ids of the gates the restore closed.
	GatesClosed []string `json:"gates_closed"`
}

// RestoreErrored records a restore that failed before RestoreDone.
type RestoreErrored struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Change levels.
const (
	LevelInfo = "info"
	LevelWarn = "warn"
)

// Change is one configuration drift between a session's persisted
// configuration and the live rig.
type Change struct {
	Field     string `json:"field"`
	Persisted string `json:"persisted"`
	Live      string `json:"live"`
	// Level is LevelInfo or LevelWarn.
	Level string `json:"level"`
}

// ConfigurationAdopted records drift accepted at restore. Once the restore
// that journaled it commits (RestoreDone), the adopted configuration is the
// baseline the next restore compares against.
type ConfigurationAdopted struct {
	Changes []Change `json:"changes"`
	Source  string   `json:"source"`
	// Fingerprint and Manifest are the adopted (live) configuration.
	// Records written before they existed carry neither; replay then
	// applies Changes to the previous baseline.
	Fingerprint string            `json:"fingerprint,omitempty"`
	Manifest    map[string]string `json:"manifest,omitempty"`
}

// SessionFaulted (ephemeral): the session can no longer persist (lease
// loss, persistence fault).
type SessionFaulted struct {
	Cause string `json:"cause"`
}
