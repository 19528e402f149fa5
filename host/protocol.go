package host

import (
	"encoding/json"

	"looprig/rig"
	"looprig/rig/event"
)

// The host protocol: every message, its fields, its direction and the
// version that brought it. This file declares them; codec.go is the one
// encoder and decoder of them, which the host (conn, reader.go,
// subscriptions.go) and the Client both use.
//
// A connection carries newline-delimited JSON objects, each a message
// whose "type" comes first. A client line is at most MaxLine bytes, a host
// line at most MaxServerLine. The client speaks first (hello); every
// later request carries an id (from 1) that its reply echoes. Unknown
// fields are ignored both ways (a later client of the same protocol may
// add optional ones); an unknown message type from the host is ignored by
// the client, and an unknown request type is answered with an error of
// kind unknown_type. Errors, wherever they appear, are the one error
// object (AppendErrorJSON); a lease's holder, wherever it appears, is the
// one holder object (Holder).
//
// Versions: 1 the first; 2 OutputDelta and TurnOutput carry "offset" and
// "lost" ends only a subscription that gave its queue up to the output
// budget; 3 the Attention and AttentionSeen events, attention_seen and
// the status's "attention"; 4 the "progress" message and the status's
// "checkpointing"; 5 GateResolved's "by", the Refused event, Attention's
// "agent" (what events carry), respond_gate's "from", and the error kind
// from_turn; 6 the revert request, the reply's "reverted", the
// WorkspaceReverted event and the error kind no_checkpoint_before. Client
// and host speak
// only the same version: a hello of another is refused with
// protocol_mismatch.

// ProtocolVersion is the protocol this package speaks.
const ProtocolVersion = 6

// MaxLine bounds a request line (client to host), newline excluded.
const MaxLine = 1 << 20

// MaxServerLine bounds a line from the host: an event carries up to a
// journal record's payload (storage.MaxPayload, 1 MiB) plus its envelope.
const MaxServerLine = 2 << 20

// direction is which way a message goes.
type direction int

const (
	toHost   direction = iota // client → host: a request
	toClient                  // host → client
)

// message is a line of the protocol, either way.
type message interface {
	// msgType is the message's "type".
	msgType() string
}

// messageSpec is one row of the protocol's table.
type messageSpec struct {
	typ   string
	dir   direction
	since int            // the protocol version that brought the message
	new   func() message // the struct a line of the type decodes into
}

// protocol is the table of the protocol's messages: what decodes each
// line (codec.go) and what the golden test encodes one of.
var protocol = []messageSpec{
	{reqHello, toHost, 1, func() message { return new(helloRequest) }},
	{reqStatus, toHost, 1, func() message { return new(statusRequest) }},
	{reqSubscribe, toHost, 1, func() message { return new(subscribeRequest) }},
	{reqUnsubscribe, toHost, 1, func() message { return new(unsubscribeRequest) }},
	{reqSubmit, toHost, 1, func() message { return new(submitRequest) }},
	{reqInterrupt, toHost, 1, func() message { return new(interruptRequest) }},
	{reqRespondGate, toHost, 1, func() message { return new(respondGateRequest) }},
	{reqShutdown, toHost, 1, func() message { return new(shutdownRequest) }},
	{reqDetach, toHost, 1, func() message { return new(detachRequest) }},
	{reqInput, toHost, 1, func() message { return new(inputRequest) }},
	{reqResize, toHost, 1, func() message { return new(resizeRequest) }},
	{reqSeen, toHost, 3, func() message { return new(seenRequest) }},
	{reqRevert, toHost, 6, func() message { return new(revertRequest) }},

	{msgHello, toClient, 1, func() message { return new(helloMsg) }},
	{msgReply, toClient, 1, func() message { return new(replyMsg) }},
	{msgProgress, toClient, 4, func() message { return new(progressMsg) }},
	{msgEvent, toClient, 1, func() message { return new(eventMsg) }},
	{msgDropped, toClient, 1, func() message { return new(droppedMsg) }},
	{msgLost, toClient, 1, func() message { return new(lostMsg) }},
	{msgEnd, toClient, 1, func() message { return new(endMsg) }},
	{msgError, toClient, 1, func() message { return new(errorMsg) }},
	{msgBye, toClient, 1, func() message { return new(byeMsg) }},
}

