package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	// indexed counts the hits of phrase in what the index holds: Search
	// does not read the journals.
	indexed := func(phrase string) int {
		q, err := search.ParseQuery(`"` + phrase + `"`)
		if err != nil {
			t.Fatal(err)
		}
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
	waitUntil(t, "the turn's last line in the index, put there by the host", func() bool { return indexed("between-turns-2000-end") == 1 })

	// One host of a store indexes at a time: while another holds the
	// indexing lock, a turn's end starts no indexing process; the next
	// turn's, once it is free, indexes both.
	lock, err := os.OpenFile(filepath.Join(h.store, "search", "indexing.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	h.must(0, "run", id, "--", "echo while-another-host-indexes")
	time.Sleep(time.Second) // what a host would take to index one line, many times over
	if n := indexed("while-another-host-indexes"); n != 0 {
		t.Fatalf("indexed while another host held the indexing lock: %d hits", n)
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	h.must(0, "run", id, "--", "true")
	waitUntil(t, "the earlier turn's line in the index after the next turn", func() bool { return indexed("while-another-host-indexes") == 2 })

	if r := h.run("search", "--update", "between"); r.code != 2 || !strings.Contains(r.stderr, "--update takes no query") {
		t.Errorf("search --update with a query: exit %d, stderr %q; want 2 and why", r.code, r.stderr)
	}
	h.must(0, "search", "--update", "--session", id[:8])
	h.must(0, "search", "--update")
	if n := indexed("between-turns-2000-end"); n != 1 {
		t.Errorf("after search --update: %d hits of the last line; want 1", n)
	}
}
