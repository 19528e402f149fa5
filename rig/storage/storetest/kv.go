package storetest

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"looprig/rig/storage"
)

var kvCases = []testCase{
	{"CreateAndUpdate", testKVCreateUpdate},
	{"CreateTwiceConflicts", testKVCreateTwice},
	{"StaleUpdateConflicts", testKVStaleUpdate},
	{"AnyRevision", testKVAnyRevision},
	{"GetAbsent", testKVGetAbsent},
	{"DeleteKey", testKVDeleteKey},
	{"DeleteAbsentKey", testKVDeleteAbsent},
	{"Keys", testKVKeys},
	{"PrefixNames", testKVPrefixNames},
	{"Children", testKVChildren},
	{"MaxValue", testKVMaxValue},
	{"ValueTooLarge", testKVTooLarge},
	{"CallerMayReuseBuffers", testKVReuseBuffers},
}

func put(t *testing.T, s storage.KV, key string, value []byte, expected, wantRev uint64) {
	t.Helper()
	rev, err := s.Put(t.Context(), key, value, expected)
	if err != nil {
		t.Fatalf("Put(%q, expected %d) = %v, want revision %d", key, expected, err, wantRev)
	}
	if rev != wantRev {
		t.Fatalf("Put(%q, expected %d) = revision %d, want %d", key, expected, rev, wantRev)
	}
}

func wantEntry(t *testing.T, s storage.KV, key string, value []byte, rev uint64) {
	t.Helper()
	e, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q) = %v, want revision %d", key, err, rev)
	}
	if e.Key != key || e.Revision != rev || !bytes.Equal(e.Value, value) {
		t.Fatalf("Get(%q) = {Key %q, Revision %d, Value %s}, want {Key %q, Revision %d, Value %s}",
			key, e.Key, e.Revision, show(e.Value), key, rev, show(value))
	}
}

func wantNotFound(t *testing.T, s storage.KV, key string) {
	t.Helper()
	e, err := s.Get(t.Context(), key)
	var nf *storage.NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("Get(%q) of an absent key = (revision %d, %v), want *storage.NotFoundError", key, e.Revision, err)
	}
	if nf.Key != key {
		t.Fatalf("Get(%q): NotFoundError.Key = %q", key, nf.Key)
	}
}

