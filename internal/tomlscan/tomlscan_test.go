package tomlscan

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// What looprig's files and TOML's grammar hold passes.
var good = map[string]string{
	"config": `# looprig
default_profile = "work"
theme = "dark"
notify_after = "90s"

[profiles.work]
engine = "shell"
placement = "exclusive"
root = "project"            # relative to this file
gate_policy = [
  "rm -rf",
  "sudo",   # a comment inside the array
  "[ -f x ] && {",
]
seed = '~/seed'

[profiles."quiet.demo"]
engine = "demo"
gate_policy = []
`,
	"theme": `name = "ocean"
base = "dark"
dark = true

[colors]
accent = { truecolor = "#5fafff", ansi256 = "75", ansi16 = "12" }
text   = "#d0d0d0 252 7"   # short form
`,
	"grammar": `a.b . "c.d".'e' = 1
"" = 2
x = """
multi "line" {{{{ [[[[ \"""
still"""
y = '''it's {not [ a table'''
z = """ends with two quotes"""""
w = [[1, 2], [3, [4, {k = "v"}]], ]
t = { p.q = 1, r = [ ] }
date = 1979-05-27 07:32:00Z
time = 07:32:00
num = +1_000.5e-3
hex = 0xDEAD_BEEF
s = "tab\t quote\" backslash\\"
[[fruits]]
name = "apple"
[[fruits]]
[ spaced . "header" ]
`,
}

func TestAcceptsGoodDocuments(t *testing.T) {
	for name, doc := range good {
		if err := Check([]byte(doc), Default); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		var v map[string]any
		if _, err := toml.Decode(doc, &v); err != nil {
			t.Errorf("%s is not TOML: %v", name, err)
		}
	}
}

// The shapes that cost the decoder gigabytes, and the other limits, are
// refused at their line.
func TestRefuses(t *testing.T) {
	cases := []struct {
		name, doc string
		line      int
		reason    string
	}{
		{"nested inline tables, 40 KB", "# hostile\n" + nestedInline(40<<10), 2, "nested deeper than 8"},
		{"nested arrays", "a = " + strings.Repeat("[", 9) + strings.Repeat("]", 9), 1, "nested deeper than 8"},
		{"nested over lines", "a = [\n[\n[[[[[[[]]]]]]]\n]\n]", 3, "nested deeper than 8"},
		{"a dotted key, 200 KB", "x = 1\n" + dottedKey(200<<10), 2, "more than 8 dotted parts"},
		{"a dotted header", "[" + strings.Repeat("a.", 8) + "a]", 1, "more than 8 dotted parts"},
		{"dotted keys in an inline table", "t = {" + strings.Repeat("a.", 9) + "a = 1}", 1, "more than 8 dotted parts"},
		{"a long key", strings.Repeat("k", 300) + " = 1", 1, "longer than 256 bytes"},
		{"a long quoted key", `"` + strings.Repeat("k", 300) + `" = 1`, 1, "longer than 256 bytes"},
		{"many keys", manyKeys(2_001), 2_001, "more than 2000 keys and values"},
		{"many elements", "a = [" + strings.Repeat("1,", 2_000) + "]", 1, "more than 2000 keys and values"},
		{"after a multi-line string", "s = '''\n\n'''\n" + nestedInline(200), 4, "nested deeper"},
	}
	for _, c := range cases {
		err := Check([]byte(c.doc), Default)
		var se *ShapeError
		if !errors.As(err, &se) || se.Line != c.line || !strings.Contains(se.Reason, c.reason) {
			t.Errorf("%s: %v, want line %d: %q", c.name, err, c.line, c.reason)
		}
	}
}

