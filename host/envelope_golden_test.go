package host

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"looprig/rig/event"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// envelopeHardStrings need every kind of care a JSON string encoder
// takes; in the envelope's own strings invalid UTF-8 is the escape
// \ufffd (encoding/json's), in the payload a literal U+FFFD (the event
// codec's).
var envelopeHardStrings = []string{
	"", "plain-id_1", "\x00\x01\x07\x08\t\n\x0b\x0c\r\x1b\x1f", "\x7f", `quote " back \ slash \\"`,
	"<a href='x'>&amp;</a>", "é ü 日本 😀", "\u2028\u2029", "bad \xff \xc3 utf8 \xed\xa0\x80 \xf4\x90\x80\x80",
	"\uFFFD literal", `\ufffd text`, "\x1b[31mred\x1b[0m", "trunc \xe2\x82",
}

// The envelope lines of every sample event, with hard strings in the
// envelope and in the payload: testdata/envelope.golden was written by
// MarshalEnvelope before the envelope codec moved; the bytes must not
// change.
func TestMarshalEnvelopeGolden(t *testing.T) {
	samples := sampleEvents()
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_007, time.FixedZone("X", 3600))
	var out []byte
	add := func(env event.Envelope) {
		b, err := MarshalEnvelope(env)
		if err != nil {
			t.Fatalf("%+v: %v", env, err)
		}
		out = append(append(out, b...), '\n')
	}
	for _, info := range event.Registered() {
		ev := samples[info.Type]
		add(event.Envelope{Seq: 42, Session: "sess-1", LoopID: "loop-1", At: at, Event: ev})
		add(event.Envelope{Event: ev})
	}
	for _, s := range envelopeHardStrings {
		add(event.Envelope{Seq: 7, Session: s, LoopID: s, At: at, Event: event.TurnOutput{TurnID: s, Text: s, Elided: 3}})
		add(event.Envelope{Seq: 8, Session: s, LoopID: s, Event: event.LoopStarted{LoopID: s, Name: s, Engine: s}})
		add(event.Envelope{Seq: 9, Session: "s", LoopID: "l", Event: event.SessionStarted{Title: s, Manifest: map[string]string{s: s}}})
		add(event.Envelope{Session: "s", LoopID: "l", Event: event.OutputDelta{TurnID: s, Stream: event.StreamStderr, Text: s}})
	}
	path := "testdata/envelope.golden"
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		gl, wl := bytes.Split(out, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("%s line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
	}
}
