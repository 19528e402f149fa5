package host

// What the host checks of each request (protocol.go declares them): check
// says why a request is refused, with kind bad_request.

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

func (r *helloRequest) check() string {
	if r.Protocol <= 0 {
		return "hello without a protocol version"
	}
	return ""
}

func (r *statusRequest) check() string      { return r.needID(reqStatus) }
func (r *subscribeRequest) check() string   { return r.needID(reqSubscribe) }
func (r *unsubscribeRequest) check() string { return r.needID(reqUnsubscribe) }
func (r *interruptRequest) check() string   { return r.needID(reqInterrupt) }
func (r *shutdownRequest) check() string    { return r.needID(reqShutdown) }
func (r *detachRequest) check() string      { return r.needID(reqDetach) }
func (r *seenRequest) check() string        { return r.needID(reqSeen) }

func (r *revertRequest) check() string {
	if r.Turn != nil && *r.Turn < 0 {
		return "revert with a negative turn (absent: the last turn)"
	}
	return r.needID(reqRevert)
}

func (r *submitRequest) check() string {
	if r.Input == nil {
		return "submit without an input"
	}
	return r.needID(reqSubmit)
}

func (r *respondGateRequest) check() string {
	if r.GateID == "" {
		return "respond_gate without a gate_id"
	}
	if r.Approve == nil {
		return "respond_gate without approve (true or false)"
	}
	return r.needID(reqRespondGate)
}

func (r *inputRequest) check() string {
	if (r.Input == nil) == !r.EOF {
		return "input needs either an input or eof (not both)"
	}
	return r.needID(reqInput)
}

func (r *resizeRequest) check() string {
	if r.Cols < 1 || r.Rows < 1 || r.Cols > 65535 || r.Rows > 65535 {
		return "resize needs cols and rows, 1..65535"
	}
	return r.needID(reqResize)
}
