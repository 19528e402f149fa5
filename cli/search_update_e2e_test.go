package cli_test

import (
	"strings"
	"testing"
	"time"

	"looprig/fsstore"
	"looprig/search"
)

// A session's host indexes what a turn printed once the turn has ended,
// in a process of its own (search --update --session): the index holds
// the turn's lines before any search has read the journal. --update
// takes no query.
func TestHostIndexesBetweenTurns(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	h.must(0, "run", id, "--", `for i in $(seq 1 2000); do echo "between-turns-$i-end"; done`)
	defer h.must(0, "stop", id)
	st, err := fsstore.Open(h.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q, err := search.ParseQuery(`"between-turns-2000-end"`)
	if err != nil {
		t.Fatal(err)
	}
	// Only what the index holds: Search does not read the journals.
	indexed := func() int {
		ix, err := search.Open(t.Context(), st, search.Options{Wait: 100 * time.Millisecond})
		if err != nil {
			return -1
		}
		defer ix.Close()
		n := 0
		if err := ix.Search(t.Context(), q, search.Filter{}, func(search.Hit) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitUntil(t, "the turn's last line in the index, put there by the host", func() bool { return indexed() == 1 })

	if r := h.run("search", "--update", "between"); r.code != 2 || !strings.Contains(r.stderr, "--update takes no query") {
		t.Errorf("search --update with a query: exit %d, stderr %q; want 2 and why", r.code, r.stderr)
	}
	h.must(0, "search", "--update", "--session", id[:8])
	h.must(0, "search", "--update")
	if n := indexed(); n != 1 {
		t.Errorf("after search --update: %d hits of the last line; want 1", n)
	}
}
