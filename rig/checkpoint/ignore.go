package checkpoint

import (
	"errors"
	"fmt"
	"strings"
)

// IgnoreFile is the file at a workspace's root whose patterns Take leaves
// out, in gitignore syntax (see Ignore). Only the root's is read.
const IgnoreFile = ".looprigignore"

// Ignore matches workspace paths against patterns in gitignore syntax, as
// git matches the lines of one .gitignore file (the syntax of
// .looprigignore, .gitignore, checkpoint_exclude, checkpoint_include and
// DefaultExcludes alike). Blank lines and lines starting with "#" are
// skipped; a "\r" before the line's end goes, and so do trailing spaces
// unless escaped with a backslash; "!" negates (re-includes what an
// earlier pattern excluded); a trailing "/" matches directories only; a
// pattern with a "/" at its start or middle is anchored at the root (a
// leading "/" is dropped), else it matches the last element at any depth.
// Within an element, as git's wildmatch: "*" matches any run of bytes,
// "?" one byte (a UTF-8 character may take several), "\x" the byte x, and
// "[...]" one byte of a class: ranges ("a-z"), negation ("[!" or "[^"), a
// "]" right after the "[" as a member, and the POSIX classes
// ("[:digit:]", "[:alpha:]", ... in ASCII). "**" as a whole element
// matches any number of elements ("**/x", "a/**/b"), and as the last one
// anything inside ("a/**" matches what is inside a, not a); elsewhere it
// is "*". The last pattern that matches decides. As in git, nothing below
// an excluded directory can be re-included, because the walk does not
// enter it.
type Ignore struct {
	rules ruleSet
}

// rule is one compiled pattern.
type rule struct {
	elems    []glob // one per path element
	negate   bool
	dirOnly  bool
	anchored bool          // false: match the path's last element only
	source   ExcludeReason // the file or option the rule came from (Filter)
}

// ParseIgnore compiles patterns, one per element as lines of a
// .looprigignore. A malformed pattern (an unclosed "[", a trailing "\",
// an unknown "[:class:]") is an error naming its line.
func ParseIgnore(lines []string) (*Ignore, error) {
	rules, err := parseRules(lines, "pattern", "", true)
	if err != nil {
		return nil, err
	}
	return &Ignore{rules: newRuleSet(rules)}, nil
}

