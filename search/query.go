package search

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// Query is a parsed search: words and phrases that must all be in a line
// (in any case), or a regular expression.
type Query struct {
	text  string
	terms []string // lower-cased words and phrases
	re    *regexp.Regexp
	lits  []literal  // strings every match of re holds
	grams *gramQuery // the trigrams the block of a matching line holds
	// anchor is the string a block is scanned for (scanBlock): the
	// longest of the terms or literals that can be.
	anchor anchor
}

// Narrowed reports whether the index narrows q to the blocks holding
// its trigrams; a query without any (words shorter than three characters,
// a regexp without such a literal) reads every block.
func (q *Query) Narrowed() bool { return q.grams.narrows() }

// literal is a string every match of a regexp holds: exactly, or in any
// case (fold: s is lower-cased).
type literal struct {
	s    string
	fold bool
}

func (l literal) in(line string) bool {
	if l.fold {
		return containsFold(line, l.s)
	}
	return strings.Contains(line, l.s)
}

// QueryError is a query that does not parse, with the position (1-based,
// in bytes of the query) where it goes wrong.
type QueryError struct {
	Query string
	Pos   int
	Msg   string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("bad query at column %d: %s", e.Pos, e.Msg)
}

// ParseQuery parses s: "/RE/" is a regular expression (Go's syntax,
// matched against each line, case-sensitive unless it says (?i));
// anything else is words and "quoted phrases", each of which must appear
// in a line, in any case.
func ParseQuery(s string) (*Query, error) {
	q := &Query{text: s, grams: allBlocks}
	t := strings.TrimSpace(s)
	if len(t) >= 2 && t[0] == '/' && t[len(t)-1] == '/' {
		start := strings.Index(s, "/") + 1
		pat := t[1 : len(t)-1]
		if pat == "" {
			return nil, &QueryError{Query: s, Pos: start, Msg: "empty regular expression"}
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			pos := start
			var se *syntax.Error
			if errors.As(err, &se) {
				if i := strings.Index(pat, se.Expr); i >= 0 {
					pos += i
				}
				return nil, &QueryError{Query: s, Pos: pos + 1, Msg: fmt.Sprintf("%s: %q", se.Code, se.Expr)}
			}
			return nil, &QueryError{Query: s, Pos: pos + 1, Msg: err.Error()}
		}
		q.re = re
		if parsed, err := syntax.Parse(pat, syntax.Perl); err == nil {
			parsed = parsed.Simplify()
			for _, lit := range required(parsed) {
				if lit.fold {
					lit.s = lower(lit.s)
				}
				q.lits = append(q.lits, lit)
				q.setAnchor(lit.s, lit.fold)
			}
			q.grams = regexpGrams(parsed)
		}
		return q, nil
	}
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 {
				return nil, &QueryError{Query: s, Pos: i + 1, Msg: "a phrase opened here is not closed (a \" is missing)"}
			}
			if phrase := s[i+1 : i+1+end]; strings.TrimSpace(phrase) != "" {
				q.terms = append(q.terms, lower(phrase))
			}
			i += end + 2
		default:
			end := strings.IndexAny(s[i:], " \t\"")
			if end < 0 {
				end = len(s) - i
			}
			q.terms = append(q.terms, lower(s[i:i+end]))
			i += end
		}
	}
	if len(q.terms) == 0 {
		return nil, &QueryError{Query: s, Pos: 1, Msg: "nothing to search for"}
	}
	terms := make([]*gramQuery, len(q.terms))
	for i, t := range q.terms {
		terms[i] = gramsAnd(t)
		q.setAnchor(t, true)
	}
	q.grams = and(terms...)
	return q, nil
}

// setAnchor makes s the query's anchor if it is longer than the one it
// has. A string to find in any case must be ASCII (lower-casing other
// text may change its length), and is scanned for byte by byte in the
// text as it is, so its k and i are left out: the Kelvin sign and İ,
// which are not ASCII, lower-case to them. Its longest run without them
// is the anchor.
func (q *Query) setAnchor(s string, fold bool) {
	if fold {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return
			}
		}
		if strings.ContainsAny(s, "ki") {
			for _, run := range strings.FieldsFunc(s, func(r rune) bool { return r == 'k' || r == 'i' }) {
				q.setAnchor(run, fold)
			}
			return
		}
	}
	if len(s) <= len(q.anchor.s) {
		return
	}
	q.anchor = newAnchor(s, fold)
}

// String is the query as given.
func (q *Query) String() string { return q.text }

// IsRegexp reports whether the query is a regular expression.
func (q *Query) IsRegexp() bool { return q.re != nil }

// Match reports whether line matches, with the byte ranges of what
// matched (for highlighting; none when lower-casing changed the line's
// length).
func (q *Query) Match(line string) (bool, [][2]int) {
	if q.re != nil {
		if len(q.lits) > 0 {
			// Cheaper than the regexp: a line without its literals
			// cannot match.
			for _, l := range q.lits {
				if !l.in(line) {
					return false, nil
				}
			}
		}
		locs := q.re.FindAllStringIndex(line, -1)
		if locs == nil {
			return false, nil
		}
		out := make([][2]int, len(locs))
		for i, l := range locs {
			out[i] = [2]int{l[0], l[1]}
		}
		return true, out
	}
	for _, t := range q.terms {
		if !containsFold(line, t) {
			return false, nil
		}
	}
	low := lower(line)
	if len(low) != len(line) {
		return true, nil
	}
	var out [][2]int
	for _, t := range q.terms {
		for off := 0; ; {
			i := strings.Index(low[off:], t)
			if i < 0 {
				break
			}
			out = append(out, [2]int{off + i, off + i + len(t)})
			off += i + len(t)
		}
	}
	slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	return true, out
}

// required returns strings every match of re contains (not all of them:
// enough to narrow the blocks a regexp search reads), each to be found
// exactly or in any case as the regexp says ((?i)).
func required(re *syntax.Regexp) []literal {
	switch re.Op {
	case syntax.OpLiteral:
		return required(&syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{re}})
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var out []literal
		var run literal
		flush := func() {
			if run.s != "" {
				out = append(out, run)
			}
			run = literal{}
		}
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral {
				fold := sub.Flags&syntax.FoldCase != 0
				for _, r := range sub.Rune {
					if r == utf8.RuneError || fold && len(foldsLowered(r)) > 1 {
						// What r matches is not r's text: any byte
						// that is not UTF-8, or, in any case, a fold
						// whose lower case is not lower(r) (ſ for s).
						flush()
						continue
					}
					run.s += string(r)
					run.fold = run.fold || fold
				}
				continue
			}
			flush()
			out = append(out, required(sub)...)
		}
		flush()
		return out
	}
	return nil
}

// containsFold reports whether s holds sub (lower-cased) in any case,
// without lower-casing s when both are ASCII.
func containsFold(s, sub string) bool {
	for i := 0; i < len(sub); i++ {
		if sub[i] >= 0x80 {
			return strings.Contains(lower(s), sub)
		}
	}
	if len(sub) == 0 {
		return true
	}
	c0, c0u := sub[0], sub[0]
	if 'a' <= c0 && c0 <= 'z' {
		c0u = c0 - ('a' - 'A')
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return strings.Contains(lower(s), sub)
		}
		if c != c0 && c != c0u {
			continue
		}
		j := 1
		for ; j < len(sub); j++ {
			d := s[i+j]
			if 'A' <= d && d <= 'Z' {
				d += 'a' - 'A'
			}
			if d != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}
