package config

import (
	"strings"
)

// locator finds the line of a key in a TOML document. BurntSushi/toml
// reports positions for syntax errors only; for the mistakes found after
// parsing (unknown keys, wrong types, bad values) this small scanner maps
// key paths to the line that defines them. It understands table headers
// ([a.b], [[a.b]]), bare, quoted and dotted keys, comments, and skips the
// inside of multi-line strings and arrays. The document has already parsed,
// so it need not be strict.
type locator struct {
	lines map[string]int
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

// line returns the line of path, or of its longest prefix that has one
// (the table header of a missing key), or 0.
func (l *locator) line(path []string) int {
	for n := len(path); n > 0; n-- {
		if ln, ok := l.lines[pathKey(path[:n])]; ok {
			return ln
		}
	}
	return 0
}

func (l *locator) note(path []string, line int) {
	k := pathKey(path)
	if _, ok := l.lines[k]; !ok {
		l.lines[k] = line
	}
}

func locate(doc string) *locator {
	l := &locator{lines: map[string]int{}}
	var table []string
	inString := "" // the closing delimiter of an open multi-line string
	depth := 0     // open brackets/braces of a multi-line value
	for i, raw := range strings.Split(doc, "\n") {
		n := i + 1
		line := raw
		if inString != "" {
			idx := strings.Index(line, inString)
			if idx < 0 {
				continue
			}
			line = line[idx+len(inString):]
			inString = ""
			depth, inString = scanValue(line, depth)
			continue
		}
		if depth > 0 {
			depth, inString = scanValue(line, depth)
			continue
		}
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			continue
		}
		if t[0] == '[' {
			inner := strings.TrimPrefix(t, "[")
			inner = strings.TrimPrefix(inner, "[")
			keys, rest := parseKey(inner)
			if strings.HasPrefix(strings.TrimSpace(rest), "]") && len(keys) > 0 {
				table = keys
				for j := 1; j <= len(keys); j++ {
					l.note(keys[:j], n)
				}
			}
			continue
		}
		keys, rest := parseKey(t)
		rest = strings.TrimSpace(rest)
		if len(keys) == 0 || !strings.HasPrefix(rest, "=") {
			continue
		}
		full := append(append([]string{}, table...), keys...)
		for j := len(table) + 1; j <= len(full); j++ {
			l.note(full[:j], n)
		}
		depth, inString = scanValue(rest[1:], 0)
	}
	return l
}

// parseKey reads a dotted key (bare or quoted segments) from the start of
// s and returns its segments and what follows it.
func parseKey(s string) ([]string, string) {
	var keys []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return keys, s
		}
		var seg string
		switch s[0] {
		case '"':
			end := closingQuote(s[1:], '"')
			if end < 0 {
				return nil, ""
			}
			seg = unescapeBasic(s[1 : 1+end])
			s = s[end+2:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, ""
			}
			seg = s[1 : 1+end]
			s = s[end+2:]
		default:
			j := 0
			for j < len(s) && isBare(s[j]) {
				j++
			}
			if j == 0 {
				return keys, s
			}
			seg, s = s[:j], s[j:]
		}
		keys = append(keys, seg)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return keys, s
		}
		s = s[1:]
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// closingQuote returns the index of the unescaped quote q in s, or -1.
func closingQuote(s string, q byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i
		}
	}
	return -1
}

func unescapeBasic(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r := strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\t`, "\t", `\n`, "\n")
	return r.Replace(s)
}

// scanValue follows a value over one line: it returns the bracket depth
// still open at the end of the line and the delimiter of a multi-line
// string left open ("" when none).
func scanValue(s string, depth int) (int, string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '#':
			return depth, ""
		case '[', '{':
			depth++
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case '"', '\'':
			delim := string([]byte{c, c, c})
			if strings.HasPrefix(s[i:], delim) {
				end := strings.Index(s[i+3:], delim)
				if end < 0 {
					return depth, delim
				}
				i += 3 + end + 2
				continue
			}
			var end int
			if c == '"' {
				end = closingQuote(s[i+1:], '"')
			} else {
				end = strings.IndexByte(s[i+1:], '\'')
			}
			if end < 0 {
				return depth, ""
			}
			i += end + 1
		}
	}
	return depth, ""
}
