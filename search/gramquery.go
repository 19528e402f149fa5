package search

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// gramQuery is what a query asks of a block's trigrams: a boolean formula
// of "the block holds this trigram". A block the formula rejects holds no
// line the query matches; a block it accepts may (the trigrams can be in
// different lines, or in another order), so its lines are still checked.
//
// Words and phrases ask for all their trigrams. A regular expression's
// formula is derived from its syntax in the way of Russ Cox's trigram
// index for regular expression search (Google Code Search), pared down:
// the strings a piece of the expression can match are followed while they
// are few (a literal, a small character class, an alternation of such),
// crossed with their neighbours in a concatenation, and turned into
// trigrams once they grow too many. So /timeout|refused/ asks for the
// blocks holding "tim", "ime", "meo", "eou" and "out", or "ref", "efu",
// "fus", "use" and "sed", where taking only the literals every match
// holds would find none and read every block.
type gramQuery struct {
	op    gramOp
	grams []uint32 // each a term of op (distinct)
	subs  []*gramQuery
}

type gramOp uint8

const (
	gramAll gramOp = iota // every block: the query cannot be narrowed
	gramAnd               // every term holds
	gramOr                // some term holds
)

// allBlocks is the formula every block satisfies.
var allBlocks = &gramQuery{op: gramAll}

// narrows reports whether q rejects any block.
func (q *gramQuery) narrows() bool { return q.op != gramAll }

// gramsAnd is the formula "the block holds every trigram of s": every
// block when s is shorter than three bytes.
func gramsAnd(s string) *gramQuery {
	g := trigrams(s)
	if len(g) == 0 {
		return allBlocks
	}
	return &gramQuery{op: gramAnd, grams: g}
}

// and is the conjunction of qs, simplified: terms that hold of every block
// dropped, nested conjunctions flattened.
func and(qs ...*gramQuery) *gramQuery {
	out := &gramQuery{op: gramAnd}
	for _, q := range qs {
		switch q.op {
		case gramAll:
		case gramAnd:
			for _, g := range q.grams {
				if !slices.Contains(out.grams, g) {
					out.grams = append(out.grams, g)
				}
			}
			out.subs = append(out.subs, q.subs...)
		default:
			out.subs = append(out.subs, q)
		}
	}
	if len(out.grams) == 0 && len(out.subs) == 0 {
		return allBlocks
	}
	if len(out.grams) == 0 && len(out.subs) == 1 {
		return out.subs[0]
	}
	return out
}

// or is the disjunction of qs, simplified: every block when any term
// holds of every block, nested disjunctions flattened.
func or(qs ...*gramQuery) *gramQuery {
	out := &gramQuery{op: gramOr}
	for _, q := range qs {
		switch {
		case q.op == gramAll:
			return allBlocks
		case q.op == gramOr:
			for _, g := range q.grams {
				if !slices.Contains(out.grams, g) {
					out.grams = append(out.grams, g)
				}
			}
			out.subs = append(out.subs, q.subs...)
		case q.op == gramAnd && len(q.grams) == 1 && len(q.subs) == 0:
			if !slices.Contains(out.grams, q.grams[0]) {
				out.grams = append(out.grams, q.grams[0])
			}
		default:
			out.subs = append(out.subs, q)
		}
	}
	kept := out.subs[:0:0]
	for i, sub := range out.subs {
		if !out.absorbs(i) {
			kept = append(kept, sub)
		}
	}
	out.subs = kept
	if len(out.grams) == 0 && len(out.subs) == 1 {
		return out.subs[0]
	}
	if len(out.grams) == 1 && len(out.subs) == 0 {
		return &gramQuery{op: gramAnd, grams: out.grams}
	}
	return out
}

// absorbs reports whether disjunction q has another term that holds
// wherever its i'th sub does, so that the sub adds nothing: "err" or "err
// and rrs" is "err". Only conjunctions of trigrams are compared; of two
// equal ones, the first stays.
func (q *gramQuery) absorbs(i int) bool {
	sub := q.subs[i]
	if sub.op != gramAnd || len(sub.subs) > 0 {
		return false
	}
	for _, g := range q.grams {
		if slices.Contains(sub.grams, g) {
			return true
		}
	}
	for j, other := range q.subs {
		if j == i || other.op != gramAnd || len(other.subs) > 0 || len(other.grams) > len(sub.grams) {
			continue
		}
		if len(other.grams) == len(sub.grams) && j > i {
			continue
		}
		covered := true
		for _, g := range other.grams {
			if !slices.Contains(sub.grams, g) {
				covered = false
				break
			}
		}
		if covered {
			return true
		}
	}
	return false
}

