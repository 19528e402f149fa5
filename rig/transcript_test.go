package rig

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"looprig/rig/event"
)

// published is what a session publishes for its turns, in order: every
// event of a turn as the runtime makes them (deltas as the engine writes,
// checkpoints holding everything produced since the last one, the end).
type published struct {
	evs []event.Envelope
	out map[string][]byte // each turn's whole output
}

// publishTurns makes the events of len(outs) turns printing outs, chunked
// and checkpointed at random, with sequence numbers on the durable ones.
func publishTurns(rng *rand.Rand, outs [][]byte) published {
	p := published{out: map[string][]byte{}}
	seq := uint64(0)
	durable := func(ev event.Event) {
		seq++
		p.evs = append(p.evs, event.Envelope{Seq: seq, Event: ev})
	}
	for n, out := range outs {
		id := fmt.Sprintf("turn-%d", n)
		p.out[id] = out
		durable(event.TurnStarted{TurnID: id, Index: n})
		produced, checkpointed := 0, 0
		checkpoint := func() {
			if produced > checkpointed {
				durable(event.TurnOutput{TurnID: id, Offset: int64(checkpointed), Text: string(out[checkpointed:produced])})
				checkpointed = produced
			}
		}
		for produced < len(out) {
			n := runeCutBytes(out[produced:], 1+rng.IntN(40))
			p.evs = append(p.evs, event.Envelope{Event: event.OutputDelta{TurnID: id, Stream: event.StreamStdout,
				Offset: int64(produced), Text: string(out[produced : produced+n])}})
			produced += n
			if rng.IntN(4) == 0 {
				checkpoint()
			}
		}
		checkpoint()
		durable(event.TurnDone{TurnID: id})
	}
	return p
}

