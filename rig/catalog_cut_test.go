package rig

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutUTF8(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc"},
		{"héllo", 2, "h"}, // é is two bytes: not cut in half
		{"日本語", 4, "日"},
		{strings.Repeat("x", MaxCatalogPrompt+10), MaxCatalogPrompt, strings.Repeat("x", MaxCatalogPrompt)},
	} {
		got := cutUTF8(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) || len(got) > tt.n {
			t.Errorf("cutUTF8(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
