package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestSyntaxErrorLines: a malformed file is reported at the line the
// mistake is on, also when the decoder finds it at the newline that ends
// the line (a table header left open) or at the end of the file.
func TestSyntaxErrorLines(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		line int
	}{
		{"open header, line 1", "[profiles.work\n", 1},
		{"open header, no newline", "[profiles.work", 1},
		{"open header, CRLF", "theme = \"dark\"\r\n[profiles.work\r\n", 2},
		{"open header after a key", "theme = \"dark\"\n[profiles.work\n", 2},
		{"open header, blank lines around", "theme = \"dark\"\n\n[profiles.work\n\nengine = \"shell\"\n", 3},
		{"open array-of-tables header", "[[profiles\n", 1},
		{"value missing at the end of the line", "theme = \n", 1},
		{"value missing at the end of the file", "theme = \"dark\"\nnotify =", 2},
		{"string not closed on its line", "notify = \"bell\ntheme = \"dark\"\n", 1},
		{"string not closed at the end of the file", "theme = 'dark", 1},
		{"array not closed at the end of the file", "theme = \"dark\"\n[profiles.w]\ngate_policy = [\"sudo\",\n", 3},
		{"multi-line string not closed", "theme = \"\"\"\ndark\n", 2},
		{"mid-line mistake", "theme = \"dark\"\nbroken = = 1\n", 2},
		{"junk after a value", "theme = \"dark\" light\n", 1},
		{"byte order mark", "\xef\xbb\xbftheme = \"dark\"\n[p\n", 2},
		{"too deep (tomlscan)", "theme = \"dark\"\nx = " + strings.Repeat("[", 20) + "\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/etc/looprig.toml", []byte(tt.doc))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse = %v, want *Error", err)
			}
			if ce.Line != tt.line {
				t.Errorf("line %d, want %d: %v", ce.Line, tt.line, err)
			}
			if want := "/etc/looprig.toml:" + strconv.Itoa(tt.line) + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %q", err, want)
			}
		})
	}
}
