package rig

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A kept listing is taken only when it is whole, of this format, listed
// at the same durable stamp on this machine, and younger than the bound;
// anything else is listed again, never an error.
func TestKeptListingRefusals(t *testing.T) {
	dir := t.TempDir()
	l := &Lister{host: "this-host", keepPath: filepath.Join(dir, "cache", "listing.json")}
	infos := []SessionInfo{{ID: "a", Title: "one", State: StateIdle, Epoch: 3}}
	now := time.Now()
	if err := l.saveKept("s1", now, infos); err != nil {
		t.Fatal(err)
	}
	got, listed, ok := l.loadKept("s1", time.Minute)
	if !ok || len(got) != 1 || got[0].Title != "one" || got[0].Epoch != 3 || !listed.Equal(now) {
		t.Fatalf("loadKept of what was saved = %+v, %v, %v", got, listed, ok)
	}
	if fi, err := os.Stat(l.keepPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the kept file: %v %v, want mode 0600", fi, err)
	}
	for _, c := range []struct {
		what   string
		stamp  string
		bound  time.Duration
		mangle func()
	}{
		{"another stamp", "s2", time.Minute, nil},
		{"no stamp", "", time.Minute, nil},
		{"older than the bound", "s1", time.Nanosecond, nil},
		{"another machine's", "s1", time.Minute, func() {
			other := &Lister{host: "other-host", keepPath: l.keepPath}
			if err := other.saveKept("s1", now, infos); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut short", "s1", time.Minute, func() {
			l.saveKept("s1", now, infos)
			b, _ := os.ReadFile(l.keepPath)
			os.WriteFile(l.keepPath, b[:len(b)/2], 0o600)
		}},
		{"of another format", "s1", time.Minute, func() {
			os.WriteFile(l.keepPath, []byte(`{"v":2,"stamp":"s1","host":"this-host","listed":"`+now.Format(time.RFC3339Nano)+`","sessions":[]}`), 0o600)
		}},
	} {
		if c.mangle != nil {
			c.mangle()
		}
		if got, _, ok := l.loadKept(c.stamp, c.bound); ok {
			t.Errorf("%s: loadKept = %+v, want nothing", c.what, got)
		}
	}
}
