package rig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"looprig/rig/event"
	"looprig/rig/storage"
)

// CatalogState is the lifecycle a session's catalog entry records. What a
// listing shows (live, held, idle, crashed, broken) combines it with a
// lease probe.
type CatalogState string

const (
	// CatalogCreating: NewSession took the lease and is building the
	// session; the entry becomes running once SessionStarted and the root
	// LoopStarted are durable. Seen without a holder, the creation stopped:
	// ListSessions shows it crashed if the journal begins with those two
	// records (a restore completes it), else broken.
	CatalogCreating CatalogState = "creating"
	// CatalogRunning: a process owns the session. Seen without a holder,
	// that process crashed.
	CatalogRunning CatalogState = "running"
	// CatalogStopped: the session was shut down cleanly.
	CatalogStopped CatalogState = "stopped"
	// CatalogBroken: a restore found the journal unreadable or without
	// SessionStarted or the root LoopStarted (replay_failed,
	// discovery_failed); Reason is that restore error.
	CatalogBroken CatalogState = "broken"
)

// LastRestoreFailed begins the catalog's reason of a session whose last
// restore failed: listings show it beside the session's state.
const LastRestoreFailed = "its last restore failed"

// CatalogEntry is the cheap summary of a session kept in KV at
// storage.CatalogKey(id), so listing thousands of sessions never reads a
// journal. It may lag the journal (the journal is the truth) and is
// rebuilt from it on restore.
type CatalogEntry struct {
	V         int          `json:"v"`
	ID        string       `json:"id"`
	Title     string       `json:"title"`
	Profile   string       `json:"profile"`
	Engine    string       `json:"engine"`
	Shell     string       `json:"shell,omitempty"` // its turns' shell; "" in older entries (LegacyShell)
	Placement Placement    `json:"placement"`
	Root      string       `json:"root,omitempty"`
	State     CatalogState `json:"state"`
	// Reason is why the session is broken; for a session nobody holds,
	// why its last restore failed (LastRestoreFailed), until one succeeds.
	Reason    string `json:"reason,omitempty"`
	Epoch     uint64 `json:"epoch"`
	LastSeq   uint64 `json:"last_seq"`
	OpenTurn  string `json:"open_turn,omitempty"`
	TurnIndex int    `json:"turn_index"`
	OpenGate  string `json:"open_gate,omitempty"`
	// TurnSince and GateSince are when the open turn started and the open
	// gate opened (zero when none is open).
	TurnSince time.Time `json:"turn_since,omitzero"`
	GateSince time.Time `json:"gate_since,omitzero"`
	// GatePrompt is the open gate's question, cut to MaxCatalogPrompt
	// bytes (the journal has all of it).
	GatePrompt string `json:"gate_prompt,omitempty"`
	// LastEnd is how the last turn that ended ended; nil before any did.
	LastEnd *TurnEnd `json:"last_end,omitempty"`
	// Attention is what the running turn asked of the user since the user
	// last looked (State.Attention); nil when nothing is pending.
	Attention *Attention `json:"attention,omitempty"`
	// Checkpoint summarizes the workspace pointer (State.Checkpoint); nil
	// before any checkpoint.
	Checkpoint *CatalogCheckpoint `json:"checkpoint,omitempty"`
	// Conversation is an agent session's conversation
	// (State.Conversation); nil for other engines, and before an agent
	// that names its conversations itself (codex) has named it.
	Conversation *CatalogConversation `json:"conversation,omitempty"`
	// Worktree is the git worktree looprig added for the session
	// (State.Worktree); nil for a session in any other directory.
	Worktree *CatalogWorktree `json:"worktree,omitempty"`
	// ForkedFrom: where a session `looprig fork` made came from
	// (State.ForkedFrom); nil for every other session.
	ForkedFrom *event.ForkedFrom `json:"forked_from,omitempty"`
	// Checkpointing is how far the checkpoint its holder is taking is
	// (written now and then while one runs for more than a moment); nil
	// when it takes none. Only a held session's means anything: a holder
	// that died while checkpointing left it behind.
	Checkpointing *CheckpointProgress `json:"checkpointing,omitempty"`
	// CheckpointMode is when its holder checkpoints the workspace (the
	// profile's mode, resolved: a hand-over without a checkpoint leaves
	// the files behind, CheckHandOff); "" in entries older than it.
	CheckpointMode CheckpointMode `json:"checkpoint_mode,omitempty"`
	Turns          int            `json:"turns"`
	Created        time.Time      `json:"created"`
	Updated        time.Time      `json:"updated"`
}

// CatalogCheckpoint is the latest checkpoint of a session's workspace as
// its catalog entry keeps it, for listings (size and age) without reading
// the journal.
type CatalogCheckpoint struct {
	Manifest string    `json:"manifest"`
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"`
	At       time.Time `json:"at"`
}

// CatalogConversation is an agent session's conversation as its catalog
// entry keeps it: which agent, and the agent's own id for it (what
// `claude --resume ID` or `codex resume ID` take).
type CatalogConversation struct {
	Agent string `json:"agent"`
	ID    string `json:"id"`
}

// CatalogWorktree is the git worktree of a session (event.WorktreeAdded)
// as its catalog entry keeps it: the repository's main work tree, the
// branch made for the session, and the worktree's directory (its root).
type CatalogWorktree struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Path   string `json:"path"`
}

const catalogVersion = 1

// MaxCatalogPrompt bounds the gate question a catalog entry keeps.
const MaxCatalogPrompt = 256

// cutUTF8 cuts s to at most n bytes, at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ReadCatalog reads the catalog entry of session id. A missing entry is
// *storage.NotFoundError; an unreadable one *storage.CorruptError.
func ReadCatalog(ctx context.Context, kv storage.KV, id string) (CatalogEntry, error) {
	e, err := kv.Get(ctx, storage.CatalogKey(id))
	if err != nil {
		return CatalogEntry{}, err
	}
	return DecodeCatalog(id, e.Value)
}

// DecodeCatalog decodes a catalog entry's value.
func DecodeCatalog(id string, b []byte) (CatalogEntry, error) {
	var c CatalogEntry
	if err := json.Unmarshal(b, &c); err != nil {
		return c, &storage.CorruptError{Name: storage.CatalogKey(id), Offset: -1, Reason: "catalog entry is not valid JSON", Err: err}
	}
	if c.V != catalogVersion {
		return c, &storage.CorruptError{Name: storage.CatalogKey(id), Offset: -1, Reason: fmt.Sprintf("catalog entry version %d, want %d", c.V, catalogVersion)}
	}
	if c.ID != id {
		return c, &storage.CorruptError{Name: storage.CatalogKey(id), Offset: -1, Reason: fmt.Sprintf("catalog entry names session %q", c.ID)}
	}
	return c, nil
}

// writeCatalog stores c unconditionally: only the lease holder writes a
// session's entry.
func writeCatalog(ctx context.Context, kv storage.KV, c CatalogEntry) error {
	c.V = catalogVersion
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, storage.CatalogKey(c.ID), b, storage.AnyRevision)
	return err
}

// IsNotFound reports whether err is a missing key or ledger.
func IsNotFound(err error) bool {
	var nf *storage.NotFoundError
	return errors.As(err, &nf)
}
