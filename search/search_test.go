package search_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/engine"
	"looprig/search"
)

// world is a real fsstore in a temporary directory with a shell rig and
// an agent rig (a fake agent engine that asks a gate and replies).
type world struct {
	t     *testing.T
	store *fsstore.Store
	dir   string
	shell *rig.Rig
	tty   *rig.Rig
	agent *rig.Rig
	notes bytes.Buffer
	// listings counts the searches that listed the store's sessions (the
	// others used the index's kept listing).
	listings int
	// cache, when set, is the searches' block cache.
	cache *search.BlockCache
}

// fakeAgent is an agent engine: it asks a gate, then replies.
type fakeAgent struct{}

func (fakeAgent) Name() string { return "fakeagent" }

func (fakeAgent) Run(ctx context.Context, turn engine.Turn, sink engine.Sink) (engine.Result, error) {
	ok, err := sink.Gate(ctx, "allow the agent to deploy to staging?")
	if err != nil {
		return engine.Result{ExitCode: engine.NoExitCode}, err
	}
	if !ok {
		return engine.Result{ExitCode: 1}, nil
	}
	sink.Output(engine.Stdout, "I changed the retry logic in client.go\nall tests pass\n")
	return engine.Result{ExitCode: 0}, nil
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	st, err := fsstore.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := &world{t: t, store: st, dir: dir}
	define := func(p rig.Profile, extra ...rig.Option) *rig.Rig {
		opts := []rig.Option{rig.WithStore(st), rig.WithProfile(p), rig.WithWorkspaces(st.WorkspacesDir())}
		r, err := rig.Define(append(opts, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pipes := rig.DefaultProfile()
	pipes.NoTTY = true
	w.shell = define(pipes)
	w.tty = define(rig.DefaultProfile())
	ap := rig.Profile{Name: "agent", Engine: "fakeagent", Placement: rig.PlacementSession, NoTTY: true}
	w.agent = define(ap, rig.WithEngine("fakeagent", func(rig.Profile) (engine.Engine, error) { return fakeAgent{}, nil }))
	return w
}

func (w *world) session(r *rig.Rig) *rig.Session {
	w.t.Helper()
	s, err := r.NewSession(w.t.Context())
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = s.Interrupt(ctx)
		_ = s.Shutdown(ctx)
	})
	return s
}

func (w *world) run(s *rig.Session, input string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), 30*time.Second)
	defer cancel()
	if _, err := s.Submit(ctx, input); err != nil {
		w.t.Fatalf("submit %q: %v", input, err)
	}
	if err := s.WaitIdle(ctx); err != nil {
		w.t.Fatalf("wait for %q: %v", input, err)
	}
}

// search updates the index and returns the hits of query.
func (w *world) search(query string, f search.Filter) []search.Hit {
	w.t.Helper()
	hits, err := w.trySearch(query, f)
	if err != nil {
		w.t.Fatalf("search %q: %v", query, err)
	}
	return hits
}

func (w *world) trySearch(query string, f search.Filter) ([]search.Hit, error) {
	ctx := w.t.Context()
	q, err := search.ParseQuery(query)
	if err != nil {
		return nil, err
	}
	ix, err := search.Open(ctx, w.store, search.Options{Notes: &w.notes, Cache: w.cache})
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	// As the command lists: the leases alone, kept by the index while
	// the store stands still.
	sessions, err := ix.Sessions(ctx, func(ctx context.Context) ([]search.Session, error) {
		w.listings++
		leases, err := rig.ListLeases(ctx, w.store)
		return search.SessionsOfLeases(leases), err
	})
	if err != nil {
		return nil, err
	}
	var hits []search.Hit
	_, err = ix.Find(ctx, sessions, q, f, nil, func() { hits = nil },
		func(h search.Hit) error { hits = append(hits, h); return nil })
	return hits, err
}

func texts(hits []search.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Kind.String()+": "+h.Text)
	}
	return out
}