// String writes q for tests and debugging: "+" an and, "|" an or.
func (q *gramQuery) String() string {
	var b strings.Builder
	q.write(&b)
	return b.String()
}

func (q *gramQuery) write(b *strings.Builder) {
	if q.op == gramAll {
		b.WriteString("*")
		return
	}
	sep := "+"
	if q.op == gramOr {
		sep = "|"
	}
	b.WriteString("(")
	for i, g := range q.grams {
		if i > 0 {
			b.WriteString(sep)
		}
		if g&wordStart != 0 {
			b.WriteString(`\b`)
		}
		b.Write([]byte{byte(g >> 16), byte(g >> 8), byte(g)})
	}
	for i, s := range q.subs {
		if i > 0 || len(q.grams) > 0 {
			b.WriteString(sep)
		}
		s.write(b)
	}
	b.WriteString(")")
}

// maxExact bounds the set of strings followed for a piece of a regular
// expression; past it the set becomes trigrams. 64 keeps /[0-9a-f]{2}x/
// whole and costs at most 64 postings lists of a few kilobytes each.
const maxExact = 64

// reInfo is what regexpGrams knows of a piece of a regular expression:
// every match of it is one of exact (lower-cased; nil when not followed),
// or else ends with one of suffix (nil when not followed either), and
// every match holds match's trigrams.
type reInfo struct {
	exact  []string
	suffix []string
	match  *gramQuery
}

// tail is the strings every match ends with: exact, or suffix.
func (i reInfo) tail() []string {
	if i.exact != nil {
		return i.exact
	}
	return i.suffix
}

// query is everything info says as one formula.
func (i reInfo) query() *gramQuery {
	return and(i.match, exactQuery(i.tail()))
}

// exactQuery is the formula "the block holds one of ss": every block when
// ss is not followed (nil) or one of its strings has no trigram.
func exactQuery(ss []string) *gramQuery {
	if len(ss) == 0 {
		return allBlocks
	}
	qs := make([]*gramQuery, 0, len(ss))
	for _, s := range ss {
		q := exactGrams(s)
		if !q.narrows() {
			return allBlocks
		}
		qs = append(qs, q)
	}
	return or(qs...)
}

// boundary, in the strings regexpGrams follows, is a place where \b, ^
// or \A holds: before a word character, the start of a word (or of the
// line). No string of runes holds its byte, which is not UTF-8.
const boundary = "\xff"

// exactGrams is the formula "the block holds string s", s lower-cased and
// perhaps with boundary in it: the trigrams of the text between
// boundaries, the first of a word marked wordStart where it follows one.
// A trigram across a boundary is not asked for: \b between two letters
// matches nothing, and asking less is never wrong.
func exactGrams(s string) *gramQuery {
	var grams []uint32
	for i, part := range strings.Split(s, boundary) {
		lowered := lower(part)
		if i > 0 && len(lowered) >= 3 && isWordByte(lowered[0]) {
			grams = append(grams, wordStart|uint32(lowered[0])<<16|uint32(lowered[1])<<8|uint32(lowered[2]))
			lowered = lowered[1:] // its first trigram is in the word's
			if len(lowered) < 3 {
				continue
			}
		}
		for _, g := range trigrams(lowered) {
			if !slices.Contains(grams, g) {
				grams = append(grams, g)
			}
		}
	}
	if len(grams) == 0 {
		return allBlocks
	}
	return &gramQuery{op: gramAnd, grams: grams}
}

// regexpGrams is the trigram formula every line re matches satisfies (re
// simplified).
func regexpGrams(re *syntax.Regexp) *gramQuery {
	return analyze(re).query()
}

