package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"looprig/rig/fault"
)

func TestDecodeRequest(t *testing.T) {
	ok := []struct {
		in   string
		want request
	}{
		{`{"type":"hello","protocol":1,"version":"0.9"}`, &helloRequest{Protocol: 1, Version: "0.9"}},
		{`{"type":"status","id":1}`, &statusRequest{reqID{1}}},
		{`{"type":"subscribe","id":2,"after_seq":10}`, &subscribeRequest{reqID{2}, 10}},
		{`{"type":"unsubscribe","id":2}`, &unsubscribeRequest{reqID: reqID{2}}},
		{`{"type":"interrupt","id":3,"future_field":[1,2]}`, &interruptRequest{reqID{3}}},
		{` {"type":"shutdown","id":4} ` + "\r", &shutdownRequest{reqID{4}}},
		{`{"type":"detach","id":5}`, &detachRequest{reqID{5}}},
	}
	for _, c := range ok {
		got, err := decodeRequest([]byte(c.in))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	// Brackets in strings are not nesting.
	deepText := `{"type":"submit","id":12,"input":"` + strings.Repeat("[{", 100) + `\"]"}`
	if r, err := decodeRequest([]byte(deepText)); err != nil || r.id() != 12 {
		t.Errorf("brackets in a string: %+v, %v", r, err)
	}
	r, err := decodeRequest([]byte(`{"type":"submit","id":6,"input":""}`))
	if s, ok := r.(*submitRequest); err != nil || !ok || s.Input == nil || *s.Input != "" {
		t.Errorf("submit with an empty input: %+v, %v", r, err)
	}
	r, err = decodeRequest([]byte(`{"type":"respond_gate","id":7,"gate_id":"g","approve":false}`))
	if g, ok := r.(*respondGateRequest); err != nil || !ok || g.Approve == nil || *g.Approve || g.GateID != "g" {
		t.Errorf("respond_gate: %+v, %v", r, err)
	}

	bad := []struct {
		in   string
		kind fault.Kind
		id   uint64
	}{
		{`{`, KindBadRequest, 0},
		{`not json`, KindBadRequest, 0},
		{`[1,2]`, KindBadRequest, 0},
		{`null`, KindBadRequest, 0},
		{`{"type":"status"}`, KindBadRequest, 0},
		{`{"type":"status","id":-1}`, KindBadRequest, 0},
		{`{"type":"status","id":"1"}`, KindBadRequest, 0},
		{`{"type":"status","id":1} {"type":"status","id":2}`, KindBadRequest, 0},
		{`{"type":"submit","id":8}`, KindBadRequest, 8},
		{`{"type":"submit","id":8,"input":5}`, KindBadRequest, 8},
		{`{"type":"respond_gate","id":9,"gate_id":"g"}`, KindBadRequest, 9},
		{`{"type":"respond_gate","id":9,"approve":true}`, KindBadRequest, 9},
		{`{"type":"hello"}`, KindBadRequest, 0},
		{`{"id":10}`, KindBadRequest, 10},
		{`{"type":"launch_missiles","id":11}`, KindUnknownType, 11},
		{strings.Repeat("[", maxRequestDepth+1), KindBadRequest, 0},
		{`{"type":"status","id":1,"x":` + strings.Repeat("[", maxRequestDepth) + strings.Repeat("]", maxRequestDepth) + `}`, KindBadRequest, 0},
	}
	for _, c := range bad {
		_, err := decodeRequest([]byte(c.in))
		var re *requestError
		if !errors.As(err, &re) || re.kind != c.kind || re.id != c.id {
			t.Errorf("%s: %v (%+v), want kind %s id %d", c.in, err, re, c.kind, c.id)
		}
	}
	if _, err := decodeRequest(bytes.Repeat([]byte(" "), MaxLine+1)); err == nil {
		t.Errorf("an oversize line decoded")
	}
}

// chunky hands out its input a few bytes at a time.
type chunky struct {
	b []byte
	n int
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // spans several buffers
	in := "a\n\n" + long + "\nlast"
	lr := newLineReader(&chunky{b: []byte(in), n: 7000}, 300<<10)
	for _, want := range []string{"a", "", long, "last"} {
		got, err := lr.next()
		if err != nil || string(got) != want {
			t.Fatalf("line %.20q: %v (%d bytes)", want, err, len(got))
		}
	}
	if _, err := lr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v", err)
	}
	// A line of max bytes passes, max+1 does not, with or without its
	// newline in the buffer.
	for _, n := range []int{10, 70 << 10} {
		lr := newLineReader(strings.NewReader(strings.Repeat("y", n)+"\n"), n)
		if b, err := lr.next(); err != nil || len(b) != n {
			t.Fatalf("max-size line (%d): %d, %v", n, len(b), err)
		}
		lr = newLineReader(strings.NewReader(strings.Repeat("y", n+1)+"\n"), n)
		if _, err := lr.next(); !errors.Is(err, errLineTooLong) {
			t.Fatalf("oversize line (%d): %v", n+1, err)
		}
		lr = newLineReader(strings.NewReader(strings.Repeat("y", n+1)), n)
		if _, err := lr.next(); !errors.Is(err, errLineTooLong) {
			t.Fatalf("oversize last line (%d): %v", n+1, err)
		}
	}
}

