package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type searchHit struct {
	Session string   `json:"session"`
	ShortID string   `json:"short_id"`
	Title   string   `json:"title"`
	Turn    int      `json:"turn"`
	Kind    string   `json:"kind"`
	At      string   `json:"at"`
	Text    string   `json:"text"`
	Match   [][]int  `json:"match"`
	Before  []string `json:"before"`
}

func (h *harness) searchJSON(want int, args ...string) []searchHit {
	h.t.Helper()
	r := h.must(want, append([]string{"search", "--json"}, args...)...)
	return lines[searchHit](h.t, r.stdout)
}

func hitTexts(hits []searchHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Kind+": "+h.Text)
	}
	return out
}

// looprig search as a user types it: words, a phrase and a regexp over
// commands and rendered output, exit codes as grep's, --json, a bad
// query; a session removed with rm is gone from the results; a damaged
// index is rebuilt with a note; a running turn's line is found a moment
// after it was printed.
func TestSearchCommand(t *testing.T) {
	h := newHarness(t)
	build := h.newSession("--title", "build")
	other := h.newSession("--title", "other")
	h.must(0, "run", "--in-process", build, "--", `echo "listen tcp :8080: bind: EADDRINUSE"; printf '\033[1;33mwarning\033[0m: flaky test\n'`)
	h.must(0, "run", "--in-process", other, "--", `echo "other session says EADDRINUSE too"`)

	// Words, in any case, every one in the line.
	hits := h.searchJSON(0, "eaddrinuse", "TCP")
	if got := hitTexts(hits); len(got) != 2 || got[0] != `command: echo "listen tcp :8080: bind: EADDRINUSE"; printf '\033[1;33mwarning\033[0m: flaky test\n'` ||
		got[1] != "output: listen tcp :8080: bind: EADDRINUSE" {
		t.Errorf("eaddrinuse TCP: %q", got)
	}
	if hits[1].Session != build || hits[1].Title != "build" || hits[1].Turn != 0 || len(hits[1].Match) != 2 {
		t.Errorf("the output hit: %+v", hits[1])
	}
	// A phrase, ANSI-coloured output by its text, a kind.
	if got := hitTexts(h.searchJSON(0, `"warning: flaky"`, "--kind", "output")); len(got) != 1 || got[0] != "output: warning: flaky test" {
		t.Errorf(`"warning: flaky": %q`, got)
	}
	// A regexp; a session filter by prefix.
	if got := hitTexts(h.searchJSON(0, `/EADDR\w+ too$/`)); len(got) != 1 || got[0] != "output: other session says EADDRINUSE too" {
		t.Errorf("regexp: %q", got)
	}
	if got := h.searchJSON(0, "eaddrinuse", "--session", other[:8], "--kind", "output"); len(got) != 1 || got[0].Session != other {
		t.Errorf("--session: %+v", got)
	}
	// --state and --engine read the sessions' catalog entries; both are
	// idle demo-profile shell sessions here: every hit, and none for
	// another state or engine. --session with --state narrows both ways.
	if got := h.searchJSON(0, "eaddrinuse", "--kind", "output", "--state", "idle"); len(got) != 2 || got[0].Title == "" {
		t.Errorf("--state idle: %+v", got)
	}
	if got := h.searchJSON(1, "eaddrinuse", "--state", "live"); len(got) != 0 {
		t.Errorf("--state live: %+v", got)
	}
	if got := h.searchJSON(1, "eaddrinuse", "--engine", "no-such-engine"); len(got) != 0 {
		t.Errorf("--engine no-such-engine: %+v", got)
	}
	if got := h.searchJSON(0, "eaddrinuse", "--kind", "output", "--state", "idle", "--session", build[:8]); len(got) != 1 || got[0].Session != build {
		t.Errorf("--state idle --session: %+v", got)
	}
	// Nothing found: exit 1, nothing printed. A bad query: exit 2 naming
	// the column.
	if r := h.must(1, "search", "no-such-words-anywhere"); r.stdout != "" {
		t.Errorf("no hit printed %q", r.stdout)
	}
	if r := h.must(2, "search", "/a[b/"); !strings.Contains(r.stderr, "column 3") {
		t.Errorf("a bad regexp: %s", r.stderr)
	}
	// People's form: one line per hit, the short id, title, turn, kind.
	r := h.must(0, "search", "flaky", "--kind", "output")
	if want := other[:0] + build[:8] + " build"; !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, " #0  ") ||
		!strings.Contains(r.stdout, "output:  warning: flaky test\n") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("search flaky:\n%s", r.stdout)
	}

	// rm: the session is gone from the results, also after a search that
	// kept its listing while the store stood still (rm moves its stamp).
	time.Sleep(300 * time.Millisecond)
	if got := h.searchJSON(0, "eaddrinuse", "--kind", "output"); len(got) != 2 {
		t.Errorf("with the store still: %+v", got)
	}
	h.must(0, "rm", other, "--yes")
	time.Sleep(300 * time.Millisecond) // past the change's settling: the stamp is trusted
	if got := hitTexts(h.searchJSON(0, "eaddrinuse", "--kind", "output")); len(got) != 1 || got[0] != "output: listen tcp :8080: bind: EADDRINUSE" {
		t.Errorf("after rm: %q", got)
	}

	// A damaged index: rebuilt, with a note, and the same hits.
	index := filepath.Join(h.store, "search", "index.db")
	if err := os.WriteFile(index, []byte(strings.Repeat("garbage", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	r = h.must(0, "search", "flaky", "--kind", "output")
	if !strings.Contains(r.stderr, "is damaged") || !strings.Contains(r.stderr, "rebuilding it") || !strings.Contains(r.stdout, "warning: flaky test") {
		t.Errorf("after damage:\n%s%s", r.stdout, r.stderr)
	}
	if fi, err := os.Stat(index); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the rebuilt index: %v %v", fi, err)
	}
	// Damaged blocks in a file that opens: found by the search, rebuilt,
	// searched again.
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	for i := 0; ; frames++ {
		j := bytes.Index(b[i:], []byte{0x28, 0xb5, 0x2f, 0xfd}) // a zstd frame's magic
		if j < 0 {
			break
		}
		i += j + 4
		for k := i; k < min(i+12, len(b)); k++ {
			b[k] ^= 0x5a
		}
	}
	if err := os.WriteFile(index, b, 0o600); err != nil || frames == 0 {
		t.Fatalf("damaging %d blocks: %v", frames, err)
	}
	r = h.must(0, "search", "flaky", "--kind", "output")
	if !strings.Contains(r.stderr, "does not decode") || !strings.Contains(r.stderr, "rebuilding it") || strings.Count(r.stdout, "warning: flaky test") != 1 {
		t.Errorf("after damaged blocks:\n%s%s", r.stdout, r.stderr)
	}
	if r := h.must(0, "search", "--reindex"); !strings.Contains(r.stderr, "search: indexed") {
		t.Errorf("--reindex: %s", r.stderr)
	}

	// A running turn: its line is found while it runs.
	h.must(0, "run", build, "--detach", "--", "echo live-line-now; sleep 30")
	h.stopWhenDone(build)
	start := time.Now()
	waitUntil(t, "the running turn's line in the results", func() bool {
		return h.run("search", "live-line-now", "--kind", "output").code == 0
	})
	t.Logf("found the running turn's line after %s", time.Since(start).Round(time.Millisecond))
}

// A store that cannot be written is still searched: the index goes to the
// user's cache directory.
func TestSearchReadOnlyStore(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	h.must(0, "run", id, "--in-process", "--", "echo readonly-needle")
	roRun := h.readOnlyStore()
	r := roRun("search", "readonly-needle", "--kind", "output")
	if r.code != 0 || !strings.Contains(r.stdout, "output:  readonly-needle") {
		t.Fatalf("search on a read-only store: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(h.store, "search")); err == nil {
		t.Errorf("an index was made in the read-only store")
	}
}

// Search on a NATS store: the journals are the server's, the index is
// this machine's (under the state directory, 0700/0600), a turn run
// through a host is found, and a removed session is gone from the results.
func TestSearchNATSStore(t *testing.T) {
	h := newNATSHarness(t)
	id, _ := h.detached("--title", "over nats")
	h.must(0, "run", id, "--", "echo 'dial tcp: connection refused by natsneedle'")
	hits := h.searchJSON(0, "natsneedle")
	if got := hitTexts(hits); len(got) != 2 || got[1] != "output: dial tcp: connection refused by natsneedle" || hits[1].Session != id {
		t.Fatalf("natsneedle on NATS: %+v", hits)
	}
	var index string
	root := filepath.Join(h.home, "state", "looprig", "nats")
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "index.db" {
			index = path
		}
		return nil
	})
	if index == "" {
		t.Fatalf("no search index under %s", root)
	}
	if fi, err := os.Stat(index); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("index %s: %v, %v", index, fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(index)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("index directory: %v, %v", fi, err)
	}
	h.must(0, "stop", id)
	h.must(0, "rm", id, "--yes")
	if r := h.must(1, "search", "natsneedle"); r.stdout != "" {
		t.Fatalf("a removed session still found:\n%s", r.stdout)
	}
}