// parseRules compiles lines naming source in errors and tagging each rule
// with why. strict makes a malformed pattern an error; otherwise it is
// dropped, as git drops it (its wildmatch never matches one).
func parseRules(lines []string, source string, why ExcludeReason, strict bool) ([]rule, error) {
	var rules []rule
	for i, line := range lines {
		r, ok, err := parseRule(line)
		if err != nil {
			if !strict {
				continue
			}
			return nil, fmt.Errorf("checkpoint: %s line %d %q: %w", source, i+1, line, err)
		}
		if ok {
			r.source = why
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// Match reports whether the slash-separated path p (relative to the root)
// is excluded; isDir says whether it names a directory.
func (ig *Ignore) Match(p string, isDir bool) bool {
	if ig == nil {
		return false
	}
	r := ig.rules.last(strings.Split(p, "/"), isDir)
	return r != nil && !r.negate
}

// ruleSet is a list of rules, indexed by what their last element needs of
// a path's last element, so that a path is tried against the few rules
// that can match it rather than all of them.
type ruleSet struct {
	rules  []rule
	byName map[string][]int32 // rules whose last element is this literal
	byExt  map[string][]int32 // rules whose last element is "*" and this ".ext" (no other ".")
	rest   []int32            // the others
}

func newRuleSet(rules []rule) ruleSet {
	s := ruleSet{rules: rules}
	for i := range rules {
		g := &rules[i].elems[len(rules[i].elems)-1]
		switch {
		case g.kind == globLiteral:
			if s.byName == nil {
				s.byName = make(map[string][]int32)
			}
			s.byName[g.lit] = append(s.byName[g.lit], int32(i))
		case g.kind == globSuffix && strings.LastIndexByte(g.lit, '.') == 0:
			if s.byExt == nil {
				s.byExt = make(map[string][]int32)
			}
			s.byExt[g.lit] = append(s.byExt[g.lit], int32(i))
		default:
			s.rest = append(s.rest, int32(i))
		}
	}
	return s
}

// last returns the last rule of s that matches the path of elements
// elems, or nil.
func (s *ruleSet) last(elems []string, isDir bool) *rule {
	return s.scan(elems, isDir, false)
}

// excludes reports whether the last rule of s that matches the path of
// elements elems excludes it (is not a negation).
func (s *ruleSet) excludes(elems []string, isDir bool) bool {
	r := s.scan(elems, isDir, true)
	return r != nil && !r.negate
}

// scan tries the candidate rules of s for elems, the last first, and
// returns the first that matches. With positive, a negation is tried
// only once a rule before it matched (only then can it change the
// outcome), and a negation is returned only then.
func (s *ruleSet) scan(elems []string, isDir, positive bool) *rule {
	if len(s.rules) == 0 || len(elems) == 0 {
		return nil
	}
	name := elems[len(elems)-1]
	a, b, c := s.byName[name], []int32(nil), s.rest
	if i := strings.LastIndexByte(name, '.'); i >= 0 && s.byExt != nil {
		b = s.byExt[name[i:]]
	}
	var deferred []int32 // negations not tried yet, the last first
	// The candidates, highest index first, from the three ascending lists.
	ia, ib, ic := len(a)-1, len(b)-1, len(c)-1
	for {
		i := int32(-1)
		if ia >= 0 {
			i = a[ia]
		}
		if ib >= 0 && b[ib] > i {
			i = b[ib]
		}
		if ic >= 0 && c[ic] > i {
			i = c[ic]
		}
		switch {
		case i < 0:
			return nil
		case ia >= 0 && a[ia] == i:
			ia--
		case ib >= 0 && b[ib] == i:
			ib--
		default:
			ic--
		}
		r := &s.rules[i]
		if positive && r.negate {
			deferred = append(deferred, i)
			continue
		}
		if !r.match(elems, isDir) {
			continue
		}
		for _, n := range deferred {
			if s.rules[n].match(elems, isDir) {
				return &s.rules[n]
			}
		}
		return r
	}
}

// match reports whether r matches the path of elements elems.
func (r *rule) match(elems []string, isDir bool) bool {
	if r.dirOnly && !isDir || len(elems) == 0 {
		return false
	}
	last := &r.elems[len(r.elems)-1]
	if last.kind != globAnyPath && !last.match(elems[len(elems)-1]) {
		return false // the common case, cheaply
	}
	return !r.anchored || matchElems(r.elems, elems)
}

// parseRule compiles one line (git's dir.c: add_patterns_from_buffer and
// parse_path_pattern). ok is false for a line that holds no pattern.
func parseRule(line string) (r rule, ok bool, err error) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return r, false, nil
	}
	line = trimTrailingSpaces(line)
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") { // one, as git strips one
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	if line == "" {
		return r, false, nil
	}
	parts := splitPattern(line)
	if len(parts) > 1 {
		r.anchored = true
		if parts[0] == "" { // a leading "/"
			parts = parts[1:]
		}
	}
	for i, part := range parts {
		if r.anchored && part == "**" {
			if i+1 < len(parts) && parts[i+1] == "**" {
				continue // "**/**" is "**"
			}
			if i == len(parts)-1 {
				// A last "**" matches one element or more: any one,
				// then any number.
				r.elems = append(r.elems, glob{kind: globSuffix})
			}
			r.elems = append(r.elems, glob{kind: globAnyPath})
			continue
		}
		g, err := compileGlob(part)
		if err != nil {
			return r, false, err
		}
		r.elems = append(r.elems, g)
	}
	return r, true, nil
}

// trimTrailingSpaces drops the spaces ending line unless the first of
// them is escaped with a backslash (git's trim_trailing_spaces).
func trimTrailingSpaces(line string) string {
	lastSpace := -1
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i == len(line) {
				return line
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return line[:lastSpace]
	}
	return line
}

// splitPattern splits a pattern into its elements at "/" (an escaped "\/"
// too: it matches a "/", which only separates elements).
func splitPattern(p string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 < len(p) && p[i+1] == '/' {
				parts = append(parts, p[start:i])
				start = i + 2
			}
			i++
		case '/':
			parts = append(parts, p[start:i])
			start = i + 1
		}
	}
	return append(parts, p[start:])
}

