package fsstore

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// WatchKey signals a put and a delete of the key, with inotify and, when
// no inotify instance is left, with dnotify; a put of a key in another
// directory (another session's) does not signal with inotify.
func TestWatchKey(t *testing.T) {
	for _, mode := range []string{"inotify", "dnotify"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "dnotify" {
				defer func(f func() (int, error)) { inotifyInit = f }(inotifyInit)
				inotifyInit = func() (int, error) { return -1, unix.EMFILE }
			}
			st, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			for _, k := range []string{"sessions/a/catalog", "sessions/b/catalog"} {
				if _, err := st.Put(ctx, k, []byte("c"), storage.AnyRevision); err != nil {
					t.Fatal(err)
				}
			}
			changed, stop, err := st.WatchKey("sessions/a/handoff")
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			quiet := func(what string) {
				t.Helper()
				select {
				case <-changed:
					t.Fatalf("a signal after %s", what)
				case <-time.After(200 * time.Millisecond):
				}
			}
			want := func(what string) {
				t.Helper()
				select {
				case <-changed:
				case <-time.After(3 * time.Second):
					t.Fatalf("no signal within 3 s of %s", what)
				}
			}
			quiet("nothing")
			if mode == "inotify" {
				if _, err := st.Put(ctx, "sessions/b/handoff", []byte("h"), storage.AnyRevision); err != nil {
					t.Fatal(err)
				}
				quiet("a put of another session's key")
			}
			if _, err := st.Put(ctx, "sessions/a/handoff", []byte("h"), storage.AnyRevision); err != nil {
				t.Fatal(err)
			}
			want("a put")
			if err := st.DeleteKey(ctx, "sessions/a/handoff", storage.AnyRevision); err != nil {
				t.Fatal(err)
			}
			want("a delete")
		})
	}
}
