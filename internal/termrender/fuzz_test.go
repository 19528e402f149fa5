package termrender

import (
	"slices"
	"strings"
	"testing"
)

// FuzzRender: for any input and any chunking, the output holds only
// printable text, newlines and SGR sequences of the shape this package
// emits (validate), and the chunking does not change it.
//
// The seed corpus in testdata/fuzz/FuzzRender holds real `ls --color` and
// `git log --color` output, progress bars, multi-line progress, attacks
// (OSC 52, CSI 2J, CSI H, alternate screen), invalid UTF-8, a 1 MB line
// and an unterminated OSC.
func FuzzRender(f *testing.F) {
	f.Add([]byte("progress 10%\rprogress 100%\n"), uint16(3), uint16(17), uint8(1))
	f.Add([]byte("\x1b[31mred\x1b[0m plain"), uint16(1), uint16(6), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16, prof uint8) {
		p := Profile(prof % 4)
		out := String(string(data), p)
		if err := validate(out, p); err != nil {
			t.Fatalf("String(%q, %d) = %q: %v", clip(string(data)), p, clip(out), err)
		}

		// Small bounds, to reach wrapping, eviction and string recovery;
		// on the first 64 KiB (a 1 MB line at 2 cells a line is slow to
		// fuzz with).
		data = data[:min(len(data), 64<<10)]
		o := Options{
			Profile:        p,
			MaxLineCells:   2 + int(prof>>2)%16,
			Window:         1 + int(prof>>6),
			MaxStringBytes: 1 + int(cut2%64),
		}
		whole := render(o, data)
		a := min(int(cut1), len(data))
		b := min(a+int(cut2), len(data))
		chunked := render(o, data[:a], data[a:b], data[b:])
		if !slices.Equal(whole, chunked) {
			t.Fatalf("chunks at %d, %d of %q:\n got %q\nwant %q", a, b, clip(string(data)), chunked, whole)
		}
		for _, l := range whole {
			if strings.Contains(l, "\n") {
				t.Fatalf("line %q holds a newline", l)
			}
			if err := validate(l, p); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
		}
	})
}
