package search

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// A query's trigram formula: words ask for all their trigrams; a regular
// expression for what its literals, small classes and alternations make
// certain, across the seams of a concatenation.
func TestQueryGrams(t *testing.T) {
	for _, c := range []struct{ query, want string }{
		{`timeout EADDR`, `(tim+ime+meo+eou+out+ead+add+ddr)`},
		{`ab "a phrase"`, `(a p+ ph+phr+hra+ras+ase)`},
		{`ab`, `*`},
		{`/timeout|refused/`, `((tim+ime+meo+eou+out)|(ref+efu+fus+use+sed))`},
		{`/\bdea[0-9a-f]{5} /`, `(\bdea)`},
		{`/^dea/`, `(\bdea)`},
		{`/\Adeadbeef\b/`, `(\bdea+ead+adb+dbe+bee+eef)`},
		{`/(?i)\bKelvin/`, `(\bkel+elv+lvi+vin)`},
		{`/id=\bdea/`, `(id=+\bdea)`},
		{`/\b-foo/`, `(-fo+foo)`},
		{`/\bab/`, `*`},
		{`/foo\b/`, `(foo)`},
		{`/\B(dea)/`, `(dea)`},
		{`/(\bdea|\bbee)f/`, `((\bdea+eaf)|(\bbee+eef))`},
		{`/dea[0-3]x/`, `((dea+ea0+a0x)|(dea+ea1+a1x)|(dea+ea2+a2x)|(dea+ea3+a3x))`},
		{`/a.*b/`, `*`},
		{`/x+foo/`, `(foo)`},
		{`/[a-z]+ing/`, `(ing)`},
		{`/foo(bar)*baz/`, `(foo+baz)`},
		{`/errs?/`, `(err)`},
		{`/err(or)?s/`, `((err+rro+ror+ors)|(err+rrs))`},
		{`/(?i)EADDR(INUSE|NOTAVAIL)/`, `((ead+add+ddr+dri+rin+inu+nus+use)|(ead+add+ddr+dri+rin+inu+nu` + "\xc5" + `+u` + "ſ" + `+` + "ſ" + `e)|(ead+add+ddr+drn+rno+not+ota+tav+ava+vai+ail))`},
		{`/[Ee]rror: (db|cache)/`, `((err+rro+ror+or:+r: +: d+ db)|(err+rro+ror+or:+r: +: c+ ca+cac+ach+che))`},
		{`/(get|put)_(user|item)/`, `((get+et_+t_u+_us+use+ser)|(get+et_+t_i+_it+ite+tem)|(put+ut_+t_u+_us+use+ser)|(put+ut_+t_i+_it+ite+tem))`},
		{`/^$/`, `*`},
		{`/x|.*/`, `*`},
	} {
		q, err := ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.grams.String(); got != c.want {
			t.Errorf("%s: formula %s, want %s", c.query, got, c.want)
		}
		if q.Narrowed() != (c.want != "*") {
			t.Errorf("%s: Narrowed() = %v", c.query, q.Narrowed())
		}
	}
}

// holds evaluates q against a block's trigrams (has): the formula's
// meaning, which the index's postingsReader computes over blocks.
func (q *gramQuery) holds(has func(uint32) bool) bool {
	switch q.op {
	case gramAnd:
		for _, g := range q.grams {
			if !has(g) {
				return false
			}
		}
		for _, s := range q.subs {
			if !s.holds(has) {
				return false
			}
		}
		return true
	case gramOr:
		for _, g := range q.grams {
			if has(g) {
				return true
			}
		}
		for _, s := range q.subs {
			if s.holds(has) {
				return true
			}
		}
		return false
	}
	return true
}

// checkQuerySound fails t if a line that query matches is one a search
// would pass over: its block's trigrams refused by the formula, the line
// refused by the query's literals, or its anchor not found in it.
func checkQuerySound(t *testing.T, gs *gramSet, query, line string) {
	t.Helper()
	q, err := ParseQuery(query)
	if err != nil {
		return
	}
	matched, _ := q.Match(line)
	if q.re != nil && q.re.MatchString(line) != matched {
		t.Fatalf("%q on %q: Match says %v, the regexp %v", query, line, matched, !matched)
	}
	if !matched {
		return
	}
	gs.add(line)
	has := gs.take()
	if !q.grams.holds(func(g uint32) bool { return slices.Contains(has, g) }) {
		t.Fatalf("%q matches %q, but its formula %s refuses the line's trigrams", query, line, q.grams)
	}
	if q.anchor.s != "" && q.anchor.index([]byte(line)) < 0 {
		t.Fatalf("%q matches %q, but its anchor %q is not found in it", query, line, q.anchor.s)
	}
}

