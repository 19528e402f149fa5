package benchmarks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
)

// crashedStore makes a store of n crashed sessions in a new directory
// under root: copies of a real demo session whose catalog entry says
// running while nobody holds its lease, as a machine that went down
// leaves them. It returns the store directory and the ids.
func crashedStore(tb testing.TB, root string, n int) (string, []string) {
	tb.Helper()
	dir, err := os.MkdirTemp(root, "crashed")
	if err != nil {
		tb.Fatal(err)
	}
	st := openStore(tb, dir)
	defer st.Close()
	tjournal, tcat := templateSession(tb, st)
	tcat.State = rig.CatalogRunning
	ids := make([]string, n)
	at := time.Now().Add(-time.Hour).UTC()
	for i := range ids {
		ids[i] = uuid.NewString()
		if err := copySession(st, ids[i], i, at.Add(time.Duration(i)*time.Second), tjournal, tcat); err != nil {
			tb.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(st.WorkspacesDir(), ids[i]), 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	return dir, ids
}

// BenchmarkRestoreAllCrashed: `looprig restore --all-crashed` over 50
// crashed sessions (the built command, one process, restores side by
// side), against 50 sequential `looprig restore ID` calls on an identical
// store, in the same run. Target (issue 16): at least 3× faster.
//
// Metrics: ours-ms, base-ms, ratio (base/ours).
func BenchmarkRestoreAllCrashed(b *testing.B) {
	const n = 50
	bin := looprigBinary(b)
	root := b.TempDir()
	home := shortPrivateDir(b)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_RUNTIME_DIR="+home, "LOOPRIG_STORE=")
	looprig := func(store string, args ...string) {
		ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--store", store}, args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("looprig %s: %v\n%.2000s", strings.Join(args, " "), err, out)
		}
	}
	check := func(store string, ids []string) {
		st := openStore(b, store)
		defer st.Close()
		infos, err := rig.ListSessions(bg, st)
		if err != nil {
			b.Fatal(err)
		}
		for _, info := range infos {
			if info.State != rig.StateIdle {
				b.Fatalf("session %s is %s after the restores, want idle", info.ID, info.State)
			}
		}
		if len(infos) != len(ids) {
			b.Fatalf("%d sessions, want %d", len(infos), len(ids))
		}
	}
	rounds := pick(2, 3)
	for range b.N {
		var ours, base side
		interleave(rounds, func() {
			store, ids := crashedStore(b, root, n)
			t0 := time.Now()
			looprig(store, "restore", "--all-crashed", "--json")
			ours.add(1, time.Since(t0))
			check(store, ids)
		}, func() {
			store, ids := crashedStore(b, root, n)
			t0 := time.Now()
			for _, id := range ids {
				looprig(store, "restore", id, "--json")
			}
			base.add(1, time.Since(t0))
			check(store, ids)
		})
		b.ReportMetric(ours.perOp()/1e3, "ours-ms")
		b.ReportMetric(base.perOp()/1e3, "base-ms")
		b.ReportMetric(base.perOp()/ours.perOp(), "ratio")
	}
}
