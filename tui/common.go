package tui

import "time"

// common is what every component draws and reads keys with, handed down
// by the root with each call: the styles of the theme, the key bindings,
// the time (read once per frame or key) and the spinner's frame.
type common struct {
	st   *styles
	keys keyMap
	now  time.Time
	spin string
}

// common is what the components share now.
func (m *model) common() common {
	return common{st: m.st, keys: m.keys, now: m.now(), spin: m.spin.glyph()}
}