// A brace inside a string or a comment is not nesting.
func TestStringsAndCommentsDoNotNest(t *testing.T) {
	deep := strings.Repeat("{[", 40)
	for _, doc := range []string{
		`a = "` + deep + `"`, `a = '` + deep + `'`, "a = \"\"\"\n" + deep + "\n\"\"\"", "a = '''" + deep + "'''",
		"# " + deep, "a = [ # " + deep + "\n 1 ]", `a = "\"` + deep + `"`,
	} {
		if err := Check([]byte(doc), Default); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

func nestedInline(size int) string {
	n := size / 7
	return "a = " + strings.Repeat("{ a = ", n) + "1" + strings.Repeat("}", n) + "\n"
}

func dottedKey(size int) string { return strings.Repeat("a.", size/2) + "a = 1\n" }

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d = %d\n", i, i)
	}
	return b.String()
}

// Check allocates nothing but its error (a handful of small objects),
// whatever the document.
func TestCheckDoesNotAllocate(t *testing.T) {
	for _, doc := range []string{nestedInline(40 << 10), dottedKey(200 << 10), manyKeys(3000), good["grammar"]} {
		b := []byte(doc)
		if n := testing.AllocsPerRun(10, func() { Check(b, Default) }); n > 5 {
			t.Errorf("Check of %d bytes: %v allocations", len(b), n)
		}
	}
}

// What the limits let through costs the decoder little: the worst shapes
// within them (as many keys and values as they allow, each as deep or as
// long as they allow) decode allocating at most 32 MiB.
func TestWorstWithinLimitsDecodesCheaply(t *testing.T) {
	parts := strings.Repeat("abcdefghij.", Default.KeyParts-1)
	var deep, dotted, tables strings.Builder
	for i := 0; deep.Len() < 1<<20 && i < Default.Values/Default.Depth; i++ {
		fmt.Fprintf(&deep, "k%d = %s1%s\n", i, strings.Repeat("{a=", Default.Depth-1), strings.Repeat("}", Default.Depth-1))
	}
	for i := 0; dotted.Len() < 1<<20 && i < Default.Values-1; i++ {
		fmt.Fprintf(&dotted, "%sk%d = 1\n", parts, i)
	}
	for i := 0; tables.Len() < 1<<20 && i < Default.Values/2-1; i++ {
		fmt.Fprintf(&tables, "[%sk%d]\n%sx = 1\n", parts, i, parts)
	}
	for name, doc := range map[string]string{"deep": deep.String(), "dotted": dotted.String(), "tables": tables.String()} {
		if err := Check([]byte(doc), Default); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var v map[string]any
		if _, err := toml.Decode(doc, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes decode allocating %.1f MB", name, len(doc), float64(alloc)/1e6)
		if alloc > 32<<20 {
			t.Errorf("%s: %d bytes decode allocating %d bytes", name, len(doc), alloc)
		}
	}
}

// FuzzCheck: whatever the document, and whichever byte-order mark the
// decoder skips it starts with (or none), Check refuses it at a line of
// it, or it decodes at a cost linear in its size.
func FuzzCheck(f *testing.F) {
	for _, doc := range good {
		f.Add([]byte(doc))
	}
	f.Add([]byte(nestedInline(200)))
	f.Add([]byte("a = \"\"\"x\\\n\"\"\"\n[b]\nc.d = [{e = 1}]"))
	for _, m := range Marks {
		f.Add(append(bytes.Clone(m), nestedInline(4<<10)...)) // the mark twice, below
		f.Add(append(bytes.Clone(m), good["config"]...))
	}
	f.Add([]byte("key: " + nestedInline(200)))
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkThenDecode(t, doc)
		for _, m := range Marks {
			checkThenDecode(t, append(bytes.Clone(m), doc...))
		}
	})
}

// checkThenDecode fails t unless Check refuses doc at one of its lines or
// doc decodes allocating at most 4 KiB a byte.
func checkThenDecode(t *testing.T, doc []byte) {
	t.Helper()
	err := Check(doc, Default)
	var se *ShapeError
	if err != nil && (!errors.As(err, &se) || se.Line < 1 || se.Line > strings.Count(string(doc), "\n")+1) {
		t.Fatalf("Check: %v", err)
	}
	if err != nil {
		return
	}
	// What Check lets through decodes at a cost linear in its size.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var v map[string]any
	toml.Decode(string(doc), &v)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4096*uint64(len(doc)+64) {
		t.Fatalf("%d bytes (%q…) decode allocating %d bytes", len(doc), doc[:min(len(doc), 16)], alloc)
	}
}

