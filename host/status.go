package host

import (
	"time"

	"looprig/rig"
)

// Status is a snapshot of the hosted session: rig.Status over the wire.
type Status struct {
	Session   string      `json:"session"`
	Title     string      `json:"title"`
	Profile   string      `json:"profile"`
	Engine    string      `json:"engine"`
	Epoch     uint64      `json:"epoch"`
	LoopID    string      `json:"loop_id"`
	Placement string      `json:"placement"`
	Workspace string      `json:"workspace"`
	Root      string      `json:"root"`
	TTY       bool        `json:"tty"` // the profile runs turns on a terminal, not pipes
	Tip       uint64      `json:"tip"`
	LastEvent uint64      `json:"last_event"` // the sequence of the last event (a replay of the events ends there)
	Turns     int         `json:"turns"`
	Turn      *TurnStatus `json:"turn"`
	// Terminal: the running turn has a terminal (input can be sent);
	// EchoOff: its echo is off (a password prompt: mask what is typed).
	Terminal bool        `json:"terminal"`
	EchoOff  bool        `json:"echo_off"`
	Gate     *GateStatus `json:"gate"`
	// Attention is what the running turn asked of the user since the user
	// last looked; null when nothing is pending.
	Attention *AttentionStatus `json:"attention"`
	// Checkpointing is how far the checkpoint the session is taking is
	// (after a turn's end, before the next turn can start; at a stop or
	// a handover); null when it takes none.
	Checkpointing *rig.CheckpointProgress `json:"checkpointing"`
	Fault         *RemoteError            `json:"fault"`
	Closed        bool                    `json:"closed"`
	PID           int                     `json:"pid"`
}

// TurnStatus describes the running turn.
type TurnStatus struct {
	ID      string    `json:"id"`
	Index   int       `json:"index"`
	Input   string    `json:"input"`
	Started time.Time `json:"started"`
}

// GateStatus describes the open gate.
type GateStatus struct {
	ID     string    `json:"id"`
	TurnID string    `json:"turn_id"`
	Prompt string    `json:"prompt"`
	Opened time.Time `json:"opened,omitzero"`
}

// AttentionStatus is the attention pending (rig.Attention).
type AttentionStatus struct {
	TurnID string    `json:"turn_id"`
	Reason string    `json:"reason"`
	Text   string    `json:"text"`
	Since  time.Time `json:"since"`
	At     time.Time `json:"at"`
	Seq    uint64    `json:"seq"`
}

func statusOf(st rig.Status, pid int) Status {
	out := Status{
		Session: st.ID.String(), Title: st.Title, Profile: st.Profile, Engine: st.Engine, Epoch: st.Epoch,
		LoopID: st.LoopID, Placement: string(st.Placement), Workspace: st.Workspace, Root: st.Root,
		TTY: st.TTY, Tip: st.Tip, LastEvent: st.LastEvent, Turns: st.Turns, Closed: st.Closed, PID: pid,
	}
	if t := st.Turn; t != nil {
		out.Turn = &TurnStatus{ID: t.ID, Index: t.Index, Input: t.Input, Started: t.Started.UTC()}
	}
	if g := st.Gate; g != nil {
		out.Gate = &GateStatus{ID: g.ID, TurnID: g.TurnID, Prompt: g.Prompt, Opened: g.Opened.UTC()}
	}
	if a := st.Attention; a != nil {
		out.Attention = &AttentionStatus{TurnID: a.TurnID, Reason: a.Reason, Text: a.Text, Since: a.Since.UTC(), At: a.At.UTC(), Seq: a.Seq}
	}
	if p := st.Checkpointing; p != nil {
		cp := *p
		cp.Since = cp.Since.UTC()
		out.Checkpointing = &cp
	}
	if st.Fault != nil {
		out.Fault = describe(st.Fault)
	}
	return out
}
