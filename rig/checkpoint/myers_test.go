package checkpoint

import (
	"math/rand"
	"strings"
	"testing"
)

// lcsLen is the textbook O(nm) longest common subsequence length.
func lcsLen(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// TestLineDiffIsShortestAndCorrect checks, on random inputs, that the
// script turns a into b and has as few edits as an LCS allows.
func TestLineDiffIsShortestAndCorrect(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	gen := func() []string {
		n := r.Intn(12)
		s := make([]string, n)
		for i := range s {
			s[i] = string(rune('a'+r.Intn(4))) + "\n"
		}
		return s
	}
	for iter := 0; iter < 3000; iter++ {
		a, b := gen(), gen()
		script, ok := lineDiff(a, b, 100)
		if !ok {
			t.Fatalf("%q -> %q: gave up", a, b)
		}
		var gotA, gotB []string
		edits := 0
		for _, e := range script {
			if e.op != '+' {
				gotA = append(gotA, e.line)
				if a[e.ai] != e.line {
					t.Fatalf("%q -> %q: ai %d is not %q", a, b, e.ai, e.line)
				}
			}
			if e.op != '-' {
				gotB = append(gotB, e.line)
				if b[e.bi] != e.line {
					t.Fatalf("%q -> %q: bi %d is not %q", a, b, e.bi, e.line)
				}
			}
			if e.op != ' ' {
				edits++
			}
		}
		if strings.Join(gotA, "") != strings.Join(a, "") || strings.Join(gotB, "") != strings.Join(b, "") {
			t.Fatalf("%q -> %q: script %v does not replay", a, b, script)
		}
		if want := len(a) + len(b) - 2*lcsLen(a, b); edits != want {
			t.Fatalf("%q -> %q: %d edits, shortest is %d", a, b, edits, want)
		}
	}
}

func TestLineDiffBounded(t *testing.T) {
	var a, b []string
	for i := 0; i < 1000; i++ {
		a = append(a, "a\n")
		b = append(b, "b\n")
	}
	if _, ok := lineDiff(a, b, 100); ok {
		t.Fatal("2000 edits fit a bound of 100")
	}
	if _, ok := lineDiff(a, b, 2000); !ok {
		t.Fatal("2000 edits do not fit a bound of 2000")
	}
}

func TestHunkRanges(t *testing.T) {
	for _, tc := range []struct {
		a, b, want string
	}{
		{"", "x\n", "@@ -0,0 +1 @@\n+x\n"},
		{"x\n", "", "@@ -1 +0,0 @@\n-x\n"},
		{"x", "x\n", "@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n"},
		{"1\n2\n3\n4\n5\n", "1\n2\n3\n4\n5\n6\n", "@@ -3,3 +3,4 @@\n 3\n 4\n 5\n+6\n"},
	} {
		script, _ := lineDiff(splitLines(tc.a), splitLines(tc.b), 100)
		if got, _, _ := unified(script, 3); got != tc.want {
			t.Errorf("%q -> %q:\n%s\nwant\n%s", tc.a, tc.b, got, tc.want)
		}
	}
}