func wantHits(t *testing.T, hits []search.Hit, want ...string) {
	t.Helper()
	got := texts(hits)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hits:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Every kind of line is found, by words, phrase and regexp; output is
// found as a user reads it (colours gone, a redrawn line's last state).
func TestSearchKinds(t *testing.T) {
	w := newWorld(t)
	sh := w.session(w.shell)
	w.run(sh, `echo "bind failed: EADDRINUSE on port 8080"; printf '\033[1;31mcrimson\033[0m text\n'; printf 'progress 10%%\rprogress 100%% done\n'`)
	ag := w.session(w.agent)
	ctx := t.Context()
	if _, err := ag.Submit(ctx, "fix the flaky retry test"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for ag.Status().Gate == nil {
		if time.Now().After(deadline) {
			t.Fatal("the agent's gate never opened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := ag.RespondGate(ctx, ag.Status().Gate.ID, true, rig.Client{Kind: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := ag.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}

	wantHits(t, w.search("eaddrinuse 8080", search.Filter{}),
		`command: echo "bind failed: EADDRINUSE on port 8080"; printf '\033[1;31mcrimson\033[0m text\n'; printf 'progress 10%%\rprogress 100%% done\n'`,
		"output: bind failed: EADDRINUSE on port 8080")
	wantHits(t, w.search("EADDRINUSE", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: bind failed: EADDRINUSE on port 8080")
	wantHits(t, w.search(`"crimson text"`, search.Filter{}), "output: crimson text")
	wantHits(t, w.search(`/^progress 10%$/`, search.Filter{Kinds: []search.Kind{search.KindOutput}}))
	wantHits(t, w.search(`progress done`, search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: progress 100% done")
	wantHits(t, w.search(`/EADDR[A-Z]+ on port \d+$/`, search.Filter{}), "output: bind failed: EADDRINUSE on port 8080")
	wantHits(t, w.search(`/eaddr/`, search.Filter{}))
	wantHits(t, w.search(`/(?i)eaddr[a-z]+ ON port/`, search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: bind failed: EADDRINUSE on port 8080")
	wantHits(t, w.search(`staging`, search.Filter{}), "gate: allow the agent to deploy to staging?")
	wantHits(t, w.search(`gate approve`, search.Filter{}), "gate: gate approve")
	wantHits(t, w.search(`retry`, search.Filter{}), "agent: fix the flaky retry test", "agent: I changed the retry logic in client.go")
	hits := w.search(`retry logic`, search.Filter{Context: 1})
	if len(hits) != 1 || hits[0].Session != ag.SessionID() || hits[0].Turn != 0 || len(hits[0].After) != 1 || hits[0].After[0].Text != "all tests pass" {
		t.Errorf("retry logic with context: %+v", hits)
	}
	if h := w.search("crimson", search.Filter{Sessions: map[uuid.UUID]bool{ag.SessionID(): true}}); len(h) != 0 {
		t.Errorf("a search of the agent session found the shell's output: %v", texts(h))
	}
	if h := w.search("crimson", search.Filter{Since: time.Now().Add(time.Hour)}); len(h) != 0 {
		t.Errorf("a search since an hour ahead found %v", texts(h))
	}
	// The index is private.
	fi, err := os.Stat(filepath.Join(w.store.Dir(), "search", search.FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("index file: %v, %v; want mode 0600", fi, err)
	}
	if di, err := os.Stat(filepath.Join(w.store.Dir(), "search")); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("index directory: %v, %v; want mode 0700", di, err)
	}
}

// Input typed at a password prompt is never found; input typed with echo
// on is.
func TestSearchHiddenInput(t *testing.T) {
	w := newWorld(t)
	s := w.session(w.tty)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	send := func(text string) bool {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			hidden, err := s.SendInput(ctx, rig.Input{Text: text, From: rig.Client{Kind: "test"}})
			if err == nil {
				return hidden
			}
			if time.Now().After(deadline) {
				t.Fatalf("send %q: %v", text, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := s.Submit(ctx, `read visible; read next; stty -echo; printf 'Password: '; read pw; stty echo; echo; echo "read ${#pw} bytes"`); err != nil {
		t.Fatal(err)
	}
	// The turn's terminal echoes once its shell runs: typed before that, a
	// line may go in hidden (the terminal is not set up yet).
	for terminal, off := s.TerminalState(); !terminal || off; terminal, off = s.TerminalState() {
		time.Sleep(10 * time.Millisecond)
	}
	if send("plain-words-typed\n") {
		t.Fatal("the first input went in hidden")
	}
	// A second line lets the turn go on to turn echo off. Not the first: a
	// shell that reads it and runs stty -echo before Send looks at the echo
	// again makes that line count as hidden (Send masks what may have gone
	// in without echo).
	send("next\n")
	for _, off := s.TerminalState(); !off; _, off = s.TerminalState() {
		time.Sleep(10 * time.Millisecond)
	}
	if !send("hunter2-topsecret\n") {
		t.Fatal("the password went in with echo on")
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	wantHits(t, w.search("hunter2", search.Filter{}))
	wantHits(t, w.search("topsecret", search.Filter{}))
	wantHits(t, w.search("read 17 bytes", search.Filter{}), "output: read 17 bytes")
	if h := w.search("plain-words-typed", search.Filter{Kinds: []search.Kind{search.KindCommand}}); len(h) != 1 {
		t.Errorf("the input typed with echo on: hits %v, want one command", texts(h))
	}
}

// A deleted session's lines are gone from the results, and from the
// index file's blocks.
func TestSearchDeletedSession(t *testing.T) {
	w := newWorld(t)
	a, b := w.session(w.shell), w.session(w.shell)
	w.run(a, "echo kept-marker-a")
	w.run(b, "echo doomed-marker-b; echo kept-marker-b")
	if h := w.search("marker", search.Filter{Kinds: []search.Kind{search.KindOutput}}); len(h) != 3 {
		t.Fatalf("before the delete: %v", texts(h))
	}
	ctx := t.Context()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rig.DeleteSession(ctx, w.store, w.store.WorkspacesDir(), b.SessionID()); err != nil {
		t.Fatal(err)
	}
	wantHits(t, w.search("marker", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: kept-marker-a")
}

// indexedOutput returns a world whose one session printed line, found by
// a search (so the index holds it), and the path of its index file.
func indexedOutput(t *testing.T, line string) (*world, string) {
	w := newWorld(t)
	w.run(w.session(w.shell), "echo "+line)
	wantHits(t, w.search(line, search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: "+line)
	return w, filepath.Join(w.store.Dir(), "search", search.FileName)
}

// A search of an index that is up to date writes nothing to it: its
// format is checked in a read transaction (a write one, even empty,
// wrote bbolt's freelist and a meta page on every search).
func TestSearchUpToDateWritesNothing(t *testing.T) {
	w, path := indexedOutput(t, "still-line")
	output := search.Filter{Kinds: []search.Kind{search.KindOutput}}
	time.Sleep(200 * time.Millisecond)                           // the store's stamp settles
	wantHits(t, w.search("still", output), "output: still-line") // the listing is kept
	before := fileSum(t, path)
	for range 3 {
		wantHits(t, w.search("still", output), "output: still-line")
	}
	if after := fileSum(t, path); after != before {
		t.Errorf("three searches of an index that is up to date changed its file")
	}
}

func fileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A damaged or deleted index is rebuilt, with a note, and finds the same.
func TestSearchIndexRebuilt(t *testing.T) {
	w, path := indexedOutput(t, "survivor-line")
	garbage := bytes.Repeat([]byte("not a bbolt file, garbage "), 1000)
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	wantHits(t, w.search("survivor", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: survivor-line")
	if !strings.Contains(w.notes.String(), "is damaged") || !strings.Contains(w.notes.String(), "rebuilding it") {
		t.Errorf("notes after a damaged index: %q", w.notes.String())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	wantHits(t, w.search("survivor", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: survivor-line")
}

// An index an older looprig wrote (another format) is rebuilt, with a
// note that says so rather than calling it damaged, and finds the same.
func TestSearchIndexOlderFormatRebuilt(t *testing.T) {
	w, path := indexedOutput(t, "format-line")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("looprig-search v3"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	wantHits(t, w.search("format-line", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: format-line")
	notes := w.notes.String()
	if !strings.Contains(notes, `is of another format ("looprig-search v3"; this looprig reads`) || !strings.Contains(notes, "rebuilding it") || strings.Contains(notes, "damaged") {
		t.Errorf("notes after an index of an older format: %q", notes)
	}
}

// A search during a turn that is writing finds what it wrote a second
// ago, and the rest of the line once it is written.
func TestSearchDuringTurn(t *testing.T) {
	w := newWorld(t)
	s := w.session(w.shell)
	w.run(s, "echo before")
	w.search("before", search.Filter{}) // the index holds the session's start
	ctx := t.Context()
	if _, err := s.Submit(ctx, `echo live-marker-one; sleep 1; echo live-marker-two; sleep 60`); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"output: live-marker-one", "output: live-marker-two"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			h := w.search(strings.TrimPrefix(want, "output: "), search.Filter{Kinds: []search.Kind{search.KindOutput}})
			if len(h) == 1 && texts(h)[0] == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q not found during the turn: %v", want, texts(h))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Every line once, however many searches read the journal as it grew.
	if h := w.search("live-marker", search.Filter{Kinds: []search.Kind{search.KindOutput}}); len(h) != 2 {
		t.Errorf("live-marker: %v", texts(h))
	}
}

// A block cache that serves many searches, of several indexes, hands out
// a block only while its stored bytes are the ones it decompressed: a
// session's last block grown by a catch-up, or the block of the same id
// in another index (a rebuilt one, another store's), is read again.
func TestSearchBlockCache(t *testing.T) {
	cache := search.NewBlockCache(1 << 20)
	out := search.Filter{Kinds: []search.Kind{search.KindOutput}}
	a := newWorld(t)
	a.cache = cache
	s := a.session(a.shell)
	a.run(s, "echo cached-alpha")
	wantHits(t, a.search("cached", out), "output: cached-alpha")
	if cache.Len() == 0 {
		t.Fatal("a search cached no block")
	}
	wantHits(t, a.search("cached", out), "output: cached-alpha")
	// The session's block grows by the next turn's line.
	a.run(s, "echo cached-beta")
	wantHits(t, a.search("cached", out), "output: cached-alpha", "output: cached-beta")
	// Another store's index: its first block has the id of a's.
	b := newWorld(t)
	b.cache = cache
	b.run(b.session(b.shell), "echo cached-gamma")
	wantHits(t, b.search("cached", out), "output: cached-gamma")
	wantHits(t, a.search("cached", out), "output: cached-alpha", "output: cached-beta")
	// A query no trigram narrows reads every block: none is kept.
	a.cache = search.NewBlockCache(1 << 20)
	if hits := a.search("be", out); len(hits) != 1 || hits[0].Text != "cached-beta" {
		t.Errorf("be: %v", texts(hits))
	}
	if n := a.cache.Len(); n != 0 {
		t.Errorf("a query that reads every block left %d blocks in the cache", n)
	}
	// A cache too small for any block keeps none, and searches the same.
	a.cache = search.NewBlockCache(1)
	wantHits(t, a.search("cached", out), "output: cached-alpha", "output: cached-beta")
	if n := a.cache.Len(); n != 0 {
		t.Errorf("a cache of 1 byte holds %d blocks", n)
	}
}

// Bad queries say where.
func TestParseQueryErrors(t *testing.T) {
	for _, c := range []struct{ q, want string }{
		{`/a(b/`, "column 2"},
		{`/ab[/`, "column 4"},
		{`foo "bar`, "column 5"},
		{`   `, "nothing to search for"},
	} {
		_, err := search.ParseQuery(c.q)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseQuery(%q) = %v, want an error saying %q", c.q, err, c.want)
		}
	}
}

// A session at rest is not read again while its lease has not moved; once
// it is restored and writes, what it wrote is found.
func TestSearchSessionRestoredAfterRest(t *testing.T) {
	w := newWorld(t)
	s := w.session(w.shell)
	w.run(s, "echo first-rest-line")
	ctx := t.Context()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wantHits(t, w.search("rest-line", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: first-rest-line")
	wantHits(t, w.search("rest-line", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: first-rest-line")
	again, err := w.shell.RestoreSession(ctx, s.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	w.run(again, "echo second-rest-line")
	if err := again.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wantHits(t, w.search("rest-line", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: first-rest-line", "output: second-rest-line")
}

// An index whose blocks are damaged (it opens: TestSearchIndexRebuilt
// covers a file that does not) is rebuilt when a search meets the damage,
// and finds the same.
func TestSearchIndexPagesDamaged(t *testing.T) {
	w := newWorld(t)
	s := w.session(w.shell)
	w.run(s, `for i in $(seq 1 3000); do echo "filler line $i of a turn long enough for many pages"; done; echo needle-in-pages`)
	wantHits(t, w.search("needle-in-pages", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: needle-in-pages")
	path := filepath.Join(w.store.Dir(), "search", search.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 64<<10 {
		t.Fatalf("the index is %d bytes: too small to damage past its first pages", len(b))
	}
	// Garbage inside every block (after each zstd frame's magic): the
	// file opens, bbolt's pages are sound, the blocks do not decode.
	n := 0
	for i := 0; ; n++ {
		j := bytes.Index(b[i:], []byte{0x28, 0xb5, 0x2f, 0xfd})
		if j < 0 {
			break
		}
		i += j + 4
		for k := i + 8; k < min(i+512, len(b)); k++ {
			b[k] ^= 0x5a
		}
	}
	if n == 0 {
		t.Fatal("no block found in the index")
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w.notes.Reset()
	wantHits(t, w.search("needle-in-pages", search.Filter{Kinds: []search.Kind{search.KindOutput}}), "output: needle-in-pages")
	if !strings.Contains(w.notes.String(), "rebuilding it") {
		t.Errorf("no note of the rebuild: %q", w.notes.String())
	}
}

// A second process (here a second open) waits for the index's lock, then
// says the index is busy.
func TestSearchIndexBusy(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	ix, err := search.Open(ctx, w.store, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	start := time.Now()
	_, err = search.Open(ctx, w.store, search.Options{Wait: 200 * time.Millisecond})
	var busy *search.BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "is busy") || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("a second open: %v after %v, want a BusyError after about 200ms (bbolt tries every 50ms)", err, time.Since(start))
	}
}

// ReadLines gives a session's lines as the index holds them: every line
// a match-all search finds, in order, no more.
func TestReadLinesAsIndexed(t *testing.T) {
	w := newWorld(t)
	sh := w.session(w.shell)
	w.run(sh, `printf 'one\r\033[32mtwo\033[0m\nthree\n'`)
	w.run(sh, `echo four`)
	var got []string
	if err := search.ReadLines(t.Context(), w.store, sh.SessionID(), func(l search.Line) {
		got = append(got, fmt.Sprintf("%d %s: %s", l.Turn, l.Kind, l.Text))
	}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, h := range w.search(`/^/`, search.Filter{}) {
		want = append(want, fmt.Sprintf("%d %s: %s", h.Turn, h.Kind, h.Text))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) < 5 {
		t.Fatalf("ReadLines:\n%s\nthe index:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
