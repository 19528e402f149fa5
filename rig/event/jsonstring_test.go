package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// encodingJSON is s as encoding/json writes it with HTML escaping off.
func encodingJSON(t testing.TB, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// escapeControlsRef is the reference of the terminal controls' escapes:
// every C1 control and bidi control of the JSON text b, rune by rune, as
// \uXXXX.
func escapeControlsRef(b []byte) []byte {
	var out strings.Builder
	for _, r := range string(b) {
		if (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			fmt.Fprintf(&out, "\\u%04x", r)
			continue
		}
		out.WriteRune(r)
	}
	return []byte(out.String())
}

// checkString holds the one string encoder to its two references:
// AppendString writes what encoding/json writes with HTML escaping off,
// the terminal controls escaped; appendJSONString what the journal writes
// (what encoding/json writes, then LiteralReplacement). And
// EscapeTerminalControls makes encoding/json's string AppendString's.
func checkString(t testing.TB, s string) {
	plain := encodingJSON(t, s) // valid UTF-8: encoding/json escapes invalid bytes
	want := escapeControlsRef(plain)
	if got := AppendString(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
	}
	if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("AppendString(x, %q) = %s", s, got)
	}
	if got := EscapeTerminalControls(plain); !bytes.Equal(got, want) {
		t.Fatalf("EscapeTerminalControls(%s) = %s, want %s", plain, got, want)
	}
	journal := LiteralReplacement(plain)
	if got := appendJSONString(nil, s); !bytes.Equal(got, journal) {
		t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, journal)
	}
	if got, want := EscapeTerminalControls(journal), LiteralReplacement(want); !bytes.Equal(got, want) {
		t.Fatalf("EscapeTerminalControls(%s) = %s, want %s", journal, got, want)
	}
}

// terminalControls are strings with C1 and bidi controls, beside their
// neighbours that are not controls.
var terminalControls = []string{
	"\u0080\u0085\u009b31m\u009f", "\u007f\u00a0", "rev\u202ecba\u202c", "\u202a\u202b\u202d\u2029\u2066\u2067\u2068\u2069\u206a",
	"\u2029\u202f\u2065", "\xc2", "\xe2\x80", "\xe2\xc2\x85", "é\u0085😀\u202e",
}

func TestAppendString(t *testing.T) {
	for _, s := range append(append(hardStrings, terminalControls...), "<a>&b", "q\"b\\", "\x00\x1f\x7f", "é😀", "é<&>", "\"<script>\"", "\\ufffd\xff") {
		checkString(t, s)
	}
}

// AppendString escapes every C1 control and bidi control, as \u escapes
// that decode to the same string; a terminal shows JSON with none of them.
func TestAppendStringEscapesTerminalControls(t *testing.T) {
	for s, want := range map[string]string{
		"a\u0085b":                 `"a\u0085b"`,
		"\u009b2J":                 `"\u009b2J"`,
		"x\u202ey":                 `"x\u202ey"`,
		"\u2066\u2067\u2068\u2069": `"\u2066\u2067\u2068\u2069"`,
		"\u202a\u202b\u202c\u202d": `"\u202a\u202b\u202c\u202d"`,
		"\u00a0\u2065\u206a":       "\"\u00a0\u2065\u206a\"", // not controls
	} {
		got := AppendString(nil, s)
		if string(got) != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("AppendString(%q) = %s decodes to %q, %v", s, got, back, err)
		}
	}
}

// EscapeTerminalControls escapes the controls of a whole JSON text in
// place, keeps it valid, and returns its argument when there is nothing
// to escape.
func TestEscapeTerminalControls(t *testing.T) {
	v := map[string]any{"title\u202e": "evil\u202etxt.exe", "n": []any{"\u0085", 1.5, "é"}}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got := EscapeTerminalControls(b)
	if bytes.Contains(got, []byte("\u202e")) || bytes.Contains(got, []byte("\u0085")) {
		t.Fatalf("EscapeTerminalControls left a control: %s", got)
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil || fmt.Sprint(back) != fmt.Sprint(v) {
		t.Fatalf("%s decodes to %v, %v; want %v", got, back, err, v)
	}
	plain := []byte(`{"a":"é 日本 \u2028"}`)
	if got := EscapeTerminalControls(plain); &got[0] != &plain[0] {
		t.Error("EscapeTerminalControls copied a text with nothing to escape")
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range append(hardStrings, terminalControls...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkString(t, s) })
}
