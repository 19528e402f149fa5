package search_test

import (
	"errors"
	"testing"
	"time"

	"looprig/rig"
	"looprig/search"
)

// The host indexes its session between turns, a slice at a time: every
// line once, the other sessions left as they were, and a search after it
// has nothing of that session left to read.
func TestIndexSession(t *testing.T) {
	defer search.SetSessionSlice(4 << 10)() // a slice per batch of lines read: 3
	w := newWorld(t)
	a, b := w.session(w.shell), w.session(w.shell)
	w.run(b, "echo line-of-another-session")
	wantHits(t, w.search("another", search.Filter{}), "command: echo line-of-another-session", "output: line-of-another-session")
	w.run(a, `for i in $(seq 1 10000); do echo "held-line-$i-end of a turn that printed a lot"; done`)

	st, err := search.IndexSession(t.Context(), w.store, search.Session{ID: a.SessionID(), Epoch: a.Epoch()}, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines < 10000 {
		t.Fatalf("IndexSession read %d lines; want the turn's 10000 and more", st.Lines)
	}

	ix, err := search.Open(t.Context(), w.store, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	infos, err := rig.ListSessions(t.Context(), w.store)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, query := range []string{`"held-line-1-end"`, `"held-line-5000-end"`, `"held-line-10000-end"`, "another"} {
		q, err := search.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		ust, err := ix.Find(t.Context(), search.SessionsOf(infos), q, search.Filter{}, nil, nil,
			func(h search.Hit) error { got[query]++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if ust.Sessions != 0 || ust.Lines != 0 {
			t.Fatalf("search %s after IndexSession read %d sessions, %d lines; want none", query, ust.Sessions, ust.Lines)
		}
	}
	for query, n := range got {
		want := 1
		if query == "another" {
			want = 2 // its command and its output
		}
		if n != want {
			t.Errorf("%s: %d hits; want %d", query, n, want)
		}
	}
	if len(got) != 4 {
		t.Errorf("hits: %v; want one for each query", got)
	}
}

// A host that finds the index open elsewhere for longer than it waits
// leaves the session to the search that has it.
func TestIndexSessionBusy(t *testing.T) {
	w := newWorld(t)
	a := w.session(w.shell)
	w.run(a, "echo held")
	ix, err := search.Open(t.Context(), w.store, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	start := time.Now()
	_, err = search.IndexSession(t.Context(), w.store, search.Session{ID: a.SessionID(), Epoch: a.Epoch()}, search.Options{Wait: 100 * time.Millisecond})
	var busy *search.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("IndexSession with the index open elsewhere: %v; want a *BusyError", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("IndexSession waited %v for a busy index; want about its Wait", d)
	}
}
