package search

import (
	"reflect"
	"testing"
)

// A stored state reads back whole, its head without decoding the rest;
// one cut short, of another format, or whose head disagrees with its body
// is refused (the index is then damaged, and rebuilt).
func TestStateEncoding(t *testing.T) {
	for _, s := range []*sessionState{
		{},
		{Seq: 166, Blocks: []uint64{1, 2, 3}, Open: 12, Lines: 10_000, Epoch: 2, Settled: true},
		{Seq: 1 << 40, Agents: map[string]bool{"loop": true}, Turn: "t", TurnIndex: 3, TurnAgent: true, Pending: "50%\r", Epoch: 1 << 33},
	} {
		v, err := encodeState(s)
		if err != nil {
			t.Fatal(err)
		}
		h, err := decodeStateHead(v)
		if err != nil || h.seq != s.Seq || h.epoch != s.Epoch || h.settled != s.Settled || h.s != nil {
			t.Fatalf("head of %+v: %+v, %v", s, h, err)
		}
		got, err := h.full()
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Errorf("state %+v read back as %+v, %v", s, got, err)
		}
		for n := range len(v) {
			if _, err := decodeState(v[:n]); err == nil {
				t.Errorf("state %+v cut to %d of %d bytes read back", s, n, len(v))
			}
		}
	}
	good, _ := encodeState(&sessionState{Seq: 5, Epoch: 2, Settled: true})
	lying := append([]byte(nil), good...)
	lying[1] = 6 // the head says seq 6, the body 5
	bad := map[string][]byte{
		"another format":                      append([]byte{'0'}, good[1:]...),
		"the old JSON":                        []byte(`{"seq":5,"lines":0,"epoch":2,"settled":true}`),
		"a head that disagrees with its body": lying,
	}
	for name, v := range bad {
		if _, err := decodeState(v); err == nil {
			t.Errorf("%s: read back", name)
		}
	}
}

// FuzzDecodeState: any bytes in a session's state (a damaged index file)
// decode or are refused, never panic; what decodes encodes back to a
// state that reads the same.
func FuzzDecodeState(f *testing.F) {
	for _, s := range []*sessionState{{}, {Seq: 166, Blocks: []uint64{1, 2}, Epoch: 2, Settled: true}} {
		v, _ := encodeState(s)
		f.Add(v)
	}
	f.Add([]byte(`{"seq":5}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		s, err := decodeState(v)
		if err != nil {
			return
		}
		again, err := encodeState(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeState(again)
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("%+v encoded back reads %+v, %v", s, back, err)
		}
	})
}
