package tomlscan

import (
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

func FuzzCheck(f *testing.F) {
	for _, doc := range good {
		f.Add([]byte(doc))
	}
	f.Add([]byte(nestedInline(200)))
	f.Add([]byte("a = \"\"\"x\\\n\"\"\"\n[b]\nc.d = [{e = 1}]"))
	f.Fuzz(func(t *testing.T, doc []byte) {
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
			t.Fatalf("%d bytes decode allocating %d bytes", len(doc), alloc)
		}
	})
}