func analyze(re *syntax.Regexp) reInfo {
	switch re.Op {
	case syntax.OpWordBoundary, syntax.OpBeginLine, syntax.OpBeginText:
		return reInfo{exact: []string{boundary}, match: allBlocks}
	case syntax.OpEmptyMatch, syntax.OpEndLine, syntax.OpEndText, syntax.OpNoWordBoundary:
		return reInfo{exact: []string{""}, match: allBlocks}
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return reInfo{exact: []string{lower(string(re.Rune))}, match: allBlocks}
		}
		// In any case, a rune matches each of its simple folds, which
		// the index holds lower-cased: ſ for s, whose lower case is s.
		acc := reInfo{exact: []string{""}, match: allBlocks}
		for _, r := range re.Rune {
			acc = concat(acc, reInfo{exact: foldsLowered(r), match: allBlocks})
		}
		return acc
	case syntax.OpCharClass:
		return reInfo{exact: classStrings(re.Rune), match: allBlocks}
	case syntax.OpCapture:
		return analyze(re.Sub[0])
	case syntax.OpQuest:
		sub := analyze(re.Sub[0])
		if sub.exact != nil && len(sub.exact) < maxExact {
			return reInfo{exact: union(sub.exact, []string{""}), match: allBlocks}
		}
	case syntax.OpPlus:
		return reInfo{match: analyze(re.Sub[0]).query()}
	case syntax.OpRepeat: // Simplify leaves none; kept for a regexp not simplified
		if re.Min >= 1 {
			return reInfo{match: analyze(re.Sub[0]).query()}
		}
	case syntax.OpConcat:
		acc := reInfo{exact: []string{""}, match: allBlocks}
		for _, sub := range re.Sub {
			acc = concat(acc, analyze(sub))
		}
		return acc
	case syntax.OpAlternate:
		subs := make([]reInfo, len(re.Sub))
		var exact []string
		followed := true
		for i, sub := range re.Sub {
			subs[i] = analyze(sub)
			if subs[i].exact == nil {
				followed = false
			}
			if followed {
				exact = union(exact, subs[i].exact)
				followed = len(exact) <= maxExact
			}
		}
		if followed {
			ms := make([]*gramQuery, len(subs))
			for i, s := range subs {
				ms[i] = s.match
			}
			return reInfo{exact: exact, match: or(ms...)}
		}
		qs := make([]*gramQuery, len(subs))
		for i, s := range subs {
			qs[i] = s.query()
		}
		return reInfo{match: or(qs...)}
	}
	return reInfo{match: allBlocks} // any character, a star: no trigram is certain
}

// concat is what is known of x followed by y. Their strings are crossed
// while they stay few: all of them while both are exact, x's tail with
// y's strings after that (trigrams across the seam: "dea" then a hex
// digit asks for "ea0" or "ea1" ...). Past that, what x says turns into
// trigrams and y's strings are followed on.
func concat(x, y reInfo) reInfo {
	cross := func(a, b []string) []string {
		out := make([]string, 0, len(a)*len(b))
		for _, s := range a {
			for _, t := range b {
				if st := s + t; !slices.Contains(out, st) {
					out = append(out, st)
				}
			}
		}
		return out
	}
	tail := x.tail()
	switch {
	case x.exact != nil && y.exact != nil && len(x.exact)*len(y.exact) <= maxExact:
		return reInfo{exact: cross(x.exact, y.exact), match: and(x.match, y.match)}
	case tail != nil && y.exact != nil && len(tail)*len(y.exact) <= maxExact:
		// Each crossed string holds one of tail: its trigrams are kept.
		return reInfo{suffix: cross(tail, y.exact), match: and(x.match, y.match)}
	default:
		return reInfo{suffix: y.tail(), match: and(x.query(), y.match)}
	}
}

// classStrings are the one-character strings a character class matches,
// lower-cased, when they are few and ASCII (the index folds ASCII case as
// the query does); nil otherwise.
func classStrings(ranges []rune) []string {
	var out []string
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if hi >= utf8.RuneSelf || int(hi-lo)+1 > maxExact {
			return nil
		}
		for r := lo; r <= hi; r++ {
			s := lower(string(r))
			if !slices.Contains(out, s) {
				out = append(out, s)
				if len(out) > maxExact {
					return nil
				}
			}
		}
	}
	return out
}

// foldsLowered are the lower cases of r's simple folds: the strings of
// the index a rune matched in any case can be (more than one for s: ſ is
// its own lower case; for a few dozen others, none of them ASCII).
func foldsLowered(r rune) []string {
	out := []string{string(unicode.ToLower(r))}
	for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
		if l := string(unicode.ToLower(o)); !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// union is a with b's strings it lacks.
func union(a, b []string) []string {
	out := slices.Clip(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
