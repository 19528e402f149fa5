package host

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"looprig/rig/event"
	"looprig/rig/fault"
	"looprig/rig/storage"
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
	busy := protoErr(fault.KindBusy, "turn 4 is running", nil)
	for _, c := range []struct {
		line []byte
		want message
	}{
		{encode(&helloMsg{Hello: Hello{Protocol: 1, Version: "0.9", Session: "s", PID: 42, Epoch: 3}}),
			&helloMsg{Hello: Hello{Protocol: 1, Version: "0.9", Session: "s", PID: 42, Epoch: 3}}},
		{encode(&replyMsg{ID: 2, OK: true, TurnID: "t", Index: &idx}), &replyMsg{ID: 2, OK: true, TurnID: "t", Index: &idx}},
		{encode(&replyMsg{ID: 3, OK: true, Status: &Status{Session: "s", Tip: 12}}),
			&replyMsg{ID: 3, OK: true, Status: &Status{Session: "s", Tip: 12}}},
		{encode(&replyMsg{ID: 4, Error: busy}), &replyMsg{ID: 4, Error: busy}},
		{encode(&replyMsg{ID: 5, OK: true, Sub: 2, Hidden: true}), &replyMsg{ID: 5, OK: true, Sub: 2, Hidden: true}},
		{ev, &eventMsg{Sub: 3, Event: ev[len(`{"type":"event","sub":3,"event":`) : len(ev)-2]}},
		{encode(&droppedMsg{Sub: 3, Count: 17, Total: 20}), &droppedMsg{Sub: 3, Count: 17, Total: 20}},
		{encode(&lostMsg{Sub: 3, LastSeq: 40, Message: "resubscribe"}), &lostMsg{Sub: 3, LastSeq: 40, Message: "resubscribe"}},
		{encode(&endMsg{Sub: 3, LastSeq: 57, Reason: ReasonSessionFaulted, Error: busy}),
			&endMsg{Sub: 3, LastSeq: 57, Reason: ReasonSessionFaulted, Error: busy}},
		{encode(&errorMsg{Error: busy}), &errorMsg{Error: busy}},
		{encode(&byeMsg{Reason: ReasonServerStopping}), &byeMsg{Reason: ReasonServerStopping}},
		{[]byte(`{"type":"future","x":[1]}`), &unknownMsg{Type: "future"}},
		{[]byte(`{ "type" : "bye", "reason":"error"}`), &byeMsg{Reason: ReasonError}},
		{[]byte(`{"sub":3,"type":"dropped","count":1}`), &droppedMsg{Sub: 3, Count: 1}},
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
		if _, ok := got.(*unknownMsg); ok || in[1] == ' ' || strings.HasPrefix(in, `{"sub"`) {
			continue
		}
		if again := encode(got); string(again) != string(c.line) {
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
		msgHello: encode(&helloMsg{}), msgReply: okReply(1), msgEvent: ev,
		msgDropped: encode(&droppedMsg{}), msgLost: encode(&lostMsg{}), msgEnd: encode(&endMsg{}),
		msgError: encode(&errorMsg{}), msgBye: encode(&byeMsg{}),
	} {
		var got string
		if n := testing.AllocsPerRun(10, func() { got, err = msgType(l) }); n != 0 || got != want || err != nil {
			t.Errorf("%.40s: %q, %v, %v allocations", l, got, err, n)
		}
	}
}

// A holder has one shape, {"acquired","host","pid"}, which decodes into a
// storage.Holder; acquired is null when not known.
func TestHolderShape(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	for _, c := range []struct {
		h    storage.Holder
		want string
	}{
		{storage.Holder{PID: 42, Host: "box", Acquired: at}, `{"acquired":"2026-01-02T02:04:05.000000006Z","host":"box","pid":42}`},
		{storage.Holder{PID: 7}, `{"acquired":null,"host":"","pid":7}`},
	} {
		b, err := json.Marshal(HolderOf(c.h))
		if err != nil || string(b) != c.want {
			t.Errorf("%+v: %s, %v; want %s", c.h, b, err, c.want)
		}
		var back storage.Holder
		if err := json.Unmarshal(b, &back); err != nil || back.PID != c.h.PID || back.Host != c.h.Host || !back.Acquired.Equal(c.h.Acquired) {
			t.Errorf("%s decoded to %+v, %v", b, back, err)
		}
		e, err := json.Marshal(Describe(&storage.LeaseHeldError{Name: "s", HolderEpoch: 1, Holder: c.h}))
		if err != nil || !strings.Contains(string(e), `"holder":`+c.want) {
			t.Errorf("error object %s, %v: want the holder %s", e, err, c.want)
		}
	}
}
