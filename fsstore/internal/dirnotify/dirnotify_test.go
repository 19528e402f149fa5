//go:build linux

package dirnotify

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"looprig/fsstore/internal/fsutil"
)

// A file created, renamed over, written or removed in a watched directory
// signals; after stop, nothing does.
func TestWatchSignalsChanges(t *testing.T) {
	dir := t.TempDir()
	c := make(chan struct{}, 1)
	stop, err := Watch(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	want := func(what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(3 * time.Second):
			t.Fatalf("no signal within 3 s of %s", what)
		}
	}
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	want("a file created")
	if err := os.WriteFile(f+".tmp", []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	<-c
	if err := os.Rename(f+".tmp", f); err != nil {
		t.Fatal(err)
	}
	want("a file renamed over another")
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	want("a file removed")
	stop()
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c:
		t.Fatal("a signal after stop")
	case <-time.After(200 * time.Millisecond):
	}
}

// A watcher of a directory's entries is told of a file created, renamed
// over or removed in its directory, not of a change in another watched
// directory of the process (which a plain watcher of that one is told
// of), nor of a file of its own written in place.
func TestWatchEntriesTellsItsOwnDirectory(t *testing.T) {
	mine, other := t.TempDir(), t.TempDir()
	entries := make(chan struct{}, 1)
	stop, err := WatchEntries(mine, entries)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	all := make(chan struct{}, 1)
	stopAll, err := Watch(other, all)
	if err != nil {
		t.Fatal(err)
	}
	defer stopAll()
	told := func(c chan struct{}, within time.Duration) bool {
		select {
		case <-c:
			return true
		case <-time.After(within):
			return false
		}
	}
	settle := func() { // past fsutil.ChangeSettle, signals of before drained
		time.Sleep(2 * fsutil.ChangeSettle)
		for _, c := range []chan struct{}{entries, all} {
			select {
			case <-c:
			default:
			}
		}
	}
	f := filepath.Join(mine, "key")
	if err := os.WriteFile(f, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !told(entries, 3*time.Second) {
		t.Fatal("not told of a file created in its directory")
	}
	settle()
	if err := os.WriteFile(filepath.Join(other, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !told(all, 3*time.Second) {
		t.Fatal("the plain watcher of the other directory was not told of a file created there")
	}
	if told(entries, 200*time.Millisecond) {
		t.Fatal("told of a change in another directory")
	}
	settle()
	if err := os.WriteFile(f, []byte("2"), 0o600); err != nil { // in place
		t.Fatal(err)
	}
	if told(entries, 200*time.Millisecond) {
		t.Fatal("told of a file written in place, whose directory did not change")
	}
	settle()
	if err := os.WriteFile(f+".tmp", []byte("3"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f+".tmp", f); err != nil {
		t.Fatal(err)
	}
	if !told(entries, 3*time.Second) {
		t.Fatal("not told of a file renamed over another")
	}
	settle()
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if !told(entries, 3*time.Second) {
		t.Fatal("not told of a file removed")
	}
	// A signal handled late (the process was stopped or busy), when the
	// change it tells of has settled, is still told: the directory moved
	// since the stamp last told.
	settle()
	hub.Lock()
	if err := os.WriteFile(f, []byte("4"), 0o600); err != nil {
		hub.Unlock()
		t.Fatal(err)
	}
	time.Sleep(2 * fsutil.ChangeSettle)
	hub.Unlock()
	if !told(entries, 3*time.Second) {
		t.Fatal("not told of a change whose signal was handled after it settled")
	}
}