// runeCutBytes is how many of b's first n bytes (at least one rune) can be
// taken without splitting a rune.
func runeCutBytes(b []byte, n int) int {
	if n >= len(b) {
		return len(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	if n == 0 {
		_, n = utf8.DecodeRune(b)
	}
	return n
}

// deliver is what one reader may get of p: it attaches after the durable
// event at index attach (-1: from the start), reads the durable events
// after it from the journal, and the live events from a subscription
// opened at index subscribed (at or before the journal read's end); it
// loses its subscription at random (reading the journal again from its
// last durable event, the deltas published meanwhile gone), drops deltas
// at random, and gets the deltas of its subscription late at random
// (after durable events published after them, read from the journal).
// Durable events it gets more than once are skipped, as a Follower does.
func deliver(rng *rand.Rand, p published, attach int) []event.Envelope {
	var got []event.Envelope
	var last uint64
	if attach >= 0 {
		last = p.evs[attach].Seq
	}
	emit := func(env event.Envelope) {
		if env.Seq != 0 {
			if env.Seq <= last {
				return
			}
			last = env.Seq
		}
		got = append(got, env)
	}
	i := attach + 1 // the next published event the live part delivers
	for i < len(p.evs) {
		// A subscription opens at sub, then the journal is read up to a
		// point at or after it; the subscription's deltas published
		// before that point come after it.
		sub := i + rng.IntN(len(p.evs)-i+1)
		readTo := sub + rng.IntN(len(p.evs)-sub+1)
		var late []event.Envelope
		for j := i; j < readTo; j++ {
			env := p.evs[j]
			switch {
			case env.Seq != 0:
				emit(env)
			case j >= sub && rng.IntN(5) != 0:
				late = append(late, env)
			}
		}
		for _, env := range late {
			emit(env)
		}
		// Live from readTo, until the subscription is lost (or not).
		end := len(p.evs)
		if rng.IntN(2) == 0 {
			end = readTo + rng.IntN(len(p.evs)-readTo+1)
		}
		for j := readTo; j < end; j++ {
			if env := p.evs[j]; env.Seq != 0 || rng.IntN(6) != 0 {
				emit(env)
			}
		}
		i = end
	}
	return got
}

// transcribe feeds evs to a Transcript and returns each turn's output
// passed on, checking that its chunks follow each other.
func transcribe(t *testing.T, evs []event.Envelope) (out map[string][]byte, first map[string]int64) {
	t.Helper()
	var tr Transcript
	out, first = map[string][]byte{}, map[string]int64{}
	for _, env := range evs {
		c, ok := tr.Apply(env.Event)
		if !ok {
			continue
		}
		if _, seen := out[c.TurnID]; !seen {
			first[c.TurnID] = c.Offset
		}
		if want := first[c.TurnID] + int64(len(out[c.TurnID])); c.Offset != want {
			t.Fatalf("turn %s: chunk at offset %d, after %d bytes passed on from %d", c.TurnID, c.Offset, len(out[c.TurnID]), first[c.TurnID])
		}
		out[c.TurnID] = append(out[c.TurnID], c.Text...)
	}
	return out, first
}

// checkTranscript checks what a reader that attached at attach made of p:
// a turn it saw start, whole; a turn it joined, from where it joined to
// the end; nothing twice, nothing missing, nothing of another turn.
func checkTranscript(t *testing.T, p published, attach int, evs []event.Envelope) {
	t.Helper()
	out, first := transcribe(t, evs)
	started := map[string]bool{}
	for _, env := range p.evs[attach+1:] {
		if ts, ok := env.Event.(event.TurnStarted); ok {
			started[ts.TurnID] = true
		}
	}
	for id, whole := range p.out {
		got, seen := out[id]
		switch {
		case started[id] && len(whole) > 0 && !seen:
			t.Fatalf("attach %d: turn %s: nothing passed on, want %q", attach, id, whole)
		case !seen:
			continue
		case started[id] && first[id] != 0:
			t.Fatalf("attach %d: turn %s started after the attach, but its output begins at %d", attach, id, first[id])
		}
		if want := whole[first[id]:]; !bytes.Equal(got, want) {
			t.Fatalf("attach %d: turn %s from %d:\n got %q\nwant %q", attach, id, first[id], got, want)
		}
	}
}

// The transcript of a reader equals the journal's output exactly, for
// every attach point (checkpoint boundaries included), any chunking, lost
// subscriptions, dropped and late deltas.
func FuzzTranscript(f *testing.F) {
	f.Add([]byte("line 1\nline 2\nline 3\n"), uint64(1))
	f.Add([]byte(strings.Repeat("ünïcødé 😀 \x1b[31mred\x1b[0m\r\n", 20)), uint64(7))
	f.Add([]byte(""), uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		text := data // any bytes: output is not always UTF-8
		// Up to three turns sharing the text in pieces.
		var outs [][]byte
		for rest := text; ; {
			n := rng.IntN(len(rest) + 1)
			n = runeCutBytes(rest, n)
			outs = append(outs, rest[:n])
			rest = rest[n:]
			if len(rest) == 0 || len(outs) == 3 {
				outs[len(outs)-1] = append(outs[len(outs)-1], rest...)
				break
			}
		}
		p := publishTurns(rng, outs)
		for attach := -1; attach < len(p.evs); attach++ {
			if attach >= 0 && p.evs[attach].Seq == 0 {
				continue // attach points are durable sequences
			}
			checkTranscript(t, p, attach, deliver(rng, p, attach))
		}
	})
}

// Many random runs of what FuzzTranscript checks, in every test run.
func TestTranscriptRandom(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		outs := make([][]byte, 1+rng.IntN(3))
		for i := range outs {
			for range rng.IntN(30) {
				outs[i] = fmt.Appendf(outs[i], "line %d of turn %d: ünï %s\n", rng.IntN(1000), i, strings.Repeat("x", rng.IntN(50)))
			}
		}
		p := publishTurns(rng, outs)
		for attach := -1; attach < len(p.evs); attach++ {
			if attach >= 0 && p.evs[attach].Seq == 0 {
				continue
			}
			for range 3 {
				checkTranscript(t, p, attach, deliver(rng, p, attach))
			}
		}
	}
}

// A journal written before offsets existed (every checkpoint at offset 0)
// reads whole, its checkpoints one after the other.
func TestTranscriptLegacyCheckpoints(t *testing.T) {
	var tr Transcript
	var got strings.Builder
	for _, ev := range []event.Event{
		event.TurnStarted{TurnID: "a"},
		event.TurnOutput{TurnID: "a", Text: "one\n"},
		event.TurnOutput{TurnID: "a", Text: "two\n"},
		event.TurnOutput{TurnID: "a", Elided: 5},
		event.TurnDone{TurnID: "a"},
	} {
		if c, ok := tr.Apply(ev); ok {
			got.WriteString(c.Text)
		}
	}
	if got.String() != "one\ntwo\n" || tr.Elided() != 5 {
		t.Fatalf("got %q, elided %d", got.String(), tr.Elided())
	}
}