// The line reader never holds more than its bound, however long the line.
func TestLineReaderMemoryBound(t *testing.T) {
	const max = 64 << 10
	lr := newLineReader(io.LimitReader(zeros{}, 64<<20), max)
	if _, err := lr.next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("64 MiB line: %v", err)
	}
	if cap(lr.buf) > 2*max+lr.r.Size() {
		t.Fatalf("reader grew to %d bytes for a bound of %d", cap(lr.buf), max)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	return len(p), nil
}

// FuzzDecodeRequest feeds the host's request decoder (after the line
// reader) hostile lines: it never panics, accepts only requests a handler
// can run, and allocates at most 16 bytes per byte of the line (invalid
// UTF-8 in a string decodes to 3-byte replacement characters; a failed
// line is read twice, the second time for its id) plus a constant.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","protocol":1,"version":"0.9"}`,
		`{"type":"submit","id":1,"input":"echo hi"}`,
		`{"type":"respond_gate","id":2,"gate_id":"g","approve":true}`,
		`{"type":"subscribe","id":3,"after_seq":18446744073709551615}`,
		`{"type":"status","id":1e3}`,
		`{"TYPE":"status","ID":1}`,
		`{"type":"status","id":1,"type":"shutdown"}`,
		`{"type":"\ud800","id":1}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		"\xff\xfe{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > MaxLine+1 {
			b = b[:MaxLine+1] // the line reader never yields more
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := decodeRequest(b)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > uint64(16*len(b)+16<<10) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(b), n)
		}
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.kind == fault.KindError || re.msg == "" {
				t.Fatalf("error %v (%T)", err, err)
			}
			if len(b) > MaxLine && re.kind != KindLineTooLong {
				t.Fatalf("oversize line: kind %s", re.kind)
			}
			return
		}
		switch r := r.(type) {
		case *helloRequest:
			if r.Protocol <= 0 {
				t.Fatalf("hello without a protocol accepted: %+v", r)
			}
			return
		case *submitRequest:
			if r.Input == nil {
				t.Fatalf("submit without input accepted")
			}
		case *respondGateRequest:
			if r.GateID == "" || r.Approve == nil {
				t.Fatalf("respond_gate without gate or answer accepted")
			}
		case *inputRequest:
			if (r.Input == nil) == !r.EOF {
				t.Fatalf("input without text or eof, or with both, accepted: %+v", r)
			}
		case *resizeRequest:
			if r.Cols < 1 || r.Rows < 1 || r.Cols > 65535 || r.Rows > 65535 {
				t.Fatalf("resize to %dx%d accepted", r.Cols, r.Rows)
			}
		case *statusRequest, *subscribeRequest, *unsubscribeRequest, *interruptRequest, *shutdownRequest, *detachRequest:
		default:
			t.Fatalf("unknown type %T accepted", r)
		}
		if r.id() == 0 {
			t.Fatalf("request without id accepted: %+v", r)
		}
	})
}

func TestRemoteErrorJSON(t *testing.T) {
	e := &RemoteError{Type: fault.TypeBusyError, Kind: fault.KindBusy, Message: "turn 4 (t) is still running", Hint: "wait",
		Fields: map[string]any{"turn_id": "t", "index": 4}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"BusyError","kind":"busy","message":"turn 4 (t) is still running","index":4,"turn_id":"t","hint":"wait"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back RemoteError
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Type != e.Type || back.Kind != e.Kind || back.Message != e.Message || back.Hint != e.Hint ||
		back.str("turn_id") != "t" || back.num("index") != 4 || len(back.Fields) != 2 {
		t.Fatalf("round trip: %+v", back)
	}
	if !strings.Contains(back.Error(), "still running") {
		t.Errorf("Error() = %q", back.Error())
	}
}

// RemoteError's strings, its typed fields' too, are written as
// encoding/json writes them with HTML escaping off, invalid UTF-8 as the
// escape \ufffd (the CLI's --json errors are the same object); its
// fields in name order.
func TestRemoteErrorJSONEscapes(t *testing.T) {
	e := &RemoteError{Type: fault.TypeBusyError, Kind: fault.KindBusy, Message: "bad \xff \"q\" \\ \x01\x7f", Hint: "é\t",
		Fields: map[string]any{"k\xff": "v\xff<", "a<": 1}}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"BusyError","kind":"busy","message":"bad \ufffd \"q\" \\ \u0001` + "\x7f" + `","a<":1,"k\ufffd":"v\ufffd<","hint":"é\t"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}
