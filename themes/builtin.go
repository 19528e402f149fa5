package themes

import "strings"

// Builtins returns the built-in themes, the default first:
//
//   - dark: the default, for dark backgrounds;
//   - light: for light backgrounds;
//   - high-contrast: pure, saturated colours on a dark background, a
//     reversed selection and a bright focus border;
//   - ansi: only the terminal's own 16 colours (indexes 0-15 at every depth),
//     so it follows whatever palette the terminal is configured with.
func Builtins() []Theme {
	return []Theme{
		build("dark", true, `
text           #dadada 253 7
muted          #7c7c8a 244 8
accent         #b48eff 141 13
border_focus   #b48eff 141 13
border_blur    #4a4a5a 239 8
selection      #3b2f63 60  4
selection_text #ffffff 231 15
state_live     #5fd787 78  10
state_held     #5fafff 75  12
state_idle     #8a8a8a 245 7
state_crashed  #ffaf5f 215 11
state_broken   #ff5f87 204 9
event_session  #8787af 103 8
event_turn     #87d7ff 117 14
event_output   #d0d0d0 252 7
event_stderr   #ffd787 222 11
event_gate     #ffaf00 214 3
event_restore  #af87ff 141 13
event_error    #ff5f5f 203 9
error          #ff5f5f 203 9
warn           #ffaf00 214 11
ok             #5fd787 78  10
`),
		build("light", false, `
text           #1f1f28 235 0
muted          #6c6c7a 243 8
accent         #6c3fd1 56  5
border_focus   #6c3fd1 56  5
border_blur    #b8b8c4 250 7
selection      #dcd3f8 189 6
selection_text #1f1f28 235 0
state_live     #0f7b3d 28  2
state_held     #1f5fbf 25  4
state_idle     #6c6c7a 243 8
state_crashed  #b35900 130 3
state_broken   #c4213f 161 1
event_session  #6c6c7a 243 8
event_turn     #005f87 24  4
event_output   #1f1f28 235 0
event_stderr   #875f00 94  3
event_gate     #af5f00 130 3
event_restore  #6c3fd1 56  5
event_error    #c4213f 161 1
error          #c4213f 161 1
warn           #af5f00 130 3
ok             #0f7b3d 28  2
`),
		build("high-contrast", true, `
text           #ffffff 231 15
muted          #d0d0d0 252 7
accent         #ffff00 226 11
border_focus   #ffff00 226 11
border_blur    #ffffff 231 15
selection      #ffff00 226 11
selection_text #000000 16  0
state_live     #00ff00 46  10
state_held     #00ffff 51  14
state_idle     #ffffff 231 15
state_crashed  #ffaf00 214 11
state_broken   #ff0000 196 9
event_session  #ffffff 231 15
event_turn     #00ffff 51  14
event_output   #ffffff 231 15
event_stderr   #ffff00 226 11
event_gate     #ffaf00 214 11
event_restore  #ff00ff 201 13
event_error    #ff0000 196 9
error          #ff0000 196 9
warn           #ffff00 226 11
ok             #00ff00 46  10
`),
		build("ansi", true, `
text           7  7  7
muted          8  8  8
accent         5  5  5
border_focus   13 13 13
border_blur    8  8  8
selection      4  4  4
selection_text 15 15 15
state_live     2  2  2
state_held     6  6  6
state_idle     7  7  7
state_crashed  3  3  3
state_broken   1  1  1
event_session  8  8  8
event_turn     6  6  6
event_output   7  7  7
event_stderr   3  3  3
event_gate     11 11 11
event_restore  5  5  5
event_error    9  9  9
error          1  1  1
warn           3  3  3
ok             2  2  2
`),
	}
}

// build parses a table of "token truecolor ansi256 ansi16" lines.
func build(name string, dark bool, table string) Theme {
	t := Theme{Name: name, Dark: dark, Colors: map[Token]Color{}, Source: "built-in"}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			panic("themes: bad built-in line: " + line)
		}
		t.Colors[Token(f[0])] = Color{TrueColor: f[1], ANSI256: f[2], ANSI16: f[3]}
	}
	if err := t.Validate(); err != nil {
		panic(err)
	}
	return t
}
