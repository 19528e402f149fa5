package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
)

// obj builds a JSON object whose fields are known only at run time (a
// journal record's), with its keys in insertion order; a key set twice
// keeps its first value. The shapes with fixed fields are the struct
// types below; event lines are the event codec's
// (event.MarshalEnvelope); an error is host.AppendErrorJSON's object.
type obj struct {
	b    bytes.Buffer
	seen []string // keys set or skipped: a handful, so a slice beats a map
}

func newObj() *obj {
	o := &obj{}
	o.b.Grow(512)
	o.b.WriteByte('{')
	return o
}

// marshal encodes v as encoding/json does, but leaves <, > and & as they
// are.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only values this package builds are marshalled; none can fail.
		panic(fmt.Sprintf("cli: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// set adds k with v marshalled (a string by event.AppendString).
func (o *obj) set(k string, v any) *obj {
	if s, ok := v.(string); ok {
		return o.raw(k, event.AppendString(nil, s))
	}
	return o.raw(k, marshal(v))
}

// raw adds k with a JSON value.
func (o *obj) raw(k string, v []byte) *obj {
	if !o.claim(k) {
		return o
	}
	if o.b.Len() > 1 {
		o.b.WriteByte(',')
	}
	o.b.Write(event.AppendString(o.b.AvailableBuffer(), k))
	o.b.WriteByte(':')
	o.b.Write(v)
	return o
}

// claim reports whether k is not set (nor skipped) yet, and makes it so.
func (o *obj) claim(k string) bool {
	if slices.Contains(o.seen, k) {
		return false
	}
	o.seen = append(o.seen, k)
	return true
}

// payload adds the members of ev's payload, in order, except keys
// already set; o has a member already.
func (o *obj) payload(ev event.Event) error {
	b, err := event.AppendPayload(o.b.AvailableBuffer(), ev, o.claim)
	if err != nil {
		return err
	}
	o.b.Write(b)
	return nil
}

// skip makes later sets of keys no-ops.
func (o *obj) skip(keys ...string) *obj {
	o.seen = append(o.seen, keys...)
	return o
}

// merge adds the fields of the JSON object data, in their order, except
// keys already set.
func (o *obj) merge(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("cli: merge: not a JSON object: %s", data)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, ok := t.(string)
		if !ok {
			return fmt.Errorf("cli: merge: key %v", t)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.raw(k, v)
	}
	return nil
}

func (o *obj) bytes() []byte {
	out := append(bytes.Clone(o.b.Bytes()), '}')
	return out
}

// rawJSON is a JSON value already encoded.
type rawJSON []byte

// writeJSON prints v, one of the shapes below, an *obj or a rawJSON, as
// one line.
func (e *env) writeJSON(v any) error {
	_, err := e.stdout.Write(append(jsonBytes(v), '\n'))
	return err
}

// jsonBytes is v as writeJSON prints it, without the newline: every C1
// and bidi control escaped (event.EscapeTerminalControls), whichever
// encoder wrote the line (event.AppendString escapes them itself;
// encoding/json and the event codec, whose payloads lines carry, do not).
func jsonBytes(v any) []byte {
	var b []byte
	switch v := v.(type) {
	case *obj:
		b = v.bytes()
	case rawJSON:
		b = v
	default:
		b = marshal(v)
	}
	return event.EscapeTerminalControls(b)
}

// jsonTime is a time as --json prints it: RFC 3339 in UTC, with the
// fraction of a second it has, or null for the zero time.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	b := time.Time(t).UTC().AppendFormat([]byte{'"'}, time.RFC3339Nano)
	return append(b, '"'), nil
}

// The shapes of --json output that have fixed fields, which README
// ("JSON") documents. They are a public contract: fields may be added,
// never renamed, and they print in the order declared. Event and journal
// lines, whose fields are their payload's, are built with obj; errors,
// whose typed fields are their explanation's, by host.AppendErrorJSON.

// newJSON is what new prints.
type newJSON struct {
	ID        string `json:"id"`
	Epoch     uint64 `json:"epoch"`
	ShortID   string `json:"short_id"`
	Title     string `json:"title"`
	Profile   string `json:"profile"`
	Shell     string `json:"shell"` // the shell its turns run in
	Workspace string `json:"workspace"`
	Branch    string `json:"branch,omitempty"`   // with --worktree: the worktree's branch
	PID       int    `json:"pid,omitempty"`      // with --detach: the host's
	Detached  bool   `json:"detached,omitempty"` // with --detach: live in a background host
}

// sessionJSON is one session in the array ls prints.
type sessionJSON struct {
	ID         string           `json:"id"`
	ShortID    string           `json:"short_id"`
	State      rig.SessionState `json:"state"`
	Title      string           `json:"title"`
	Profile    string           `json:"profile"`
	Epoch      uint64           `json:"epoch"`
	Holder     *host.Holder     `json:"holder"`     // null when nobody holds it
	OpenTurn   *string          `json:"open_turn"`  // null when no turn is open
	TurnIndex  *int             `json:"turn_index"` // the open turn's, else null
	OpenGate   *string          `json:"open_gate"`  // null when no gate is open
	Updated    jsonTime         `json:"updated"`
	Reason     string           `json:"reason"` // why it is broken
	Engine     string           `json:"engine"`
	Shell      string           `json:"shell"` // the shell its turns run in
	Turns      int              `json:"turns"`
	LastSeq    uint64           `json:"last_seq"`
	Created    jsonTime         `json:"created"`
	TurnSince  *jsonTime        `json:"turn_since"` // when the open turn started; null when none (or not recorded)
	GateSince  *jsonTime        `json:"gate_since"` // when the open gate opened; null when none (or not recorded)
	LastEnd    *turnEndJSON     `json:"last_end"`   // how the last turn that ended ended; null before any did
	Attention  *attentionJSON   `json:"attention"`  // what the running turn asked of the user since anyone looked; null for nothing
	Checkpoint *checkpointJSON  `json:"checkpoint"` // the latest checkpoint of the workspace; null before any
	// Conversation is an agent session's conversation; null for other
	// engines (and for codex before its first turn named it).
	Conversation *conversationJSON `json:"conversation"`
	// Checkpointing is how far the checkpoint its holder is taking is (as
	// the holder last wrote it, about every second); null when it takes
	// none.
	Checkpointing *checkpointingJSON `json:"checkpointing"`
	// Dir is the directory it works in (its root, or its private
	// directory in the store); "" when its entry predates placements.
	Dir string `json:"dir"`
	// Branch is its git worktree's branch (new --worktree); "" for a
	// session in any other directory.
	Branch string `json:"branch"`
	// ForkedFrom is where a session `fork` made came from; null for every
	// other session.
	ForkedFrom *forkedFromJSON `json:"forked_from"`
}

// forkedFromJSON is where a fork came from (rig.SessionInfo.ForkedFrom).
type forkedFromJSON struct {
	Session      string `json:"session"`
	TurnIndex    int    `json:"turn_index"`
	TurnID       string `json:"turn_id"`
	Checkpoint   string `json:"checkpoint"`
	Conversation string `json:"conversation,omitempty"`
}

// newForkedFromJSON is f's JSON, nil for nil.
func newForkedFromJSON(f *event.ForkedFrom) *forkedFromJSON {
	if f == nil {
		return nil
	}
	return &forkedFromJSON{Session: f.Session, TurnIndex: f.TurnIndex, TurnID: f.TurnID, Checkpoint: f.Checkpoint, Conversation: f.Conversation}
}

// checkpointingJSON is a checkpoint in progress (rig.CheckpointProgress).
type checkpointingJSON struct {
	Trigger   string   `json:"trigger"` // turn | stop | handoff
	TurnID    string   `json:"turn_id"` // the turn whose end it follows, "" for none
	Since     jsonTime `json:"since"`
	Files     int      `json:"files"` // 0 until the workspace is walked
	FilesDone int      `json:"files_done"`
	Bytes     int64    `json:"bytes"`
	BytesDone int64    `json:"bytes_done"`
}

// conversationJSON is an agent session's conversation
// (rig.CatalogConversation).
type conversationJSON struct {
	Agent string `json:"agent"`
	ID    string `json:"id"`
}

// checkpointJSON is the latest checkpoint of a session's workspace
// (rig.CatalogCheckpoint).
type checkpointJSON struct {
	Manifest string   `json:"manifest"` // the manifest's SHA-256
	Files    int      `json:"files"`
	Bytes    int64    `json:"bytes"`
	At       jsonTime `json:"at"`
}

// attentionJSON is what a session's turn asked of the user (rig.Attention).
type attentionJSON struct {
	Reason string   `json:"reason"` // bell | osc9 | osc777 | agent
	Text   string   `json:"text"`   // the notification's, "" for a bell; the agent's words for agent
	Since  jsonTime `json:"since"`  // its first call not seen
	TurnID string   `json:"turn_id"`
	Agent  string   `json:"agent,omitempty"` // reason agent: the agent ("claude") whose words text is
}

// turnEndJSON is how a session's last turn ended (rig.TurnEnd).
type turnEndJSON struct {
	TurnID   string          `json:"turn_id"`
	Index    int             `json:"index"`
	Outcome  rig.TurnOutcome `json:"outcome"`   // done | failed | interrupted
	ExitCode *int            `json:"exit_code"` // done only
	Reason   string          `json:"reason"`    // interrupted: why; failed: the error's first line
	Started  jsonTime        `json:"started"`
	Ended    jsonTime        `json:"ended"`
}

// newSessionJSON is session in as ls --json lists it; workspaces is the
// store's directory of private workspaces.
func newSessionJSON(in rig.SessionInfo, workspaces string) sessionJSON {
	s := sessionJSON{ID: in.ID, ShortID: in.ShortID(), State: in.State, Title: in.Title, Profile: in.Profile,
		Epoch: in.Epoch, Updated: jsonTime(in.Updated), Reason: in.Reason, Engine: in.Engine, Shell: in.Shell, Turns: in.Turns,
		LastSeq: in.LastSeq, Created: jsonTime(in.Created), Dir: sessionDir(in, workspaces)}
	if in.Worktree != nil {
		s.Branch = in.Worktree.Branch
	}
	if h := in.Holder; h != nil {
		hj := host.HolderOf(*h)
		s.Holder = &hj
	}
	if in.OpenTurn != "" {
		s.OpenTurn, s.TurnIndex = &in.OpenTurn, &in.Turn
	}
	if in.OpenGate != "" {
		s.OpenGate = &in.OpenGate
	}
	if in.OpenTurn != "" && !in.TurnSince.IsZero() {
		t := jsonTime(in.TurnSince)
		s.TurnSince = &t
	}
	if in.OpenGate != "" && !in.GateSince.IsZero() {
		t := jsonTime(in.GateSince)
		s.GateSince = &t
	}
	if e := in.LastEnd; e != nil {
		j := &turnEndJSON{TurnID: e.TurnID, Index: e.Index, Outcome: e.Outcome, Reason: e.Reason,
			Started: jsonTime(e.Started), Ended: jsonTime(e.Ended)}
		if e.Outcome == rig.TurnOutcomeDone {
			code := e.ExitCode
			j.ExitCode = &code
		}
		s.LastEnd = j
	}
	if a := in.Attention; a != nil {
		s.Attention = &attentionJSON{Reason: a.Reason, Text: a.Text, Since: jsonTime(a.Since), TurnID: a.TurnID, Agent: a.Agent}
	}
	if cp := in.Checkpoint; cp != nil {
		s.Checkpoint = &checkpointJSON{Manifest: cp.Manifest, Files: cp.Files, Bytes: cp.Bytes, At: jsonTime(cp.At)}
	}
	if cv := in.Conversation; cv != nil {
		s.Conversation = &conversationJSON{Agent: cv.Agent, ID: cv.ID}
	}
	s.ForkedFrom = newForkedFromJSON(in.ForkedFrom)
	if p := in.Checkpointing; p != nil {
		s.Checkpointing = &checkpointingJSON{Trigger: p.Trigger, TurnID: p.TurnID, Since: jsonTime(p.Since), Files: p.Files,
			FilesDone: p.FilesDone, Bytes: p.Bytes, BytesDone: p.BytesDone}
	}
	return s
}

// restoreJSON is what restore prints (first, with --hold).
type restoreJSON struct {
	ID          string              `json:"id"`
	Epoch       uint64              `json:"epoch"`
	Interrupted []string            `json:"interrupted"`  // turn ids, never null
	GatesClosed []string            `json:"gates_closed"` // gate ids, never null
	ShortID     string              `json:"short_id"`
	Records     uint64              `json:"records"`
	Adopted     []changeJSON        `json:"adopted"`    // the drift adopted, never null
	AdoptedBy   string              `json:"adopted_by"` // who accepted it, "" for none
	Held        bool                `json:"held"`
	PID         int                 `json:"pid,omitempty"`      // with --hold: this process's; with --detach: the host's
	Detached    bool                `json:"detached,omitempty"` // with --detach: live in a background host
	Workspace   *workspaceFoundJSON `json:"workspace"`          // against the last checkpoint; null without one
}

// workspaceFoundJSON is how a restore found the workspace against its
// last checkpoint (rig.WorkspaceFound).
type workspaceFoundJSON struct {
	Materialized bool     `json:"materialized"` // missing, brought back from the checkpoint
	Files        int      `json:"files"`
	Bytes        int64    `json:"bytes"`
	Matches      bool     `json:"matches"`    // the directory is the last checkpoint
	Updated      bool     `json:"updated"`    // it was an older checkpoint (from), brought up to date
	From         string   `json:"from"`       // that checkpoint ("checkpoint of turn 7 on box"), "" when none
	Changed      int      `json:"changed"`    // entries written to bring it up to date
	Kept         bool     `json:"kept"`       // it holds this machine's changes after the last checkpoint, kept
	Adopted      bool     `json:"adopted"`    // it had diverged and was kept (--keep-workspace)
	MovedTo      string   `json:"moved_to"`   // it had diverged and was moved there (--use-checkpoint)
	Differs      int      `json:"differs"`    // entries that differ from the last checkpoint, kept as they are
	Paths        []string `json:"paths"`      // the first few of them
	Error        string   `json:"error"`      // why it could not be compared
	New          bool     `json:"new"`        // accepted drift moved it to a new, empty directory
	MovedFrom    string   `json:"moved_from"` // the root it worked in before ("" when none)
}

// newWorkspaceFoundJSON is w as restore, run and take --json print it; nil
// for nil.
func newWorkspaceFoundJSON(w *rig.WorkspaceFound) *workspaceFoundJSON {
	if w == nil {
		return nil
	}
	out := &workspaceFoundJSON{Materialized: w.Materialized, Files: w.Files, Bytes: w.Bytes, Matches: w.Matches,
		Updated: w.Updated, Changed: w.Changed, Kept: w.Kept, Adopted: w.Adopted, MovedTo: w.MovedTo,
		Differs: w.Differs, Paths: nonNil(w.Paths), Error: w.Err, New: w.New, MovedFrom: w.MovedFrom}
	if w.From != nil {
		out.From = w.From.String()
	}
	return out
}

// changeJSON is one change of configuration drift (restore's adopted, a
// RestoreRejectedError's changes).
type changeJSON struct {
	Field     string `json:"field"`
	Persisted string `json:"persisted"`
	Live      string `json:"live"`
	Level     string `json:"level"`
}

// changes converts drift to its JSON, [] rather than null when there is
// none.
func changes(cs []event.Change) []changeJSON {
	out := make([]changeJSON, len(cs))
	for i, c := range cs {
		out[i] = changeJSON{Field: c.Field, Persisted: c.Persisted, Live: c.Live, Level: c.Level}
	}
	return out
}

// breakJSON is what lease break prints. A lease nobody held is not
// broken: epoch is its latest grant's, previous_holder null, and
// previous_epoch and fenced are left out — unless a turn of its last
// holder still ran on this machine: then the lease was taken (epoch is the
// new one, fenced is set) to stop it. turn is the old holder's turn the
// break found running, interrupted the turns it journaled as interrupted
// (lease_lost); both are left out when there are none.
type breakJSON struct {
	ID             string          `json:"id"`
	Broken         bool            `json:"broken"`
	Epoch          uint64          `json:"epoch"`
	PreviousEpoch  *uint64         `json:"previous_epoch,omitempty"`
	PreviousHolder *host.Holder    `json:"previous_holder"`
	Fenced         *bool           `json:"fenced,omitempty"`
	Turn           *brokenTurnJSON `json:"turn,omitempty"`
	Interrupted    []string        `json:"interrupted,omitempty"`
}

// brokenTurnJSON is the old holder's turn a lease break found running
// (rig.BrokenTurn): here says it ran on this machine, signalled and killed
// that the break sent SIGTERM and SIGKILL, gone that none of its processes
// was left.
type brokenTurnJSON struct {
	ID        string `json:"id"`
	Index     int    `json:"index"`
	Epoch     uint64 `json:"epoch"`
	PGID      int    `json:"pgid"`
	Host      string `json:"host"`
	Here      bool   `json:"here"`
	Signalled bool   `json:"signalled"`
	Killed    bool   `json:"killed"`
	Gone      bool   `json:"gone"`
}

// rmJSON is what rm prints for each session it deleted.
type rmJSON struct {
	ID        string  `json:"id"`
	Deleted   bool    `json:"deleted"`
	Epoch     uint64  `json:"epoch"`
	Journal   bool    `json:"journal"`   // whether there was one to remove
	Catalog   bool    `json:"catalog"`   // whether there was one to remove
	Workspace *string `json:"workspace"` // the directory removed, null for none
	// Of the blobs the session's checkpoints and transcript referenced:
	// deleted, kept because another session references them, kept
	// because they were put again since (gc deletes them later).
	BlobsDeleted      int   `json:"blobs_deleted"`
	BlobsDeletedBytes int64 `json:"blobs_deleted_bytes"`
	BlobsShared       int   `json:"blobs_shared"`
	BlobsRenewed      int   `json:"blobs_renewed"`
	// Worktree is the session's git worktree (new --worktree): removed
	// with its branch, or kept and why; null for a session without one.
	Worktree *rmWorktreeJSON `json:"worktree"`
}

// rmWorktreeJSON is what rm did with a session's git worktree.
type rmWorktreeJSON struct {
	Path    string `json:"path"`
	Branch  string `json:"branch"`
	Repo    string `json:"repo"`
	Removed bool   `json:"removed"`
	Kept    string `json:"kept,omitempty"` // why it was kept, in a sentence
}

// demoJSON is what demo prints.
type demoJSON struct {
	ID        string `json:"id"`
	ShortID   string `json:"short_id"`
	Title     string `json:"title"`
	HelperPID int    `json:"helper_pid"`
}

// versionJSON is what version prints.
type versionJSON struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Revision string `json:"revision"` // "" when the build does not say
}