// matchElems matches pattern elements against path elements, a
// globAnyPath element standing for zero or more of them. It backtracks
// to the last globAnyPath only (as a "*" over characters does), so its
// cost is at most the product of the two lengths.
func matchElems(pat []glob, name []string) bool {
	pi, ni := 0, 0
	starP, starN := -1, 0
	for ni < len(name) {
		if pi < len(pat) {
			if pat[pi].kind == globAnyPath {
				pi++
				starP, starN = pi, ni
				continue
			}
			if pat[pi].match(name[ni]) {
				pi++
				ni++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starN++
		pi, ni = starP, starN
	}
	for pi < len(pat) && pat[pi].kind == globAnyPath {
		pi++
	}
	return pi == len(pat)
}

// glob is one compiled element of a pattern: git's wildmatch (wildmatch.c)
// for text without a "/", with fast paths for the common shapes.
type glob struct {
	kind globKind
	lit  string // globLiteral, globSuffix, globPrefix
	toks []tok  // globGeneral
}

type globKind uint8

const (
	globLiteral globKind = iota // lit exactly
	globSuffix                  // "*lit": ends with lit
	globPrefix                  // "lit*": starts with lit
	globGeneral                 // toks
	globAnyPath                 // a whole "**" element of an anchored pattern
)

// tok is one token of a globGeneral.
type tok struct {
	op  tokOp
	b   byte      // tokByte
	set [4]uint64 // tokClass: the bytes it accepts (negation folded in)
}

type tokOp uint8

const (
	tokByte  tokOp = iota
	tokAny         // "?"
	tokStar        // "*" (consecutive ones are one)
	tokClass       // "[...]"
)

var (
	errTrailingBackslash = errors.New(`pattern ends with an unescaped "\"`)
	errUnclosedClass     = errors.New(`unclosed "[" class`)
	errUnknownClass      = errors.New(`unknown "[:class:]"`)
)

// compileGlob compiles one element of a pattern.
func compileGlob(s string) (glob, error) {
	var toks []tok
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*':
			if len(toks) == 0 || toks[len(toks)-1].op != tokStar {
				toks = append(toks, tok{op: tokStar})
			}
		case '?':
			toks = append(toks, tok{op: tokAny})
		case '\\':
			i++
			if i == len(s) {
				return glob{}, errTrailingBackslash
			}
			toks = append(toks, tok{op: tokByte, b: s[i]})
		case '[':
			t, end, err := compileClass(s, i)
			if err != nil {
				return glob{}, err
			}
			toks = append(toks, t)
			i = end
		default:
			toks = append(toks, tok{op: tokByte, b: c})
		}
	}
	return classify(toks), nil
}

// classify picks the fast path for toks when there is one.
func classify(toks []tok) glob {
	lit := func(ts []tok) (string, bool) {
		b := make([]byte, 0, len(ts))
		for _, t := range ts {
			if t.op != tokByte {
				return "", false
			}
			b = append(b, t.b)
		}
		return string(b), true
	}
	if s, ok := lit(toks); ok {
		return glob{kind: globLiteral, lit: s}
	}
	if toks[0].op == tokStar {
		if s, ok := lit(toks[1:]); ok {
			return glob{kind: globSuffix, lit: s}
		}
	}
	if n := len(toks); toks[n-1].op == tokStar {
		if s, ok := lit(toks[:n-1]); ok {
			return glob{kind: globPrefix, lit: s}
		}
	}
	return glob{kind: globGeneral, toks: toks}
}

