package termrender

import "github.com/muesli/termenv"

// ProfileOf is the Profile for a termenv colour profile (what lipgloss
// and termenv detect from TERM and COLORTERM); Ascii is NoColor.
func ProfileOf(p termenv.Profile) Profile {
	switch p {
	case termenv.TrueColor:
		return TrueColor
	case termenv.ANSI256:
		return ANSI256
	case termenv.ANSI:
		return ANSI
	}
	return NoColor
}
