package fsstore_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"looprig/fsstore"
)

// A store directory owned by another user is refused: its owner could
// rewrite leases and journals under us. Needs root to give it away.
func TestOpenRefusesForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a directory to another user")
	}
	dir := t.TempDir()
	s := openStore(t, dir)
	s.Close()
	if err := os.Chown(dir, 65534, 65534); err != nil { // nobody
		t.Skipf("chown: %v", err)
	}
	_, err := fsstore.Open(dir)
	var unsafe *fsstore.UnsafeStoreError
	if !errors.As(err, &unsafe) || !strings.Contains(unsafe.Reason, "owned by uid 65534") {
		t.Fatalf("Open of a store owned by nobody = %v, want *UnsafeStoreError naming the owner", err)
	}
	// A fresh directory owned by another user, not yet a store, too.
	fresh := t.TempDir()
	os.Chown(fresh, 65534, 65534)
	if _, err := fsstore.Open(fresh); !errors.As(err, &unsafe) {
		t.Fatalf("Open of an empty directory owned by nobody = %v, want *UnsafeStoreError", err)
	}
	if entries, _ := os.ReadDir(fresh); len(entries) != 0 {
		t.Fatalf("Open wrote into a directory it refused: %v", entries)
	}
}