// Client → host: request types.
const (
	reqHello       = "hello"
	reqStatus      = "status"
	reqSubscribe   = "subscribe"
	reqUnsubscribe = "unsubscribe"
	reqSubmit      = "submit"
	reqInterrupt   = "interrupt"
	reqRespondGate = "respond_gate"
	reqShutdown    = "shutdown"
	reqDetach      = "detach"
	reqInput       = "input"
	reqResize      = "resize"
	reqSeen        = "attention_seen"
	reqRevert      = "revert"
)

// Host → client: message types.
const (
	msgHello    = "hello"
	msgReply    = "reply"
	msgEvent    = "event"
	msgDropped  = "dropped"
	msgLost     = "lost"
	msgEnd      = "end"
	msgError    = "error"
	msgBye      = "bye"
	msgProgress = "progress"
)

// Reasons of "end" and "bye".
const (
	ReasonSessionStopped = "session_stopped"
	ReasonSessionFaulted = "session_faulted"
	ReasonServerStopping = "server_stopping"
	ReasonError          = "error"
)

// request is a client → host message: decoded by the host into the
// struct of its type once its "type" is read (decodeRequest). Fields its
// type does not have are ignored, as unknown fields are.
type request interface {
	message
	// check says why the request is refused (a bad_request's message);
	// "" when it is fine (requests.go).
	check() string
	// id is the request's id, which its reply echoes.
	id() uint64
	setID(id uint64)
}

// reqID is the id a request carries, which its reply echoes. Ids start at
// 1; every request needs one but hello.
type reqID struct {
	ID uint64 `json:"id,omitempty"`
}

// hello (client → host, protocol 1): the first line of a connection; the
// protocol and the looprig version the client speaks. Answer: the host's
// hello, or an error of kind protocol_mismatch (with the host's protocol
// and version, and a hint naming how to stop it) and the connection
// closed. Any other first line is an error of kind bad_request.
type helloRequest struct {
	reqID
	Protocol int    `json:"protocol,omitempty"`
	Version  string `json:"version,omitempty"`
}

// status (client → host, 1): a snapshot of the session. Answer: a reply
// with "status" (Status).
type statusRequest struct{ reqID }

// subscribe (client → host, 1): follow the session's events after
// after_seq, replacing the connection's open subscription. Answer: a
// reply with "sub", then that subscription's "event" lines: every
// durable event after after_seq once, in order, then live ones, until
// "lost" or "end".
type subscribeRequest struct {
	reqID
	AfterSeq uint64 `json:"after_seq,omitempty"`
}

// unsubscribe (client → host, 1): end subscription "sub" if it is still
// the open one (0 or absent: whichever is open). Answer: an ok reply.
type unsubscribeRequest struct {
	reqID
	Sub uint64 `json:"sub,omitempty"`
}

// submit (client → host, 1): start a turn running "input". The host waits
// for the checkpoint after the last turn first, sending "progress"
// (protocol 4). Answer: a reply with "turn_id" and "index" once
// TurnStarted is durable, or an error (busy, session_closed, ...).
type submitRequest struct {
	reqID
	Input *string `json:"input,omitempty"`
}

// interrupt (client → host, 1): stop the running turn. Answer: an ok
// reply once it has ended, or no_turn.
type interruptRequest struct{ reqID }

// respond_gate (client → host, 1): answer the open gate "gate_id" with
// "approve"; "from" (protocol 5) says who answers ("tui", "cli"), for the
// journal beside what the system says of the client's process. Answer:
// an ok reply, or no_gate, or from_turn (5) when the client is a process
// of the session's own turns.
type respondGateRequest struct {
	reqID
	GateID  string `json:"gate_id,omitempty"`
	Approve *bool  `json:"approve,omitempty"`
	From    string `json:"from,omitempty"`
}

// shutdown (client → host, 1): shut the session down; the host then
// ends. It waits for a checkpoint in progress and takes its own, sending
// "progress" every quarter of a second until the reply (protocol 4).
// Answer: an ok reply, then "bye".
type shutdownRequest struct{ reqID }

