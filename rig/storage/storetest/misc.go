package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"looprig/rig/storage"
)

var nameCases = []testCase{
	{"InvalidNamesRefused", testInvalidNames},
	{"LongestValidName", testLongestName},
}

var contextCases = []testCase{
	{"CancelledContext", testCancelled},
}

// badNames break the name grammar; each must be refused by every method.
var badNames = []string{"", "A", "../x", "a//b", "/abs", "a/", "a/../b", "sessions/X", "a b", strings.Repeat("a", storage.MaxNameLen+1)}

func testInvalidNames(t *testing.T, s storage.Store) {
	ctx := t.Context()
	for _, name := range badNames {
		check := func(method string, err error) {
			t.Helper()
			var inv *storage.InvalidNameError
			if !errors.As(err, &inv) {
				t.Errorf("%s(%q) = %v (%T), want *storage.InvalidNameError", method, shortName(name), err, err)
				return
			}
			if inv.Name != name {
				t.Errorf("%s(%q): InvalidNameError.Name = %q", method, shortName(name), shortName(inv.Name))
			}
		}
		l, err := s.Acquire(ctx, name)
		if err == nil {
			releaseAtCleanup(t, l)
		}
		check("Acquire", err)
		_, err = s.Probe(ctx, name)
		check("Probe", err)
		_, err = s.ProbeMany(ctx, []string{"sessions/fine", name})
		check("ProbeMany", err)
		l, err = s.Break(ctx, name)
		if err == nil {
			releaseAtCleanup(t, l)
		}
		check("Break", err)
		check("Append", s.Append(ctx, name, 0, []byte("x")))
		c, err := s.Read(ctx, name, 0)
		if err == nil {
			c.Close()
		}
		check("Read", err)
		_, err = s.Tip(ctx, name)
		check("Tip", err)
		check("Delete", s.Delete(ctx, name))
		_, err = s.Get(ctx, name)
		check("Get", err)
		_, err = s.Put(ctx, name, []byte("x"), storage.AnyRevision)
		check("Put", err)
		check("DeleteKey", s.DeleteKey(ctx, name, storage.AnyRevision))
	}
	// Nothing was created under any name.
	wantKeys(t, s, "", nil)
}

func shortName(n string) string {
	if len(n) > 40 {
		return n[:20] + "..." + n[len(n)-10:]
	}
	return n
}

// testLongestName uses the longest valid segment and names of (nearly)
// MaxNameLen bytes. They are listed in sorted order.
func testLongestName(t *testing.T, s storage.Store) {
	seg := func(c string) string { return strings.Repeat(c, storage.MaxSegmentLen) }
	names := []string{
		seg("a"),
		seg("c") + "/" + seg("d") + "/" + seg("e") + "/" + strings.Repeat("f", storage.MaxNameLen-3*storage.MaxSegmentLen-3),
		"sessions/" + seg("b"),
	}
	for _, name := range names {
		if err := storage.ValidateName(name); err != nil {
			t.Fatalf("test bug: %v", err)
		}
		l := acquire(t, s, name)
		if l.Epoch() != 1 {
			t.Errorf("Acquire(%s) granted epoch %d, want 1", shortName(name), l.Epoch())
		}
		wantHeld(t, s, name, l.Epoch())
		wantProbe(t, s, name, true, l.Epoch())
		release(t, l, shortName(name))

		appendOK(t, s, name, 0, []byte("one"), []byte("two"))
		wantRecords(t, "Read("+shortName(name)+")", readAll(t, s, name, 0), 1, [][]byte{[]byte("one"), []byte("two")})
		if err := s.Delete(t.Context(), name); err != nil {
			t.Fatalf("Delete(%s) = %v", shortName(name), err)
		}
		wantTip(t, s, name, 0)

		put(t, s, name, []byte("v"), storage.MustNotExist, 1)
		wantEntry(t, s, name, []byte("v"), 1)
	}
	wantKeys(t, s, "", names)
}

func testCancelled(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	const name = "sessions/cancelled"

	l, err := s.Acquire(ctx, name)
	if err == nil {
		releaseAtCleanup(t, l)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context = %v, want an error that is context.Canceled", err)
	}
	if l := acquire(t, s, name); isLost(l) {
		t.Fatalf("grant after a cancelled Acquire is already lost")
	}

	err = s.Append(ctx, name, 0, []byte("x"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context = %v, want an error that is context.Canceled", err)
	}
	wantTip(t, s, name, 0)

	appendOK(t, s, name, 0, []byte("x"))
	c, err := s.Read(ctx, name, 0)
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a cancelled context = %v, want an error that is context.Canceled", err)
	}
}