// Every line a query matches passes its trigram formula, its literals and
// its anchor: a regular expression of alternations, classes, repeats and
// (?i), on lines in any case, with ſ (which (?i)s matches), non-ASCII
// and bytes that are not UTF-8.
func TestQuerySound(t *testing.T) {
	gs := newGramSet()
	queries := []string{
		`/timeout|refused/`, `/(?i)TIMEOUT|Refused/`, `/(?i)session/`, `/(?i)ses+ion/`, `/err(or)?s?:/`,
		`/\bdea[0-9a-f]{5} /`, `/[Ee]rror: (db|cache) time(out)?/`, `/(get|put|post)_(user|item)s*/`,
		`/(?i)straße|STRASSE/`, `/(?i)kelvin/`, `/x?y?zzz/`, `/(ab|cd)(ef|gh)(ij|kl)/`, `/a[^b]c.d/`,
		`/\x{FFFD}abc/`, `/(?i)σας/`, `/ÄBC|äbc/`, "session", `"Error: db"`, `/(?s)a.b/`, `/(?m)^abc$/`,
		`/\bdea/`, `/^abc/`, `/\Aabc/`, `/(?i)\bkbc/`, `/\b\x{212A}bc/`, `/\bİbc/`, `/(?i)\bSTR/`, `/\b[a-c]bc/`,
		`/x\b\Wabc/`, `/(?m)^x?abc/`, "kbc", "ibc", "KBC",
	}
	lines := []string{
		"connection refused", "TIMEOUT after 3s", "a Session ended", "ſession ended", "SESSION", "seſſion", "sesssion",
		"errors: 3", "err: x", "errs:", "id dea12f3c took", "xdea12f3c ", "Error: db timeout", "error: cache time",
		"GET_USERSS", "post_item", "STRASSE", "straße", "straSSe", "Kelvin", "KELVIN", "zzz", "xyzzz", "acegik",
		"abcdefhij", "cdghkl", "a\xffc\x00d", "\x80abc", "\uFFFDabc", "ΣΑΣ", "σας", "ςας", "äbc", "ÄBC",
		"a\nb", "x\nabc\ny",
		// Word starts: the Kelvin sign and İ lower-case to k and i but are
		// no word characters, so a word may begin after them, or at them.
		"id=dea12f3c", "IDEA", "abc", "aKbc", "a\u212Abc", "\u212Abc", "aİbc", "İbc", "x\u212A!abc", "xİabc",
		"ſTR", "a_STR", "éSTR", "ÄSTRaße", "x-abc", "\xffabc", "x\n\nabc",
	}
	for _, q := range queries {
		for _, l := range lines {
			checkQuerySound(t, gs, q, l)
		}
	}
}

func FuzzQuerySound(f *testing.F) {
	for _, s := range [][2]string{
		{`/timeout|refused/`, "connection refused"}, {`/(?i)session/`, "ſession"}, {`/dea[0-9a-f]{5} /`, "dea12f3c "},
		{`/(a|b)(c|d)+e?f/`, "xbddf"}, {"hello world", "HELLO WORLD"}, {`/(?i)σ/`, "ς"}, {`/\x{FFFD}ab/`, "\xffab"},
		{`/(?i)\bkbc/`, "a\u212Abc"}, {`/\bİbc/`, "aİbc"}, {`/^abc/`, "abc"}, {`/\bdea/`, "id=dea1"},
	} {
		f.Add(s[0], s[1])
	}
	gs := newGramSet()
	f.Fuzz(func(t *testing.T, query, line string) {
		if len(query) > 200 || len(line) > 1000 {
			return
		}
		checkQuerySound(t, gs, query, line)
		checkQuerySound(t, gs, "/"+query+"/", line)
	})
}

