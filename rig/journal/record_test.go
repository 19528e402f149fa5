package journal

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"looprig/rig/event"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

func TestCorruptRecordInTheMiddle(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	l1 := acquire(t, st)
	j := open(t, st, l1)
	for range 3 {
		if _, err := j.AppendEvent(ctx, "", event.SessionActive{}); err != nil {
			t.Fatal(err)
		}
	}
	// Raw garbage at seq 5, then a healthy later tenure (fence at 6, event at 7).
	if err := st.Append(ctx, testName, 4, []byte("\x00garbage{")); err != nil {
		t.Fatal(err)
	}
	l1.Release(ctx)
	j2 := open(t, st, acquire(t, st))
	if _, err := j2.AppendEvent(ctx, "", event.SessionIdle{}); err != nil {
		t.Fatal(err)
	}

	r, err := NewReplayer(ctx, st, testName, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for r.Next() {
		seqs = append(seqs, r.Record().Seq)
	}
	var de *RecordDecodeError
	if !errors.As(r.Err(), &de) || de.Seq != 5 || de.Name != testName {
		t.Fatalf("Err = %v, want *RecordDecodeError at 5", r.Err())
	}
	if !reflect.DeepEqual(seqs, []uint64{1, 2, 3, 4}) || r.LastSeq() != 4 {
		t.Errorf("yielded %v, LastSeq %d", seqs, r.LastSeq())
	}
	if r.Next() {
		t.Error("Next after a decode error")
	}
	r.Close()

	// The event replayer fails closed the same way.
	er, _ := NewEventReplayer(ctx, st, testName, 0)
	n := 0
	for er.Next() {
		n++
	}
	if !errors.As(er.Err(), &de) || de.Seq != 5 || n != 3 {
		t.Errorf("event replayer: %d events, %v", n, er.Err())
	}
	// Replaying past the damage works.
	if recs := readAll(t, st, 5); len(recs) != 2 || recs[0].Kind != KindFence || recs[0].Epoch != 2 {
		t.Errorf("after the damage: %+v", recs)
	}
}

// gapLedger drops record 3 from every cursor.
type gapLedger struct{ storage.Ledger }

type gapCursor struct{ storage.Cursor }

func (g gapLedger) Read(ctx context.Context, name string, after uint64) (storage.Cursor, error) {
	c, err := g.Ledger.Read(ctx, name, after)
	return gapCursor{c}, err
}

func (g gapCursor) Next() bool {
	if !g.Cursor.Next() {
		return false
	}
	if g.Record().Seq == 3 {
		return g.Cursor.Next()
	}
	return true
}

func TestSequenceGapFailsClosed(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	j := open(t, st, acquire(t, st))
	for range 4 {
		j.AppendEvent(ctx, "", event.SessionIdle{})
	}
	r, _ := NewReplayer(ctx, gapLedger{st}, testName, 0)
	for r.Next() {
	}
	var de *RecordDecodeError
	if !errors.As(r.Err(), &de) || de.Seq != 4 || !strings.Contains(de.Reason, "gap") {
		t.Errorf("Err = %v", r.Err())
	}
}

func TestReplayStopsOnContext(t *testing.T) {
	st := memstore.New()
	open(t, st, acquire(t, st))
	ctx, cancel := context.WithCancel(context.Background())
	r, err := NewReplayer(ctx, st, testName, 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if r.Next() || !errors.Is(r.Err(), context.Canceled) {
		t.Errorf("Err = %v", r.Err())
	}
	if _, err := NewReplayer(context.Background(), st, "Bad Name", 0); !errors.As(err, new(*storage.InvalidNameError)) {
		t.Errorf("bad name: %v", err)
	}
}

const at = `,"at":"2026-07-15T10:00:00Z"}`

func TestDecodeRecordFailsClosed(t *testing.T) {
	good := map[string]string{
		"fence":   `{"v":1,"kind":"fence","epoch":3` + at,
		"event":   `{"v":1,"kind":"event","loop_id":"l","event":{"v":1,"type":"TurnStarted","data":{"turn_id":"t","index":1,"input":"i"}}` + at,
		"old id":  `{"v":1,"kind":"event","id":"x","loop_id":"l","event":{"v":1,"type":"TurnStarted","data":{"turn_id":"t","index":1,"input":"i"}}` + at,
		"session": `{"v":1,"kind":"event","event":{"v":1,"type":"SessionIdle","data":{}}` + at,
		"command": `{"v":1,"kind":"command","command":{"name":"submit","loop_id":"l","input":"x"}` + at,
		"order":   `{"at":"2026-07-15T10:00:00Z","epoch":1,"kind":"fence","v":1}`,
	}
	for name, in := range good {
		if _, err := DecodeRecord(1, []byte(in)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]string{
		"empty":             ``,
		"garbage":           `garbage`,
		"not object":        `[]`,
		"version 2":         `{"v":2,"kind":"fence","epoch":3` + at,
		"version 2 + field": `{"v":2,"kind":"fence","epoch":3,"new":1` + at,
		"no version":        `{"kind":"fence","epoch":3` + at,
		"unknown kind":      `{"v":1,"kind":"checkpoint"` + at,
		"no kind":           `{"v":1` + at,
		"unknown field":     `{"v":1,"kind":"fence","epoch":3,"x":1` + at,
		"missing at":        `{"v":1,"kind":"fence","epoch":3}`,
		"bad at":            `{"v":1,"kind":"fence","epoch":3,"at":"yesterday"}`,
		"trailing":          `{"v":1,"kind":"fence","epoch":3` + at + `x`,
		"fence epoch 0":     `{"v":1,"kind":"fence"` + at,
		"fence with event":  `{"v":1,"kind":"fence","epoch":1,"event":{"v":1,"type":"SessionIdle","data":{}}` + at,
		"event missing":     `{"v":1,"kind":"event"` + at,
		"event with epoch":  `{"v":1,"kind":"event","epoch":2,"event":{"v":1,"type":"SessionIdle","data":{}}` + at,
		"event bad":         `{"v":1,"kind":"event","event":{"v":1,"type":"SessionIdle","data":{"x":1}}` + at,
		"event v2":          `{"v":1,"kind":"event","event":{"v":2,"type":"SessionIdle","data":{}}` + at,
		"event unknown":     `{"v":1,"kind":"event","event":{"v":1,"type":"Nope","data":{}}` + at,
		"ephemeral":         `{"v":1,"kind":"event","loop_id":"l","event":{"v":1,"type":"OutputDelta","data":{"turn_id":"t","stream":"stdout","text":"x"}}` + at,
		"loop no loop id":   `{"v":1,"kind":"event","event":{"v":1,"type":"TurnStarted","data":{}}` + at,
		"session loop id":   `{"v":1,"kind":"event","loop_id":"l","event":{"v":1,"type":"SessionIdle","data":{}}` + at,
		"loop id mismatch":  `{"v":1,"kind":"event","loop_id":"l","event":{"v":1,"type":"LoopStarted","data":{"loop_id":"m","name":"","engine":""}}` + at,
		"command missing":   `{"v":1,"kind":"command"` + at,
		"command bad name":  `{"v":1,"kind":"command","command":{"name":"reboot"}` + at,
		"command field":     `{"v":1,"kind":"command","command":{"name":"submit","x":1}` + at,
		"command loop id":   `{"v":1,"kind":"command","loop_id":"l","command":{"name":"submit"}` + at,
		"id not a string":   `{"v":1,"kind":"fence","epoch":3,"id":7` + at,
		"id null":           `{"v":1,"kind":"fence","epoch":3,"id":null` + at,
		"id twice":          `{"v":1,"kind":"fence","epoch":3,"id":"a","id":"a"` + at,
	}
	for name, in := range bad {
		rec, err := DecodeRecord(42, []byte(in))
		var de *RecordDecodeError
		if !errors.As(err, &de) || de.Seq != 42 || de.Reason == "" {
			t.Errorf("%s: %+v, %v; want *RecordDecodeError at 42", name, rec, err)
		}
	}
	_, err := DecodeRecord(1, []byte(`{"v":1,"kind":"event","event":{"v":1,"type":"SessionIdle","data":{"x":1}}`+at))
	var ede *event.DecodeError
	if !errors.As(err, &ede) || ede.Kind != event.DecodeUnknownField {
		t.Errorf("event cause not exposed: %v", err)
	}
	_, err = DecodeRecord(1, []byte(`{"v":1,"kind":"event","loop_id":"l","event":{"v":1,"type":"OutputDelta","data":{"turn_id":"t","stream":"stdout","text":"x"}}`+at))
	if !errors.As(err, new(*event.EphemeralError)) {
		t.Errorf("ephemeral cause not exposed: %v", err)
	}
}

func TestEncodingIsStable(t *testing.T) {
	// The content (everything but the time) of a decoded record re-encodes
	// to the bytes that were written: the encoding is canonical.
	st := memstore.New()
	j := open(t, st, acquire(t, st), WithClock(func() time.Time { return base.In(time.FixedZone("X", 3600)) }))
	ctx := context.Background()
	j.AppendEvent(ctx, "l", event.TurnOutput{TurnID: "t", Text: "a && b <c>\x1b[0m\u2028 \xff"})
	j.AppendCommand(ctx, Command{Name: CommandRespondGate, LoopID: "l", GateID: "g", Action: "deny"})
	c, _ := st.Read(ctx, testName, 0)
	defer c.Close()
	for c.Next() {
		raw := c.Record()
		rec, err := DecodeRecord(raw.Seq, raw.Payload)
		if err != nil {
			t.Fatal(err)
		}
		content, err := contentOf(rec)
		if err != nil {
			t.Fatal(err)
		}
		full := string(appendAt(content, rec.At))
		if full != string(raw.Payload) {
			t.Errorf("re-encoding differs:\n%s\n%s", raw.Payload, full)
		}
		if !strings.HasSuffix(full, `"at":"2026-07-15T10:00:00Z"}`) {
			t.Errorf("time not UTC: %s", full)
		}
	}
}

// TestRecordsAsWritten pins the bytes the writer appends: the record format
// is durable, and removing idempotency ids changed nothing else of it.
func TestRecordsAsWritten(t *testing.T) {
	st := memstore.New()
	j := open(t, st, acquire(t, st), WithClock(func() time.Time { return base }))
	ctx := context.Background()
	if _, err := j.AppendEvent(ctx, "l", event.TurnStarted{TurnID: "t", Index: 1, Input: "ls <x>"}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.AppendEvent(ctx, "", event.SessionIdle{}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.AppendCommand(ctx, Command{Name: CommandSubmit, LoopID: "l", TurnID: "t", Input: "ls <x>"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"v":1,"kind":"fence","epoch":1` + at,
		`{"v":1,"kind":"event","loop_id":"l","event":{"v":1,"type":"TurnStarted","data":{"turn_id":"t","index":1,"input":"ls <x>"}}` + at,
		`{"v":1,"kind":"event","event":{"v":1,"type":"SessionIdle","data":{}}` + at,
		`{"v":1,"kind":"command","command":{"name":"submit","loop_id":"l","turn_id":"t","input":"ls <x>"}` + at,
	}
	c, err := st.Read(ctx, testName, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	for c.Next() {
		got = append(got, string(c.Record().Payload))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("records written:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOldRecordsWithIDsStayReadable: earlier versions could append records
// with an idempotency id ("id" after "kind"). A journal holding such records
// replays, and each decodes to the record it would be without its id; a new
// writer appends after them.
func TestOldRecordsWithIDsStayReadable(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	// Each record as an earlier version wrote it, and as it is without its id.
	old := [][2]string{
		{`{"v":1,"kind":"fence","epoch":1` + at, ""},
		{`{"v":1,"kind":"event","id":"e1","event":{"v":1,"type":"SessionStarted","data":{"title":"t","rig":"default","fingerprint":"f","manifest":{"engine":"shell"},"placement":"session","root":"/w"}}` + at,
			`{"v":1,"kind":"event","event":{"v":1,"type":"SessionStarted","data":{"title":"t","rig":"default","fingerprint":"f","manifest":{"engine":"shell"},"placement":"session","root":"/w"}}` + at},
		{`{"v":1,"kind":"event","id":"loop \u00e9\n","loop_id":"l","event":{"v":1,"type":"LoopStarted","data":{"loop_id":"l","name":"root","engine":"shell"}}` + at,
			`{"v":1,"kind":"event","loop_id":"l","event":{"v":1,"type":"LoopStarted","data":{"loop_id":"l","name":"root","engine":"shell"}}` + at},
		{`{"v":1,"kind":"command","id":"c1","command":{"name":"submit","loop_id":"l","input":"ls"}` + at,
			`{"v":1,"kind":"command","command":{"name":"submit","loop_id":"l","input":"ls"}` + at},
		{`{"v":1,"kind":"event","id":"","loop_id":"l","event":{"v":1,"type":"TurnOutput","data":{"turn_id":"t","text":"x\n"}}` + at,
			`{"v":1,"kind":"event","loop_id":"l","event":{"v":1,"type":"TurnOutput","data":{"turn_id":"t","text":"x\n"}}` + at},
	}
	var payloads [][]byte
	for _, o := range old {
		payloads = append(payloads, []byte(o[0]))
	}
	l1 := acquire(t, st)
	if err := st.Append(ctx, testName, 0, payloads...); err != nil {
		t.Fatal(err)
	}
	l1.Release(ctx)

	recs := readAll(t, st, 0)
	if len(recs) != len(old) {
		t.Fatalf("replayed %d records, want %d", len(recs), len(old))
	}
	for i, rec := range recs {
		without := old[i][1]
		if without == "" {
			without = old[i][0]
		}
		want, err := DecodeRecord(rec.Seq, []byte(without))
		if err != nil {
			t.Fatalf("record %d without its id: %v", rec.Seq, err)
		}
		if !reflect.DeepEqual(rec, want) {
			t.Errorf("record %d:\n got %+v\nwant %+v", rec.Seq, rec, want)
		}
	}

	// A later tenure opens, appends after them, and its records carry no id.
	j := open(t, st, acquire(t, st), WithClock(func() time.Time { return base }))
	seq, err := j.AppendEvent(ctx, "l", event.TurnDone{TurnID: "t"})
	if err != nil || seq != uint64(len(old)+2) {
		t.Fatalf("append after the old records: %d, %v", seq, err)
	}
	if recs := readAll(t, st, 0); len(recs) != len(old)+2 {
		t.Fatalf("%d records after the new tenure", len(recs))
	}
	c, _ := st.Read(ctx, testName, uint64(len(old)))
	defer c.Close()
	for c.Next() {
		if p := c.Record().Payload; strings.Contains(string(p), `"id"`) {
			t.Errorf("new record %d carries an id: %s", c.Record().Seq, p)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"kind":"fence","epoch":3` + at,
		`{"v":1,"kind":"event","id":"x","loop_id":"l","event":{"v":1,"type":"TurnStarted","data":{"turn_id":"t","index":1,"input":"i"}}` + at,
		`{"v":1,"kind":"event","event":{"v":1,"type":"RestoreDone","data":{"epoch":2,"interrupted":["t"],"gates_closed":[]}}` + at,
		`{"v":1,"kind":"command","command":{"name":"respond_gate","loop_id":"l","gate_id":"g","action":"approve"}` + at,
		`{"v":2,"kind":"fence","epoch":3` + at,
		`{"v":1,"kind":"checkpoint"` + at,
		`{"v":1,"kind":"event","id":"a\u00e9\ud83d\ude00\ud800x\"\\\/\b\f\n\r\t","loop_id":"l\xff","event":{"v":1,"type":"TurnOutput","data":{"turn_id":"t","text":"]}\"{[","elided":0}}` + at,
		` { "v" : 1 , "kind" : "fence" , "epoch" : 18446744073709551615 , "at" : "2026-07-15T10:00:00.123+02:00" } `,
		`{"v":1,"kind":"fence","epoch":1,"epoch":2` + at,
		`{"v":1,"KIND":"fence","epoch":1` + at,
		`{"v":1,"kind":"fence","epoch":01` + at,
		`{"v":1,"kind":"fence","epoch":1.0` + at,
		`{"v":1,"kind":"fence","epoch":1,"id":null` + at,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := DecodeRecord(7, b)
		ref, referr := decodeRecordStd(7, b)
		if err != nil {
			var de *RecordDecodeError
			if !errors.As(err, &de) || de.Seq != 7 {
				t.Fatalf("error %T %v", err, err)
			}
			if referr == nil {
				// Only encoding/json's leniencies may be refused; the
				// canonical form of what it accepted must be accepted.
				content, err := contentOf(ref)
				if err != nil {
					t.Fatalf("re-encode %+v: %v", ref, err)
				}
				if _, err := DecodeRecord(7, appendAt(content, ref.At)); err != nil {
					t.Fatalf("canonical form of %q refused: %v", b, err)
				}
			}
			return
		}
		if referr != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", b, referr)
		}
		if !reflect.DeepEqual(rec, ref) {
			t.Fatalf("differs from the reference decoder:\n%+v\n%+v", rec, ref)
		}
		// A decoded record re-encodes and decodes to the same record.
		content, err := contentOf(rec)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", rec, err)
		}
		rec2, err := DecodeRecord(7, appendAt(content, rec.At))
		if err != nil {
			t.Fatalf("decode of re-encoding: %v", err)
		}
		if !rec2.At.Equal(rec.At) {
			t.Fatalf("time %v != %v", rec2.At, rec.At)
		}
		rec2.At = rec.At
		if !reflect.DeepEqual(rec, rec2) {
			t.Fatalf("round trip:\n%+v\n%+v", rec, rec2)
		}
	})
}
