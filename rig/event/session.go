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
	// ForkedFrom says where a session made by `looprig fork` came from
	// (rig/fork.go); nil for every other session.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`
}

// ForkedFrom is the session and turn a fork was made from: its workspace
// began as the checkpoint journaled after that turn (Checkpoint, the
// manifest's 64 hex characters), and an agent fork's conversation as the
// source's conversation (Conversation, the agent's id) at that turn's end.
type ForkedFrom struct {
	Session      string `json:"session"`
	TurnIndex    int    `json:"turn_index"`
	TurnID       string `json:"turn_id"`
	Checkpoint   string `json:"checkpoint"`
	Conversation string `json:"conversation,omitempty"`
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
	// Holder names the process that restored the session and holds it
	// from now on ("pid@host"): after a hand-over, the one it was handed
	// to. Empty in records of looprig before it was recorded.
	Holder string `json:"holder,omitempty"`
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
