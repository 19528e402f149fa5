package host

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"testing"

	"looprig/rig/event"
	"looprig/rig/fault"
)

// exchange is one line a scripted host expects from the client and the
// lines it answers with.
type exchange struct {
	want    string
	answers []string
}

// scriptedHost serves one connection at path: for each exchange it reads
// a line, sends the line to got, and writes the answers. It closes the
// connection after the last one.
func scriptedHost(t *testing.T, path string, script []exchange) <-chan string {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, len(script))
	go func() {
		defer ln.Close()
		defer close(got)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for _, x := range script {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			got <- l
			for _, a := range x.answers {
				if _, err := c.Write([]byte(a + "\n")); err != nil {
					return
				}
			}
		}
	}()
	return got
}

// next returns the client's next line, as the scripted host read it.
func next(t *testing.T, got <-chan string) string {
	t.Helper()
	l, ok := <-got
	if !ok {
		t.Fatal("the scripted host read no more lines")
	}
	return l
}

// The client writes each request as protocol version 4 spells it (the
// lines of host/doc.go) and reads each host message into what its caller
// gets. The expected lines are what the client wrote before requests and
// host messages had a type each.
func TestClientLines(t *testing.T) {
	const hard = "make <test> && \"q\" \\ \u2028 \xff é"
	reply := func(id, rest string) string { return `{"type":"reply","id":` + id + `,"ok":true` + rest + `}` }
	script := []exchange{
		{`{"type":"hello","protocol":6,"version":"v<&>"}`, []string{`{"type":"hello","protocol":6,"version":"fake","session":"s1","pid":42,"epoch":3}`}},
		{`{"type":"status","id":1}`, []string{reply("1", `,"status":{"session":"s1","tip":12,"turn":{"id":"t1","index":4,"input":"x","started":"2026-01-02T03:04:05Z"},"terminal":true,"echo_off":true}`)}},
		{`{"type":"submit","id":2,"input":"make <test> && \"q\" \\ \u2028 \ufffd é"}`, []string{reply("2", `,"turn_id":"t1","index":4`)}},
		{`{"type":"submit","id":3,"input":""}`, []string{`{"type":"reply","id":3,"ok":false,"error":{"type":"BusyError","kind":"busy","message":"turn 4 is running","index":4,"turn_id":"t1"}}`}},
		{`{"type":"input","id":4,"input":"yes\n","from":"tui"}`, []string{reply("4", `,"hidden":true`)}},
		{`{"type":"input","id":5,"eof":true,"from":"cli"}`, []string{reply("5", "")}},
		{`{"type":"input","id":6,"input":"x"}`, []string{reply("6", "")}},
		{`{"type":"resize","id":7,"cols":120,"rows":40}`, []string{reply("7", "")}},
		{`{"type":"interrupt","id":8}`, []string{reply("8", "")}},
		{`{"type":"respond_gate","id":9,"gate_id":"g<&>","approve":false,"from":"tui"}`, []string{reply("9", "")}},
		{`{"type":"respond_gate","id":10,"gate_id":"g","approve":true,"from":"cli"}`, []string{reply("10", "")}},
		{`{"type":"subscribe","id":11,"after_seq":10}`, []string{reply("11", `,"sub":1`),
			`{"type":"event","sub":1,"event":{"seq":11,"type":"TurnOutput","session":"s1","loop_id":"L","at":null,"turn_id":"t1","text":"ok\n","elided":0}}`,
			`{"type":"dropped","sub":1,"count":2,"total":2}`,
			`{"type":"event","sub":1,"event":{"seq":12,"type":"SessionIdle","session":"s1","loop_id":"","at":null}}`,
			`{"type":"event","sub":1,"event":{"seq":13,"type":"Nope","session":"s1","loop_id":"","at":null}}`,
			`{"type":"end","sub":1,"last_seq":13,"reason":"session_stopped"}`}},
		{`{"type":"subscribe","id":12}`, []string{reply("12", `,"sub":2`), `{"type":"lost","sub":2,"last_seq":40,"message":"resubscribe after seq 40"}`}},
		{`{"type":"subscribe","id":13,"after_seq":40}`, []string{reply("13", `,"sub":3`)}},
		{`{"type":"unsubscribe","id":14,"sub":3}`, []string{reply("14", "")}},
		{`{"type":"shutdown","id":15}`, []string{reply("15", "")}},
		{`{"type":"attention_seen","id":16,"through":9,"from":"cli"}`, []string{reply("16", "")}},
		{`{"type":"status","id":17}`, []string{`{"type":"bye","reason":"session_stopped"}`}},
	}
	path := filepath.Join(privateDir(t), "h.sock")
	got := scriptedHost(t, path, script)
	ctx := wctx(t)
	i := 0
	check := func() {
		t.Helper()
		if l := next(t, got); l != script[i].want+"\n" {
			t.Errorf("line %d:\n got %s\nwant %s", i, l, script[i].want)
		}
		i++
	}
	c, err := Dial(ctx, path, WithClientVersion("v<&>"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check()
	if h := c.Hello(); h != (Hello{Protocol: 6, Version: "fake", Session: "s1", PID: 42, Epoch: 3}) {
		t.Errorf("hello %+v", h)
	}
	st, err := c.Status(ctx)
	check()
	if err != nil || st.Session != "s1" || st.Tip != 12 || st.Turn == nil || st.Turn.Index != 4 || !st.Terminal || !st.EchoOff {
		t.Errorf("status %+v, %v", st, err)
	}
	ti, err := c.Submit(ctx, hard)
	check()
	if err != nil || ti.ID != "t1" || ti.Index != 4 {
		t.Errorf("submit: %+v, %v", ti, err)
	}
	_, err = c.Submit(ctx, "")
	check()
	if re := asRemote(t, err, fault.KindBusy); re.str("turn_id") != "t1" || re.num("index") != 4 {
		t.Errorf("busy: %+v", re)
	}
	hidden, err := c.SendInput(ctx, "yes\n", "tui")
	check()
	if err != nil || !hidden {
		t.Errorf("input: hidden %v, %v", hidden, err)
	}
	err = c.SendEOF(ctx, "cli")
	check()
	if err != nil {
		t.Error(err)
	}
	if _, err = c.SendInput(ctx, "x", ""); err != nil {
		t.Error(err)
	}
	check()
	if err = c.Resize(ctx, 120, 40); err != nil {
		t.Error(err)
	}
	check()
	if err = c.Interrupt(ctx); err != nil {
		t.Error(err)
	}
	check()
	if err = c.RespondGate(ctx, "g<&>", false, "tui"); err != nil {
		t.Error(err)
	}
	check()
	if err = c.RespondGate(ctx, "g", true, "cli"); err != nil {
		t.Error(err)
	}
	check()
	s, err := c.Subscribe(ctx, 10)
	check()
	if err != nil {
		t.Fatal(err)
	}
	if env, err := s.Next(ctx); err != nil || env.Seq != 11 || env.Event != (event.TurnOutput{TurnID: "t1", Text: "ok\n"}) {
		t.Errorf("first event %+v, %v", env, err)
	}
	if env, err := s.Next(ctx); err != nil || env.Seq != 12 || env.Event != (event.SessionIdle{}) || s.Dropped() != 2 {
		t.Errorf("second event %+v, %v, dropped %d", env, err, s.Dropped())
	}
	var bad *EnvelopeDecodeError
	if _, err := s.Next(ctx); !errors.As(err, &bad) || bad.Seq != 13 {
		t.Errorf("an unknown event: %v", err)
	}
	if _, err := s.Next(ctx); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("end: %v", err)
	}
	s, err = c.Subscribe(ctx, 0)
	check()
	if err != nil {
		t.Fatal(err)
	}
	var lost *StreamLostError
	if _, err := s.Next(ctx); !errors.As(err, &lost) || lost.LastSeq != 40 || lost.Message != "resubscribe after seq 40" {
		t.Errorf("lost: %v", err)
	}
	s, err = c.Subscribe(ctx, 40)
	check()
	if err != nil {
		t.Fatal(err)
	}
	s.Close() // the unsubscribe goes in the background
	check()
	if err = c.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	check()
	if err = c.SeeAttention(ctx, 9, "cli"); err != nil {
		t.Error(err)
	}
	check()
	_, err = c.Status(ctx)
	check()
	var closed *HostClosedError
	if !errors.As(err, &closed) || closed.Reason != ReasonSessionStopped {
		t.Errorf("after bye: %v", err)
	}
}

// A host that refuses the hello: its error comes back from Dial.
func TestClientHelloRefused(t *testing.T) {
	for _, c := range []struct {
		answer string
		check  func(error) bool
	}{
		{`{"type":"error","error":{"type":"Error","kind":"protocol_mismatch","message":"m","server_protocol":3,"server_version":"3.0","session":"s1","pid":42}}`,
			func(err error) bool {
				var pm *ProtocolMismatchError
				return errors.As(err, &pm) && pm.Server == 3 && pm.ServerVersion == "3.0" && pm.Session == "s1" && pm.PID == 42
			}},
		{`{"type":"hello","protocol":7,"version":"3.0","session":"s1","pid":42,"epoch":3}`,
			func(err error) bool {
				var pm *ProtocolMismatchError
				return errors.As(err, &pm) && pm.Server == 7 && pm.ServerVersion == "3.0" && pm.Session == "s1" && pm.PID == 42
			}},
		{`{"type":"error","error":{"type":"Error","kind":"peer_refused","message":"no"}}`,
			func(err error) bool {
				var re *RemoteError
				return errors.As(err, &re) && re.Kind == KindPeerRefused
			}},
		{`{"type":"reply","id":1,"ok":true}`, func(err error) bool { return err != nil }},
		{`{"type":"hello","protocol":"1"}`, func(err error) bool { return err != nil }},
	} {
		path := filepath.Join(privateDir(t), "h.sock")
		scriptedHost(t, path, []exchange{{`{"type":"hello","protocol":6,"version":"devel"}`, []string{c.answer}}})
		cl, err := Dial(wctx(t), path)
		if err == nil {
			cl.Close()
		}
		if !c.check(err) {
			t.Errorf("%s: %v", c.answer, err)
		}
	}
}

// readHead reads what encoding/json reads of an event line's head, from
// the line's start when MarshalEnvelope wrote it, and refuses what
// encoding/json refuses.
func TestReadHead(t *testing.T) {
	for _, line := range []string{
		`{"seq":12,"type":"TurnOutput","session":"s","loop_id":"","at":null,"turn_id":"t","offset":0,"text":"x","elided":0}`,
		`{"seq":0,"type":"OutputDelta","session":"s"}`,
		`{"seq":18446744073709551615,"type":"TurnDone"}`,
		`{"type":"TurnDone","seq":3}`,
		`{"seq":01,"type":"TurnDone"}`,
		`{"seq":1,"type":"Turn\u0044one"}`,
		` {"seq":1,"type":"TurnDone"}`,
		`[1,2]`,
		`{"seq":-1,"type":"x"}`,
	} {
		got, gotErr := readHead([]byte(line))
		var want envelopeHead
		wantErr := json.Unmarshal([]byte(line), &want)
		if (gotErr != nil) != (wantErr != nil) || gotErr == nil && got != want {
			t.Errorf("%s: %+v, %v; encoding/json: %+v, %v", line, got, gotErr, want, wantErr)
		}
	}
}
