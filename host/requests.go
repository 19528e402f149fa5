package host

import "looprig/rig/event"

// Request types.
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
)

// request is one client line, decoded into the struct of its type once
// its "type" is read (decodeRequest), and written, type first, by
// requestLine. Fields its type does not have are ignored, as unknown
// fields are (a later client of the same protocol may add optional ones).
type request interface {
	// kind is the request's "type".
	kind() string
	// check says why the request is refused (a bad_request's message);
	// "" when it is fine.
	check() string
	// id is the request's id, which its reply echoes.
	id() uint64
	setID(id uint64)
}

// requestTypes makes the struct each request type decodes into.
var requestTypes = map[string]func() request{
	reqHello:       func() request { return new(helloRequest) },
	reqStatus:      func() request { return new(statusRequest) },
	reqSubscribe:   func() request { return new(subscribeRequest) },
	reqUnsubscribe: func() request { return new(unsubscribeRequest) },
	reqSubmit:      func() request { return new(submitRequest) },
	reqInterrupt:   func() request { return new(interruptRequest) },
	reqRespondGate: func() request { return new(respondGateRequest) },
	reqShutdown:    func() request { return new(shutdownRequest) },
	reqDetach:      func() request { return new(detachRequest) },
	reqInput:       func() request { return new(inputRequest) },
	reqResize:      func() request { return new(resizeRequest) },
	reqSeen:        func() request { return new(seenRequest) },
}

// reqID is the id a request carries, which its reply echoes. Ids start at
// 1; every request needs one but hello.
type reqID struct {
	ID uint64 `json:"id,omitempty"`
}

func (r *reqID) id() uint64      { return r.ID }
func (r *reqID) setID(id uint64) { r.ID = id }

// needID is the check of a request of type kind that has nothing to
// check but its id.
func (r *reqID) needID(kind string) string {
	if r.ID == 0 {
		return kind + " without an id (ids start at 1)"
	}
	return ""
}

// helloRequest opens a connection: the protocol and the looprig version
// the client speaks.
type helloRequest struct {
	reqID
	Protocol int    `json:"protocol,omitempty"`
	Version  string `json:"version,omitempty"`
}

func (*helloRequest) kind() string { return reqHello }

func (r *helloRequest) check() string {
	if r.Protocol <= 0 {
		return "hello without a protocol version"
	}
	return ""
}

// statusRequest asks for a snapshot of the session.
type statusRequest struct{ reqID }

func (*statusRequest) kind() string    { return reqStatus }
func (r *statusRequest) check() string { return r.needID(reqStatus) }

// subscribeRequest opens the connection's subscription, replacing the
// open one: the session's events after AfterSeq.
type subscribeRequest struct {
	reqID
	AfterSeq uint64 `json:"after_seq,omitempty"`
}

func (*subscribeRequest) kind() string    { return reqSubscribe }
func (r *subscribeRequest) check() string { return r.needID(reqSubscribe) }

// unsubscribeRequest ends subscription Sub if it is still the open one
// (0: whichever is open).
type unsubscribeRequest struct {
	reqID
	Sub uint64 `json:"sub,omitempty"`
}

func (*unsubscribeRequest) kind() string    { return reqUnsubscribe }
func (r *unsubscribeRequest) check() string { return r.needID(reqUnsubscribe) }

// submitRequest starts a turn running Input.
type submitRequest struct {
	reqID
	Input *string `json:"input,omitempty"`
}

func (*submitRequest) kind() string { return reqSubmit }

func (r *submitRequest) check() string {
	if r.Input == nil {
		return "submit without an input"
	}
	return r.needID(reqSubmit)
}

// interruptRequest stops the running turn.
type interruptRequest struct{ reqID }

func (*interruptRequest) kind() string    { return reqInterrupt }
func (r *interruptRequest) check() string { return r.needID(reqInterrupt) }

// respondGateRequest answers the open gate GateID.
type respondGateRequest struct {
	reqID
	GateID  string `json:"gate_id,omitempty"`
	Approve *bool  `json:"approve,omitempty"`
}

func (*respondGateRequest) kind() string { return reqRespondGate }

func (r *respondGateRequest) check() string {
	if r.GateID == "" {
		return "respond_gate without a gate_id"
	}
	if r.Approve == nil {
		return "respond_gate without approve (true or false)"
	}
	return r.needID(reqRespondGate)
}

// shutdownRequest shuts the session down.
type shutdownRequest struct{ reqID }

func (*shutdownRequest) kind() string    { return reqShutdown }
func (r *shutdownRequest) check() string { return r.needID(reqShutdown) }

// detachRequest says the client is leaving.
type detachRequest struct{ reqID }

func (*detachRequest) kind() string    { return reqDetach }
func (r *detachRequest) check() string { return r.needID(reqDetach) }

// inputRequest sends Input, or an end of file (EOF), to the running
// turn's terminal; From says who sends it, for the journal.
type inputRequest struct {
	reqID
	Input *string `json:"input,omitempty"`
	EOF   bool    `json:"eof,omitempty"`
	From  string  `json:"from,omitempty"`
}

func (*inputRequest) kind() string { return reqInput }

func (r *inputRequest) check() string {
	if (r.Input == nil) == !r.EOF {
		return "input needs either an input or eof (not both)"
	}
	return r.needID(reqInput)
}

// resizeRequest sets the terminal size of the running turn and of the
// next ones.
type resizeRequest struct {
	reqID
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
}

func (*resizeRequest) kind() string { return reqResize }

func (r *resizeRequest) check() string {
	if r.Cols < 1 || r.Rows < 1 || r.Cols > 65535 || r.Rows > 65535 {
		return "resize needs cols and rows, 1..65535"
	}
	return r.needID(reqResize)
}

// seenRequest says the user looked at the session (the client shows it):
// the attention pending, if recorded at or before Through (0: whatever is
// pending), is dealt with (rig.Session.SeeAttention). From names the
// client, for the journal.
type seenRequest struct {
	reqID
	Through uint64 `json:"through,omitempty"`
	From    string `json:"from,omitempty"`
}

func (*seenRequest) kind() string    { return reqSeen }
func (r *seenRequest) check() string { return r.needID(reqSeen) }

// requestLine encodes r as the line a client sends: {"type":…, then r's
// fields}, newline included.
func requestLine(r request) []byte {
	fields := line(r) // {…}\n
	b := make([]byte, 0, len(`{"type":"",`)+len(r.kind())+len(fields))
	b = append(b, `{"type":`...)
	b = event.AppendString(b, r.kind())
	if fields[1] != '}' {
		b = append(b, ',')
	}
	return append(b, fields[1:]...)
}
