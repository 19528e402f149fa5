package checkpoint

import "testing"

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
	} {
		ig, err := ParseIgnore(tc.patterns)
		if err != nil {
			t.Fatalf("%q: %v", tc.patterns, err)
		}
		if got := ig.Match(tc.path, tc.dir); got != tc.want {
			t.Errorf("%q match %q (dir %v) = %v, want %v", tc.patterns, tc.path, tc.dir, got, tc.want)
		}
	}
	if _, err := ParseIgnore([]string{"ok", "bad["}); err == nil {
		t.Error("a bad class parsed")
	}
}