func wantKeys(t *testing.T, s storage.KV, prefix string, want []string) {
	t.Helper()
	got, err := s.Keys(t.Context(), prefix)
	if err != nil {
		t.Fatalf("Keys(%q) = %v", prefix, err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Keys(%q) = %q, want %q (sorted, only keys starting with the prefix)", prefix, got, want)
	}
}

func testKVCreateUpdate(t *testing.T, s storage.Store) {
	const key = "sessions/a/catalog"
	put(t, s, key, []byte("v1"), storage.MustNotExist, 1)
	wantEntry(t, s, key, []byte("v1"), 1)
	put(t, s, key, []byte("v2"), 1, 2)
	wantEntry(t, s, key, []byte("v2"), 2)
	put(t, s, key, []byte("v3"), 2, 3)
	wantEntry(t, s, key, []byte("v3"), 3)
}

func testKVCreateTwice(t *testing.T, s storage.Store) {
	const key = "sessions/a/catalog"
	put(t, s, key, []byte("v1"), storage.MustNotExist, 1)
	_, err := s.Put(t.Context(), key, []byte("again"), storage.MustNotExist)
	wantConflict(t, "second Put(MustNotExist)", err, key, storage.MustNotExist, 1)
	wantEntry(t, s, key, []byte("v1"), 1)
}

func testKVStaleUpdate(t *testing.T, s storage.Store) {
	const key = "sessions/a/catalog"
	put(t, s, key, []byte("v1"), storage.MustNotExist, 1)
	put(t, s, key, []byte("v2"), 1, 2)
	_, err := s.Put(t.Context(), key, []byte("stale"), 1)
	wantConflict(t, "Put with stale revision 1 at revision 2", err, key, 1, 2)
	_, err = s.Put(t.Context(), key, []byte("ahead"), 7)
	wantConflict(t, "Put with revision 7 at revision 2", err, key, 7, 2)
	wantEntry(t, s, key, []byte("v2"), 2)
	_, err = s.Put(t.Context(), "sessions/b/catalog", []byte("x"), 1)
	wantConflict(t, "Put with revision 1 on an absent key", err, "sessions/b/catalog", 1, 0)
	wantNotFound(t, s, "sessions/b/catalog")
}

func testKVAnyRevision(t *testing.T, s storage.Store) {
	const key = "sessions/a/catalog"
	put(t, s, key, []byte("created"), storage.AnyRevision, 1)
	wantEntry(t, s, key, []byte("created"), 1)
	put(t, s, key, []byte("overwritten"), storage.AnyRevision, 2)
	wantEntry(t, s, key, []byte("overwritten"), 2)
	put(t, s, key, []byte("checked"), 2, 3)
}

func testKVGetAbsent(t *testing.T, s storage.Store) {
	wantNotFound(t, s, "sessions/nobody/catalog")
	put(t, s, "sessions/somebody/catalog", []byte("x"), storage.MustNotExist, 1)
	wantNotFound(t, s, "sessions/nobody/catalog")
	wantNotFound(t, s, "sessions/somebody") // a prefix of a key is not a key
}

func testKVDeleteKey(t *testing.T, s storage.Store) {
	const key = "sessions/a/catalog"
	put(t, s, key, []byte("v1"), storage.MustNotExist, 1)
	put(t, s, key, []byte("v2"), 1, 2)
	wantConflict(t, "DeleteKey with stale revision 1 at revision 2", s.DeleteKey(t.Context(), key, 1), key, 1, 2)
	wantConflict(t, "DeleteKey with MustNotExist at revision 2",
		s.DeleteKey(t.Context(), key, storage.MustNotExist), key, storage.MustNotExist, 2)
	wantEntry(t, s, key, []byte("v2"), 2)
	if err := s.DeleteKey(t.Context(), key, 2); err != nil {
		t.Fatalf("DeleteKey(%q, 2) at revision 2 = %v, want nil", key, err)
	}
	wantNotFound(t, s, key)
	wantKeys(t, s, "", nil)
	// Created again, revisions start over at 1.
	put(t, s, key, []byte("reborn"), storage.MustNotExist, 1)
	if err := s.DeleteKey(t.Context(), key, storage.AnyRevision); err != nil {
		t.Fatalf("DeleteKey(%q, AnyRevision) = %v, want nil", key, err)
	}
	wantNotFound(t, s, key)
}

func testKVDeleteAbsent(t *testing.T, s storage.Store) {
	const key = "sessions/never/catalog"
	if err := s.DeleteKey(t.Context(), key, storage.AnyRevision); err != nil {
		t.Fatalf("DeleteKey(%q, AnyRevision) of an absent key = %v, want nil", key, err)
	}
	wantConflict(t, "DeleteKey(revision 3) of an absent key", s.DeleteKey(t.Context(), key, 3), key, 3, 0)
	// An absent key has revision 0, so MustNotExist matches it.
	if err := s.DeleteKey(t.Context(), key, storage.MustNotExist); err != nil {
		t.Fatalf("DeleteKey(%q, MustNotExist) of an absent key = %v, want nil", key, err)
	}
	wantNotFound(t, s, key)
}

func testKVKeys(t *testing.T, s storage.Store) {
	wantKeys(t, s, "", nil)
	for _, k := range []string{"sessions/b/catalog", "other/x", "sessions/a/catalog"} {
		put(t, s, k, []byte(k), storage.MustNotExist, 1)
	}
	wantKeys(t, s, "sessions/", []string{"sessions/a/catalog", "sessions/b/catalog"})
	wantKeys(t, s, "", []string{"other/x", "sessions/a/catalog", "sessions/b/catalog"})
	wantKeys(t, s, "sessions/a", []string{"sessions/a/catalog"})
	wantKeys(t, s, "o", []string{"other/x"})
	wantKeys(t, s, "sessions/c", nil)
	// The prefix need not be a valid name.
	wantKeys(t, s, "Sessions/", nil)
	wantKeys(t, s, "sessions//", nil)
}

// testKVPrefixNames uses keys that are path prefixes of each other or look
// like a backend's file suffixes; they are distinct keys.
func testKVPrefixNames(t *testing.T, s storage.Store) {
	keys := []string{"a", "a/b", "a/b/c", "a.b", "a0", "a.kv", "a.kv/b"}
	for i, k := range keys {
		put(t, s, k, []byte(k), storage.MustNotExist, 1)
		if i > 0 {
			put(t, s, k, []byte(k+"!"), 1, 2)
		}
	}
	wantEntry(t, s, "a", []byte("a"), 1)
	for _, k := range keys[1:] {
		wantEntry(t, s, k, []byte(k+"!"), 2)
	}
	wantKeys(t, s, "a/", []string{"a/b", "a/b/c"})
	wantKeys(t, s, "a", []string{"a", "a.b", "a.kv", "a.kv/b", "a/b", "a/b/c", "a0"}) // byte order: . < / < 0
	if err := s.DeleteKey(t.Context(), "a/b", 2); err != nil {
		t.Fatalf("DeleteKey(%q) = %v", "a/b", err)
	}
	wantNotFound(t, s, "a/b")
	wantEntry(t, s, "a/b/c", []byte("a/b/c!"), 2)
	wantEntry(t, s, "a", []byte("a"), 1)
}

func testKVMaxValue(t *testing.T, s storage.Store) {
	const key = "sessions/big/catalog"
	big := bigPayload(storage.MaxPayload)
	put(t, s, key, big, storage.MustNotExist, 1)
	e, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q) = %v", key, err)
	}
	if !bytes.Equal(e.Value, big) {
		t.Fatalf("a MaxPayload value came back as %d bytes, first difference at %d", len(e.Value), firstDiff(e.Value, big))
	}
}

