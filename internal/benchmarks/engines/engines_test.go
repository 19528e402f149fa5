package engines

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/mapping"
	bq "github.com/blevesearch/bleve/v2/search/query"
	"github.com/google/uuid"
	_ "modernc.org/sqlite"

	"looprig/fsstore"
	"looprig/internal/benchmarks"
	"looprig/search"
)

var bg = context.Background()

// The queries, each as looprig's syntax says it, and what every engine
// must find: the lines a scan of every line finds (checked each round).
const (
	wordQuery   = "eaddrinuse"
	phraseQuery = "error auth: kaka " // with its space: the word kaka, not kakaro
	rePattern   = `\bdea[0-9a-f]{5} `
	reLiteral   = "dea"
)

var queryRE = regexp.MustCompile(rePattern)

// corpus is the generated store and what a scan of its lines found.
type corpus struct {
	*benchmarks.SearchCorpus
	st    *fsstore.Store
	work  string // where the other engines' indexes go
	lines int    // lines looprig's index holds
	text  int64  // bytes of their text
	want  [3]int // lines the word, the phrase and the regexp match
}

func size() (sessions, lines int) {
	sessions, lines = 100, 10_000
	if testing.Short() {
		sessions = 20
	}
	if n, err := strconv.Atoi(os.Getenv("LOOPRIG_SEARCH_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	if n, err := strconv.Atoi(os.Getenv("LOOPRIG_SEARCH_LINES")); err == nil && n > 0 {
		lines = n
	}
	return sessions, lines
}

func newCorpus(b *testing.B) *corpus {
	sessions, lines := size()
	root := os.Getenv("LOOPRIG_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	dir := filepath.Join(root, fmt.Sprintf("engines-%dx%d", sessions, lines))
	os.RemoveAll(dir)
	t0 := time.Now()
	c, err := benchmarks.GenerateSearchCorpus(bg, filepath.Join(dir, "store"), sessions, lines)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("corpus: %d sessions × %d lines, %.1f MB of journals, made in %v", sessions, lines, float64(c.JournalBytes)/1e6, time.Since(t0).Round(time.Millisecond))
	st, err := fsstore.Open(c.Dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return &corpus{SearchCorpus: c, st: st, work: filepath.Join(dir, "engines")}
}

// engine is one contender: a full build from the journals, its size, and
// the three queries, each calling hit with every matching line's text.
type engine interface {
	name() string
	build(c *corpus) error
	size(c *corpus) (bytes, disk int64, err error)
	open(c *corpus) error
	close() error
	word(hit func(string)) error
	phrase(hit func(string)) error
	re(hit func(string)) error
}

// feed sends the lines of the corpus's journals, read as looprig's index
// reads them (extract_test.go), to fn in batches, from another goroutine:
// reading and indexing overlap, as in looprig's rebuild.
func feed(c *corpus, fn func([]doc) error) error {
	ch := make(chan []doc, 4)
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	go func() {
		defer close(ch)
		batch := make([]doc, 0, 4096)
		errc <- extractSessions(ctx, c.st, c.IDs, func(d doc) {
			batch = append(batch, d)
			if len(batch) == cap(batch) {
				select {
				case ch <- batch:
				case <-ctx.Done():
				}
				batch = make([]doc, 0, 4096)
			}
		})
		if len(batch) > 0 {
			ch <- batch
		}
	}()
	for batch := range ch {
		if err := fn(batch); err != nil {
			cancel()
			for range ch {
			}
			return err
		}
	}
	return <-errc
}

// ---- looprig's index (package search)

type looprigEngine struct {
	c  *corpus
	ix *search.Index
	qs [3]*search.Query
}

func (e *looprigEngine) name() string { return "looprig" }

func (e *looprigEngine) build(c *corpus) error {
	ix, err := search.Open(bg, c.st, search.Options{})
	if err != nil {
		return err
	}
	if err := ix.Reset(bg); err != nil {
		ix.Close()
		return err
	}
	var ses []search.Session
	for _, id := range c.IDs {
		ses = append(ses, search.Session{ID: id})
	}
	s, err := ix.Update(bg, ses, nil)
	if err != nil {
		ix.Close()
		return err
	}
	if s.Lines < int64(c.Lines) {
		ix.Close()
		return fmt.Errorf("looprig indexed %d lines, the journals hold %d output lines", s.Lines, c.Lines)
	}
	return ix.Close()
}

func (e *looprigEngine) size(c *corpus) (int64, int64, error) {
	p, err := search.Path(c.st, search.Options{})
	if err != nil {
		return 0, 0, err
	}
	return fileSize(p)
}

func (e *looprigEngine) open(c *corpus) error {
	var err error
	for i, q := range []string{wordQuery, `"` + phraseQuery + `"`, "/" + rePattern + "/"} {
		if e.qs[i], err = search.ParseQuery(q); err != nil {
			return err
		}
	}
	e.ix, err = search.Open(bg, c.st, search.Options{})
	return err
}

func (e *looprigEngine) close() error { return e.ix.Close() }

func (e *looprigEngine) query(q *search.Query, hit func(string)) error {
	return e.ix.Search(bg, q, search.Filter{}, func(h search.Hit) error { hit(h.Text); return nil })
}

func (e *looprigEngine) word(hit func(string)) error   { return e.query(e.qs[0], hit) }
func (e *looprigEngine) phrase(hit func(string)) error { return e.query(e.qs[1], hit) }
func (e *looprigEngine) re(hit func(string)) error     { return e.query(e.qs[2], hit) }

// ---- SQLite FTS5 (modernc.org/sqlite)

// ftsEngine is an FTS5 table of the lines, with the session (its number
// in a table of sessions), turn, kind and time beside the text,
// unindexed. trigram: the trigram tokenizer (substrings, LIKE, GLOB);
// else unicode61 (words).
type ftsEngine struct {
	trigram  bool
	db       *sql.DB
	parts    string        // the tables' sizes after the build
	optimize time.Duration // of the build, the 'optimize' that ends it
}

func (e *ftsEngine) name() string {
	if e.trigram {
		return "fts5-trigram"
	}
	return "fts5-unicode61"
}

func (e *ftsEngine) dbPath(c *corpus) string { return filepath.Join(c.work, e.name()+".db") }

func (e *ftsEngine) build(c *corpus) error {
	p := e.dbPath(c)
	for _, suf := range []string{"", "-wal", "-shm"} {
		os.Remove(p + suf)
	}
	os.MkdirAll(c.work, 0o700)
	db, err := sql.Open("sqlite", p)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tok := "unicode61"
	if e.trigram {
		tok = "trigram"
	}
	for _, s := range []string{
		"PRAGMA journal_mode=WAL",
		"PRAGMA synchronous=NORMAL",
		"CREATE TABLE sessions(n INTEGER PRIMARY KEY, id TEXT NOT NULL)",
		"CREATE VIRTUAL TABLE lines USING fts5(text, session UNINDEXED, turn UNINDEXED, kind UNINDEXED, at UNINDEXED, tokenize='" + tok + "')",
	} {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	for i, id := range c.IDs {
		if _, err := db.Exec("INSERT INTO sessions VALUES(?, ?)", i, id.String()); err != nil {
			return err
		}
	}
	num := map[uuid.UUID]int{}
	for i, id := range c.IDs {
		num[id] = i
	}
	// Transactions of 32 MB of text, as looprig's rebuild commits.
	var tx *sql.Tx
	var ins *sql.Stmt
	var inTx int
	begin := func() error {
		var err error
		if tx, err = db.Begin(); err != nil {
			return err
		}
		ins, err = tx.Prepare("INSERT INTO lines(text, session, turn, kind, at) VALUES(?, ?, ?, ?, ?)")
		inTx = 0
		return err
	}
	if err := begin(); err != nil {
		return err
	}
	err = feed(c, func(ds []doc) error {
		for _, d := range ds {
			if _, err := ins.Exec(d.Text, num[d.Session], d.Turn, int(d.Kind), d.At.UnixMilli()); err != nil {
				return err
			}
			inTx += len(d.Text)
		}
		if inTx >= 32<<20 {
			ins.Close()
			if err := tx.Commit(); err != nil {
				return err
			}
			return begin()
		}
		return nil
	})
	if err != nil {
		tx.Rollback()
		return err
	}
	ins.Close()
	if err := tx.Commit(); err != nil {
		return err
	}
	// One b-tree per term, as a rebuild should leave it.
	t0 := time.Now()
	if _, err := db.Exec("INSERT INTO lines(lines) VALUES('optimize')"); err != nil {
		return err
	}
	e.optimize = time.Since(t0)
	if _, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return err
	}
	e.parts, err = tableSizes(db)
	return err
}

// tableSizes are the bytes of each table of db, "" when SQLite was built
// without dbstat.
func tableSizes(db *sql.DB) (string, error) {
	rows, err := db.Query("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
	if err != nil {
		return "", nil
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MB", name, float64(n)/1e6))
	}
	return strings.Join(parts, ", "), rows.Err()
}

func (e *ftsEngine) size(c *corpus) (int64, int64, error) {
	var n, d int64
	for _, suf := range []string{"", "-wal", "-shm"} {
		a, b, err := fileSize(e.dbPath(c) + suf)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, 0, err
		}
		n, d = n+a, d+b
	}
	return n, d, nil
}

func (e *ftsEngine) open(c *corpus) error {
	var err error
	if e.db, err = sql.Open("sqlite", e.dbPath(c)); err != nil {
		return err
	}
	e.db.SetMaxOpenConns(1)
	return e.db.Ping()
}

func (e *ftsEngine) close() error { return e.db.Close() }

// match calls hit with the text of every row that matches the FTS5 query
// m (and, when check is set, that check keeps), reading every column as a
// hit would show them.
func (e *ftsEngine) match(m string, check func(string) bool, hit func(string)) error {
	rows, err := e.db.Query("SELECT l.text, s.id, l.turn, l.kind, l.at FROM lines l JOIN sessions s ON s.n = l.session WHERE lines MATCH ? ORDER BY l.rowid", m)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var text, id string
		var turn, kind, at int64
		if err := rows.Scan(&text, &id, &turn, &kind, &at); err != nil {
			return err
		}
		if check == nil || check(text) {
			hit(text)
		}
	}
	return rows.Err()
}

func (e *ftsEngine) word(hit func(string)) error { return e.match(`"`+wordQuery+`"`, nil, hit) }

func (e *ftsEngine) phrase(hit func(string)) error {
	if e.trigram {
		// A substring: the phrase as it is, its space too.
		return e.match(`"`+phraseQuery+`"`, nil, hit)
	}
	return e.match(`"`+strings.TrimSpace(phraseQuery)+`"`, nil, hit)
}

// re: FTS5 has no regexp. The trigram table narrows to the rows holding
// the literal ("dea", in any case); unicode61 to the rows with a token
// that begins with it (dea*: right only because the regexp's literal
// follows a \b); Go's regexp checks each candidate.
func (e *ftsEngine) re(hit func(string)) error {
	if e.trigram {
		return e.match(`"`+reLiteral+`"`, queryRE.MatchString, hit)
	}
	return e.match(reLiteral+`*`, queryRE.MatchString, hit)
}

// ---- bleve v2 (scorch)

type bleveEngine struct {
	ix bleve.Index
}

func (e *bleveEngine) name() string { return "bleve" }

func (e *bleveEngine) dir(c *corpus) string { return filepath.Join(c.work, "bleve") }

// bleveMapping: the text analyzed by the standard analyzer (Unicode word
// segmentation, lower-cased, English stop words) and stored, with term
// vectors (phrases); the session and kind as keywords (filters); turn
// and time stored only. No _all field, no dynamic fields.
func bleveMapping() mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	m.IndexDynamic, m.StoreDynamic, m.DocValuesDynamic = false, false, false
	dm := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = standard.Name
	text.Store, text.IncludeInAll, text.DocValues = true, false, false
	dm.AddFieldMappingsAt("text", text)
	for _, f := range []string{"session", "kind"} {
		k := bleve.NewKeywordFieldMapping()
		k.Analyzer = keyword.Name
		k.Store, k.IncludeInAll, k.DocValues, k.IncludeTermVectors = true, false, false, false
		dm.AddFieldMappingsAt(f, k)
	}
	for _, f := range []string{"turn", "at"} {
		n := bleve.NewNumericFieldMapping()
		n.Index, n.Store, n.IncludeInAll, n.DocValues = false, true, false, false
		dm.AddFieldMappingsAt(f, n)
	}
	m.DefaultMapping = dm
	return m
}

type bleveDoc struct {
	Text    string  `json:"text"`
	Session string  `json:"session"`
	Kind    string  `json:"kind"`
	Turn    float64 `json:"turn"`
	At      float64 `json:"at"`
}

func (e *bleveEngine) build(c *corpus) error {
	dir := e.dir(c)
	os.RemoveAll(dir)
	os.MkdirAll(c.work, 0o700)
	ix, err := bleve.New(dir, bleveMapping())
	if err != nil {
		return err
	}
	n := 0
	err = feed(c, func(ds []doc) error {
		batch := ix.NewBatch()
		for _, d := range ds {
			bd := bleveDoc{Text: d.Text, Session: d.Session.String(), Kind: d.Kind.String(), Turn: float64(d.Turn), At: float64(d.At.UnixMilli())}
			if err := batch.Index(strconv.Itoa(n), bd); err != nil {
				return err
			}
			n++
		}
		return ix.Batch(batch)
	})
	if err != nil {
		ix.Close()
		return err
	}
	return ix.Close()
}

func (e *bleveEngine) size(c *corpus) (int64, int64, error) { return treeSize(e.dir(c)) }

func (e *bleveEngine) open(c *corpus) error {
	var err error
	e.ix, err = bleve.Open(e.dir(c))
	return err
}

func (e *bleveEngine) close() error { return e.ix.Close() }

// query runs q for every hit (in pages of 10,000), reading every stored
// field as a hit would show them; check, when set, keeps some.
func (e *bleveEngine) query(q bq.Query, check func(string) bool, hit func(string)) error {
	const page = 10_000
	for from := 0; ; from += page {
		req := bleve.NewSearchRequestOptions(q, page, from, false)
		req.Fields = []string{"text", "session", "kind", "turn", "at"}
		res, err := e.ix.Search(req)
		if err != nil {
			return err
		}
		for _, h := range res.Hits {
			text, _ := h.Fields["text"].(string)
			if check == nil || check(text) {
				hit(text)
			}
		}
		if uint64(from+page) >= res.Total {
			return nil
		}
	}
}

func (e *bleveEngine) word(hit func(string)) error {
	q := bleve.NewMatchQuery(wordQuery)
	q.SetField("text")
	return e.query(q, nil, hit)
}

func (e *bleveEngine) phrase(hit func(string)) error {
	q := bleve.NewMatchPhraseQuery(phraseQuery)
	q.SetField("text")
	return e.query(q, nil, hit)
}

// re: bleve's regexp query matches terms of the term dictionary, not
// lines: dea[0-9a-f]{5} finds the tokens (the standard analyzer makes
// "id=dea12345" the tokens id and dea12345), and Go's regexp checks the
// lines (the \b and the space around the token are not in it).
func (e *bleveEngine) re(hit func(string)) error {
	q := bleve.NewRegexpQuery(reLiteral + `[0-9a-f]{5}`)
	q.SetField("text")
	return e.query(q, queryRE.MatchString, hit)
}

// ---- the benchmark

func fileSize(p string) (int64, int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return 0, 0, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	return st.Size, st.Blocks * 512, nil
}

func treeSize(dir string) (n, disk int64, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		a, b, err := fileSize(p)
		n, disk = n+a, disk+b
		return err
	})
	return n, disk, err
}

