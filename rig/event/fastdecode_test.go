package event

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sameAsDecode fails t unless DecodeFast(r) is r.Decode(): the same event,
// or errors of the same kind, fields and message.
func sameAsDecode(t testing.TB, r Raw) {
	t.Helper()
	got, gerr := DecodeFast(r)
	want, werr := r.Decode()
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s %q: error %v, want %v", r.Type, r.Data, gerr, werr)
	}
	if werr != nil {
		var g, w *DecodeError
		if !errors.As(gerr, &g) || !errors.As(werr, &w) {
			t.Fatalf("%s %q: error %T, want %T", r.Type, r.Data, gerr, werr)
		}
		if g.Kind != w.Kind || g.Version != w.Version || g.Type != w.Type || g.Detail != w.Detail || gerr.Error() != werr.Error() {
			t.Fatalf("%s %q: error %#v, want %#v", r.Type, r.Data, g, w)
		}
		if got != nil {
			t.Fatalf("%s %q: event %#v with the error", r.Type, r.Data, got)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %q: %#v, want %#v", r.Type, r.Data, got, want)
	}
}

// hotTexts are output texts with everything a string encoding may hold.
var hotTexts = []string{
	"", "1\n2\n3\n", "plain", "a \"q\" \\ / <b>&", "\u2028\u2029", "\x00\x01\x1f\x7f\t\r\b\f",
	"ünïcødé 😀 \x1b[31mred\x1b[0m", "bad \xff\xfe utf8 \xe2\x80", "\ufffd", strings.Repeat("12345\n", 5000),
}

// Marshal's data of the hot events takes the fast path, to the strict
// path's value.
func TestDecodeFastTakesMarshalOutput(t *testing.T) {
	for _, text := range hotTexts {
		for _, ev := range []Event{
			OutputDelta{TurnID: "t1", Stream: StreamStdout, Text: text},
			OutputDelta{TurnID: text, Stream: StreamStderr, Offset: 1 << 50, Text: text},
			TurnOutput{TurnID: "t1", Offset: 65536, Text: text, Elided: 1 << 40},
			TurnOutput{TurnID: text, Text: text, Elided: -7},
			TurnOutput{Text: text},
		} {
			b, err := Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			r := strictRaw(t, b)
			if _, ok := decodeDataFast(r.Type, r.Data); !ok {
				t.Errorf("fast path refused %s", r.Data)
			}
			sameAsDecode(t, r)
		}
	}
}

