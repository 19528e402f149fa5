package journal

import (
	"encoding/json"
	"reflect"
	"testing"

	"looprig/rig/event"
)

// decodeFast must agree with event.Raw.Decode wherever it answers, and
// leave everything unusual to it.
func TestDecodeFastAgreesWithRawDecode(t *testing.T) {
	cases := []string{
		`{"turn_id":"t","text":"hello\n","elided":0}`,
		`{"turn_id":"t","offset":4096,"text":"hello\n","elided":0}`,
		`{"offset":-1,"turn_id":"t"}`,
		`{"offset":1,"offset":2}`,
		`{"text":"x","turn_id":"t","elided":12}`,
		`{"turn_id":"t"}`,
		`{}`,
		` { "turn_id" : "t" , "text" : "a\"b\\c\u00e9\ud83d\ude00\ud800" , "elided" : 3 } `,
		"{\"turn_id\":\"t\",\"text\":\"bad \xff utf8\",\"elided\":0}",
		`{"turn_id":"t","text":"x","elided":-1}`,
		`{"turn_id":"t","text":"x","elided":1e3}`,
		`{"turn_id":"t","text":"x","elided":01}`,
		`{"Turn_ID":"t"}`,
		`{"turn_id":"t","turn_id":"u"}`,
		`{"turn_id":null}`,
		`{"turn_id":"t","extra":1}`,
		`{"turn_id":"t","text":"x","elided":9223372036854775808}`,
		"{\"text\":\"ctl \x01\"}",
		`{"turn_id":"t"} x`,
		`[]`,
	}
	for _, data := range cases {
		raw := &event.Raw{V: event.Version, Type: event.TypeTurnOutput, Data: []byte(data)}
		want, werr := raw.Decode()
		got, ok := decodeFast(raw)
		if !ok {
			continue
		}
		if werr != nil {
			t.Errorf("%s: decodeFast accepted what Raw.Decode refuses (%v)", data, werr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decodeFast = %#v, Raw.Decode = %#v", data, got, want)
		}
	}
	// What the codec writes takes the fast path: a TurnOutput with its
	// offset (the whole of a rebuild's reading went through encoding/json
	// while the offset was unknown here).
	raw, err := event.Marshal(event.TurnOutput{TurnID: "t", Offset: 1 << 40, Text: "out\n", Elided: 2})
	if err != nil {
		t.Fatal(err)
	}
	var r event.Raw
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if got, ok := decodeFast(&r); !ok || got != (event.TurnOutput{TurnID: "t", Offset: 1 << 40, Text: "out\n", Elided: 2}) {
		t.Errorf("decodeFast of %s = %#v, %v; want the event, on the fast path", r.Data, got, ok)
	}
	if _, ok := decodeFast(&event.Raw{V: event.Version, Type: event.TypeTurnStarted, Data: []byte(`{}`)}); ok {
		t.Error("decodeFast answered for a type it does not know")
	}
}

// FuzzDecodeFast: wherever decodeFast answers, Raw.Decode agrees.
func FuzzDecodeFast(f *testing.F) {
	f.Add(`{"turn_id":"t","text":"hello\n","elided":0}`)
	f.Add(`{"text":"a\u0041\ud83d","elided":7}`)
	f.Add(`{"turn_id":"t","offset":4096,"text":"x","elided":0}`)
	f.Fuzz(func(t *testing.T, data string) {
		raw := &event.Raw{V: event.Version, Type: event.TypeTurnOutput, Data: []byte(data)}
		got, ok := decodeFast(raw)
		if !ok {
			return
		}
		want, err := raw.Decode()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeFast = %#v, Raw.Decode = %#v, %v", data, got, want, err)
		}
	})
}