// checkLines compares the lines looprig's index holds (every line a query
// of /^/ gives, in order) with those extract_test.go reads from the
// journals, by count and by a hash of every field, and counts the lines
// each query must find.
func checkLines(b *testing.B, c *corpus) {
	ix, err := search.Open(bg, c.st, search.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	all, err := search.ParseQuery("/^/")
	if err != nil {
		b.Fatal(err)
	}
	hashOf := func(h interface{ Write([]byte) (int, error) }, sess uuid.UUID, turn int, kind search.Kind, at time.Time, text string) {
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00%s\x00", sess, turn, kind, at.UnixMilli(), text)
	}
	hl := fnv.New64a()
	err = ix.Search(bg, all, search.Filter{}, func(h search.Hit) error {
		hashOf(hl, h.Session, h.Turn, h.Kind, h.At, h.Text)
		c.lines++
		c.text += int64(len(h.Text))
		lower := strings.ToLower(h.Text)
		if strings.Contains(lower, wordQuery) {
			c.want[0]++
		}
		if strings.Contains(lower, phraseQuery) {
			c.want[1]++
		}
		if queryRE.MatchString(h.Text) {
			c.want[2]++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	he := fnv.New64a()
	n := 0
	if err := extractSessions(bg, c.st, c.IDs, func(d doc) { n++; hashOf(he, d.Session, d.Turn, d.Kind, d.At, d.Text) }); err != nil {
		b.Fatal(err)
	}
	if n != c.lines || hl.Sum64() != he.Sum64() {
		b.Fatalf("the lines read from the journals (%d) are not those looprig's index holds (%d)", n, c.lines)
	}
	if c.want[0] < c.Needles {
		b.Fatalf("%d lines hold %q, %d were planted", c.want[0], wordQuery, c.Needles)
	}
	b.Logf("lines: %d (%.1f MB of text), the same from looprig's index and from the journals; to find: word %d, phrase %d, regexp %d",
		c.lines, float64(c.text)/1e6, c.want[0], c.want[1], c.want[2])
}

func pct(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1e3
}

// BenchmarkEngines compares looprig's index with SQLite FTS5 (unicode61
// and trigram tokenizers) and bleve on one generated corpus (see the
// package documentation): each engine's full build from the journals
// (MB of journal per second), its size, and the query latencies, in
// interleaved rounds (every round runs every engine's queries, the first
// engine rotating), each query's hits checked against a scan of every
// line. Sub-benchmarks name the engines; their metrics: build-MBps,
// size-ratio (index bytes / journal bytes; disk-ratio: the blocks it
// takes), word-p50-ms, word-p95-ms, phrase-p50-ms, phrase-p95-ms,
// re-p50-ms, re-p95-ms, open-word-p50-ms (open, the word query, close),
// and x-looprig ratios of the medians (engine / looprig; above 1: slower
// or bigger than looprig's). LOOPRIG_ENGINES, a list of names split by
// commas, keeps only those engines beside looprig's.
func BenchmarkEngines(b *testing.B) {
	c := newCorpus(b)
	engines := []engine{&looprigEngine{}, &ftsEngine{}, &ftsEngine{trigram: true}, &bleveEngine{}}
	if only := os.Getenv("LOOPRIG_ENGINES"); only != "" {
		names := strings.Split(only, ",")
		engines = slices.DeleteFunc(engines, func(e engine) bool {
			return e.name() != "looprig" && !slices.Contains(names, e.name())
		})
	}
	type result struct {
		build                    time.Duration
		bytes, disk              int64
		word, phrase, re, opened []time.Duration
	}
	res := make([]result, len(engines))
	rounds := 25
	if testing.Short() {
		rounds = 7
	}
	for range b.N {
		// Builds: one each, looprig's first (checkLines reads it).
		for i, e := range engines {
			t0 := time.Now()
			if err := e.build(c); err != nil {
				b.Fatalf("%s: build: %v", e.name(), err)
			}
			res[i].build = time.Since(t0)
			var err error
			if res[i].bytes, res[i].disk, err = e.size(c); err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: built in %v, %.1f MB", e.name(), res[i].build.Round(time.Millisecond), float64(res[i].bytes)/1e6)
			if f, ok := e.(*ftsEngine); ok && f.parts != "" {
				b.Logf("%s: optimize took %v of the build; tables: %s", e.name(), f.optimize.Round(time.Millisecond), f.parts)
			}
			if i == 0 {
				checkLines(b, c)
			}
		}
		for r := range rounds {
			for k := range engines {
				i := (r + k) % len(engines)
				e, rs := engines[i], &res[i]
				run := func(what string, want int, q func(func(string)) error) time.Duration {
					n := 0
					t0 := time.Now()
					if err := q(func(string) { n++ }); err != nil {
						b.Fatalf("%s: %s: %v", e.name(), what, err)
					}
					d := time.Since(t0)
					if n != want {
						b.Fatalf("%s: %s found %d lines, a scan finds %d", e.name(), what, n, want)
					}
					return d
				}
				t0 := time.Now()
				if err := e.open(c); err != nil {
					b.Fatalf("%s: open: %v", e.name(), err)
				}
				run("word", c.want[0], e.word)
				if err := e.close(); err != nil {
					b.Fatal(err)
				}
				rs.opened = append(rs.opened, time.Since(t0))
				if err := e.open(c); err != nil {
					b.Fatalf("%s: open: %v", e.name(), err)
				}
				rs.word = append(rs.word, run("word", c.want[0], e.word))
				rs.phrase = append(rs.phrase, run("phrase", c.want[1], e.phrase))
				rs.re = append(rs.re, run("regexp", c.want[2], e.re))
				if err := e.close(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	jb := float64(c.JournalBytes)
	base := res[0]
	for i, e := range engines {
		rs := res[i]
		b.Run(e.name(), func(b *testing.B) {
			for range b.N {
			}
			b.ReportMetric(jb/1e6/rs.build.Seconds(), "build-MBps")
			b.ReportMetric(float64(rs.bytes)/jb, "size-ratio")
			b.ReportMetric(float64(rs.disk)/jb, "disk-ratio")
			b.ReportMetric(pct(rs.word, 0.5), "word-p50-ms")
			b.ReportMetric(pct(rs.word, 0.95), "word-p95-ms")
			b.ReportMetric(pct(rs.phrase, 0.5), "phrase-p50-ms")
			b.ReportMetric(pct(rs.phrase, 0.95), "phrase-p95-ms")
			b.ReportMetric(pct(rs.re, 0.5), "re-p50-ms")
			b.ReportMetric(pct(rs.re, 0.95), "re-p95-ms")
			b.ReportMetric(pct(rs.opened, 0.5), "open-word-p50-ms")
			if i > 0 {
				b.ReportMetric(rs.build.Seconds()/base.build.Seconds(), "build-time-x-looprig")
				b.ReportMetric(float64(rs.bytes)/float64(base.bytes), "size-x-looprig")
				b.ReportMetric(pct(rs.word, 0.5)/pct(base.word, 0.5), "word-x-looprig")
				b.ReportMetric(pct(rs.phrase, 0.5)/pct(base.phrase, 0.5), "phrase-x-looprig")
				b.ReportMetric(pct(rs.re, 0.5)/pct(base.re, 0.5), "re-x-looprig")
			}
		})
	}
	b.Logf("journals: %.1f MB; lines: %d; the other engines indexed the same lines, read from the journals by looprig's extractor (search.ReadLines)", jb/1e6, c.lines)
}
