package host

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"looprig/rig/event"
	"looprig/rig/explain"
)

// Every host message decodes, on the client, into its own type, which
// encodes back to the line the host wrote.
func TestHostMessagesDecode(t *testing.T) {
	idx := 4
	ev, err := eventLine(3, event.Envelope{Seq: 11, Session: "s", LoopID: "L", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Event: event.TurnOutput{TurnID: "t", Text: "ok <&>\n\xff", Elided: 1}})
	if err != nil {
		t.Fatal(err)
	}
	busy := protoErr(explain.KindBusy, "turn 4 is running", nil)
	for _, c := range []struct {
		line []byte
		want any
	}{
		{line(helloMsg{Type: msgHello, Hello: Hello{Protocol: 1, Version: "0.9", Session: "s", PID: 42, Epoch: 3}}),
			helloMsg{Type: msgHello, Hello: Hello{Protocol: 1, Version: "0.9", Session: "s", PID: 42, Epoch: 3}}},
		{line(replyMsg{Type: msgReply, ID: 2, OK: true, TurnID: "t", Index: &idx}), replyMsg{Type: msgReply, ID: 2, OK: true, TurnID: "t", Index: &idx}},
		{line(replyMsg{Type: msgReply, ID: 3, OK: true, Status: &Status{Session: "s", Tip: 12}}),
			replyMsg{Type: msgReply, ID: 3, OK: true, Status: &Status{Session: "s", Tip: 12}}},
		{line(replyMsg{Type: msgReply, ID: 4, Error: busy}), replyMsg{Type: msgReply, ID: 4, Error: busy}},
		{line(replyMsg{Type: msgReply, ID: 5, OK: true, Sub: 2, Hidden: true}), replyMsg{Type: msgReply, ID: 5, OK: true, Sub: 2, Hidden: true}},
		{ev, eventMsg{Type: msgEvent, Sub: 3, Event: ev[len(`{"type":"event","sub":3,"event":`) : len(ev)-2]}},
		{line(droppedMsg{Type: msgDropped, Sub: 3, Count: 17, Total: 20}), droppedMsg{Type: msgDropped, Sub: 3, Count: 17, Total: 20}},
		{line(lostMsg{Type: msgLost, Sub: 3, LastSeq: 40, Message: "resubscribe"}), lostMsg{Type: msgLost, Sub: 3, LastSeq: 40, Message: "resubscribe"}},
		{line(endMsg{Type: msgEnd, Sub: 3, LastSeq: 57, Reason: ReasonSessionFaulted, Error: busy}),
			endMsg{Type: msgEnd, Sub: 3, LastSeq: 57, Reason: ReasonSessionFaulted, Error: busy}},
		{line(errorMsg{Type: msgError, Error: busy}), errorMsg{Type: msgError, Error: busy}},
		{line(byeMsg{Type: msgBye, Reason: ReasonServerStopping}), byeMsg{Type: msgBye, Reason: ReasonServerStopping}},
		{[]byte(`{"type":"future","x":[1]}`), unknownMsg{Type: "future"}},
		{[]byte(`{ "type" : "bye", "reason":"error"}`), byeMsg{Type: msgBye, Reason: ReasonError}},
		{[]byte(`{"sub":3,"type":"dropped","count":1}`), droppedMsg{Type: msgDropped, Sub: 3, Count: 1}},
	} {
		in := strings.TrimSuffix(string(c.line), "\n")
		got, err := decodeMsg([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s decoded to %T %+v, want %T %+v", in, got, got, c.want, c.want)
		}
		if _, ok := got.(unknownMsg); ok || in[1] == ' ' || strings.HasPrefix(in, `{"sub"`) {
			continue
		}
		if again := line(got); string(again) != string(c.line) {
			t.Errorf("%T re-encoded to %s, want %s", got, again, c.line)
		}
	}
	for _, in := range []string{``, `x`, `{"type":"reply","id":"1"}`, `{"type":"event","sub":1,"event":{"seq":1}`, `{"type":"future"`, `{"type":7}`} {
		if m, err := decodeMsg([]byte(in)); err == nil {
			t.Errorf("%s decoded to %+v", in, m)
		}
	}
}

// msgType reads the type off the start of every line the host writes,
// without decoding the line (an event line is decoded once, by its own
// decode): nothing is allocated.
func TestMsgTypeReadsTheLead(t *testing.T) {
	ev, err := eventLine(1, event.Envelope{Seq: 1, Event: event.TurnOutput{TurnID: "t", Text: strings.Repeat("x", 64<<10)}})
	if err != nil {
		t.Fatal(err)
	}
	for want, l := range map[string][]byte{
		msgHello: line(helloMsg{Type: msgHello}), msgReply: okReply(1), msgEvent: ev,
		msgDropped: line(droppedMsg{Type: msgDropped}), msgLost: line(lostMsg{Type: msgLost}), msgEnd: line(endMsg{Type: msgEnd}),
		msgError: line(errorMsg{Type: msgError}), msgBye: line(byeMsg{Type: msgBye}),
	} {
		var got string
		if n := testing.AllocsPerRun(10, func() { got, err = msgType(l) }); n != 0 || got != want || err != nil {
			t.Errorf("%.40s: %q, %v, %v allocations", l, got, err, n)
		}
	}
}