func testKVTooLarge(t *testing.T, s storage.Store) {
	const key = "sessions/huge/catalog"
	huge := bigPayload(storage.MaxPayload + 1)
	_, err := s.Put(t.Context(), key, huge, storage.MustNotExist)
	wantTooLarge(t, "Put of MaxPayload+1 bytes", err, key, storage.MaxPayload+1)
	wantNotFound(t, s, key)
	put(t, s, key, []byte("small"), storage.MustNotExist, 1)
	_, err = s.Put(t.Context(), key, huge, storage.AnyRevision)
	wantTooLarge(t, "Put of MaxPayload+1 bytes over an existing key", err, key, storage.MaxPayload+1)
	wantEntry(t, s, key, []byte("small"), 1)
}

func testKVReuseBuffers(t *testing.T, s storage.Store) {
	const key = "sessions/reuse/catalog"
	buf := []byte("value")
	put(t, s, key, buf, storage.MustNotExist, 1)
	copy(buf, "XXXXX")
	wantEntry(t, s, key, []byte("value"), 1)
	e, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q) = %v", key, err)
	}
	copy(e.Value, "YYYYY")
	if e2, err := s.Get(t.Context(), key); err != nil || !bytes.Equal(e2.Value, []byte("value")) {
		t.Fatalf("after the caller scribbled on a Get result, Get(%q) = (%s, %v), want %q",
			key, show(e2.Value), err, "value")
	}
}

// testKVChildren checks ChildLister against Keys:
// every segment with a key under it is listed, nothing else but segments
// whose keys were deleted, and names that look like a backend's file
// suffixes come back as they were given.
func testKVChildren(t *testing.T, s storage.Store) {
	children := func(prefix string) []string {
		t.Helper()
		got, err := s.Children(t.Context(), prefix)
		if err != nil {
			t.Fatalf("Children(%q) = %v", prefix, err)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("Children(%q) = %q: not sorted and unique", prefix, got)
		}
		return got
	}
	if got := children(""); len(got) != 0 {
		t.Fatalf("Children of an empty store = %q", got)
	}
	for _, k := range []string{"sessions/b/catalog", "sessions/a/catalog", "sessions/a/other", "sessions/c",
		"sessions.kv/x", "sessions/d.kv/e/f", "sessions/e.lock/catalog", "zz"} {
		put(t, s, k, []byte(k), storage.MustNotExist, 1)
	}
	want := map[string][]string{
		"":               {"sessions", "sessions.kv", "zz"},
		"sessions/":      {"a", "b", "c", "d.kv", "e.lock"},
		"sessions/a/":    {"catalog", "other"},
		"sessions/d.kv/": {"e"},
		"sessions/x/":    nil,
		"zz/":            nil,
	}
	for prefix, w := range want {
		if got := children(prefix); !slices.Equal(got, w) {
			t.Errorf("Children(%q) = %q, want %q", prefix, got, w)
		}
	}
	// Deleting keys may leave a segment listed, never drop a live one.
	if err := s.DeleteKey(t.Context(), "sessions/b/catalog", storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	got := children("sessions/")
	for _, seg := range []string{"a", "c", "d.kv", "e.lock"} {
		if !slices.Contains(got, seg) {
			t.Errorf("Children(\"sessions/\") after a delete = %q: %q is missing", got, seg)
		}
	}
	for _, seg := range got {
		if !slices.Contains([]string{"a", "b", "c", "d.kv", "e.lock"}, seg) {
			t.Errorf("Children(\"sessions/\") after a delete = %q: %q was never a segment", got, seg)
		}
	}
	for _, bad := range []string{"sessions", "Sessions/", "sessions//", "/", "../"} {
		_, err := s.Children(t.Context(), bad)
		var inv *storage.InvalidNameError
		if !errors.As(err, &inv) {
			t.Errorf("Children(%q) = %v, want *storage.InvalidNameError", bad, err)
		}
	}
}