// posixClasses are the "[:name:]" classes of wildmatch.c, in ASCII.
var posixClasses = map[string]func(c byte) bool{
	"alnum":  func(c byte) bool { return isDigit(c) || isAlpha(c) },
	"alpha":  isAlpha,
	"blank":  func(c byte) bool { return c == ' ' || c == '\t' },
	"cntrl":  func(c byte) bool { return c < 0x20 || c == 0x7f },
	"digit":  isDigit,
	"graph":  func(c byte) bool { return c > 0x20 && c < 0x7f },
	"lower":  func(c byte) bool { return c >= 'a' && c <= 'z' },
	"print":  func(c byte) bool { return c >= 0x20 && c < 0x7f },
	"punct":  func(c byte) bool { return c > 0x20 && c < 0x7f && !isDigit(c) && !isAlpha(c) },
	"space":  func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' },
	"upper":  func(c byte) bool { return c >= 'A' && c <= 'Z' },
	"xdigit": func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' },
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// compileClass compiles the "[...]" starting at s[start], as wildmatch.c
// reads one: "!" or "^" first negates; the first member may be "]"; "\x"
// is x; "a-z" a range (a "-" first, last or right after a range is
// itself); "[:name:]" a POSIX class ("[:" without a closing ":]" is a
// "["). It returns the token and the index of the closing "]".
func compileClass(s string, start int) (tok, int, error) {
	t := tok{op: tokClass}
	add := func(c byte) { t.set[c>>6] |= 1 << (c & 63) }
	i := start + 1
	negated := false
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		negated = true
		i++
	}
	prev := -1 // the previous member, for a range
	for first := true; ; first = false {
		if i >= len(s) {
			return t, 0, errUnclosedClass
		}
		c := s[i]
		switch {
		case c == ']' && !first:
			if negated {
				for k := range t.set {
					t.set[k] = ^t.set[k]
				}
			}
			return t, i, nil
		case c == '\\':
			i++
			if i >= len(s) {
				return t, 0, errUnclosedClass
			}
			add(s[i])
			prev = int(s[i])
		case c == '-' && prev >= 0 && i+1 < len(s) && s[i+1] != ']':
			i++
			hi := s[i]
			if hi == '\\' {
				i++
				if i >= len(s) {
					return t, 0, errUnclosedClass
				}
				hi = s[i]
			}
			for b := prev; b <= int(hi); b++ {
				add(byte(b))
			}
			prev = -1
		case c == '[' && i+1 < len(s) && s[i+1] == ':':
			end := strings.IndexByte(s[i+2:], ']')
			if end < 0 {
				return t, 0, errUnclosedClass
			}
			end += i + 2
			if end == i+2 || s[end-1] != ':' {
				add('[') // not a class: a "[", then what follows
				prev = '['
				break
			}
			is, ok := posixClasses[s[i+2:end-1]]
			if !ok {
				return t, 0, errUnknownClass
			}
			for b := 0; b < 256; b++ {
				if is(byte(b)) {
					add(byte(b))
				}
			}
			i = end
			prev = -1
		default:
			add(c)
			prev = int(c)
		}
		i++
	}
}

// match reports whether the element name matches g.
func (g *glob) match(name string) bool {
	switch g.kind {
	case globLiteral:
		return name == g.lit
	case globSuffix:
		return strings.HasSuffix(name, g.lit)
	case globPrefix:
		return strings.HasPrefix(name, g.lit)
	case globGeneral:
		return matchToks(g.toks, name)
	}
	return false // globAnyPath is matchElems's
}

// matchToks matches name against toks, backtracking to the last "*" only,
// so its cost is at most the product of the two lengths.
func matchToks(toks []tok, name string) bool {
	ti, ni := 0, 0
	starT, starN := -1, 0
	for ni < len(name) {
		if ti < len(toks) {
			t := &toks[ti]
			c := name[ni]
			switch t.op {
			case tokStar:
				ti++
				if ti == len(toks) {
					return true
				}
				starT, starN = ti, ni
				continue
			case tokAny:
				ti++
				ni++
				continue
			case tokByte:
				if t.b == c {
					ti++
					ni++
					continue
				}
			case tokClass:
				if t.set[c>>6]&(1<<(c&63)) != 0 {
					ti++
					ni++
					continue
				}
			}
		}
		if starT < 0 {
			return false
		}
		starN++
		ti, ni = starT, starN
	}
	for ti < len(toks) && toks[ti].op == tokStar {
		ti++
	}
	return ti == len(toks)
}