func strictRaw(t testing.TB, b []byte) Raw {
	var r Raw
	if err := strictDecode(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Data not exactly Marshal's goes the strict way, to its value or error.
func TestDecodeFastFallsBack(t *testing.T) {
	for _, c := range []struct {
		typ  Type
		data string
		fast bool // the fast path takes it
	}{
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","offset":0,"text":"a\/b\u00e9\u0000\uFFFD"}`, true},
		{TypeTurnOutput, `{"turn_id":"t","offset":12,"text":"x","elided":-0}`, true},
		{TypeTurnOutput, "{\"turn_id\":\"\xff\",\"offset\":0,\"text\":\"a\xffb\xe2\x80\\n\xc3\",\"elided\":0}", true}, // invalid UTF-8: U+FFFD
		{TypeTurnOutput, `{"turn_id":"t","offset":9223372036854775807,"text":"x","elided":9223372036854775807}`, true},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdin","offset":3,"text":"x"}`, true},   // the strict path reports it
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","offset":-1,"text":"x"}`, true}, // so it does a negative offset
		// Records written before offsets existed take the strict path.
		{TypeTurnOutput, `{"turn_id":"t","text":"x","elided":0}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"x"}`, false},
		{TypeTurnOutput, `{"turn_id":"t","offset":01,"text":"x","elided":0}`, false},
		{TypeTurnOutput, `{"turn_id":"t","offset":1.5,"text":"x","elided":0}`, false},
		{TypeOutputDelta, `{"stream":"stdout","turn_id":"t","text":"x"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"x"} `, false},
		{TypeOutputDelta, `{"turn_id":"t", "stream":"stdout","text":"x"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","Text":"x"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"x","text":"y"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"\ud83d\ude00"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"\ud83d"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"\x"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"` + "\x01" + `"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"x}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"\u12"}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout","text":"x"}}`, false},
		{TypeOutputDelta, `{"turn_id":"t","stream":"stdout"}`, false},
		{TypeTurnOutput, `{"turn_id":"t","text":"x","elided":01}`, false},
		{TypeTurnOutput, `{"turn_id":"t","text":"x","elided":1.0}`, false},
		{TypeTurnOutput, `{"turn_id":"t","text":"x","elided":1e3}`, false},
		{TypeTurnOutput, `{"turn_id":"t","text":"x","elided":-}`, false},
		{TypeTurnOutput, `{"turn_id":"t","text":"x","elided":9223372036854775808}`, false},
		{TypeTurnOutput, `{"turn_id":"t","text":"x","elided":1,"elided":2}`, false},
		{TypeTurnOutput, `{"turn_id":"t","text":"x"}`, false},
		{TypeTurnDone, `{"turn_id":"t","exit_code":0,"duration_ms":1}`, false},
	} {
		_, ok := decodeDataFast(c.typ, []byte(c.data))
		if ok != c.fast {
			t.Errorf("%s %s: fast path %v, want %v", c.typ, c.data, ok, c.fast)
		}
		sameAsDecode(t, Raw{V: Version, Type: c.typ, Data: []byte(c.data)})
	}
	sameAsDecode(t, Raw{V: 2, Type: TypeOutputDelta, Data: []byte(`{"turn_id":"t","stream":"stdout","text":"x"}`)})
}

// For any data of any type, DecodeFast is Decode.
func FuzzDecodeFast(f *testing.F) {
	for _, ev := range samples() {
		b, _ := Marshal(ev)
		var r Raw
		if strictDecode(b, &r) == nil {
			f.Add(string(r.Type), []byte(r.Data))
		}
	}
	for _, text := range hotTexts[:len(hotTexts)-1] {
		for _, ev := range []Event{OutputDelta{TurnID: "t", Stream: StreamStdout, Text: text}, TurnOutput{TurnID: "t", Text: text, Elided: 3}} {
			b, _ := Marshal(ev)
			i := bytes.Index(b, []byte(`"data":`))
			f.Add(string(ev.Type()), b[i+len(`"data":`):len(b)-1])
		}
	}
	f.Add(string(TypeOutputDelta), []byte(`{"turn_id":"t","stream":"stdout","text":"\ud83d\ude00\u00E9\/"}`))
	f.Add(string(TypeTurnOutput), []byte(`{"turn_id":"t","text":"x","elided":-0}`))
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		sameAsDecode(t, Raw{V: Version, Type: Type(typ), Data: data})
	})
}

// BenchmarkDecodeFast: DecodeFast against Decode on a seq turn's hot
// events (a 32 KiB delta, a 64 KiB checkpoint).
func BenchmarkDecodeFast(b *testing.B) {
	var text strings.Builder
	for i := 1; text.Len() < 64<<10; i++ {
		text.WriteString(strings.Repeat("7", i%7+1))
		text.WriteByte('\n')
	}
	for _, ev := range []Event{
		OutputDelta{TurnID: "1f8198b4-c807-474e-bda9-4a21eb18ae40", Stream: StreamStdout, Text: text.String()[:32<<10]},
		TurnOutput{TurnID: "1f8198b4-c807-474e-bda9-4a21eb18ae40", Text: text.String()},
	} {
		m, err := Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		r := strictRaw(b, m)
		for _, impl := range []struct {
			name string
			f    func(Raw) (Event, error)
		}{{"strict", Raw.Decode}, {"fast", DecodeFast}} {
			b.Run(string(ev.Type())+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(r.Data)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.f(r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