// detach (client → host, 1): the client is leaving. Answer: an ok reply;
// the host closes the connection.
type detachRequest struct{ reqID }

// input (client → host, 1): send "input", or an end of file ("eof"), to
// the running turn's terminal; "from" names the sender for the journal.
// Answer: a reply with "hidden" (echo was off: only the length is
// journaled) and "prompt_echo", or no_terminal, input_timeout, from_turn
// (5).
type inputRequest struct {
	reqID
	Input *string `json:"input,omitempty"`
	EOF   bool    `json:"eof,omitempty"`
	From  string  `json:"from,omitempty"`
}

// resize (client → host, 1): the terminal size ("cols", "rows") of the
// running turn and of the next ones. Answer: an ok reply.
type resizeRequest struct {
	reqID
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
}

// attention_seen (client → host, protocol 3): the user looked at the
// session; the attention pending, if recorded at or before "through" (0:
// whatever is pending), is dealt with (rig.Session.SeeAttention). "from"
// names the client, for the journal. Answer: an ok reply.
type seenRequest struct {
	reqID
	Through uint64 `json:"through,omitempty"`
	From    string `json:"from,omitempty"`
}

// revert (client → host, protocol 6): put the workspace back as it was
// before turn "turn" (absent: the last turn, or undo the last revert when
// one came after it; rig.Session.Revert). The host waits for the
// checkpoint after the last turn first, sending "progress", and so while
// it checkpoints the workspace before the revert. Answer: a reply with
// "reverted", or an error (busy, no_checkpoint_before, ...).
type revertRequest struct {
	reqID
	Turn *int `json:"turn,omitempty"`
}

// Reverted is what a revert did (rig.Reverted), in a reply.
type Reverted struct {
	TurnID    string   `json:"turn_id"`
	TurnIndex int      `json:"turn_index"`
	Undo      bool     `json:"undo,omitempty"`
	Manifest  string   `json:"manifest"`
	From      string   `json:"from"`
	Changed   int      `json:"changed"`
	Removed   int      `json:"removed"`
	Paths     []string `json:"paths"`
	Agent     bool     `json:"agent,omitempty"`
}

// Hello is what the host says about itself in its hello.
type Hello struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Session  string `json:"session"`
	PID      int    `json:"pid"`
	Epoch    uint64 `json:"epoch"`
}

// hello (host → client, 1): the answer to the client's hello, when both
// speak the same protocol.
type helloMsg struct {
	Hello
}

// reply (host → client, 1): the answer to request "id": "ok", or
// "error". The fields a request's answer has: status (status), turn_id
// and index (submit), sub (subscribe), hidden and prompt_echo (input),
// reverted (revert).
// A request the host refuses before reading its id (malformed) is
// answered with id 0.
type replyMsg struct {
	ID     uint64       `json:"id"`
	OK     bool         `json:"ok"`
	Error  *RemoteError `json:"error,omitempty"`
	Status *Status      `json:"status,omitempty"`
	TurnID string       `json:"turn_id,omitempty"`
	Index  *int         `json:"index,omitempty"`
	Sub    uint64       `json:"sub,omitempty"`
	Hidden bool         `json:"hidden,omitempty"` // input: echo was off
	// PromptEcho (input): the turn's last output looked like a password
	// prompt while its terminal still echoed (rig.Sent.PromptEcho).
	PromptEcho bool `json:"prompt_echo,omitempty"`
	// Reverted (revert, protocol 6): what the revert did.
	Reverted *Reverted `json:"reverted,omitempty"`
}

// Progress is how far a long operation is that a client waits for: the
// checkpoint a submit or a shutdown waits for (the socket's "progress"
// message), or the workspace a restoring host brings back from its
// checkpoint (a line on the ready descriptor before the report).
type Progress struct {
	Checkpoint  *rig.CheckpointProgress `json:"checkpoint,omitempty"`
	Materialize *MaterializeProgress    `json:"materialize,omitempty"`
}

// MaterializeProgress is how far a restore is in bringing a missing
// workspace back from its checkpoint: bytes written of the total.
type MaterializeProgress struct {
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
}

// progress (host → client, protocol 4): how far what request "id" waits
// for is ("checkpoint"; none while a shutdown's turn stops), at most
// every quarter of a second until its reply. A client that asked nothing
// of the kind ignores it.
type progressMsg struct {
	ID uint64 `json:"id"`
	Progress
}

