package faulttest

// Linux only: a tmpfs mounted with mount(2).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"looprig/rig"
)

// TestDiskFullTmpfs fills a real (small) tmpfs with a turn's output. The
// session faults with ENOSPC and loses nothing it acknowledged; a restore
// on the still full disk either works or fails with a typed error, never
// marking the session broken; once space is freed (the tmpfs grows) the
// restore works and everything acknowledged is there. Needs root (mount).
func TestDiskFullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	dir := filepath.Join(mnt, "store")
	ctx := context.Background()
	id, st, s, c := startChatty(t, dir)
	checkDiskFullFault(t, s, c)
	s.Shutdown(ctx)
	<-c.done
	acked, _ := c.snapshot()
	st.Close()

	// Still full: a restore works or fails cleanly, and never breaks the
	// session.
	st = openStore(t, dir)
	if s, err := defineRig(t, st).RestoreSession(ctx, id); err == nil {
		s.Shutdown(ctx)
	} else {
		var re *rig.RestoreError
		if !errors.As(err, &re) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("restore on a full disk = %v, want a *rig.RestoreError caused by ENOSPC", err)
		}
		t.Logf("restore on the full disk: %v", err)
	}
	infos, err := rig.ListSessions(ctx, st)
	if err != nil || len(infos) != 1 || infos[0].State == rig.StateBroken {
		t.Fatalf("listing on a full disk: %+v, %v", infos, err)
	}
	st.Close()

	// Free space, restore.
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_REMOUNT, "size=16m,mode=0700"); err != nil {
		t.Fatalf("grow the tmpfs: %v", err)
	}
	epoch := restoreAndCheck(t, dir, id, acked)
	t.Logf("%d records acknowledged before the disk filled; restored at epoch %d once space was freed", len(acked), epoch)
}
