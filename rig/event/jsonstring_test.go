package event

import (
	"bytes"
	"encoding/json"
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

// checkString holds the one string encoder to its two references:
// AppendString writes what encoding/json writes with HTML escaping off,
// appendJSONString what the journal writes (the same, then
// LiteralReplacement).
func checkString(t testing.TB, s string) {
	want := encodingJSON(t, s)
	if got := AppendString(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
	}
	if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("AppendString(x, %q) = %s", s, got)
	}
	want = LiteralReplacement(want)
	if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range append(hardStrings, "<a>&b", "q\"b\\", "\x00\x1f\x7f", "é😀", "é<&>", "\"<script>\"", "\\ufffd\xff") {
		checkString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range hardStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkString(t, s) })
}
