package benchmarks

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestScale is the scale check of docs/ARCHITECTURE.md ("Performance
// figures"), run only with LOOPRIG_SCALE=1 (it writes about 10k sessions and a 1M-record journal,
// a few hundred MB, and takes minutes): over a store of 10k sessions and
// one 1M-record session it runs `looprig ls --json` and the TUI, logs the
// times (never asserts them: scripts/bench measures the figures), and
// fails only if the TUI's live heap grows without bound (over 512 MiB
// while it reads the long journal).
func TestScale(t *testing.T) {
	if os.Getenv("LOOPRIG_SCALE") != "1" {
		t.Skip("set LOOPRIG_SCALE=1 to run the scale check")
	}
	fx := manySessions(t, 10_000, 1_000_000)
	bin := looprigBinary(t)
	for i := range 3 {
		cmd := exec.Command(bin, "--store", fx.Dir, "ls", "--json")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
		t0 := time.Now()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("looprig ls --json: %v", err)
		}
		n := strings.Count(string(out), `"short_id"`)
		t.Logf("ls --json #%d: %d sessions, %d bytes in %v", i+1, n, len(out), time.Since(t0).Round(time.Millisecond))
		if n != len(fx.IDs) {
			t.Fatalf("ls --json listed %d sessions, the store has %d", n, len(fx.IDs))
		}
	}
	d, live := tuiMemory(t, fx.Dir, "the long one", 20*time.Second)
	t.Logf("TUI: first frame after %v; while it read the 1M-record journal its live heap peaked %.1f MiB above the start",
		d.Round(time.Millisecond), float64(live)/(1<<20))
	if live > 512<<20 {
		t.Fatalf("the TUI's live heap grew by %d MiB reading one journal: not bounded", live>>20)
	}
}
