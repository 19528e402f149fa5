package search

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkGramSetAdd: noting the grams of log-like lines (those of the
// search benchmarks' corpus), a block's worth (256 lines) between takes;
// bytes/s is of line text. The baseline, trigrams, notes the trigrams
// alone, as format v4 did; grams adds the word starts (format v5).
func BenchmarkGramSetAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	syllables := []string{"ka", "ro", "mi", "ten", "sul", "va", "dor", "pe", "lin", "gra", "tho", "zu", "mer", "qui", "bo", "nex"}
	lines := make([]string, 256*16)
	size := 0
	for i := range lines {
		var sb strings.Builder
		fmt.Fprintf(&sb, "2026-11-%02d %02d:%02d:%02d INFO worker: ", 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60))
		for range 4 + rng.IntN(6) {
			for range 1 + rng.IntN(3) {
				sb.WriteString(syllables[rng.IntN(len(syllables))])
			}
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "id=%08x took %dms line %d", rng.Uint32(), rng.IntN(5000), i)
		lines[i] = sb.String()
		size += len(lines[i])
	}
	for _, c := range []struct {
		name string
		add  func(g *gramSet, s string)
	}{
		{"trigrams", (*gramSet).addTrigrams},
		{"grams", (*gramSet).add},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := newGramSet()
			b.SetBytes(int64(size))
			for b.Loop() {
				for i, l := range lines {
					c.add(g, l)
					if i%256 == 255 {
						g.take()
					}
				}
			}
		})
	}
}
