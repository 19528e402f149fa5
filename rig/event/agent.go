package event

// The agent events: the conversation an agent engine's turns continue
// (session scope). Their types are registered in registry.go and their
// Event methods are in event.go; rig records them around an agent's turns.

// AgentConversation: the conversation the session's agent turns continue.
// It is recorded when an agent session is created (the id looprig minted,
// TurnID ""), and again by the turn whose agent first reported it (so the
// next turn resumes it) or reported another one (the journal follows the
// agent). The latest one is the session's conversation.
type AgentConversation struct {
	// Agent names the engine ("claude").
	Agent string `json:"agent"`
	// ID is the agent's own conversation id (a UUID for Claude Code).
	ID string `json:"id"`
	// TurnID is the turn whose agent reported ID; "" when looprig minted it.
	TurnID string `json:"turn_id,omitempty"`
}

// AgentTranscript: the agent's transcript of the conversation, as it was
// when a turn ended, is stored as a blob, so that a restore on any machine
// puts it where the agent looks for it and the conversation continues
// there.
type AgentTranscript struct {
	Agent string `json:"agent"`
	ID    string `json:"id"` // the conversation
	// Blob is the digest (64 hex characters) of the transcript's manifest,
	// which lists its content in chunks, and Bytes the content's size.
	Blob   string `json:"blob"`
	Bytes  int64  `json:"bytes"`
	TurnID string `json:"turn_id"`
}

// MaxAgentField bounds AgentConversation's and AgentTranscript's Agent
// and ID, in bytes.
const MaxAgentField = 128
