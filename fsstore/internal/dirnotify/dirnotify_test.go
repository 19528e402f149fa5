//go:build linux

package dirnotify

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
