package checkpoint

import (
	"strings"
	"testing"
)

func TestIgnoreMatch(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		path     string
		dir      bool
		want     bool
	}{
		{[]string{"*.o"}, "a.o", false, true},
		{[]string{"*.o"}, "x/y/a.o", false, true},
		{[]string{"*.o"}, "a.c", false, false},
		{[]string{"# *.o", ""}, "a.o", false, false},
		{[]string{"\\#x"}, "#x", false, true},
		{[]string{"a?c"}, "abc", false, true},
		{[]string{"a?c"}, "a/c", false, false},
		{[]string{"[ab].txt"}, "b.txt", false, true},
		{[]string{"*.o", "!keep.o"}, "keep.o", false, false},
		{[]string{"*.o", "!keep.o"}, "other.o", false, true},
		{[]string{"!keep.o", "*.o"}, "keep.o", false, true}, // last match wins
		{[]string{"\\!bang"}, "!bang", false, true},
		{[]string{"build/"}, "build", true, true},
		{[]string{"build/"}, "build", false, false},
		{[]string{"build/"}, "src/build", true, true},
		{[]string{"/build"}, "build", true, true},
		{[]string{"/build"}, "src/build", true, false},
		{[]string{"doc/*.md"}, "doc/a.md", false, true},
		{[]string{"doc/*.md"}, "x/doc/a.md", false, false}, // a middle slash anchors
		{[]string{"doc/*.md"}, "doc/sub/a.md", false, false},
		{[]string{"**/foo"}, "foo", false, true},
		{[]string{"**/foo"}, "a/b/foo", false, true},
		{[]string{"a/**/b"}, "a/b", false, true},
		{[]string{"a/**/b"}, "a/x/y/b", false, true},
		{[]string{"a/**/b"}, "x/a/b", false, false},
		{[]string{"a/**"}, "a/x/y", false, true},
		{[]string{"a/**"}, "a", true, false},
		{[]string{"**"}, "anything/at/all", false, true},
		{[]string{"trail   "}, "trail", false, true},
		{[]string{"sp\\ "}, "sp ", false, true},
		{[]string{"*.log\r"}, "x.log", false, true},
		{nil, "x", false, false},
		// git's wildmatch within an element
		{[]string{"[!a]x"}, "bx", false, true},
		{[]string{"[!a]x"}, "ax", false, false},
		{[]string{"[^a]x"}, "bx", false, true},
		{[]string{"[]]x"}, "]x", false, true},
		{[]string{"[!]]x"}, "]x", false, false},
		{[]string{"[a-c]x"}, "bx", false, true},
		{[]string{"[c-a]x"}, "bx", false, false}, // a reversed range is empty
		{[]string{"[a-]x"}, "-x", false, true},
		{[]string{"[[:digit:]]x"}, "1x", false, true},
		{[]string{"[[:digit:]]x"}, "ax", false, false},
		{[]string{"[![:alpha:]]"}, "1", false, true},
		{[]string{"[[:]x"}, ":x", false, true}, // "[:" with no ":]" is a "["
		{[]string{`[\]]x`}, "]x", false, true},
		{[]string{"foo**bar"}, "fooXYbar", false, true},
		{[]string{"a*b*c"}, "aXbYbZc", false, true},
		{[]string{"a*b*c"}, "aXbYbZ", false, false},
		{[]string{"*"}, "a/b", false, true},
		{[]string{`\*`}, "*", false, true},
		{[]string{`\*`}, "x", false, false},
		{[]string{`a\/b`}, "a/b", false, true},
		{[]string{"a/**/**"}, "a", true, false},
		{[]string{"a/**/**"}, "a/x", false, true},
		{[]string{"**/**/b"}, "x/y/b", false, true},
		{[]string{"**/a/b"}, "a/x/a/b", false, true}, // backtracks
		{[]string{"build//"}, "build", true, false},  // git strips one "/"
		{[]string{"/"}, "x", false, false},
		{[]string{"!"}, "x", false, false},
	} {
		ig, err := ParseIgnore(tc.patterns)
		if err != nil {
			t.Fatalf("%q: %v", tc.patterns, err)
		}
		if got := ig.Match(tc.path, tc.dir); got != tc.want {
			t.Errorf("%q match %q (dir %v) = %v, want %v", tc.patterns, tc.path, tc.dir, got, tc.want)
		}
	}
	for _, bad := range []string{"bad[", "x\\", "[[:nope:]]", "[a-\\", "[\\"} {
		if _, err := ParseIgnore([]string{"ok", bad}); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q parsed: %v", bad, err)
		}
	}
}
