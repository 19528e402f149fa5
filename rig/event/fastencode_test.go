package event

import (
	"bytes"
	"encoding/json"
	"testing"
)

// slowData is the data AppendTo writes through encoding/json.
func slowData(t testing.TB, ev Event) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		t.Fatal(err)
	}
	return LiteralReplacement(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func checkFast(t testing.TB, ev Event) {
	var fast bytes.Buffer
	if !appendDataFast(&fast, ev) {
		t.Fatalf("appendDataFast refused %#v", ev)
	}
	if want := slowData(t, ev); !bytes.Equal(fast.Bytes(), want) {
		t.Fatalf("appendDataFast(%#v)\n = %q\nencoding/json writes %q", ev, fast.Bytes(), want)
	}
}

func TestAppendDataFastMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "line\n", "\t\r\b\f\x00\x1f\x7f", `quote " back \ slash`, "<a href='x'>&amp;</a>",
		"é ü 日本 😀", "\u2028\u2029", "bad \xff \xc3 utf8 \xed\xa0\x80", "\uFFFD literal", "\x1b[31mred\x1b[0m"} {
		checkFast(t, TurnOutput{TurnID: s, Text: s + s, Elided: int64(len(s)) - 3})
		checkFast(t, OutputDelta{TurnID: s, Stream: s, Offset: int64(len(s)) << 30, Text: s + s})
	}
	var buf bytes.Buffer
	if appendDataFast(&buf, TurnStarted{TurnID: "t"}) || buf.Len() != 0 {
		t.Error("appendDataFast answered for TurnStarted")
	}
}

func FuzzAppendDataFast(f *testing.F) {
	f.Add("0f8fad5b-d9cb-469f-a165-70867728950e", "output line\n", int64(0))
	f.Add("\xff", "\u2028<>&\"\\\x00", int64(-1))
	f.Fuzz(func(t *testing.T, id, text string, elided int64) {
		checkFast(t, TurnOutput{TurnID: id, Text: text, Elided: elided})
		checkFast(t, OutputDelta{TurnID: id, Stream: text, Offset: elided, Text: text})
	})
}
