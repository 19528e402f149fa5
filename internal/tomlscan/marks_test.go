package tomlscan_test

import (
	"errors"
	"strings"
	"testing"

	"looprig/internal/tomlscan"
	"looprig/internal/tomlscan/tomlscantest"
)

// TestRefusesAfterMarks: the hostile shapes, of 40 KB and 1 MB, are
// refused at their line after each mark the decoder skips, as without one.
func TestRefusesAfterMarks(t *testing.T) {
	for _, size := range []int{40 << 10, 1_000_000} {
		for _, m := range tomlscantest.Marks() {
			for _, sh := range tomlscantest.Shapes(size) {
				doc := tomlscantest.Doc(m.Bytes, "# hostile\n", sh.Body)
				err := tomlscan.Check(doc, tomlscan.Default)
				var se *tomlscan.ShapeError
				if line := sh.LineAfter(1, 0); !errors.As(err, &se) || se.Line != line || !strings.Contains(se.Reason, sh.Reason) {
					t.Errorf("%d bytes, %s, %s: %v; want line %d: %q", len(doc), m.Name, sh.Name, err, line, sh.Reason)
				}
			}
		}
	}
}
