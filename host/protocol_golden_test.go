package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/protocol.golden")

// goldenLines encodes one of every message of the protocol, both ways,
// with every field set (and some with none), and the ready descriptor's
// lines: testdata/protocol.golden holds the bytes, so that a change of
// the codec that changes a byte on the wire fails here.
func goldenLines(t *testing.T) [][]byte {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	idx := 4
	approve := true
	input := "make test <&> \"q\" é \x01"
	empty := ""
	busy := Describe(&rig.BusyError{TurnID: "t-4", Index: 4, Checkpointing: true})
	held := Describe(&storage.LeaseHeldError{Name: "s", HolderEpoch: 7, Holder: storage.Holder{PID: 42, Host: "box", Acquired: at}})
	mismatch := protoErr(KindProtocolMismatch, "speaks protocol 5", map[string]any{"client_protocol": 4, "server_protocol": 5, "session": "s", "pid": 42})
	mismatch.Hint = stopHint("s", 42)
	plain := Describe(errors.New("plain <failure>"))
	ckpt := &rig.CheckpointProgress{Trigger: "turn", TurnID: "t-4", Since: at, Files: 10, FilesDone: 7, Bytes: 2048, BytesDone: 1024}
	st := Status{Session: "s", Title: "T", Profile: "p", Engine: "shell", Epoch: 3, LoopID: "L", Placement: "exclusive",
		Workspace: "/w", Root: "/r", TTY: true, Tip: 12, LastEvent: 11, Turns: 4,
		Turn:     &TurnStatus{ID: "t-4", Index: 4, Input: "ls", Started: at},
		Terminal: true, EchoOff: true,
		Gate:          &GateStatus{ID: "g", TurnID: "t-4", Prompt: "ok?", Opened: at},
		Attention:     &AttentionStatus{TurnID: "t-4", Reason: "gate", Text: "ok?", Since: at, At: at, Seq: 9},
		Checkpointing: ckpt, Fault: plain, Closed: true, PID: 42}
	out := [][]byte{
		// client → host
		encode(&helloRequest{Protocol: ProtocolVersion, Version: "0.9.0"}),
		encode(&statusRequest{reqID{1}}),
		encode(&subscribeRequest{reqID{2}, 10}),
		encode(&subscribeRequest{reqID: reqID{3}}),
		encode(&unsubscribeRequest{reqID{4}, 1}),
		encode(&submitRequest{reqID{5}, &input}),
		encode(&submitRequest{reqID{6}, &empty}),
		encode(&interruptRequest{reqID{7}}),
		encode(&respondGateRequest{reqID{8}, "g", &approve, "tui"}),
		encode(&shutdownRequest{reqID{9}}),
		encode(&detachRequest{reqID{10}}),
		encode(&inputRequest{reqID{11}, &input, false, "cli"}),
		encode(&inputRequest{reqID: reqID{12}, EOF: true, From: "cli"}),
		encode(&resizeRequest{reqID{13}, 120, 40}),
		encode(&seenRequest{reqID{14}, 57, "tui"}),
		encode(&statusRequest{}),
		encode(&revertRequest{reqID: reqID{15}}),
		encode(&revertRequest{reqID{16}, &idx}),
		// host → client
		encode(&helloMsg{Hello: Hello{Protocol: ProtocolVersion, Version: "0.9.0", Session: "s", PID: 42, Epoch: 3}}),
		okReply(1),
		encode(&replyMsg{ID: 1, OK: true, Status: &st}),
		encode(&replyMsg{ID: 1, OK: true, Status: &Status{}}),
		encode(&replyMsg{ID: 5, OK: true, TurnID: "t-4", Index: &idx}),
		encode(&replyMsg{ID: 2, OK: true, Sub: 1}),
		encode(&replyMsg{ID: 11, OK: true, Hidden: true, PromptEcho: true}),
		encode(&replyMsg{ID: 16, OK: true, Reverted: &Reverted{TurnID: "t-4", TurnIndex: 4, Manifest: "ab", From: "cd",
			Changed: 4, Removed: 1, Paths: []string{"a <&>", "b"}, Agent: true}}),
		encode(&replyMsg{ID: 15, OK: true, Reverted: &Reverted{TurnID: "t-4", TurnIndex: 4, Undo: true, Manifest: "cd", From: "ab"}}),
		errReply(6, busy),
		errReply(0, protoErr(KindBadRequest, "malformed request: not a JSON object", nil)),
		errReply(8, held),
		encode(&progressMsg{ID: 5, Progress: Progress{Checkpoint: ckpt}}),
		encode(&progressMsg{ID: 9}),
		encode(&droppedMsg{Sub: 1, Count: 17, Total: 20}),
		encode(&lostMsg{Sub: 1, LastSeq: 40, Message: "resubscribe after seq 40"}),
		encode(&endMsg{Sub: 1, LastSeq: 57, Reason: ReasonSessionStopped}),
		encode(&endMsg{Sub: 1, LastSeq: 57, Reason: ReasonSessionFaulted, Error: plain}),
		encode(&errorMsg{Error: mismatch}),
		encode(&errorMsg{Error: protoErr(KindLineTooLong, "too long", map[string]any{"max": MaxLine})}),
		encode(&byeMsg{Reason: ReasonServerStopping}),
		encode(&byeMsg{Reason: ReasonSessionFaulted, Error: plain}),
	}
	for _, ev := range []event.Event{
		event.TurnOutput{TurnID: "t-4", Text: "ok <&>\n\xff\u2028", Elided: 1, Offset: 3},
		event.OutputDelta{TurnID: "t-4", Stream: "stdout", Text: "x", Offset: 9},
		event.GateResolved{GateID: "g", Action: "approve", Reason: "user", By: &event.Client{Kind: "tui", PID: 7}},
	} {
		b, err := eventLine(3, event.Envelope{Seq: 11, Session: "s", LoopID: "L", At: at, Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	// the ready descriptor
	for _, m := range []readyMsg{
		{OK: true, Ready: &Ready{Session: "s", Title: "T <&>", PID: 42, Epoch: 3, Socket: "/run/s.sock", Created: true}},
		{Error: held},
		{Progress: &Progress{Materialize: &MaterializeProgress{Done: 1, Total: 2}}},
	} {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append(b, '\n'))
	}
	return out
}

// The protocol's bytes do not change unless the protocol does.
func TestProtocolGolden(t *testing.T) {
	got := bytes.Join(goldenLines(t), nil)
	const path = "testdata/protocol.golden"
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := bytes.SplitAfter(got, []byte("\n")), bytes.SplitAfter(want, []byte("\n"))
	for i := range max(len(gl), len(wl)) {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, g, w)
		}
	}
	// Every message of the table is there.
	for _, spec := range protocol {
		lead := []byte(`{"type":"` + spec.typ + `"`)
		n := 0
		for _, l := range gl {
			if bytes.HasPrefix(l, lead) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no %s message in the golden lines", spec.typ)
		}
	}
}
