package host

import (
	"errors"
	"reflect"
	"testing"

	"looprig/rig/fault"
)

// refusedRequests are lines each refused for one missing or bad field,
// with the kind, id and message of the refusal: the protocol's own.
var refusedRequests = []struct {
	in   string
	kind fault.Kind
	id   uint64
	msg  string
}{
	{`{"type":"hello","version":"0.9"}`, KindBadRequest, 0, "hello without a protocol version"},
	{`{"type":"hello","id":4,"protocol":0}`, KindBadRequest, 4, "hello without a protocol version"},
	{`{"type":"status"}`, KindBadRequest, 0, "status without an id (ids start at 1)"},
	{`{"type":"subscribe","after_seq":3}`, KindBadRequest, 0, "subscribe without an id (ids start at 1)"},
	{`{"type":"unsubscribe","sub":1}`, KindBadRequest, 0, "unsubscribe without an id (ids start at 1)"},
	{`{"type":"submit","input":"x"}`, KindBadRequest, 0, "submit without an id (ids start at 1)"},
	{`{"type":"submit","id":8}`, KindBadRequest, 8, "submit without an input"},
	{`{"type":"submit"}`, KindBadRequest, 0, "submit without an input"},
	{`{"type":"interrupt","id":0}`, KindBadRequest, 0, "interrupt without an id (ids start at 1)"},
	{`{"type":"respond_gate","id":9,"approve":true}`, KindBadRequest, 9, "respond_gate without a gate_id"},
	{`{"type":"respond_gate","id":9,"gate_id":"g"}`, KindBadRequest, 9, "respond_gate without approve (true or false)"},
	{`{"type":"respond_gate","gate_id":"g","approve":false}`, KindBadRequest, 0, "respond_gate without an id (ids start at 1)"},
	{`{"type":"shutdown"}`, KindBadRequest, 0, "shutdown without an id (ids start at 1)"},
	{`{"type":"detach"}`, KindBadRequest, 0, "detach without an id (ids start at 1)"},
	{`{"type":"input","id":10}`, KindBadRequest, 10, "input needs either an input or eof (not both)"},
	{`{"type":"input","id":10,"input":"x","eof":true}`, KindBadRequest, 10, "input needs either an input or eof (not both)"},
	{`{"type":"input","eof":true}`, KindBadRequest, 0, "input without an id (ids start at 1)"},
	{`{"type":"resize","id":12,"cols":120}`, KindBadRequest, 12, "resize needs cols and rows, 1..65535"},
	{`{"type":"resize","id":12,"cols":0,"rows":40}`, KindBadRequest, 12, "resize needs cols and rows, 1..65535"},
	{`{"type":"resize","id":12,"cols":65536,"rows":40}`, KindBadRequest, 12, "resize needs cols and rows, 1..65535"},
	{`{"type":"resize","cols":120,"rows":40}`, KindBadRequest, 0, "resize without an id (ids start at 1)"},
	{`{"type":"attention_seen","through":3}`, KindBadRequest, 0, "attention_seen without an id (ids start at 1)"},
	{`{"id":3}`, KindBadRequest, 3, "request without a type"},
	{`{"type":"","id":3}`, KindBadRequest, 3, "request without a type"},
	{`{"type":"launch_missiles","id":11}`, KindUnknownType, 11, `unknown request type "launch_missiles"`},
	{`[1]`, KindBadRequest, 0, "malformed request: not a JSON object"},
	{`{"type":"status","id":1`, KindBadRequest, 0, "malformed request: unexpected end of JSON input"},
}

// A request missing what its type needs is refused with the kind, id
// and message clients have always been given.
func TestRequestRefused(t *testing.T) {
	for _, c := range refusedRequests {
		_, err := decodeRequest([]byte(c.in))
		var re *requestError
		if !errors.As(err, &re) || re.kind != c.kind || re.id != c.id || re.msg != c.msg {
			t.Errorf("%s: %v (%+v), want kind %s id %d %q", c.in, err, re, c.kind, c.id, c.msg)
		}
	}
}

