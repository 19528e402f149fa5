package rig_test

// Linux only: bind mounts in a user and mount namespace.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"looprig/rig"
)

// A bind mount makes one directory reachable under two unrelated paths; a
// root that is a bind mount of a directory containing the store is caught
// by device and inode. It runs in a user and mount namespace (unshare),
// and is skipped where those are not available.
func TestOverlapBindMount(t *testing.T) {
	const env = "LOOPRIG_OVERLAP_BIND_DIR"
	if dir := os.Getenv(env); dir != "" {
		proj := filepath.Join(dir, "proj")
		mnt := filepath.Join(dir, "mnt")
		if err := syscall.Mount(proj, mnt, "", syscall.MS_BIND, ""); err != nil {
			t.Skipf("bind mount: %v", err)
		}
		store := filepath.Join(proj, "state", "store")
		for _, c := range []struct {
			root, store, rel string
		}{
			{mnt, store, rig.OverlapRootContains},
			{filepath.Join(mnt, "state", "store"), store, rig.OverlapSame},
			{filepath.Join(mnt, "state", "store", "kv"), store, rig.OverlapStoreContains},
			{proj, filepath.Join(mnt, "state", "store"), rig.OverlapRootContains},
		} {
			err := rig.CheckPersistenceOverlap(rig.Profile{Name: "b", Placement: rig.PlacementShared, Root: c.root}, c.store)
			var ov *rig.PersistenceOverlapError
			if !errors.As(err, &ov) || ov.Relation != c.rel {
				t.Errorf("root %s (a bind mount of %s), store %s: %v, want %s", c.root, proj, c.store, err, c.rel)
			}
		}
		if err := rig.CheckPersistenceOverlap(rig.Profile{Name: "b", Placement: rig.PlacementShared, Root: filepath.Join(mnt, "other")}, store); err != nil {
			t.Errorf("a sibling under the bind mount: %v", err)
		}
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	b := realTemp(t)
	mkdirs(t, filepath.Join(b, "proj", "state", "store", "kv"))
	mkdirs(t, filepath.Join(b, "proj", "other"))
	mkdirs(t, filepath.Join(b, "mnt"))
	if out, err := exec.Command(unshare, "-rm", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -rm: %v: %s", err, out)
	}
	cmd := exec.Command(unshare, "-rm", os.Args[0], "-test.run=^TestOverlapBindMount$", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+b)
	out, err := cmd.CombinedOutput()
	t.Logf("in the namespace:\n%s", out)
	if err != nil {
		t.Fatalf("in the namespace: %v", err)
	}
	if strings.Contains(string(out), "SKIP") {
		t.Skip("skipped in the namespace")
	}
}
