package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"looprig/rig"
	"looprig/rig/event"
)

// Hello is what the host says about itself in its hello.
type Hello struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Session  string `json:"session"`
	PID      int    `json:"pid"`
	Epoch    uint64 `json:"epoch"`
}

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
	Fault     *RemoteError     `json:"fault"`
	Closed    bool             `json:"closed"`
	PID       int              `json:"pid"`
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
		out.Gate = &GateStatus{ID: g.ID, TurnID: g.TurnID, Prompt: g.Prompt, Opened: g.Opened}
	}
	if a := st.Attention; a != nil {
		out.Attention = &AttentionStatus{TurnID: a.TurnID, Reason: a.Reason, Text: a.Text, Since: a.Since.UTC(), At: a.At.UTC(), Seq: a.Seq}
	}
	if st.Fault != nil {
		out.Fault = describe(st.Fault)
	}
	return out
}

// Host message types.
const (
	msgHello   = "hello"
	msgReply   = "reply"
	msgEvent   = "event"
	msgDropped = "dropped"
	msgLost    = "lost"
	msgEnd     = "end"
	msgError   = "error"
	msgBye     = "bye"
)

// Reasons of "end" and "bye".
const (
	ReasonSessionStopped = "session_stopped"
	ReasonSessionFaulted = "session_faulted"
	ReasonServerStopping = "server_stopping"
	ReasonError          = "error"
)

type helloMsg struct {
	Type string `json:"type"`
	Hello
}

type replyMsg struct {
	Type   string       `json:"type"`
	ID     uint64       `json:"id"`
	OK     bool         `json:"ok"`
	Error  *RemoteError `json:"error,omitempty"`
	Status *Status      `json:"status,omitempty"`
	TurnID string       `json:"turn_id,omitempty"`
	Index  *int         `json:"index,omitempty"`
	Sub    uint64       `json:"sub,omitempty"`
	Hidden bool         `json:"hidden,omitempty"` // input: echo was off
}

type droppedMsg struct {
	Type  string `json:"type"`
	Sub   uint64 `json:"sub"`
	Count uint64 `json:"count"`
	Total uint64 `json:"total"`
}

type lostMsg struct {
	Type    string `json:"type"`
	Sub     uint64 `json:"sub"`
	LastSeq uint64 `json:"last_seq"`
	Message string `json:"message"`
}

type endMsg struct {
	Type    string       `json:"type"`
	Sub     uint64       `json:"sub"`
	LastSeq uint64       `json:"last_seq"`
	Reason  string       `json:"reason"`
	Error   *RemoteError `json:"error,omitempty"`
}

type errorMsg struct {
	Type  string       `json:"type"`
	Error *RemoteError `json:"error"`
}

type byeMsg struct {
	Type   string       `json:"type"`
	Reason string       `json:"reason"`
	Error  *RemoteError `json:"error,omitempty"`
}

// eventMsg is an event line (eventLine writes it) as the client reads it:
// the envelope is decoded later, by Stream.Next.
type eventMsg struct {
	Type  string          `json:"type"`
	Sub   uint64          `json:"sub"`
	Event json.RawMessage `json:"event"`
}

// unknownMsg is a line of a type this client does not know, which it
// ignores.
type unknownMsg struct {
	Type string `json:"type"`
}

// streamMsg is a message about one subscription, Sub: an event, dropped,
// lost or end.
type streamMsg interface {
	stream() uint64
}

func (m eventMsg) stream() uint64   { return m.Sub }
func (m droppedMsg) stream() uint64 { return m.Sub }
func (m lostMsg) stream() uint64    { return m.Sub }
func (m endMsg) stream() uint64     { return m.Sub }

// decodeMsg decodes one host line into the type of its "type": helloMsg,
// replyMsg, eventMsg, droppedMsg, lostMsg, endMsg, errorMsg, byeMsg, or
// unknownMsg.
func decodeMsg(b []byte) (any, error) {
	typ, err := msgType(b)
	if err != nil {
		return nil, err
	}
	switch typ {
	case msgHello:
		return decodeAs[helloMsg](b)
	case msgReply:
		return decodeAs[replyMsg](b)
	case msgEvent:
		return decodeAs[eventMsg](b)
	case msgDropped:
		return decodeAs[droppedMsg](b)
	case msgLost:
		return decodeAs[lostMsg](b)
	case msgEnd:
		return decodeAs[endMsg](b)
	case msgError:
		return decodeAs[errorMsg](b)
	case msgBye:
		return decodeAs[byeMsg](b)
	}
	return decodeAs[unknownMsg](b)
}

func decodeAs[M any](b []byte) (any, error) {
	var m M
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// msgTypes are the host message types, which msgType reads off a line's
// start.
var msgTypes = []string{msgEvent, msgReply, msgDropped, msgLost, msgEnd, msgHello, msgError, msgBye}

// msgType returns the "type" of a host line: read off its start when the
// line begins with it, as the host writes every line (an event line is
// read once, by its decode, not twice), else decoded.
func msgType(b []byte) (string, error) {
	const lead = `{"type":"`
	if bytes.HasPrefix(b, []byte(lead)) {
		rest := b[len(lead):]
		for _, t := range msgTypes {
			if len(rest) > len(t) && string(rest[:len(t)]) == t && rest[len(t)] == '"' {
				return t, nil
			}
		}
	}
	var m unknownMsg
	err := json.Unmarshal(b, &m)
	return m.Type, err
}

// line encodes v as one line.
func line(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only this package's message types are encoded; none can fail.
		panic(fmt.Sprintf("host: encode %T: %v", v, err))
	}
	return b.Bytes()
}

// eventLine is {"type":"event","sub":N,"event":…}\n.
func eventLine(sub uint64, env event.Envelope) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"type":"event","sub":`...)
	b = strconv.AppendUint(b, sub, 10)
	b = append(b, `,"event":`...)
	b, err := event.AppendEnvelope(b, env)
	if err != nil {
		return nil, err
	}
	if len(b)+2 > MaxServerLine {
		return nil, fmt.Errorf("event %s seq %d is %d bytes encoded, more than %d", env.Event.Type(), env.Seq, len(b)+2, MaxServerLine)
	}
	return append(b, '}', '\n'), nil
}