// requestLines are lines as a client writes them, one or more of every
// request type, and the struct each decodes into.
var requestLines = []struct {
	line string
	want request
}{
	{`{"type":"hello","protocol":1,"version":"0.9.0"}`, &helloRequest{Protocol: 1, Version: "0.9.0"}},
	{`{"type":"status","id":1}`, &statusRequest{reqID{1}}},
	{`{"type":"subscribe","id":7,"after_seq":10}`, &subscribeRequest{reqID{7}, 10}},
	{`{"type":"subscribe","id":7}`, &subscribeRequest{reqID: reqID{7}}},
	{`{"type":"unsubscribe","id":8,"sub":1}`, &unsubscribeRequest{reqID{8}, 1}},
	{`{"type":"unsubscribe","id":8}`, &unsubscribeRequest{reqID: reqID{8}}},
	{`{"type":"submit","id":2,"input":"make <test> \"q\" \\ \u2028 � é"}`, &submitRequest{reqID{2}, ptr("make <test> \"q\" \\ \u2028 \ufffd é")}},
	{`{"type":"submit","id":3,"input":""}`, &submitRequest{reqID{3}, ptr("")}},
	{`{"type":"interrupt","id":4}`, &interruptRequest{reqID{4}}},
	{`{"type":"respond_gate","id":5,"gate_id":"g1","approve":true,"from":"tui"}`, &respondGateRequest{reqID{5}, "g1", ptr(true), "tui"}},
	{`{"type":"respond_gate","id":5,"gate_id":"g1","approve":false}`, &respondGateRequest{reqID{5}, "g1", ptr(false), ""}},
	{`{"type":"shutdown","id":6}`, &shutdownRequest{reqID{6}}},
	{`{"type":"revert","id":12}`, &revertRequest{reqID: reqID{12}}},
	{`{"type":"revert","id":13,"turn":0}`, &revertRequest{reqID{13}, ptr(0)}},
	{`{"type":"detach","id":9}`, &detachRequest{reqID{9}}},
	{`{"type":"input","id":10,"input":"yes\n","from":"tui"}`, &inputRequest{reqID{10}, ptr("yes\n"), false, "tui"}},
	{`{"type":"input","id":11,"eof":true,"from":"cli"}`, &inputRequest{reqID: reqID{11}, EOF: true, From: "cli"}},
	{`{"type":"input","id":11,"input":""}`, &inputRequest{reqID: reqID{11}, Input: ptr("")}},
	{`{"type":"resize","id":12,"cols":120,"rows":40}`, &resizeRequest{reqID{12}, 120, 40}},
	{`{"type":"attention_seen","id":13,"through":41,"from":"tui"}`, &seenRequest{reqID{13}, 41, "tui"}},
	{`{"type":"attention_seen","id":13}`, &seenRequest{reqID: reqID{13}}},
}

func ptr[T any](v T) *T { return &v }

// Every request type decodes into its own struct, and that struct
// encodes back to the line it came from.
func TestRequestRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range requestLines {
		r, err := decodeRequest([]byte(c.line))
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if !reflect.DeepEqual(r, c.want) {
			t.Errorf("%s decoded to %T %+v, want %T %+v", c.line, r, r, c.want, c.want)
		}
		if r.msgType() != c.want.msgType() {
			t.Errorf("%s: kind %s", c.line, r.msgType())
		}
		seen[r.msgType()] = true
		if got := string(encode(r)); got != c.line+"\n" {
			t.Errorf("%s re-encoded to %s", c.line, got)
		}
	}
	for _, spec := range protocol {
		if spec.dir != toHost {
			continue
		}
		if !seen[spec.typ] {
			t.Errorf("no line of type %s", spec.typ)
		}
		if k := spec.new().msgType(); k != spec.typ {
			t.Errorf("the table's %s makes a %s", spec.typ, k)
		}
	}
}
