package engine

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func splitAll(max int, chunks ...string) string {
	sp := splitter{max: max}
	var b strings.Builder
	for _, c := range chunks {
		b.Write(sp.split([]byte(c)))
	}
	return b.String()
}

// readAll feeds chunks the way output.read does: an incomplete UTF-8
// sequence at the end of a chunk waits for the next one.
func readAll(max int, chunks ...string) string {
	sp := splitter{max: max}
	var b strings.Builder
	var held []byte
	for _, c := range chunks {
		data := append(held, c...)
		keep := incompleteTail(data)
		b.Write(sp.split(data[:len(data)-keep]))
		held = append([]byte(nil), data[len(data)-keep:]...)
	}
	b.Write(sp.split(held))
	return b.String()
}

func TestSplitterExamples(t *testing.T) {
	cases := []struct {
		max    int
		chunks []string
		want   string
	}{
		{10, []string{"0123456789abcdefghijXYZ\nshort\n"}, "0123456789\nabcdefghij\nXYZ\nshort\n"},
		{10, []string{"0123456789\n"}, "0123456789\n"},         // exactly max
		{10, []string{"01234", "56789", "\n"}, "0123456789\n"}, // across chunks
		{10, []string{"01234", "56789", "a"}, "0123456789\na"},
		{10, []string{"0123456789", "0123456789", "0"}, "0123456789\n0123456789\n0"},
		{3, []string{"\n\n\n"}, "\n\n\n"},
		{5, []string{"ééééé\n"}, "éé\néé\né\n"}, // never inside a UTF-8 sequence
		{4, []string{"a€b"}, "a€\nb"},
		{3, []string{"a€b"}, "a\n€\nb"},
		{1, []string{"abc"}, "a\nb\nc"},
		{2, []string{"€"}, "\xe2\x82\n\xac"}, // wider than max: split anyway
		{4, []string{"\xff\xff\xff\xff\xff\n"}, "\xff\xff\xff\xff\n\xff\n"},
	}
	for _, c := range cases {
		if got := splitAll(c.max, c.chunks...); got != c.want {
			t.Errorf("split(%d, %q) = %q, want %q", c.max, c.chunks, got, c.want)
		}
	}
}

// isInsertion reports whether out is in with newlines inserted.
func isInsertion(in, out []byte) bool {
	i := 0
	for j := 0; j < len(out); j++ {
		if i < len(in) && out[j] == in[i] {
			i++
		} else if out[j] != '\n' {
			return false
		}
	}
	return i == len(in)
}

func TestSplitterProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc", "\n", "é", "€", "𝄞", "\xff", "\x80", "\xe2\x82", "        "}
	for iter := 0; iter < 2000; iter++ {
		var in []byte
		for n := r.IntN(200); n > 0; n-- {
			in = append(in, pieces[r.IntN(len(pieces))]...)
		}
		max := 1 + r.IntN(20)
		whole := splitAll(max, string(in))
		// Random chunking gives the same result (as the reader feeds it).
		var chunks []string
		for rest := in; len(rest) > 0; {
			n := 1 + r.IntN(len(rest))
			chunks = append(chunks, string(rest[:n]))
			rest = rest[n:]
		}
		if got := readAll(max, chunks...); got != whole {
			t.Fatalf("chunking changed the result: %q vs %q", got, whole)
		}
		if !isInsertion(in, []byte(whole)) {
			t.Fatalf("output %q is not input %q plus newlines", whole, in)
		}
		for _, line := range strings.Split(whole, "\n") {
			if len(line) > max {
				t.Fatalf("max %d: line %q too long", max, line)
			}
		}
		if max >= 4 && utf8.Valid(in) {
			for _, line := range strings.Split(whole, "\n") {
				if !utf8.ValidString(line) {
					t.Fatalf("max %d: line %q split a rune (input %q)", max, line, in)
				}
			}
		}
	}
}

func TestIncompleteTail(t *testing.T) {
	cases := map[string]int{
		"":                  0,
		"abc":               0,
		"é":                 0,
		"a\xc3":             1,
		"a\xe2\x82":         2,
		"a\xe2":             1,
		"a\xf0\x9d\x84":     3,
		"a\xf0\x9d\x84\x9e": 0,
		"a\x80\x80\x80":     0, // stray continuation bytes: nothing to wait for
		"a\xff":             0,
	}
	for in, want := range cases {
		if got := incompleteTail([]byte(in)); got != want {
			t.Errorf("incompleteTail(%q) = %d, want %d", in, got, want)
		}
	}
}

func BenchmarkSplitter(b *testing.B) {
	data := bytes.Repeat([]byte("y\n"), 16<<10)
	sp := splitter{max: DefaultMaxLine}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		sp.split(data)
	}
}
