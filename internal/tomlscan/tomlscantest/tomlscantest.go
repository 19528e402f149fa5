// Package tomlscantest makes the hostile TOML documents the tests of
// internal/tomlscan and of its users (config, themes, the TUI, the
// command) refuse: the shapes that cost the TOML decoder time and memory
// quadratic in their size, the limits around them, and what tomlscan
// cannot follow, each of about a given size, to be written after any of
// the byte-order marks the decoder skips.
package tomlscantest

import (
	"bytes"
	"fmt"
	"strings"

	"looprig/internal/tomlscan"
)

// Shape is one hostile document body.
type Shape struct {
	Name   string
	Body   string // starts at the beginning of a line
	Line   int    // the line of Body tomlscan refuses it at, Body alone (1-based)
	Reason string // what tomlscan's refusal says, in part
	Counts bool   // refused for its number of keys, which those before it add to
}

// LineAfter is the line of a document tomlscan refuses it at when Body
// follows head lines holding keys keys and headers.
func (sh Shape) LineAfter(lines, keys int) int {
	if sh.Counts {
		return lines + sh.Line - keys
	}
	return lines + sh.Line
}

// Shapes returns the hostile bodies of about size bytes each (at least a
// few KB; the many keys are as many as it takes to go past the limit),
// refused with tomlscan.Default.
func Shapes(size int) []Shape {
	size = max(size, 4<<10)
	n7 := size / 7
	parts := strings.Repeat("abcdefg.", 7) // 7 parts, and one more below: within the limit
	over := tomlscan.Default.Values + 1    // the line of the first key past the limit
	var manyKeys, manyDotted strings.Builder
	for i := 0; manyKeys.Len() < size || i < over; i++ {
		fmt.Fprintf(&manyKeys, "k%d = %d\n", i, i)
	}
	for i := 0; manyDotted.Len() < size || i < over; i++ {
		fmt.Fprintf(&manyDotted, "%sk%d = 1\n", parts, i)
	}
	return []Shape{
		{"nested inline tables", "a = " + strings.Repeat("{ a = ", n7) + "1" + strings.Repeat("}", n7) + "\n", 1, "nested deeper than", false},
		{"nested arrays", "a = " + strings.Repeat("[", size/2) + strings.Repeat("]", size/2) + "\n", 1, "nested deeper than", false},
		{"nested over lines", "a = [\n" + strings.Repeat("[\n", size/3) + "1" + strings.Repeat("]", size/3) + "\n", 9, "nested deeper than", false},
		{"a dotted key", strings.Repeat("a.", size/2) + "a = 1\n", 1, "dotted parts", false},
		{"a dotted header", "[" + strings.Repeat("a.", size/2) + "a]\n", 1, "dotted parts", false},
		{"dotted keys in an inline table", "t = { " + strings.Repeat("a.", size/2) + "a = 1 }\n", 1, "dotted parts", false},
		{"a long key", strings.Repeat("k", size) + " = 1\n", 1, "longer than", false},
		{"a long quoted key", `"` + strings.Repeat("k", size) + "\" = 1\n", 1, "longer than", false},
		{"many keys", manyKeys.String(), over, "more than", true},
		{"many dotted keys", manyDotted.String(), over, "more than", true},
		{"nesting after what tomlscan cannot follow", "key: " + strings.Repeat("{ a = ", n7) + "1" + strings.Repeat("}", n7) + "\n", 1, "invalid TOML", false},
		{"nesting after junk on a line", "a = \"x\" junk " + strings.Repeat("{ a = ", n7) + "\n", 1, "invalid TOML", false},
		{"nesting after a second mark", "\ufeffa = " + strings.Repeat("{ a = ", n7) + "1" + strings.Repeat("}", n7) + "\n", 1, "invalid TOML", false},
	}
}

// Mark is a byte-order mark a document may start with: none, or one the
// decoder skips (tomlscan.Marks).
type Mark struct {
	Name  string
	Bytes []byte
}

// Marks returns no mark and every mark the decoder skips.
func Marks() []Mark {
	ms := []Mark{{"no mark", nil}}
	for _, m := range tomlscan.Marks {
		name := map[string]string{"\xff\xfe": "UTF-16LE mark", "\xfe\xff": "UTF-16BE mark", "\xef\xbb\xbf": "UTF-8 mark"}[string(m)]
		if name == "" {
			name = fmt.Sprintf("mark % x", m)
		}
		ms = append(ms, Mark{name, bytes.Clone(m)})
	}
	return ms
}

// Doc is mark, then head (whole lines), then body.
func Doc(mark []byte, head, body string) []byte {
	return append(append(bytes.Clone(mark), head...), body...)
}
