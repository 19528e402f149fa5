package config

import (
	"bytes"

	"github.com/BurntSushi/toml"
)

// syntaxLine is the 1-based line of the TOML syntax error pe in data.
// BurntSushi/toml counts a line when its lexer reads the newline, so an
// error found at a newline (a table header left open, a value missing at
// the end of a line) or at the end of the file after one would be
// reported on the next line. The error's byte offset is exact: the line
// is the one that byte is on, a newline belonging to the line it ends,
// and an offset past the end of the file is on its last line. Offsets
// count from after a byte order mark, as the decoder reads the document.
func syntaxLine(data []byte, pe toml.ParseError) int {
	for _, bom := range []string{"\xff\xfe", "\xfe\xff", "\xef\xbb\xbf"} {
		if bytes.HasPrefix(data, []byte(bom)) {
			data = data[len(bom):]
			break
		}
	}
	pos := pe.Position.Start
	if len(data) == 0 || pos < 0 || pe.Position.Len == 0 {
		return pe.Position.Line // no offset to go by
	}
	pos = min(pos, len(data)-1)
	return bytes.Count(data[:pos], []byte{'\n'}) + 1
}
