package termrender

import (
	"testing"

	"github.com/muesli/termenv"
)

func TestProfileOf(t *testing.T) {
	for in, want := range map[termenv.Profile]Profile{
		termenv.TrueColor: TrueColor, termenv.ANSI256: ANSI256, termenv.ANSI: ANSI, termenv.Ascii: NoColor,
	} {
		if got := ProfileOf(in); got != want {
			t.Errorf("ProfileOf(%v) = %v, want %v", in, got, want)
		}
	}
}
