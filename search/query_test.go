package search

import (
	"strings"
	"testing"
)

func TestContainsFold(t *testing.T) {
	for _, s := range []string{"", "a", "Hello World", "EADDRINUSE on port", "ünïcode ÄBC abc", "xxABxabx"} {
		for _, sub := range []string{"a", "ab", "world", "eaddrinuse", "äbc", "abx", "o w", "zz"} {
			want := strings.Contains(strings.ToLower(s), sub)
			if got := containsFold(s, sub); got != want {
				t.Errorf("containsFold(%q, %q) = %v, want %v", s, sub, got, want)
			}
		}
	}
}