// envelopeJSON is one line of `run --json`, `attach --json` and `restore
// --hold --json`: event.MarshalEnvelope's
// {"seq","type","session","loop_id","at",...payload}.
func envelopeJSON(env event.Envelope) (rawJSON, error) {
	b, err := event.MarshalEnvelope(env)
	return rawJSON(b), err
}

// recordJSON is one line of `log --json`:
// {"seq","kind","type","epoch"(fences),"at","loop_id"(loop events),...payload}.
func recordJSON(rec rig.Record) (*obj, error) {
	o := newObj().set("seq", rec.Seq).set("kind", string(rec.Kind))
	switch rec.Kind {
	case rig.RecordFence:
		o.set("type", "fence").set("epoch", rec.Epoch).set("at", jsonTime(rec.At))
	case rig.RecordEvent:
		o.set("type", string(rec.Event.Event.Type())).set("at", jsonTime(rec.At))
		if rec.Event.LoopID != "" {
			o.set("loop_id", rec.Event.LoopID)
		}
		if err := o.payload(rec.Event.Event); err != nil {
			return nil, err
		}
	case rig.RecordCommand:
		o.set("type", rec.Command.Name).set("at", jsonTime(rec.At)).skip("name")
		if err := o.merge(marshal(rec.Command)); err != nil {
			return nil, err
		}
	}
	return o, nil
}
