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

// The anchor a block is scanned for is found in any case, at its first
// position, wherever its rarest byte is.
func TestAnchorIndex(t *testing.T) {
	for _, b := range []string{"", "a", "xx EADDRINUSE", "eaddrinuse", "EaDdRiNuSe tail", "eaddrinus", "zzEADDRINUSEzz eaddrinuse", "q-1 Q-1", "ab\x00ab-7x"} {
		for _, s := range []string{"eaddrinuse", "q-1", "-7x", "ab", "e"} {
			want := strings.Index(strings.ToLower(b), s)
			if got := newAnchor(s, true).index([]byte(b)); got != want {
				t.Errorf("fold index of %q in %q = %d, want %d", s, b, got, want)
			}
			want = strings.Index(b, s)
			if got := newAnchor(s, false).index([]byte(b)); got != want {
				t.Errorf("index of %q in %q = %d, want %d", s, b, got, want)
			}
		}
	}
}