// The blocks a formula leaves are those that hold what it asks: for an
// alternation, the blocks of either word, and only those.
func TestCandidatesOfFormula(t *testing.T) {
	ix, w := newBlockWriter(t)
	sess := uuid.New()
	at := time.UnixMilli(1_700_000_000_000)
	const blocks = 60
	var alpha, bravo, either []int
	for b := range blocks {
		lines := []Line{{Turn: b, Kind: KindOutput, At: at, Text: fmt.Sprintf("filler %d", b)}}
		if b%3 == 0 {
			lines = append(lines, Line{Turn: b, Kind: KindOutput, At: at, Text: "the Alpha line"})
			alpha = append(alpha, b)
		}
		if b%5 == 0 {
			lines = append(lines, Line{Turn: b, Kind: KindOutput, At: at, Text: "a bravo line"})
			bravo = append(bravo, b)
		}
		if b%3 == 0 || b%5 == 0 {
			either = append(either, b)
		}
		if _, err := w.putBlock(sess, 0, lines, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query       string
		cands, want []int
	}{
		{`/(?i)alpha|bravo/`, either, either},
		{`/(?i)alpha/`, alpha, alpha},
		{`/bravo|zulu/`, bravo, bravo},
		// The trigrams know no case: the blocks of "Alpha" are read,
		// and hold no hit.
		{`/(alpha|bravo) line/`, either, bravo},
	} {
		cands, all, hits := candidatesAndHits(t, ix, c.query)
		if all || cands != len(c.cands) {
			t.Errorf("%s: %d candidate blocks (all: %v), want the %d that hold its trigrams", c.query, cands, all, len(c.cands))
		}
		if !slices.Equal(hits, c.want) {
			t.Errorf("%s: hits in blocks %v, want %v", c.query, hits, c.want)
		}
	}
	if cands, all, hits := candidatesAndHits(t, ix, `/zulu|yankee/`); all || cands != 0 || hits != nil {
		t.Errorf("/zulu|yankee/: %d candidates (all: %v), hits %v; want none", cands, all, hits)
	}
	if _, all, hits := candidatesAndHits(t, ix, `/l.h/`); !all || !slices.Equal(hits, alpha) {
		t.Errorf("/l.h/: all blocks %v, hits in %v; want every block read, hits in %v", all, hits, alpha)
	}
}

// \b, ^ and \A before a word's first three characters read only the
// blocks where a word begins with them, not those where the characters
// are inside a word (a hex id's middle). The index knows where words
// begin, not lines: ^ reads the blocks where a word begins so.
func TestCandidatesOfWordStart(t *testing.T) {
	ix, w := newBlockWriter(t)
	sess := uuid.New()
	at := time.UnixMilli(1_700_000_000_000)
	var begins, inside, lineStart, idStart []int
	for b := range 40 {
		lines := []Line{{Turn: b, Kind: KindOutput, At: at, Text: fmt.Sprintf("filler %d", b)}}
		switch b % 4 {
		case 0:
			lines = append(lines, Line{Turn: b, Kind: KindOutput, At: at, Text: "took 3ms id=DEADbeef"})
			begins, idStart = append(begins, b), append(idStart, b)
		case 1:
			lines = append(lines, Line{Turn: b, Kind: KindOutput, At: at, Text: "took 3ms id=0deadbeef"})
			inside = append(inside, b)
		case 2:
			lines = append(lines, Line{Turn: b, Kind: KindOutput, At: at, Text: "deadbeef took 3ms"})
			begins, lineStart = append(begins, b), append(lineStart, b)
		}
		if _, err := w.putBlock(sess, 0, lines, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.commit(); err != nil {
		t.Fatal(err)
	}
	anywhere := slices.Sorted(slices.Values(append(slices.Clone(begins), inside...)))
	for _, c := range []struct {
		query       string
		cands, hits []int
	}{
		{`/\bdeadbeef/`, begins, lineStart}, // the index knows no case; the regexp does
		{`/(?i)\bdeadbeef/`, begins, begins},
		{`/(?i)deadbeef/`, anywhere, anywhere},
		{`/^dea/`, begins, lineStart},
		{`/(?i)=\bdea/`, begins, idStart},
		{`/(?i)\Bdeadbeef/`, anywhere, inside},
	} {
		cands, _, hits := candidatesAndHits(t, ix, c.query)
		if cands != len(c.cands) || !slices.Equal(hits, c.hits) {
			t.Errorf("%s: %d candidate blocks, hits in %v; want the %d of %v, hits in %v", c.query, cands, hits, len(c.cands), c.cands, c.hits)
		}
	}
}

// candidatesAndHits returns how many blocks query's formula leaves in ix
// (all: it narrows none) and the turns of the blocks its search has hits
// in, each once (a block's lines are of one turn in these tests).
func candidatesAndHits(t *testing.T, ix *Index, query string) (cands int, all bool, hits []int) {
	t.Helper()
	q, err := ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	err = ix.db.View(func(tx *bolt.Tx) error {
		ids, a, err := ix.candidates(tx, q)
		cands, all = len(ids), a
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = ix.Search(t.Context(), q, Filter{}, func(h Hit) error {
		if n := len(hits); n == 0 || hits[n-1] != h.Turn {
			hits = append(hits, h.Turn)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cands, all, hits
}