// event (host → client, 1): an event of subscription "sub", in the shape
// of the lines of `looprig run --json` (event.AppendEnvelope). Which
// events there are, and what they carry, is rig/event's, and part of the
// protocol: a version adds events or fields (2, 3, 5).
type eventMsg struct {
	Sub uint64 `json:"sub"`
	// Event is the envelope as read: the client decodes it later, in
	// Stream.Next.
	Event json.RawMessage `json:"event"`
	// env is the envelope as sent: the codec appends it without
	// reflection when Event is nil.
	env event.Envelope
}

// dropped (host → client, 1): "count" output deltas of subscription
// "sub" were dropped (its queue was full), "total" so far; the
// transcript takes the bytes from the next TurnOutput.
type droppedMsg struct {
	Sub   uint64 `json:"sub"`
	Count uint64 `json:"count"`
	Total uint64 `json:"total"`
}

// lost (host → client, 1; since 2 only when the subscription gave its
// queue up to the output budget): subscription "sub" ended after
// "last_seq"; subscribe again after it to go on without a gap.
type lostMsg struct {
	Sub     uint64 `json:"sub"`
	LastSeq uint64 `json:"last_seq"`
	Message string `json:"message"`
}

// end (host → client, 1): subscription "sub" ended after "last_seq", for
// "reason" (session_stopped, session_faulted, server_stopping), with the
// session's fault as "error".
type endMsg struct {
	Sub     uint64       `json:"sub"`
	LastSeq uint64       `json:"last_seq"`
	Reason  string       `json:"reason"`
	Error   *RemoteError `json:"error,omitempty"`
}

// error (host → client, 1): an error the connection does not go on after
// (a refused peer, a protocol mismatch, an oversize line, too many
// clients, malformed lines in a row); the host closes the connection.
type errorMsg struct {
	Error *RemoteError `json:"error"`
}

// bye (host → client, 1): the host closes the connection for "reason",
// with the session's fault as "error"; the last line of a connection the
// host ends.
type byeMsg struct {
	Reason string       `json:"reason"`
	Error  *RemoteError `json:"error,omitempty"`
}

// unknownMsg is a host line of a type this client does not know, which
// it ignores.
type unknownMsg struct {
	Type string `json:"type"`
}

func (*helloRequest) msgType() string       { return reqHello }
func (*statusRequest) msgType() string      { return reqStatus }
func (*subscribeRequest) msgType() string   { return reqSubscribe }
func (*unsubscribeRequest) msgType() string { return reqUnsubscribe }
func (*submitRequest) msgType() string      { return reqSubmit }
func (*interruptRequest) msgType() string   { return reqInterrupt }
func (*respondGateRequest) msgType() string { return reqRespondGate }
func (*shutdownRequest) msgType() string    { return reqShutdown }
func (*detachRequest) msgType() string      { return reqDetach }
func (*inputRequest) msgType() string       { return reqInput }
func (*resizeRequest) msgType() string      { return reqResize }
func (*seenRequest) msgType() string        { return reqSeen }
func (*revertRequest) msgType() string      { return reqRevert }

func (*helloMsg) msgType() string     { return msgHello }
func (*replyMsg) msgType() string     { return msgReply }
func (*progressMsg) msgType() string  { return msgProgress }
func (*eventMsg) msgType() string     { return msgEvent }
func (*droppedMsg) msgType() string   { return msgDropped }
func (*lostMsg) msgType() string      { return msgLost }
func (*endMsg) msgType() string       { return msgEnd }
func (*errorMsg) msgType() string     { return msgError }
func (*byeMsg) msgType() string       { return msgBye }
func (m *unknownMsg) msgType() string { return m.Type }

// streamMsg is a host message about one subscription, Sub: an event,
// dropped, lost or end.
type streamMsg interface {
	message
	stream() uint64
}

func (m *eventMsg) stream() uint64   { return m.Sub }
func (m *droppedMsg) stream() uint64 { return m.Sub }
func (m *lostMsg) stream() uint64    { return m.Sub }
func (m *endMsg) stream() uint64     { return m.Sub }