// TestMarksAreTheDecoders: the decoder reads a document past each of
// Marks, and past no other byte-order mark (a decoder that skipped
// another would read past where Check stops: Marks would have to hold it).
func TestMarksAreTheDecoders(t *testing.T) {
	for _, m := range Marks {
		var v map[string]any
		if _, err := toml.Decode(string(m)+"a = 1\n", &v); err != nil || v["a"] != int64(1) {
			t.Errorf("the decoder does not skip the mark % x: %v, %v", m, v, err)
		}
		if err := Check(append(bytes.Clone(m), good["config"]...), Default); err != nil {
			t.Errorf("Check refuses a good document after the mark % x: %v", m, err)
		}
	}
	others := map[string]string{
		"UTF-32LE": "\xff\xfe\x00\x00", "UTF-32BE": "\x00\x00\xfe\xff", "UTF-8 twice": "\xef\xbb\xbf\xef\xbb\xbf",
		"UTF-16LE then UTF-8": "\xff\xfe\xef\xbb\xbf", "UTF-7": "+/v8", "UTF-1": "\xf7\x64\x4c", "UTF-EBCDIC": "\xdd\x73\x66\x73",
		"SCSU": "\x0e\xfe\xff", "BOCU-1": "\xfb\xee\x28", "GB 18030": "\x84\x31\x95\x33",
	}
	for name, m := range others {
		var v map[string]any
		if _, err := toml.Decode(m+"a = 1\n", &v); err == nil {
			t.Errorf("the decoder reads a document past a %s mark (% x): add it to Marks", name, m)
		}
		if err := Check([]byte(m+nestedInline(200)), Default); err == nil {
			t.Errorf("Check lets nesting after a %s mark (% x) through", name, m)
		}
	}
}

// TestRefusesWhatItCannotFollow: where Check cannot follow a document
// before its end, it refuses it there, at its line, saying what it
// expected and found; a mistake at the very end, after which nothing is
// left unread, is the decoder's to report.
func TestRefusesWhatItCannotFollow(t *testing.T) {
	for _, c := range []struct{ doc, reason string }{
		{"a = 1\nkey: value\n", "expected '=' after a key, found ':'"},
		{"a = 1\n[table\nb = 2\n", "expected ']' to close a table header, found the end of the line"},
		{"a = 1\n[[tables]\nb = 2\n", "expected ']]' to close an array-of-tables header"},
		{"a = 1\ns = \"open\nb = 2\n", "expected a string to end on its line"},
		{"a = 1\nb = \"x\" junk\n", "expected the end of the line or a comment, found 'j'"},
		{"a = 1\nb = [1, 2 }\n", "expected ',' or ']' in an array, found '}'"},
		{"a = 1\nb = { c = 1 ]\n", "expected ',' or '}' in an inline table, found ']'"},
		{"a = 1\né = 2\n", "found 'é'"},
		{"a = 1\n\x00b = 2\n", "a NUL byte"},
		{"a = 1\n\xffb = 2\n", "byte 0xff, not UTF-8"},
		{"a = 1\n\ufeffb = 2\n", "a byte-order mark (U+FEFF) past the start of the file"},
	} {
		err := Check([]byte(c.doc), Default)
		var se *ShapeError
		if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(se.Reason, c.reason) || !strings.HasPrefix(se.Reason, "invalid TOML: ") {
			t.Errorf("%q: %v; want line 2: invalid TOML: …%s…", c.doc, err, c.reason)
		}
	}
	for _, doc := range []string{"a = 'open", "a = \"\"\"\nopen\n", "a = [1,\n", "[table", "a = { b = 1"} {
		if err := Check([]byte(doc), Default); err != nil {
			t.Errorf("%q: %v; nothing is left unread: the decoder reports it", doc, err)
		}
	}
}
